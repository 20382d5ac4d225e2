"""The project's metrics as local `evaluate` modules, one directory each, loaded by path (offline): the audit's,
and the downstream classifier's (`f1_macro`, `accuracy`)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

METRICS = ("roc_auc", "tpr_at_fpr", "advantage", "masked_word_accuracy", "f1_macro", "accuracy")


@lru_cache(maxsize=None)
def load_metric(name: str):
    """The `evaluate` module `name` from this directory; kept in memory, so nothing is written per call."""
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(METRICS)}")
    import evaluate

    return evaluate.load(str(Path(__file__).parent / name), keep_in_memory=True)
