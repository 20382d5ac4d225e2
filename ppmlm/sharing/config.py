"""The `share` section: the sharing policy `ppmlm push` applies (ppmlm.audit.policy) and what the card names."""
from __future__ import annotations

from dataclasses import dataclass

from ppmlm.audit.attacks import USER_ATTACKS
from ppmlm.audit.policy import ACCOUNTANT, SharingPolicy
from ppmlm.errors import ConfigError
from ppmlm.section import Section, checked, number, shown, text

RATE = number(low=0, high=1, nullable=True)


def attack_bounds(name, value):
    """{attack: bound or null}: each key an attack of the audit, each bound a rate."""
    if not isinstance(value, dict):
        raise ConfigError(f"{name}={value}: expected a mapping of attacks ({', '.join(USER_ATTACKS)}) to rates")
    for attack, bound in value.items():
        if attack not in USER_ATTACKS:
            raise ConfigError(f"{name}.{attack}={bound}: not an attack of the audit; its attacks are {', '.join(USER_ATTACKS)}")
        RATE(f"{name}.{attack}", bound)
    return value


def empirical_bound(name, value):
    """A maximum of the one-run lower bound on ε: a number of at least 0, accountant, or null."""
    if value == ACCOUNTANT:
        return value
    try:
        return number(low=0, nullable=True)(name, value)
    except ConfigError:
        raise ConfigError(f"{name}={shown(value)}: expected a number of at least 0, {ACCOUNTANT} (at most the accountant's "
                          "ε of a DP run) or null") from None


@dataclass(frozen=True)
class ShareConfig(Section):
    min_privacy_score: float | None = checked(RATE)  # null: not checked
    min_independent_privacy_score: float | None = checked(RATE)
    max_tpr_at_1pct_fpr: dict = checked(attack_bounds)  # attack: bound (null: not checked)
    max_inversion_top100_accuracy: float | None = checked(RATE)  # members' top-100 accuracy of the inversion
    max_canary_exposure: float | None = checked(number(low=0, nullable=True))  # bits (audit.canaries)
    max_empirical_epsilon: float | str | None = checked(empirical_bound)  # one-run bound: a number, or accountant
    license: str | None = checked(text(nullable=True))
    base_model: str | None = checked(text(nullable=True))

    @property
    def policy(self) -> SharingPolicy:
        return SharingPolicy.from_config({"min_privacy_score": self.min_privacy_score,
                                          "min_independent_privacy_score": self.min_independent_privacy_score,
                                          "max_tpr_at_1pct_fpr": self.max_tpr_at_1pct_fpr,
                                          "max_inversion_top100_accuracy": self.max_inversion_top100_accuracy,
                                          "max_canary_exposure": self.max_canary_exposure,
                                          "max_empirical_epsilon": self.max_empirical_epsilon})
