"""From a run configuration to training features: corpus, user split, blacklist, variant, tokenized chunks.

Under several processes the main process builds and caches the blacklist first; the others then read it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import datasets

from ppmlm.audit.config import lent_count
from ppmlm.audit.sampling import lent_users
from ppmlm.corpus.canaries import Canary, OneRunCanaries, run_canaries, trained_canary_users
from ppmlm.corpus.loading import load_run_corpus
from ppmlm.corpus.split import UserSplit, split_users
from ppmlm.errors import CorpusError
from ppmlm.features import build_features
from ppmlm.identifiers.blacklist import Blacklist
from ppmlm.identifiers.cache import cache_entry, run_blacklist_parameters
from ppmlm.identifiers.config import BlacklistConfig
from ppmlm.identifiers.shards import DatasetShards, build_in_shards
from ppmlm.masking.variants import Variant, protected_view, pseudonymize
from ppmlm.models import uncased


@dataclass
class RunData:
    corpus: datasets.Dataset  # every user, as loaded
    split: UserSplit
    blacklist: Blacklist  # built on the members: what training must not memorize
    features: datasets.Dataset  # the members' chunks, `protected` set for this variant
    # planted in `corpus` (audit.canaries): exposure canaries, or a one-run plant; sensitive (the secrets)
    canaries: list[Canary] | OneRunCanaries = field(default_factory=list)


def members_blacklist(members: datasets.Dataset, bl: BlacklistConfig, casefold: bool, accelerator) -> Blacklist:
    """The blacklist of the training users, reused from the cache when corpus and parameters match."""
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
                # shard by shard, as `ppmlm blacklist` builds it: the graph and stats passes spread over the
                # processes too (a tenth faster than `build_blacklist` on 2,398 notes and 2 cores; docs/blacklist.md)
                blacklist = build_in_shards(DatasetShards(members), engine=bl.engine, scheduler=bl.scheduler,
                                            processes=bl.n_process, **options)
                blacklist.stats["parameters"]["ner_rules"] = params["ner_rules"]  # so `ppmlm audit` finds this entry
                blacklist.save(directory)
        else:
            accelerator.print(f"reusing the cached blacklist {directory}")
        return Blacklist.load(directory)


def prepare(cfg, tokenizer, variant: Variant, accelerator) -> RunData:
    """The data of run configuration `cfg` (a ppmlm.config.RunConfig)."""
    corpus = load_run_corpus(cfg.data, cfg.seed)
    split = split_users(corpus["user_id"], seed=cfg.seed, audit_fraction=cfg.data.audit_fraction,
                        population_fraction=cfg.data.population_fraction)
    check_enough_users(split, cfg)
    canaries = []
    # canaries go into members' notes, before the blacklist is built on them; canaries.json is written into the run
    # directory, which the loop has locked by now (RunDirectory.claim comes first)
    if cfg.data.train_users == "members":
        corpus, canaries = run_canaries(cfg.output_dir, corpus, split.members, cfg.audit.canaries,
                                        record=accelerator.is_main_process, dp=cfg.train.dp,
                                        audited=cfg.audit.enabled)
    # population: the audit's reference model; included one-run canaries are users of their own, outside the split
    member_set = set(getattr(split, cfg.data.train_users)) | trained_canary_users(canaries)
    if cfg.data.train_users == "population":  # less the users the audit lends to its non-member side
        member_set -= set(lent_users(split.population, cfg.audit.settings.lend_population, cfg.audit.settings.seed))
    members = corpus.filter(lambda user: user in member_set, input_columns="user_id")
    casefold = cfg.blacklist.casefold
    if casefold is None:  # an uncased tokenizer cannot tell "Smith" from "smith": neither should the terms
        casefold = uncased(tokenizer)
    blacklist = members_blacklist(members, cfg.blacklist, casefold, accelerator)
    if variant.pseudonymize:
        texts = [pseudonymize(t, blacklist.spans.get(d, ()), cfg.masking.placeholder)
                 for t, d in zip(members["text"], members["doc_id"])]
        members = members.remove_columns("text").add_column("text", texts)
    features = build_features(members, protected_view(blacklist, variant), tokenizer,
                              max_length=cfg.train.max_length, progress=accelerator.is_main_process)
    return RunData(corpus, split, blacklist, features, canaries)


def check_enough_users(split: UserSplit, cfg) -> None:
    """Fewer users than the split and the blacklist need would train on nothing but punctuation or leave
    the audit with one class: say how many are needed, before any work."""
    k = cfg.blacklist.k
    audit = cfg.audit.enabled and cfg.data.train_users == "members"
    reference = cfg.data.train_users == "population" or (audit and cfg.audit.reference == "population")
    lent = lent_count(len(split.population), cfg.audit.settings.lend_population) if audit or reference else 0
    needed = {"members": k if cfg.masking.variant != "mlm" else 1,
              "audit_non_members": 1 if audit else 0,
              "population": (1 if reference else 0) + lent}
    short = {role: count for role, count in needed.items() if len(getattr(split, role)) < count}
    if short:
        users = len(split.members) + len(split.audit_non_members) + len(split.population)
        minimum = sum(needed.values())
        where = cfg.data.path or f"the embedded corpus (data.synth_users={cfg.data.synth_users})"
        raise CorpusError(
            f"{where}: {users} users, this run needs at least {minimum}: {needed['members']} training users "
            f"(blacklist.k={k}: a word of fewer users is an identifier), {needed['audit_non_members']} audit non-member "
            f"and {needed['population']} population user"
            + (f" ({lent} lent to the audit, audit.lend_population)" if lent else "")
            + " (data.audit_fraction, data.population_fraction); got "
            + ", ".join(f"{len(getattr(split, role))} {role.replace('_', ' ')}" for role in needed))
