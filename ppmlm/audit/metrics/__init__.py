"""The metrics that are one number from predictions and references, as one local `evaluate` module
(`metrics.py` beside this file, one configuration per metric) loaded by path, offline: the audit's masked
whole-word accuracy and the downstream classifier's `f1_macro` and `accuracy`. The membership attacks' figures
are not here: they come with groups and bootstrap intervals from one ranking of the scores (ppmlm.audit.roc)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

METRICS = ("masked_word_accuracy", "f1_macro", "accuracy")


@lru_cache(maxsize=None)
def load_metric(name: str):
    """The `evaluate` metric `name` of this directory's module; kept in memory, so nothing is written per call."""
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(METRICS)}")
    import evaluate

    return evaluate.load(str(Path(__file__).parent), config_name=name, keep_in_memory=True)
