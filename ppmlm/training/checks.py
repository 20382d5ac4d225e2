"""Every setting of a masked-LM training run, checked before anything is read, built or written.

A value that cannot be honoured ends the run at once with one line naming the key, the value given and
what is allowed, instead of a traceback after the blacklist is built or the first epoch has run.
"""
from __future__ import annotations

import math
from dataclasses import fields
from pathlib import Path

from omegaconf import OmegaConf

from ppmlm.audit.config import AuditConfig, check_lend, lent_count
from ppmlm.corpus.domains import SYNTHETIC_DOMAINS
from ppmlm.corpus.split import UserSplit
from ppmlm.errors import ConfigError, CorpusError
from ppmlm.identifiers.profiles import PROFILES
from ppmlm.identifiers.shards import ENGINES
from ppmlm.masking.variants import VARIANTS

ACCOUNTANT_NAMES = ("rdp", "prv")
AUDIT_REFERENCES = ("population", "base", "none")
MISSING = object()


def check_training_config(cfg) -> None:
    """The `mlm` task's keys: types and ranges, the choices of each enumerated key, and local model paths."""
    _choice(cfg, "resume", ("auto", True, False))
    _integer(cfg, "seed", minimum=0)
    _integer(cfg, "data.synth_users", minimum=1)
    _choice(cfg, "data.synth_domain", SYNTHETIC_DOMAINS)
    _choice(cfg, "data.train_users", ("members", "population"))
    audit_fraction = _number(cfg, "data.audit_fraction", low=0, high=1, high_open=True)
    population_fraction = _number(cfg, "data.population_fraction", low=0, high=1, high_open=True)
    if audit_fraction + population_fraction >= 1:
        raise ConfigError(f"data.audit_fraction={audit_fraction} and data.population_fraction={population_fraction}: "
                          f"their sum must stay below 1, leaving users to train on")
    for key in ("data.text_column", "data.user_column"):
        _text(cfg, key)
    _integer(cfg, "blacklist.k", minimum=1)
    _integer(cfg, "blacklist.n", minimum=1)
    _integer(cfg, "blacklist.n_process", minimum=1, nullable=True)
    _choice(cfg, "blacklist.casefold", (None, True, False))
    _text(cfg, "blacklist.ner")
    _choice(cfg, "blacklist.profile", PROFILES)
    _existing_path(cfg, "blacklist.path", "a saved blacklist directory (ppmlm blacklist --out)")
    engine, scheduler = _choice(cfg, "blacklist.engine", ENGINES), _value(cfg, "blacklist.scheduler", "")
    if (engine == "dask") != (isinstance(scheduler, str) and bool(scheduler.strip())):
        raise ConfigError(f"blacklist.scheduler={scheduler}: expected a Dask scheduler address (tcp://HOST:8786) or local "
                          f"with blacklist.engine=dask, and null with blacklist.engine=local")
    _choice(cfg, "masking.variant", tuple(VARIANTS))
    _number(cfg, "masking.mlm_probability", low=0, high=1, low_open=True)
    _integer(cfg, "train.epochs", minimum=1)
    _integer(cfg, "train.batch_size", minimum=1)
    _integer(cfg, "train.max_length", minimum=8)
    _number(cfg, "train.lr", low=0, low_open=True)
    _number(cfg, "train.head_lr", low=0, low_open=True, nullable=True)
    _number(cfg, "train.weight_decay", low=0)
    _number(cfg, "train.warmup_ratio", low=0, high=1, high_open=True)
    _number(cfg, "train.max_grad_norm", low=0, low_open=True, nullable=True)
    _integer(cfg, "train.log_every", minimum=1)
    _integer(cfg, "train.num_workers", minimum=0)
    _choice(cfg, "train.tracker", (None, "tensorboard", "wandb", "mlflow", "comet_ml", "aim", "clearml", "dvclive"))
    if cfg.model.config is None:
        _existing_path(cfg, "model.name_or_path", "a local checkpoint directory (models are never downloaded)")
    if cfg.train.dp.enabled:
        check_dp_config(cfg.train.dp, cfg.train)
    if cfg.audit.enabled:
        check_audit_config(cfg)


def check_dp_config(dp_cfg, train_cfg) -> None:
    """What DP-SGD cannot honour: no noise, no clipping bound, an unknown accountant."""
    prefix = "train.dp"
    _choice(dp_cfg, "accountant", ACCOUNTANT_NAMES, prefix)
    _choice(dp_cfg, "grad_sample_mode", ("hooks", "ghost"), prefix)
    _number(dp_cfg, "delta", low=0, high=1, low_open=True, high_open=True, prefix=prefix)
    _number(dp_cfg, "max_grad_norm", low=0, low_open=True, prefix=prefix)
    _number(dp_cfg, "noise_multiplier", low=0, low_open=True, nullable=True, prefix=prefix)
    if dp_cfg.noise_multiplier is None:
        _number(dp_cfg, "target_epsilon", low=0, low_open=True, prefix=prefix)
    _integer(dp_cfg, "physical_batch_size", minimum=1, nullable=True, prefix=prefix)
    _integer(dp_cfg, "max_chunks_per_user", minimum=1, nullable=True, prefix=prefix)
    if train_cfg.max_grad_norm:
        raise ConfigError(f"train.max_grad_norm={train_cfg.max_grad_norm}: it clips the batch gradient of non-private "
                          f"runs; DP-SGD clips each chunk's gradient at train.dp.max_grad_norm: leave it null")


def check_audit_config(cfg) -> None:
    """The audit's sizes and its reference, checked as the per-epoch audit will read them."""
    reference = cfg.audit.reference
    if reference not in AUDIT_REFERENCES and not Path(str(reference)).is_dir():
        raise ConfigError(f"audit.reference={reference}: expected {', '.join(AUDIT_REFERENCES)} or a checkpoint "
                          f"directory that exists")
    if reference == "base" and cfg.model.config is not None:
        raise ConfigError("audit.reference=base: this run builds its model from model.config, so there is no starting "
                          "checkpoint to compare with; use population, none or a checkpoint directory")
    _number(cfg, "audit.confidence", low=0, high=1, low_open=True, high_open=True)
    for field in fields(AuditConfig):
        if field.name in cfg.audit and field.type in ("int", "int | None"):
            _integer(cfg, f"audit.{field.name}", minimum=0 if field.name in ("seed", "bootstrap_resamples") else 1,
                     nullable=field.type == "int | None")
    check_lend(cfg.audit.get("lend_population", 0))  # how many: against the split (check_enough_users)
    try:
        AuditConfig.from_run_config(cfg)
    except ValueError as error:
        raise ConfigError(f"audit: {error}") from None


def check_enough_users(split: UserSplit, cfg) -> None:
    """Fewer users than the split and the blacklist need would train on nothing but punctuation or leave
    the audit with one class: say how many are needed, before any work."""
    k = cfg.blacklist.k
    audit = cfg.audit.enabled and cfg.data.train_users == "members"
    reference = cfg.data.train_users == "population" or (audit and cfg.audit.reference == "population")
    lent = lent_count(len(split.population), cfg.audit.get("lend_population", 0)) if audit or reference else 0
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


def _value(section, key: str, prefix: str):
    value = OmegaConf.select(section, key, default=MISSING)
    if value is MISSING:
        raise ConfigError(f"{_name(prefix, key)}: missing from the configuration")
    return value


def _name(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _choice(section, key: str, allowed: tuple, prefix: str = ""):
    value = _value(section, key, prefix)
    if value not in allowed or isinstance(value, bool) != any(value is a for a in allowed if isinstance(a, bool)):
        shown = ", ".join("null" if a is None else str(a).lower() if isinstance(a, bool) else str(a) for a in allowed)
        raise ConfigError(f"{_name(prefix, key)}={value}: choose one of {shown}")
    return value


def _integer(section, key: str, minimum: int, nullable: bool = False, prefix: str = ""):
    value = _value(section, key, prefix)
    if value is None and nullable:
        return value
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        allowed = f"an integer of at least {minimum}" + (" or null" if nullable else "")
        raise ConfigError(f"{_name(prefix, key)}={value}: expected {allowed}")
    return value


def _number(section, key: str, low: float | None = None, high: float | None = None, low_open: bool = False,
            high_open: bool = False, nullable: bool = False, prefix: str = ""):
    value = _value(section, key, prefix)
    if value is None and nullable:
        return value
    fine = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if fine and low is not None:
        fine = value > low if low_open else value >= low
    if fine and high is not None:
        fine = value < high if high_open else value <= high
    if not fine:
        lower = "" if low is None else f"{'(' if low_open else '['}{low}"
        upper = "" if high is None else f"{high}{')' if high_open else ']'}"
        interval = f"{lower}, {upper}" if low is not None and high is not None else (
            f"{'above' if low_open else 'at least'} {low}" if high is None else f"at most {high}")
        allowed = f"a number in {interval}" if low is not None and high is not None else f"a number {interval}"
        raise ConfigError(f"{_name(prefix, key)}={value}: expected {allowed}" + (" or null" if nullable else ""))
    return value


def _text(section, key: str, prefix: str = ""):
    value = _value(section, key, prefix)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{_name(prefix, key)}={value}: expected a non-empty name")
    return value


def _existing_path(section, key: str, what: str, prefix: str = "") -> None:
    value = _value(section, key, prefix)
    if value is not None and not Path(str(value)).exists():
        raise ConfigError(f"{_name(prefix, key)}={value}: no such file or directory; expected {what}")
