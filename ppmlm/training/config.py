"""The `train` section: optimisation, sequence length, logging, speed on GPUs (docs/training.md), and DP-SGD
(`train.dp`, ppmlm/training/dp/config.py)."""
from __future__ import annotations

from dataclasses import dataclass

from ppmlm.errors import ConfigError
from ppmlm.section import Section, checked, choice, flag, integer, number, section
from ppmlm.training.dp.config import DPConfig

TRACKERS = (None, "tensorboard", "wandb", "mlflow", "comet_ml", "aim", "clearml", "dvclive")
MIXED_PRECISIONS = (None, "no", "bf16", "fp16")  # null: what `accelerate launch --mixed_precision` (or its config) says


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
    gradient_accumulation_steps: int = checked(integer(minimum=1))  # batches per optimizer step, non-private runs
    mixed_precision: str | None = checked(choice(*MIXED_PRECISIONS))
    fused_optimizer: str | bool = checked(choice("auto", True, False))  # auto: fused AdamW kernels on CUDA only
    compile: bool = checked(flag())  # torch.compile the encoder
    packing: bool = checked(flag())  # whole chunks packed into rows of max_length tokens (ppmlm/training/packing.py)
    dp: DPConfig = checked(section(DPConfig))

    def check_together(self, prefix: str) -> None:
        if self.dp.enabled and self.max_grad_norm:
            raise ConfigError(f"{prefix}.max_grad_norm={self.max_grad_norm}: it clips the batch gradient of non-private "
                              f"runs; DP-SGD clips each chunk's gradient at {prefix}.dp.max_grad_norm: leave it null")
        if self.dp.enabled and self.gradient_accumulation_steps > 1:
            raise ConfigError(f"{prefix}.gradient_accumulation_steps={self.gradient_accumulation_steps}: DP-SGD's logical "
                              f"batch is already {prefix}.batch_size, split into passes of {prefix}.dp.physical_batch_size "
                              "chunks with the noise added once per logical batch; leave it 1 and set those two")
        if self.dp.enabled and self.mixed_precision in ("bf16", "fp16"):
            raise ConfigError(f"{prefix}.mixed_precision={self.mixed_precision}: DP-SGD runs in full precision (Opacus's "
                              "per-chunk gradients and norms); leave it null or no")
        if self.dp.enabled and self.packing:
            raise ConfigError(f"{prefix}.packing=true: a packed row holds several chunks, often of several users, and "
                              "DP-SGD clips each row's gradient as one unit of privacy: leave it false")
        if self.dp.enabled and self.compile:
            raise ConfigError(f"{prefix}.compile=true: Opacus's per-chunk hooks do not run under torch.compile; DP-SGD "
                              "runs eager: leave it false")
