"""From a configuration to training features: corpus, user split, blacklist, variant, tokenized chunks.

Under several processes the main process builds and caches the blacklist first; the others then read it.
"""
from __future__ import annotations

from dataclasses import dataclass

import datasets

from ppmlm.audit.sampling import lent_by_run
from ppmlm.corpus.loading import load_run_corpus
from ppmlm.corpus.split import UserSplit, split_users
from ppmlm.features import build_features
from ppmlm.identifiers.blacklist import Blacklist, build_blacklist
from ppmlm.identifiers.cache import cache_entry, run_blacklist_parameters
from ppmlm.identifiers.shards import DatasetShards, build_in_shards
from ppmlm.masking.variants import Variant, protected_view, pseudonymize
from ppmlm.models import uncased
from ppmlm.training.checks import check_enough_users


@dataclass
class RunData:
    corpus: datasets.Dataset  # every user, as loaded
    split: UserSplit
    blacklist: Blacklist  # built on the members: what training must not memorize
    features: datasets.Dataset  # the members' chunks, `protected` set for this variant


def members_blacklist(members: datasets.Dataset, cfg, casefold: bool, accelerator) -> Blacklist:
    """The blacklist of the training users, reused from the cache when corpus and parameters match."""
    bl = cfg.blacklist
    if bl.path:
        return Blacklist.load(bl.path)
    params = run_blacklist_parameters(bl, casefold)
    directory = cache_entry(bl, members, params)
    with accelerator.main_process_first():
        if not (directory / "stats.json").exists():
            if accelerator.is_main_process:
                accelerator.print(f"building the blacklist of {len(set(members['user_id']))} training users")
                options = dict(k=bl.k, n=bl.n, ner=bl.ner, spans_from=bl.spans_from, casefold=casefold,
                               profile=params["profile"])
                if bl.get("engine", "local") == "dask":  # the same artifact, built shard by shard on a cluster
                    blacklist = build_in_shards(DatasetShards(members), engine="dask", scheduler=bl.scheduler,
                                                processes=bl.n_process, **options)
                else:
                    blacklist = build_blacklist(members, n_process=bl.n_process, **options)
                blacklist.stats["parameters"]["ner_rules"] = params["ner_rules"]  # so `ppmlm audit` finds this entry
                blacklist.save(directory)
        else:
            accelerator.print(f"reusing the cached blacklist {directory}")
        return Blacklist.load(directory)


def prepare(cfg, tokenizer, variant: Variant, accelerator) -> RunData:
    corpus = load_run_corpus(cfg.data, cfg.seed)
    split = split_users(corpus["user_id"], seed=cfg.seed, audit_fraction=cfg.data.audit_fraction,
                        population_fraction=cfg.data.population_fraction)
    check_enough_users(split, cfg)
    member_set = set(getattr(split, cfg.data.train_users))  # population: the audit's reference model
    if cfg.data.train_users == "population":  # less the users the audit lends to its non-member side
        member_set -= set(lent_by_run(cfg, split))
    members = corpus.filter(lambda user: user in member_set, input_columns="user_id")
    casefold = cfg.blacklist.casefold
    if casefold is None:  # an uncased tokenizer cannot tell "Smith" from "smith": neither should the terms
        casefold = uncased(tokenizer)
    blacklist = members_blacklist(members, cfg, casefold, accelerator)
    if variant.pseudonymize:
        texts = [pseudonymize(t, blacklist.spans.get(d, ()), cfg.masking.placeholder)
                 for t, d in zip(members["text"], members["doc_id"])]
        members = members.remove_columns("text").add_column("text", texts)
    features = build_features(members, protected_view(blacklist, variant), tokenizer,
                              max_length=cfg.train.max_length, progress=accelerator.is_main_process)
    return RunData(corpus, split, blacklist, features)
