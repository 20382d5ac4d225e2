"""The audit's metric modules against scikit-learn and against the closed form of two Gaussians."""
import math

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import roc_auc_score, roc_curve as sklearn_roc_curve

from ppmlm.audit.metrics import load_metric
from ppmlm.audit.roc import advantage, auc, roc_curve, tpr_at_fpr

LEVELS = (0.001, 0.01, 0.1)


def compute(name, scores, labels, **kwargs):
    return load_metric(name).compute(predictions=scores, references=labels, **kwargs)


@pytest.fixture(scope="module")
def tied_scores():
    """Scores with many ties (rounded), unbalanced classes: where ROC implementations disagree if wrong."""
    rng = np.random.default_rng(7)
    labels = (rng.random(3000) < 0.3).astype(int)
    scores = np.round(rng.normal(labels * 0.7, 1.0), 1)
    return scores, labels


def test_curve_matches_scikit_learn_point_for_point(tied_scores):
    scores, labels = tied_scores
    fpr, tpr, thresholds = roc_curve(scores, labels)
    expected_fpr, expected_tpr, expected_thresholds = sklearn_roc_curve(labels, scores, drop_intermediate=False)
    np.testing.assert_allclose(fpr, expected_fpr)
    np.testing.assert_allclose(tpr, expected_tpr)
    np.testing.assert_array_equal(thresholds[1:], expected_thresholds[1:])  # the first is +inf for both conventions


def test_modules_match_scikit_learn(tied_scores):
    scores, labels = tied_scores
    expected_fpr, expected_tpr, _ = sklearn_roc_curve(labels, scores, drop_intermediate=False)
    assert compute("roc_auc", scores, labels)["roc_auc"] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    got = compute("tpr_at_fpr", scores, labels, levels=LEVELS)["tpr_at_fpr"]
    for level in LEVELS:
        assert got[str(level)] == pytest.approx(expected_tpr[expected_fpr <= level].max(), abs=1e-12)
    assert compute("advantage", scores, labels)["advantage"] == pytest.approx((expected_tpr - expected_fpr).max(), abs=1e-12)


def test_gaussian_closed_form():
    """Members ~ N(1, 1), non-members ~ N(0, 1): AUC = Phi(1/sqrt 2), TPR at FPR t = 1 - Phi(Phi^-1(1 - t) - 1),
    best advantage = 2 Phi(1/2) - 1. Tolerances are 5 standard errors at this sample size."""
    n = 200_000
    rng = np.random.default_rng(0)
    scores = np.r_[rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)]
    labels = np.r_[np.ones(n, dtype=int), np.zeros(n, dtype=int)]

    area = norm.cdf(1 / math.sqrt(2))
    assert area == pytest.approx(0.7602, abs=1e-4)
    q1, q2 = area / (2 - area), 2 * area**2 / (1 + area)  # Hanley & McNeil's variance of the AUC
    auc_se = math.sqrt((area * (1 - area) + (n - 1) * (q1 - area**2) + (n - 1) * (q2 - area**2)) / n**2)
    assert compute("roc_auc", scores, labels)["roc_auc"] == pytest.approx(area, abs=5 * auc_se)

    got = compute("tpr_at_fpr", scores, labels, levels=LEVELS)["tpr_at_fpr"]
    for level in LEVELS:
        z = norm.ppf(1 - level)
        expected = 1 - norm.cdf(z - 1)
        # TPR's own binomial noise plus the noise of the threshold, the (1 - t) quantile of the non-members.
        slope = norm.pdf(z - 1) / norm.pdf(z)
        se = math.sqrt(expected * (1 - expected) / n + slope**2 * level * (1 - level) / n)
        assert got[str(level)] == pytest.approx(expected, abs=5 * se + 1 / n), level

    best = 2 * norm.cdf(0.5) - 1
    assert compute("advantage", scores, labels)["advantage"] == pytest.approx(best, abs=5 / math.sqrt(n))


def test_edges_of_the_curve():
    fpr, tpr, _ = roc_curve([3.0, 2.0, 1.0, 0.0], [1, 1, 0, 0])  # perfect separation
    assert auc(fpr, tpr) == 1.0 and advantage(fpr, tpr) == 1.0 and tpr_at_fpr(fpr, tpr, 0.001) == 1.0
    fpr, tpr, _ = roc_curve([1.0, 1.0, 1.0, 1.0], [1, 0, 1, 0])  # one threshold: blind
    assert auc(fpr, tpr) == 0.5 and advantage(fpr, tpr) == 0.0 and tpr_at_fpr(fpr, tpr, 0.1) == 0.0
    with pytest.raises(ValueError, match="members and non-members"):
        roc_curve([0.1, 0.2], [1, 1])
    with pytest.raises(ValueError, match="finite"):
        roc_curve([np.nan, 0.2], [1, 0])


def test_masked_word_accuracy_counts_whole_words():
    result = compute("masked_word_accuracy", [[5, 6], [7], [8, 9]], [[5, 6], [7], [8, 1]])
    assert result == {"masked_word_accuracy": pytest.approx(2 / 3), "words": 3}
    with pytest.raises(ValueError, match="subwords"):
        compute("masked_word_accuracy", [[5]], [[5, 6]])
