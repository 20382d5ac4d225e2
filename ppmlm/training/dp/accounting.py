"""Accounting by RDP and PRV at once (`PrivacyLedger`), checkpointed with the run, so a resumed run keeps
its history. The unit of privacy is what the sampling rate counts: a training chunk (then `chunks_per_user` and
`group_bound` say what that means for a user) or, under `train.dp.unit=user`, a user (docs/dp.md).
"""
from __future__ import annotations

import math
import warnings
from collections import Counter

from opacus.accountants import PRVAccountant, RDPAccountant
from opacus.accountants.utils import get_noise_multiplier

from ppmlm.training.dp.config import ACCOUNTANT_NAMES

ACCOUNTANTS = dict(zip(ACCOUNTANT_NAMES, (RDPAccountant, PRVAccountant)))
GROUP_BOUND = "group privacy of (eps, delta)-DP for g chunks: eps_g = g*eps, delta_g = g*exp((g-1)*eps)*delta (loose)"


class PrivacyLedger:
    """RDP and PRV accountants fed the same steps; checkpointed with the run (accelerate custom state)."""

    def __init__(self, noise_multiplier: float, sample_rate: float):
        self.noise_multiplier, self.sample_rate = noise_multiplier, sample_rate
        self.accountants = {name: cls() for name, cls in ACCOUNTANTS.items()}

    def __call__(self, optimizer) -> None:
        """Opacus step hook: called once per logical batch, after the noise is added."""
        for accountant in self.accountants.values():
            accountant.step(noise_multiplier=optimizer.noise_multiplier, sample_rate=self.sample_rate)

    @property
    def steps(self) -> int:
        """Noisy steps taken (Opacus's `len(accountant)` counts history entries, runs of equal steps)."""
        return sum(steps for _, _, steps in self.accountants["rdp"].history)

    def epsilon(self, delta: float) -> dict:
        return {name: float(a.get_epsilon(delta)) if a.history else 0.0 for name, a in self.accountants.items()}

    def state_dict(self) -> dict:
        return {name: a.state_dict() for name, a in self.accountants.items()}

    def load_state_dict(self, state: dict) -> None:
        for name, accountant in self.accountants.items():
            accountant.load_state_dict(state[name])
        earlier = {(sigma, q) for sigma, q, _ in self.accountants["rdp"].history} - {(self.noise_multiplier, self.sample_rate)}
        if earlier:  # e.g. resumed with more epochs: sigma was calibrated for a shorter run
            warnings.warn(f"the resumed checkpoint was trained with (sigma, q) = {sorted(earlier)}, this run uses "
                          f"({self.noise_multiplier}, {self.sample_rate}): epsilon accounts for both and may pass "
                          "target_epsilon")


def calibrate_noise(dp_cfg, sample_rate: float, steps: int) -> float:
    """sigma from the config, or the smallest Opacus finds for target_epsilon at delta after `steps` steps."""
    if dp_cfg.noise_multiplier is not None:
        return float(dp_cfg.noise_multiplier)
    with warnings.catch_warnings():  # the search visits sigmas whose best RDP order is off the grid
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")
        return float(get_noise_multiplier(target_epsilon=dp_cfg.target_epsilon, target_delta=dp_cfg.delta,
                                          sample_rate=sample_rate, steps=steps, accountant=dp_cfg.accountant))


def group_bound(epsilon: float, delta: float, group: int) -> dict:
    """(eps, delta)-DP per chunk read as a guarantee for `group` chunks (one user's); delta_g >= 1 is vacuous."""
    log_delta = math.log(group) + (group - 1) * epsilon + math.log(delta)
    group_delta = math.exp(log_delta) if log_delta < 0 else None
    return {"epsilon": group * epsilon, "delta": group_delta, "vacuous": group_delta is None}


def chunks_per_user(user_ids) -> dict:
    counts = Counter(user_ids)
    return {"users": len(counts), "max": max(counts.values(), default=0),
            "mean": sum(counts.values()) / max(len(counts), 1)}
