"""The `train.dp` section: DP-SGD's budget, clipping, accountant and Opacus settings.

A new key is one field with its check (`checked(...)`); a check of several keys goes in `check_together`.
Every key is checked whether DP is enabled or not, so a run that turns it on later meets no surprise.
"""
from __future__ import annotations

from dataclasses import dataclass

from ppmlm.errors import ConfigError
from ppmlm.section import Section, checked, choice, flag, integer, number

ACCOUNTANT_NAMES = ("rdp", "prv")
# hooks: per-chunk gradients, clipped and summed; ghost: per-chunk norms without the gradients (no trained tied
# embeddings); fast: Opacus's fast gradient clipping, per-chunk norms from per-chunk gradients freed layer by
# layer, tied embeddings accepted. ghost and fast clip by a second backward pass (docs/dp.md).
GRAD_SAMPLE_MODES = ("hooks", "ghost", "fast")
NORM_ONLY_MODES = ("ghost", "fast")  # clip from per-chunk norms: never hold the per-chunk gradients to sum
# what DP-SGD trains: all: every parameter (but the word embeddings when frozen); bias: the bias terms only, LayerNorm's
# included (DP-BiTFiT, Bu et al. 2022); bias+norm: those and the LayerNorm gains. The noise has one dimension per trained
# parameter while a user moves the sum by at most C: on a cohort of hundreds, only a few tens of thousands of parameters
# leave the private steps a signal above the noise (docs/dp.md "What DP-SGD trains").
TRAINED_PARAMETERS = ("all", "bias", "bias+norm")
# below it epsilon is in the tens at any sampling rate (a guarantee in name only) and Opacus's PRV accountant overflows
# (it tried to allocate petabytes at 1e-6): a run without noise is train.dp.enabled=false
MIN_NOISE_MULTIPLIER = 0.3


@dataclass(frozen=True)
class DPConfig(Section):
    enabled: bool = checked(flag())
    target_epsilon: float | None = checked(number(low=0, low_open=True, nullable=True))  # unless noise_multiplier
    noise_multiplier: float | None = checked(number(low=MIN_NOISE_MULTIPLIER, nullable=True))
    delta: float = checked(number(low=0, high=1, low_open=True, high_open=True))
    max_grad_norm: float = checked(number(low=0, low_open=True))  # C: each chunk's gradient is clipped to it
    accountant: str = checked(choice(*ACCOUNTANT_NAMES))
    physical_batch_size: int | None = checked(integer(minimum=1, nullable=True))
    grad_sample_mode: str = checked(choice(*GRAD_SAMPLE_MODES))
    freeze_embeddings: bool = checked(flag())
    parameters: str = checked(choice(*TRAINED_PARAMETERS))
    max_chunks_per_user: int | None = checked(integer(minimum=1, nullable=True))
    secure_mode: bool = checked(flag())
    unit: str = checked(choice("chunk", "user"))  # of privacy: a chunk, or a user (patient-level DP, docs/dp.md)

    def check_together(self, prefix: str) -> None:
        if self.unit == "user" and self.grad_sample_mode in NORM_ONLY_MODES:
            raise ConfigError(f"{prefix}.grad_sample_mode={self.grad_sample_mode}: unit=user clips each user's summed "
                              f"gradient, whose norm {self.grad_sample_mode} clipping cannot give (it keeps per-chunk "
                              "norms only, never the gradients to sum); use hooks")
        if self.noise_multiplier is None and self.target_epsilon is None:
            raise ConfigError(f"{prefix}.target_epsilon=null: expected a number above 0 (or set {prefix}.noise_multiplier)")
