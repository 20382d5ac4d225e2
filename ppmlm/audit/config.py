"""What the audit looks at and how hard it looks: the knobs that trade its cost against its precision."""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from ppmlm.audit.inversion import InversionSettings
from ppmlm.errors import ConfigError

TOKENS_PER_USER = 320  # two 128-token chunks, a third when it is short: bench/audit.py, docs/audit.md
AUTO_NEIGHBOURS = 4  # neighbours per chunk when `neighbours` is None and the audit has no reference model


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


@dataclass(frozen=True)
class AuditConfig:
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

    The reference-calibrated attack (`ppmlm.audit.rmia`) compares each sample with at most
    `rmia_population_chunks` population chunks (0: the attack is off), each scored under
    `rmia_population_maskings` maskings, with the offline correction `rmia_offline_a` and the threshold
    `rmia_gamma`. The neighbourhood attack (`ppmlm.audit.neighbourhood`) makes `neighbours` neighbours of
    each of the first `neighbour_chunks_per_user` audited chunks of every user (None: all of them; 0: the
    attack is off; `neighbours` None: AUTO_NEIGHBOURS when the audit has no reference model, whose pass it
    then takes the place of, else 0), each with `neighbour_words` words replaced, and scores them under the
    first `neighbour_maskings` of the chunk's maskings.

    The default budget keeps the audits of a default run under a quarter of its training on the embedded
    default corpus (bench/audit.py); raise it for a final audit (None: every chunk).
    """

    max_tokens_per_user: int | None = TOKENS_PER_USER
    max_users_per_side: int | None = None
    max_chunks_per_user: int | None = None
    lend_population: int | float = 0  # population users audited as non-members: a number, or a fraction in [0, 1)
    maskings: int = 10
    mask_each_word: bool = False
    mlm_probability: float = 0.15
    max_length: int = 128
    batch_size: int = 16
    k: int | None = None  # indirect-identifier threshold of the identifier-count attack; None: the blacklist's
    seed: int = 0
    fpr_levels: tuple[float, ...] = (0.001, 0.01, 0.1)
    identifiers_from: str | None = "auto"  # independent answer key: a corpus column of gold spans, a blacklist
    # directory, "auto" (column phi when the corpus has it) or None
    bootstrap_resamples: int = 1000  # of the users, for the attacks' intervals (seeded by `seed`)
    confidence: float = 0.95  # of every interval: bootstrap (attacks) and Clopper-Pearson (privacy score)
    rmia_population_chunks: int = 16  # population chunks z each sample is compared with; 0: no RMIA
    rmia_population_maskings: int = 2  # maskings each population chunk is scored under
    rmia_offline_a: float = 1.0  # Pr(x) = (1 + a) / 2 * Pr(x | reference) + (1 - a) / 2, one reference model
    rmia_gamma: float = 1.0  # a sample dominates z when its ratio is at least gamma times z's
    neighbours: int | None = None  # per chunk, for the neighbourhood attack; 0: not run; None: AUTO_NEIGHBOURS without
    # a reference model, else 0 (docs/audit.md, Cost)
    neighbour_words: int = 1  # words replaced in each neighbour
    neighbour_maskings: int = 2  # of the chunk's maskings, the first this many score the chunk and its neighbours
    neighbour_chunks_per_user: int | None = 1  # audited chunks per user that get neighbours; None: all
    progress: bool = True
    inversion: InversionSettings = field(default_factory=InversionSettings)  # name -> attribute attack (inversion.py)

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
        section = {key: value for key, value in dict(cfg.get("audit") or {}).items() if key in known}
        values = dict(section, max_length=cfg.train.max_length, mlm_probability=cfg.masking.mlm_probability)
        if "fpr_levels" in values:
            values["fpr_levels"] = tuple(values["fpr_levels"])
        inversion = dict(values.get("inversion") or {})
        if inversion.get("templates") == "auto":  # the embedded corpus's domain; a corpus of one's own: clinical
            inversion["templates"] = cfg.data.get("synth_domain", "clinical") if cfg.data.get("path") is None else "clinical"
            values["inversion"] = inversion
        values.update(overrides)
        return cls(**values)
