"""What the audit looks at and how hard it looks: the knobs that trade its cost against its precision."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from ppmlm.audit.inversion import InversionSettings
from ppmlm.corpus.canaries import CanarySettings
from ppmlm.errors import ConfigError
from ppmlm.section import Section, checked, choice, flag, integer, number, plain, refuse_unknown, text

TOKENS_PER_USER = 320  # two 128-token chunks, a third when it is short: bench/audit.py, docs/audit.md
REFERENCES = ("population", "base", "none")
AUTO_NEIGHBOURS = 4  # neighbours per chunk when `neighbours` is None and the audit has no reference model
PROBES = ("final", "all", "sampled")  # audit.privacy_probe: when every identifier occurrence of every member is probed


def check_lend(lend) -> None:
    """`audit.lend_population`: an integer is a number of population users, a float in [0, 1) a fraction of them."""
    number = isinstance(lend, int) and not isinstance(lend, bool) and lend >= 0
    if not number and not (isinstance(lend, float) and 0 <= lend < 1):
        raise ConfigError(f"audit.lend_population={lend}: expected a number of population users (an integer of at least 0) "
                          f"or a fraction of them in [0, 1)")


def lent_count(population: int, lend) -> int:
    """How many of `population` users `audit.lend_population` lends to the audit's non-member side."""
    check_lend(lend)
    count = lend if isinstance(lend, int) else round(lend * population)
    if count > population:
        raise ConfigError(f"audit.lend_population={lend}: the split has only {population} population users to lend")
    return count


def lending(name, value):
    """The check of `audit.lend_population` as a section field (`check_lend` names the key itself)."""
    check_lend(value)
    return value


def inversion_settings(name, value) -> InversionSettings:
    return InversionSettings.parse(value)


def canary_settings(name, value) -> CanarySettings:
    return CanarySettings.parse(value)


def with_domain_templates(section: Mapping | None, data: Mapping) -> dict:
    """The audit section with `inversion.templates: auto` resolved: the embedded corpus's domain, clinical for a
    corpus of one's own."""
    section = dict(section or {})
    inversion = dict(section.get("inversion") or {})
    if inversion.get("templates") == "auto":
        inversion["templates"] = data.get("synth_domain", "clinical") if data.get("path") is None else "clinical"
        section["inversion"] = inversion
    return section


def reference_spec(name, value):
    if value not in REFERENCES and not Path(str(value)).is_dir():
        raise ConfigError(f"{name}={value}: expected {', '.join(REFERENCES)} or a checkpoint directory that exists")
    return value


@dataclass(frozen=True)
class AuditConfig(Section):
    """Sizes bound the cost. The audit scores every audit non-member, plus `lend_population` population
    users lent to that side, and as many members (the ROC compares the two); of each audited user, the
    chunks taken in a seeded random order while their tokens stay within `max_tokens_per_user` (the first
    one always). `max_users_per_side` (set, each side audits that many users, or all it has) and
    `max_chunks_per_user` are optional limits (None: none). Every audited chunk is run through the model
    under `maskings` whole-word maskings of `mlm_probability` of its words (K in Mireshghallah et al.);
    consecutive maskings walk through a random order of the words, so every word is masked at least once as
    soon as K >= 1 / mlm_probability. `mask_each_word` instead masks each word alone, one forward pass per word:
    the strongest probe, and Goyal et al.'s normalized energy (A.3.2), at about 1 / mlm_probability times
    the cost.

    The default budget keeps the audits of a default run under a quarter of its training on the embedded
    default corpus (bench/audit.py); raise it for a final audit (None: every chunk).
    """

    max_tokens_per_user: int | None = checked(integer(minimum=1, nullable=True), TOKENS_PER_USER)
    max_users_per_side: int | None = checked(integer(minimum=1, nullable=True), None)
    max_chunks_per_user: int | None = checked(integer(minimum=1, nullable=True), None)
    lend_population: int | float = checked(lending, 0)  # population users audited as non-members: a number, or a
    # fraction in [0, 1)
    maskings: int = checked(integer(minimum=1), 8)  # Mireshghallah et al. use 10; 8 measured as strong (docs/audit.md)
    mask_each_word: bool = checked(flag(), False)
    mlm_probability: float = checked(number(low=0, high=1, low_open=True), 0.15)
    max_length: int = checked(integer(minimum=4), 128)
    batch_size: int = checked(integer(minimum=1), 16)
    k: int | None = checked(integer(minimum=1, nullable=True), None)  # indirect-identifier threshold of the
    # identifier-count attack; None: the blacklist's
    seed: int = checked(integer(minimum=0), 0)
    fpr_levels: tuple[float, ...] = checked(None, (0.001, 0.01, 0.1))
    identifiers_from: str | None = checked(text(nullable=True), "auto")  # independent answer key: a corpus column of
    # gold spans, a blacklist directory, "auto" (column phi when the corpus has it) or None
    privacy_probe: str = checked(choice(*PROBES), "final")  # every identifier occurrence of every member chunk probed:
    # at the final epoch and in `ppmlm audit` (final), at every epoch (all), never (sampled: the audited chunks' maskings)
    probe_gap_words: int | None = checked(integer(minimum=1, nullable=True), 8)  # occurrences at least this many words
    # apart share a masked input of the probe; None: one occurrence per input (docs/audit.md, Privacy score)
    bootstrap_resamples: int = checked(integer(minimum=0), 1000)  # of the users, for the attacks' intervals (seeded by
    # `seed`)
    confidence: float = checked(number(low=0, high=1, low_open=True, high_open=True), 0.95)  # of every interval:
    # bootstrap (attacks) and Clopper-Pearson (privacy score)
    rmia_population_chunks: int = checked(integer(minimum=0), 16)  # population chunks z each sample is compared
    # with; 0: no RMIA
    rmia_population_maskings: int = checked(integer(minimum=1), 2)  # maskings each population chunk is scored under
    rmia_offline_a: float = checked(number(low=0, high=1), 1.0)  # Pr(x) = (1 + a) / 2 * Pr(x | reference) + (1 - a) / 2
    rmia_gamma: float = checked(number(low=0, low_open=True), 1.0)  # a sample dominates z when its ratio is at least
    # gamma times z's
    neighbours: int | None = checked(integer(minimum=0, nullable=True), None)  # per chunk, for the neighbourhood
    # attack; 0: not run; None: AUTO_NEIGHBOURS without a reference model, else 0 (docs/audit.md, Cost)
    neighbour_words: int = checked(integer(minimum=1), 1)  # words replaced in each neighbour
    neighbour_maskings: int = checked(integer(minimum=1), 2)  # of the chunk's maskings, the first this many score
    # the chunk and its neighbours
    neighbour_chunks_per_user: int | None = checked(integer(minimum=1, nullable=True), 1)  # audited chunks per user
    # that get neighbours; None: all
    progress: bool = checked(flag(), True)
    inversion: InversionSettings = checked(inversion_settings, InversionSettings())  # name -> attribute attack

    def __post_init__(self):
        for name in ("max_tokens_per_user", "max_users_per_side", "max_chunks_per_user"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 (or None for all), got {value}")
        check_lend(self.lend_population)  # its count is checked against the split's population (lent_users)
        if self.maskings < 1:
            raise ValueError(f"maskings must be at least 1, got {self.maskings}")
        if not 0 < self.mlm_probability <= 1:
            raise ValueError(f"mlm_probability must be in (0, 1], got {self.mlm_probability}")
        if self.bootstrap_resamples < 0 or not 0 < self.confidence < 1:
            raise ValueError("bootstrap_resamples must be at least 0 (0: no intervals) and confidence in (0, 1)")
        if self.rmia_population_chunks < 0 or not 0 <= self.rmia_offline_a <= 1 or self.rmia_gamma <= 0:
            raise ValueError(f"rmia_population_chunks must be at least 0 (0: no RMIA), rmia_offline_a in [0, 1] and "
                             f"rmia_gamma above 0, got {self.rmia_population_chunks}, {self.rmia_offline_a}, {self.rmia_gamma}")
        if self.rmia_population_maskings < 1:
            raise ValueError(f"rmia_population_maskings must be at least 1, got {self.rmia_population_maskings}")
        if (self.neighbours or 0) < 0 or self.neighbour_words < 1 or not 1 <= self.neighbour_maskings <= self.maskings:
            raise ValueError(f"neighbours must be at least 0 (0: no neighbourhood attack), neighbour_words at least 1 and "
                             f"neighbour_maskings in [1, maskings={self.maskings}], got {self.neighbours}, "
                             f"{self.neighbour_words}, {self.neighbour_maskings}")
        if self.neighbour_chunks_per_user is not None and self.neighbour_chunks_per_user < 1:
            raise ValueError(f"neighbour_chunks_per_user must be at least 1 (or None for all), "
                             f"got {self.neighbour_chunks_per_user}")
        if self.privacy_probe not in PROBES or (self.probe_gap_words is not None and self.probe_gap_words < 1):
            raise ValueError(f"privacy_probe must be one of {', '.join(PROBES)} and probe_gap_words at least 1 (or None: one "
                             f"occurrence per masked input), got {self.privacy_probe!r}, {self.probe_gap_words}")
        if self.batch_size < 1 or self.max_length < 4:
            raise ValueError("batch_size must be at least 1 and max_length at least 4")
        object.__setattr__(self, "fpr_levels", tuple(float(level) for level in self.fpr_levels))
        object.__setattr__(self, "inversion", InversionSettings.parse(self.inversion))

    def neighbours_with(self, reference) -> int:
        """Neighbours per chunk for an audit with or without a reference model (`reference` None)."""
        if self.neighbours is not None:
            return self.neighbours
        return AUTO_NEIGHBOURS if reference is None else 0

    @classmethod
    def from_run_config(cls, cfg, **overrides) -> "AuditConfig":
        """The audit of a training run: its `audit` section, its sequence length and masking rate."""
        known = {f.name for f in fields(cls)}
        audit = with_domain_templates(cfg.get("audit"), cfg.get("data") or {})
        section = {key: value for key, value in audit.items() if key in known}
        values = dict(section, max_length=cfg.train.max_length, mlm_probability=cfg.masking.mlm_probability)
        if "fpr_levels" in values:
            values["fpr_levels"] = tuple(values["fpr_levels"])
        values.update(overrides)
        return cls(**values)


@dataclass(frozen=True)
class RunAuditConfig(Section):
    """A run's `audit` section: whether each epoch is audited, against which reference, and how (`settings`,
    the AuditConfig above, whose sequence length and masking rate are the run's). A new audit key is a field of
    AuditConfig with its check; the keys here are about the run, not the measure."""

    enabled: bool = checked(flag())
    reference: str = checked(reference_spec)  # population (same recipe, population users, cached) | base | none | PATH
    reference_cache_dir: str = checked(text())
    settings: AuditConfig = checked()
    canaries: CanarySettings = checked(canary_settings, CanarySettings())  # planted in the members' notes (prepare)

    @classmethod
    def from_config(cls, values, prefix: str, **given) -> "RunAuditConfig":
        """`given`: max_length and mlm_probability, from the run's train and masking sections."""
        values = plain(values)
        own_keys = [f.name for f in fields(cls) if f.name != "settings"]
        refuse_unknown(values, own_keys + [f.name for f in fields(AuditConfig) if f.name not in given], prefix)
        own = {key: values.pop(key) for key in own_keys if key in values}
        try:
            settings = AuditConfig.from_config(values, prefix, **given)
        except ValueError as error:
            if isinstance(error, ConfigError):
                raise
            raise ConfigError(f"{prefix}: {error}") from None
        return super().from_config(own, prefix, settings=settings)
