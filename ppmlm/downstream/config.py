"""The `classify` section (recipe=classify): the downstream classifier's labels, split and training."""
from __future__ import annotations

from dataclasses import dataclass

from ppmlm.section import Section, checked, integer, number, text


@dataclass(frozen=True)
class ClassifyConfig(Section):
    label_column: str = checked(text())
    label_names: str | None = checked(text(nullable=True))  # a CSV of (label, name) rows
    epochs: int = checked(integer(minimum=1))
    lr: float = checked(number(low=0, low_open=True))
    head_lr: float | None = checked(number(low=0, low_open=True, nullable=True))  # null: lr
    warmup_ratio: float = checked(number(low=0, high=1, high_open=True))
    weight_decay: float = checked(number(low=0))
    batch_size: int = checked(integer(minimum=1))
    max_length: int = checked(integer(minimum=8))
    trainable_layers: int = checked(integer(minimum=0))
    eval_fraction: float = checked(number(low=0, high=1, low_open=True, high_open=True))
    split_seed: int = checked(integer(minimum=0))
    train_documents: int | None = checked(integer(minimum=1, nullable=True))
    eval_documents: int | None = checked(integer(minimum=1, nullable=True))
    log_every: int = checked(integer(minimum=1))
