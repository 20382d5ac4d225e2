"""The sharing policy: the audit figures a checkpoint must meet before `ppmlm push` shares it.

Thresholds come from the run's `share:` block (recipes/config.yaml), with the defaults below for runs
made before it existed, and can be overridden on the command line. A threshold set to null is not
checked, and the card says so. A figure the audit did not produce (an attack skipped, a level without
both classes) fails its check: the policy asks for evidence, and a missing measure is none. A check
passes only when the figure's whole confidence interval meets the threshold; one whose interval straddles
it is inconclusive, and a TPR at an FPR level the audit had too few non-members to resolve is unknown
(anywhere in [0, 1]): neither passes.
Reasons for the defaults: docs/sharing.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from omegaconf import OmegaConf

from ppmlm.audit.attacks import SAMPLE_ATTACKS
from ppmlm.audit.attacks import USER_ATTACKS as ATTACKS
from ppmlm.errors import PPMLMError

FPR = "0.01"  # the false-positive rate whose true-positive rate is bounded
# A threshold for each attack when the run's `share` block names none: the attacks added later (rmia,
# neighbourhood) are not checked unless named, so that audits made before they existed are not failed for lacking them.
DEFAULT_MAX_TPR = {**dict.fromkeys(ATTACKS, 0.1), "rmia": None, "neighbourhood": None}
PRIVACY_SCORES = (("privacy score", ()), ("privacy score (direct)", ("direct",)), ("privacy score (indirect)", ("indirect",)))
PASS, FAIL, NOT_MEASURED, NOT_CHECKED = "pass", "FAIL", "not measured", "not checked"
INCONCLUSIVE, NOT_RESOLVED = "inconclusive", "not resolved"
ACCOUNTANT = "accountant"  # share.max_empirical_epsilon: the one-run bound may not exceed the accountant's ε


@dataclass(frozen=True)
class Check:
    """One figure of the audit against one threshold; `value` None: not measured, `threshold` None: not
    checked. `interval` is the figure's confidence interval; `needs` the non-members a TPR level would need
    when the audit could not resolve it (the figure is then unknown: anywhere in [0, 1])."""

    figure: str
    value: float | None
    threshold: float | None
    at_least: bool  # the figure must be >= threshold (privacy score); else <= threshold (attack TPR)
    interval: tuple[float, float] | None = None
    needs: int | None = None
    threshold_name: str | None = None  # what the threshold is, when it comes from the audit (the accountant's ε)

    @property
    def bounds(self) -> tuple[float, float] | None:
        return (0.0, 1.0) if self.needs is not None else self.interval

    @property
    def status(self) -> str:
        """Pass only when the whole interval meets the threshold, FAIL when none of it does, else inconclusive."""
        if self.threshold is None:
            return NOT_CHECKED
        if self.value is None and self.needs is None:
            return NOT_MEASURED
        if self.bounds is None:
            return INCONCLUSIVE  # a figure without its interval: its uncertainty is unknown
        low, high = self.bounds
        if (low >= self.threshold) if self.at_least else (high <= self.threshold):
            return PASS
        if self.needs is not None:
            return NOT_RESOLVED
        return FAIL if ((high < self.threshold) if self.at_least else (low > self.threshold)) else INCONCLUSIVE

    @property
    def passed(self) -> bool:
        return self.status in (PASS, NOT_CHECKED)

    @property
    def requirement(self) -> str:
        if self.threshold is None:
            return "not checked"
        return f"{'>=' if self.at_least else '<='} {self.threshold_name or f'{self.threshold:g}'}"

    @property
    def measured(self) -> str:
        """The figure as the card and report print it: value [low, high], or why there is none."""
        if self.needs is not None:
            return f"not resolved (needs ≥ {self.needs} non-members)"
        if self.value is None:
            return "not measured"
        return f"{self.value:.4f}" + (f" [{self.interval[0]:.4f}, {self.interval[1]:.4f}]" if self.interval else "")

    def describe(self) -> str:
        """One phrase for a refusal line, e.g. `loss TPR at 1% FPR (sample) 0.5 [0.3, 0.7] > 0.1`."""
        if self.status == NOT_MEASURED:
            return f"{self.figure} not measured (required {self.requirement})"
        if self.status == FAIL:
            return f"{self.figure} {self.value:.4g} {'<' if self.at_least else '>'} {self.threshold:g} (interval {self.measured})"
        if self.status in (INCONCLUSIVE, NOT_RESOLVED):
            return f"{self.figure} {self.measured}: {self.status} against {self.requirement}"
        return f"{self.figure} {self.status}"


def _threshold(value, name: str) -> float | None:
    """A rate threshold in [0, 1], or None (not checked); 'none' and 'null' read as None."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null")):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise PPMLMError(f"sharing policy: {name}={value!r} is not a number or none") from None
    if not 0 <= number <= 1:
        raise PPMLMError(f"sharing policy: {name}={value!r} must lie between 0 and 1 (it bounds a rate)")
    return number


@dataclass(frozen=True)
class SharingPolicy:
    """Minimum privacy score (overall, direct and indirect; optionally against the independent identifiers)
    and maximum TPR at 1% FPR per attack, at sample and user level alike."""

    min_privacy_score: float | None = 0.99
    max_tpr_at_1pct_fpr: dict = field(default_factory=lambda: dict(DEFAULT_MAX_TPR))
    min_independent_privacy_score: float | None = None  # against the audit's independent identifiers; None: not checked
    max_inversion_top100_accuracy: float | None = None  # members' top-100 accuracy of the name -> attribute inversion
    max_canary_exposure: float | None = None  # bits: the highest exposure of a canary planted by audit.canaries
    max_empirical_epsilon: float | str | None = None  # the one-run lower bound on ε: a number, or ACCOUNTANT

    def __post_init__(self):
        unknown = set(self.max_tpr_at_1pct_fpr) - set(ATTACKS)
        if unknown:
            raise PPMLMError(f"sharing policy: unknown attack {sorted(unknown)[0]!r} in max_tpr_at_1pct_fpr; "
                             f"attacks are {', '.join(ATTACKS)}")
        object.__setattr__(self, "min_privacy_score", _threshold(self.min_privacy_score, "min_privacy_score"))
        object.__setattr__(self, "min_independent_privacy_score",
                           _threshold(self.min_independent_privacy_score, "min_independent_privacy_score"))
        object.__setattr__(self, "max_inversion_top100_accuracy",
                           _threshold(self.max_inversion_top100_accuracy, "max_inversion_top100_accuracy"))
        exposure = self.max_canary_exposure
        if exposure is not None and (isinstance(exposure, bool) or not isinstance(exposure, (int, float)) or exposure < 0):
            raise PPMLMError(f"sharing policy: max_canary_exposure={exposure!r} must be a number of bits of at least 0, or none")
        bound = self.max_empirical_epsilon
        if bound is not None and bound != ACCOUNTANT and (isinstance(bound, bool) or not isinstance(bound, (int, float))
                                                          or bound < 0):
            raise PPMLMError(f"sharing policy: max_empirical_epsilon={bound!r} must be a number of at least 0, "
                             f"{ACCOUNTANT} (at most the accountant's ε of a DP run), or none")
        object.__setattr__(self, "max_tpr_at_1pct_fpr", {
            attack: _threshold(self.max_tpr_at_1pct_fpr.get(attack, DEFAULT_MAX_TPR[attack]), f"max_tpr_at_1pct_fpr.{attack}")
            for attack in ATTACKS})

    @classmethod
    def from_config(cls, share) -> SharingPolicy:
        """From a run configuration's `share` block (a mapping, possibly partial or None)."""
        share = dict(share or {})
        defaults = cls()
        return cls(min_privacy_score=share.get("min_privacy_score", defaults.min_privacy_score),
                   min_independent_privacy_score=share.get("min_independent_privacy_score",
                                                           defaults.min_independent_privacy_score),
                   max_tpr_at_1pct_fpr={**defaults.max_tpr_at_1pct_fpr, **dict(share.get("max_tpr_at_1pct_fpr") or {})},
                   max_inversion_top100_accuracy=share.get("max_inversion_top100_accuracy"),
                   max_canary_exposure=share.get("max_canary_exposure"),
                   max_empirical_epsilon=share.get("max_empirical_epsilon"))

    @classmethod
    def for_run(cls, run_dir) -> SharingPolicy:
        """The policy in the run's config.yaml (the defaults when it has no `share` block)."""
        path = Path(run_dir) / "config.yaml"
        if not path.exists():
            raise PPMLMError(f"{run_dir}: not a training run directory (no config.yaml)")
        share = OmegaConf.select(OmegaConf.load(path), "share", default=None)
        return cls.from_config(OmegaConf.to_container(share) if share is not None else None)

    def with_command_line(self, min_privacy_score: str | None = None, max_tpr: list[str] | None = None) -> SharingPolicy:
        """Overrides as typed: `--min-privacy-score 0.95|none`, `--max-tpr [ATTACK=]VALUE|none` (no ATTACK: every
        attack the policy checks; one it does not check, such as rmia by default, is checked only when named)."""
        thresholds = dict(self.max_tpr_at_1pct_fpr)
        for spec in max_tpr or ():
            attack, _, value = spec.rpartition("=")
            if attack and attack not in ATTACKS:
                raise PPMLMError(f"--max-tpr {spec}: unknown attack {attack!r}; attacks are {', '.join(ATTACKS)}")
            for name in [attack] if attack else [name for name in ATTACKS if self.max_tpr_at_1pct_fpr[name] is not None]:
                thresholds[name] = value
        minimum = self.min_privacy_score if min_privacy_score is None else min_privacy_score
        return replace(self, min_privacy_score=minimum, max_tpr_at_1pct_fpr=thresholds)

    def check(self, figures: dict) -> list[Check]:
        """Every check of the policy on an audit's figures (audit/epoch-N.json), in a fixed order."""
        checks = []
        for name, path in PRIVACY_SCORES:
            scores = figures.get("privacy") or {}
            for key in path:
                scores = scores.get(key) or {}
            checks.append(Check(name, scores.get("score"), self.min_privacy_score, at_least=True,
                                interval=_pair(scores.get("score_ci"))))
        independent = figures.get("privacy_independent") or {}
        checks.append(Check("privacy score (independent identifiers)", independent.get("score"),
                            self.min_independent_privacy_score, at_least=True, interval=_pair(independent.get("score_ci"))))
        attacks = figures.get("attacks") or {}
        for attack in ATTACKS:
            for level in ("sample", "user") if attack in SAMPLE_ATTACKS else ("user",):
                result = (attacks.get(attack) or {}).get(level) or {}
                checks.append(Check(f"{attack} TPR at 1% FPR ({level})", (result.get("tpr_at_fpr") or {}).get(FPR),
                                    self.max_tpr_at_1pct_fpr[attack], at_least=False,
                                    interval=_pair((result.get("tpr_at_fpr_ci") or {}).get(FPR)),
                                    needs=((result.get("unresolved") or {}).get(FPR) or {}).get("needs_non_members")))
        # the probing attacks' checks are opt-in: listed only when their threshold is set
        inversion = ((figures.get("inversion") or {}).get("member") or {}).get("top_100") or {}
        if self.max_inversion_top100_accuracy is not None:
            checks.append(Check("inversion top-100 accuracy (members)", inversion.get("value"),
                                self.max_inversion_top100_accuracy, at_least=False, interval=_pair(inversion.get("ci"))))
        exposure = (figures.get("canaries") or {}).get("highest_exposure")  # exact over the secret space: no interval
        if self.max_canary_exposure is not None:
            checks.append(Check("canary exposure (highest, bits)", exposure, self.max_canary_exposure, at_least=False,
                                interval=None if exposure is None else (exposure, exposure)))
        if self.max_empirical_epsilon is not None:
            checks.append(empirical_epsilon_check(figures, self.max_empirical_epsilon))
        return checks


def empirical_epsilon_check(figures: dict, maximum: float | str) -> Check:
    """The one-run lower bound on ε (`empirical_epsilon` of epoch-N.json) against a number, or against the accountant's ε
    (`maximum` ACCOUNTANT: the smallest ε the run's accountants report, the strongest claim the bound could refute; a
    run without DP-SGD has none, and the check is not measured). The bound is already a one-sided confidence bound:
    it is compared as it stands."""
    value = (figures.get("empirical_epsilon") or {}).get("epsilon")
    exact = None if value is None else (value, value)
    if maximum != ACCOUNTANT:
        return Check("empirical ε (one run, lower bound)", value, float(maximum), at_least=False, interval=exact)
    figure = "empirical ε (one run, lower bound) against the accountant's ε"
    claims = {name: spent for name, spent in (figures.get("dp") or {}).items() if name not in ("delta", "unit")}
    if not claims:
        return Check(figure, None, math.inf, at_least=False, threshold_name="the accountant's ε (none: trained without DP-SGD)")
    name, claimed = min(claims.items(), key=lambda claim: claim[1])
    return Check(figure, value, claimed, at_least=False, interval=exact,
                 threshold_name=f"the accountant's ε, {claimed:.4g} ({name.upper()})")


def outcome(checks: list[Check]) -> str:
    """The policy's verdict: "passed" when every check passes, "failed" when one fails or was not
    measured, else "inconclusive" (an interval straddles a threshold, or a level was not resolved)."""
    statuses = {c.status for c in checks}
    if statuses <= {PASS, NOT_CHECKED}:
        return "passed"
    return "failed" if statuses & {FAIL, NOT_MEASURED} else "inconclusive"


def _pair(interval) -> tuple[float, float] | None:
    return None if interval is None else (float(interval[0]), float(interval[1]))
