"""AdamW as a run configures it: the parameter groups of `objective.parameter_groups`, and fused kernels where
`train.fused_optimizer` asks for them (one kernel launch for all parameters instead of several per tensor: on a
GPU, a per-step overhead that small models at small batches are bound by)."""
from __future__ import annotations

import torch

from ppmlm.training.objective import parameter_groups


def use_fused(setting: str | bool, device: torch.device) -> bool:
    """`train.fused_optimizer`: auto fuses on CUDA only, so that CPU runs keep the update they always had; true
    fuses wherever torch has the kernel (CPU included since torch 2.4); false never does."""
    if setting == "auto":
        return device.type == "cuda"
    return bool(setting)


def adamw(objective, train, device: torch.device) -> torch.optim.AdamW:
    """The run's AdamW over `objective`'s trainable parameters; `train` is the run's TrainConfig."""
    fused = use_fused(train.fused_optimizer, device)
    return torch.optim.AdamW(parameter_groups(objective, train), weight_decay=train.weight_decay,
                             **({"fused": True} if fused else {}))
