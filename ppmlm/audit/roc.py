"""The ROC curve of a membership score, and the three figures the audit reads from it.

Convention everywhere in the audit: a higher score means "more likely a member", and label 1 is a member.
The curve keeps one point per distinct score (no interpolation, no dropped points), so a figure read from
it is one a real threshold achieves: TPR at FPR t is the best true-positive rate of a threshold whose
false-positive rate is at most t, never a value between two thresholds.

Every figure gets a percentile-bootstrap interval over users (a drawn user brings all their samples, so
sample-level intervals account for samples of one user being alike), members and non-members resampled
apart; a TPR's interval is at least the exact binomial interval over the members, so a small sample whose
resamples all agree does not read as certain. A TPR at an FPR level below 1/n for n non-members is not a
measurement and is reported as None.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.stats import binomtest


class Ranking:
    """Scores sorted once, highest first, with the last row of each distinct score: every ROC curve of the
    audit (the measured one and every bootstrap resample's) is read from it, never by sorting again."""

    def __init__(self, scores, labels):
        scores = np.asarray(scores, dtype=np.float64).ravel()
        labels = np.asarray(labels).ravel().astype(bool)
        self.order = np.argsort(-scores, kind="mergesort")
        self.labels = labels[self.order]
        sorted_scores = scores[self.order]
        self.last_of_each_score = np.r_[np.flatnonzero(np.diff(sorted_scores)), scores.size - 1]
        self.thresholds = np.r_[np.inf, sorted_scores[self.last_of_each_score]]

    def curves(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(fpr, tpr), each weightings x (distinct scores + 1), under many weightings of the rows at once
        (`weights`: weightings x rows, each row's count, in the rows' original order). A bootstrap resample is
        a weighting; unit weights give the measured curve."""
        weights = np.asarray(weights, dtype=np.float64)[:, self.order]
        true_positives = np.cumsum(weights * self.labels, axis=1)[:, self.last_of_each_score]
        false_positives = np.cumsum(weights * ~self.labels, axis=1)[:, self.last_of_each_score]
        zero = np.zeros((len(weights), 1))
        return (np.hstack([zero, false_positives / false_positives[:, -1:]]),
                np.hstack([zero, true_positives / true_positives[:, -1:]]))


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
    if labels.all() or not labels.any():
        raise ValueError("a ROC curve needs members and non-members")
    ranking = Ranking(scores, labels)
    fpr, tpr = ranking.curves(np.ones((1, labels.size)))
    return fpr[0], tpr[0], ranking.thresholds


def curve_figures(fpr: np.ndarray, tpr: np.ndarray, levels) -> dict[str, np.ndarray]:
    """The figures of a curve (1-D fpr and tpr) or of each curve of `Ranking.curves` (one value per curve):
    - auc: area under the curve (trapezoids), the chance that a random member outscores a random non-member,
      ties counting one half;
    - one key per FPR level (`str(level)`): the highest TPR among thresholds with FPR <= level (the curve
      starts at (0, 0), so there is always one);
    - advantage: the best membership advantage max(TPR - FPR) (Yeom et al.), 0 for a blind attacker."""
    return {"auc": np.trapezoid(tpr, fpr, axis=-1),
            **{str(level): np.where(fpr <= level, tpr, 0.0).max(axis=-1) for level in levels},
            "advantage": (tpr - fpr).max(axis=-1)}


def non_members_needed(level: float) -> int:
    """Non-members an FPR level needs to be resolved: with fewer than 1/level, one false positive already
    exceeds it, so the TPR there is read at zero false positives, not measured at the level."""
    return math.ceil(1 / level - 1e-9)


def bootstrap_weights(groups, labels, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Resamples x rows counts of a stratified cluster bootstrap: the groups (users) of each class are drawn
    with replacement, as many as the class has, and a drawn group brings all its rows. Class sizes stay
    fixed, so every resample has members and non-members. Groups are numbered in the order they first appear
    in the rows, not by their names: the names are the audit folder's salted pseudonyms, and the draw must not
    change with the salt."""
    _, first_row, inverse = np.unique(np.asarray(groups), return_index=True, return_inverse=True)
    group_of_row = np.argsort(np.argsort(first_row))[inverse]
    group_labels = np.zeros(group_of_row.max() + 1, dtype=bool)
    group_labels[group_of_row] = np.asarray(labels).astype(bool)
    counts = np.zeros((resamples, len(group_labels)))
    for label in (True, False):
        members = np.flatnonzero(group_labels == label)
        counts[:, members] = rng.multinomial(len(members), np.full(len(members), 1 / len(members)), size=resamples)
    return counts[:, group_of_row]


def roc_figures(scores, labels, groups, levels, resamples: int, confidence: float, seed: int) -> dict:
    """The figures of one ROC curve with percentile-bootstrap intervals (`resamples` stratified resamples of
    the `groups`, seeded); a TPR at an FPR level that fewer than 1/level non-members cannot resolve is None,
    with the reason, never a number."""
    labels = np.asarray(labels).astype(bool)
    members, non_members = int(labels.sum()), int((~labels).sum())
    ranking = Ranking(scores, labels)
    measured = curve_figures(*ranking.curves(np.ones((1, len(labels)))), levels)
    point = {name: float(values[0]) for name, values in measured.items()}
    rng, draws = np.random.default_rng(seed), []
    for block in range(0, resamples, 250):  # bounded memory: 250 resamples x rows at a time
        weights = bootstrap_weights(groups, labels, min(250, resamples - block), rng)
        draws.append(curve_figures(*ranking.curves(weights), levels))
    tail = (1 - confidence) / 2

    def interval(name: str) -> list[float] | None:
        if not draws:
            return None
        low, high = np.quantile(np.concatenate([d[name] for d in draws]), [tail, 1 - tail])
        return [float(low), float(high)]

    def tpr_interval(key: str) -> list[float] | None:
        """The bootstrap interval widened to at least the exact binomial one over the members: a small sample
        whose resamples all agree (every member found, or none) must not read as certain."""
        found = round(point[key] * members)
        low, high = binomtest(found, members).proportion_ci(confidence, method="exact")
        boot = interval(key) or [float(low), float(high)]
        return [min(boot[0], float(low)), max(boot[1], float(high))]

    resolved = {str(level): non_members >= non_members_needed(level) for level in levels}
    return {
        "auc": point["auc"], "auc_ci": interval("auc"),
        "tpr_at_fpr": {key: point[key] if ok else None for key, ok in resolved.items()},
        "tpr_at_fpr_ci": {key: tpr_interval(key) if ok else None for key, ok in resolved.items()},
        "unresolved": {str(level): {"needs_non_members": non_members_needed(level),
                                    "reason": f"{non_members} non-members cannot resolve an FPR of {level:g}: "
                                              f"it needs at least {non_members_needed(level)}"}
                       for level in levels if not resolved[str(level)]},
        "advantage": point["advantage"], "advantage_ci": interval("advantage"),
        "members": members, "non_members": non_members,
    }
