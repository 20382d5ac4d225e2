"""`ppmlm audit`: the audit of any checkpoint, reproducing the one its training run wrote.

When the checkpoint sits in a run directory (`<run>/checkpoints/epoch-N`), the run's config.yaml and
split.json are read, so the same users, chunks, maskings and reference model are audited as during
training. Otherwise the split is recomputed from the user ids with the recipes' default seed.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from omegaconf import OmegaConf
from transformers import AutoTokenizer

from ppmlm.audit.checkpoint import audit_checkpoint
from ppmlm.audit.config import AuditConfig
from ppmlm.audit.console import verdict_lines
from ppmlm.audit.outputs import check_audit_dir, check_audits_are_of
from ppmlm.audit.policy import SharingPolicy
from ppmlm.audit.reference import resolve_reference
from ppmlm.corpus.canaries import plant, recorded_canaries, trained_canary_users
from ppmlm.corpus.loading import load_corpus, load_run_corpus
from ppmlm.corpus.split import UserSplit, split_users
from ppmlm.errors import ConfigError, PPMLMError
from ppmlm.identifiers.blacklist import Blacklist, cached_blacklists, corpus_fingerprint
from ppmlm.identifiers.cache import run_blacklist_parameters
from ppmlm.models import uncased, weights_digests
from ppmlm.rundir import RunDirectory, checkpoint_epsilon

DEFAULT_SPLIT_SEED = 42  # recipes/config.yaml's seed, which training splits users with


def training_blacklist(cfg, corpus, split, tokenizer, canaries=()) -> Path:
    """The blacklist a run trained with: its blacklist.path, else the cache entry built on its members with its
    parameters (the one training reused or wrote). `corpus`: the run's corpus as read; `canaries`: the plant the run
    recorded (ppmlm.corpus.canaries.recorded_canaries), which training planted before building the blacklist."""
    if cfg.blacklist.get("path"):
        return Path(cfg.blacklist.path)
    members = set(split.members) | trained_canary_users(canaries)
    trained = plant(corpus, canaries) if canaries else corpus
    casefold = cfg.blacklist.casefold if cfg.blacklist.casefold is not None else uncased(tokenizer)
    parameters = run_blacklist_parameters(cfg.blacklist, casefold)
    if "profile" not in cfg.blacklist:  # a run from before profiles: its entry records none
        parameters.pop("profile")
    wanted = {"corpus_fingerprint": corpus_fingerprint(trained.filter(lambda user: user in members, input_columns="user_id")),
              **parameters}
    found = cached_blacklists(cfg.blacklist.cache_dir, wanted)
    if len(found) != 1:
        raise PPMLMError(f"cannot tell which blacklist under {cfg.blacklist.cache_dir} this run trained with; "
                         "give --blacklist DIR")
    return found[0]


def audit_command(model: Path, data, blacklist: Path | None, out: Path, reference: str | None = None, split: Path | None = None,
                  epoch: int | None = None, columns: dict | None = None, settings: dict | None = None,
                  train_reference: Callable | None = None) -> dict:
    """Loads everything the audit needs from paths and runs it; `settings` override AuditConfig fields.
    `data` and `blacklist` may be None for a checkpoint inside a training run (the run's own are used);
    `train_reference` trains a population reference that is not cached yet. Whatever can be refused (the output
    folder, the settings, the split file) is refused before the corpus or a model is loaded. Ends by printing the
    sharing policy's verdict on the audit (the run's `share:` policy, else the defaults), as report.html opens."""
    check_audit_dir(out)
    model = Path(model)
    if not (model / "config.json").exists():
        raise PPMLMError(f"--model {model}: not a saved model directory (no config.json)")
    run = RunDirectory.of_checkpoint(model)
    cfg = OmegaConf.load(run.config) if run is not None else None
    own_epoch = re.fullmatch(r"epoch-(\d+)", model.name)
    epoch = epoch if epoch is not None else int(own_epoch.group(1)) if own_epoch else 0
    own_checkpoint = (run is not None and own_epoch is not None and int(own_epoch.group(1)) == epoch
                      and Path(out).resolve() == run.audit.resolve())
    check_audits_are_of(out, weights_digests(model), own_checkpoint)
    settings = settings or {}
    if cfg is not None and "lend_population" in settings:  # so that a population reference leaves the lent users out
        OmegaConf.update(cfg, "audit.lend_population", settings["lend_population"], force_add=True)
    config = audit_settings(cfg, settings)
    if split is None and run is not None and run.split.exists():
        split = run.split
    user_split = UserSplit.load(split) if split is not None else None
    names = {"text_column": "text", "user_column": "user_id", "doc_id_column": "doc_id"}
    if cfg is not None:
        names.update({key: cfg.data[key] for key in names if key in cfg.data})
    names.update({key: value for key, value in (columns or {}).items() if value is not None})
    if data is not None:
        corpus = load_corpus(data, **names)
    elif cfg is not None:  # the run's own corpus: its data.path, or the embedded default it generated
        corpus = load_run_corpus(cfg.data, cfg.seed)
    else:
        raise PPMLMError(f"--model {model} is not inside a training run: give --data PATH")
    if user_split is None and cfg is not None:
        user_split = split_users(corpus["user_id"], seed=cfg.seed, audit_fraction=cfg.data.audit_fraction,
                                 population_fraction=cfg.data.population_fraction)
    elif user_split is None:
        user_split = split_users(corpus["user_id"], seed=DEFAULT_SPLIT_SEED)
    canaries = recorded_canaries(run.path) if run is not None else []
    if reference is None and cfg is not None:  # as during training; runs from before the audit existed: none
        reference = OmegaConf.select(cfg, "audit.reference", default=None)
    if blacklist is None:
        if cfg is None:
            raise PPMLMError(f"--model {model} is not inside a training run: give --blacklist DIR")
        blacklist = training_blacklist(cfg, corpus, user_split, AutoTokenizer.from_pretrained(str(model)), canaries)
    corpus = plant(corpus, canaries) if canaries else corpus  # the corpus as the run trained on it, split as before
    policy = SharingPolicy.from_config(cfg.get("share")) if cfg is not None else SharingPolicy()
    figures = audit_checkpoint(model, corpus, user_split, Blacklist.load(blacklist), out, epoch, config,
                               resolve_reference(reference, cfg, train_reference), checkpoint_epsilon(model), policy=policy,
                               canaries=canaries)
    print(f"wrote {out} (the scores files and .salt are sensitive; report.html and epoch-N.json hold counts only)")
    print("\n".join(verdict_lines(figures, policy)), flush=True)
    return figures


def audit_settings(cfg, settings: dict) -> AuditConfig:
    """The audit's settings: the run's `audit` section (`cfg`, None outside a run) with `settings` over it. A value
    out of range is one ConfigError naming the setting, before anything is loaded."""
    try:
        return AuditConfig.from_run_config(cfg, **settings) if cfg is not None else AuditConfig(**settings)
    except ConfigError:
        raise
    except ValueError as error:
        raise ConfigError(f"audit settings: {error}") from None
