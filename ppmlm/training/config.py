"""The `train` section: optimisation, sequence length, logging, and DP-SGD (`train.dp`, ppmlm/training/dp/config.py)."""
from __future__ import annotations

from dataclasses import dataclass

from ppmlm.errors import ConfigError
from ppmlm.section import Section, checked, choice, integer, number, section
from ppmlm.training.dp.config import DPConfig

TRACKERS = (None, "tensorboard", "wandb", "mlflow", "comet_ml", "aim", "clearml", "dvclive")


@dataclass(frozen=True)
class TrainConfig(Section):
    epochs: int = checked(integer(minimum=1))
    batch_size: int = checked(integer(minimum=1))
    max_length: int = checked(integer(minimum=8))
    lr: float = checked(number(low=0, low_open=True))
    head_lr: float | None = checked(number(low=0, low_open=True, nullable=True))  # null: lr
    weight_decay: float = checked(number(low=0))
    warmup_ratio: float = checked(number(low=0, high=1, high_open=True))
    max_grad_norm: float | None = checked(number(low=0, low_open=True, nullable=True))  # non-private runs only
    log_every: int = checked(integer(minimum=1))
    tracker: str | None = checked(choice(*TRACKERS))
    num_workers: int = checked(integer(minimum=0))
    dp: DPConfig = checked(section(DPConfig))

    def check_together(self, prefix: str) -> None:
        if self.dp.enabled and self.max_grad_norm:
            raise ConfigError(f"{prefix}.max_grad_norm={self.max_grad_norm}: it clips the batch gradient of non-private "
                              f"runs; DP-SGD clips each chunk's gradient at {prefix}.dp.max_grad_norm: leave it null")
