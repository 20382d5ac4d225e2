"""The ROC curve of a membership score, and the three figures the audit reads from it.

Convention everywhere in the audit: a higher score means "more likely a member", and label 1 is a member.
The curve keeps one point per distinct score (no interpolation, no dropped points), so a figure read from
it is one a real threshold achieves: TPR at FPR t is the best true-positive rate of a threshold whose
false-positive rate is at most t, never a value between two thresholds.
"""
from __future__ import annotations

import numpy as np


def roc_curve(scores, labels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fpr, tpr, thresholds), from (0, 0) at threshold +inf down to (1, 1); a point per distinct score.

    Same points as scikit-learn's `roc_curve(labels, scores, drop_intermediate=False)`.
    """
    scores = np.asarray(scores, dtype=np.float64).ravel()
    labels = np.asarray(labels).ravel().astype(bool)
    if scores.shape != labels.shape:
        raise ValueError(f"{scores.size} scores but {labels.size} labels")
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite")
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if positives == 0 or negatives == 0:
        raise ValueError("a ROC curve needs members and non-members")
    order = np.argsort(-scores, kind="mergesort")
    scores, labels = scores[order], labels[order]
    last_of_each_score = np.r_[np.flatnonzero(np.diff(scores)), scores.size - 1]
    true_positives = np.cumsum(labels)[last_of_each_score]
    false_positives = last_of_each_score + 1 - true_positives
    fpr = np.r_[0.0, false_positives / negatives]
    tpr = np.r_[0.0, true_positives / positives]
    thresholds = np.r_[np.inf, scores[last_of_each_score]]
    return fpr, tpr, thresholds


def auc(fpr: np.ndarray, tpr: np.ndarray) -> float:
    """Area under the curve (trapezoids): the chance that a random member outscores a random
    non-member, ties counting one half."""
    return float(np.trapezoid(tpr, fpr))


def tpr_at_fpr(fpr: np.ndarray, tpr: np.ndarray, level: float) -> float:
    """Highest TPR among thresholds with FPR <= level (the curve starts at (0, 0), so it always exists)."""
    return float(tpr[fpr <= level].max())


def advantage(fpr: np.ndarray, tpr: np.ndarray) -> float:
    """Best membership advantage max(TPR - FPR) (Yeom et al.): 0 for a blind attacker, 1 for a perfect one."""
    return float((tpr - fpr).max())
