"""The audit's ROC figures and metric module against scikit-learn and against the closed form of two Gaussians."""
import math

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import f1_score, roc_auc_score
from sklearn.metrics import roc_curve as sklearn_roc_curve

from ppmlm.audit.attacks import tpr_text
from ppmlm.audit.identifiers import leak_share
from ppmlm.audit.metrics import load_metric
from ppmlm.audit.roc import Ranking, bootstrap_weights, curve_figures, non_members_needed, roc_curve, roc_figures

LEVELS = (0.001, 0.01, 0.1)


def figures(scores, labels, levels=LEVELS):
    fpr, tpr, _ = roc_curve(scores, labels)
    return curve_figures(fpr, tpr, levels)


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


def test_figures_match_scikit_learn(tied_scores):
    scores, labels = tied_scores
    expected_fpr, expected_tpr, _ = sklearn_roc_curve(labels, scores, drop_intermediate=False)
    got = figures(scores, labels)
    assert got["auc"] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    for level in LEVELS:
        assert got[str(level)] == pytest.approx(expected_tpr[expected_fpr <= level].max(), abs=1e-12)
    assert got["advantage"] == pytest.approx((expected_tpr - expected_fpr).max(), abs=1e-12)


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
    got = figures(scores, labels)
    assert got["auc"] == pytest.approx(area, abs=5 * auc_se)

    for level in LEVELS:
        z = norm.ppf(1 - level)
        expected = 1 - norm.cdf(z - 1)
        # TPR's own binomial noise plus the noise of the threshold, the (1 - t) quantile of the non-members.
        slope = norm.pdf(z - 1) / norm.pdf(z)
        se = math.sqrt(expected * (1 - expected) / n + slope**2 * level * (1 - level) / n)
        assert got[str(level)] == pytest.approx(expected, abs=5 * se + 1 / n), level

    best = 2 * norm.cdf(0.5) - 1
    assert got["advantage"] == pytest.approx(best, abs=5 / math.sqrt(n))


def test_edges_of_the_curve():
    assert figures([3.0, 2.0, 1.0, 0.0], [1, 1, 0, 0]) == {"auc": 1.0, "0.001": 1.0, "0.01": 1.0, "0.1": 1.0, "advantage": 1.0}
    assert figures([1.0, 1.0, 1.0, 1.0], [1, 0, 1, 0]) == {"auc": 0.5, "0.001": 0.0, "0.01": 0.0, "0.1": 0.0, "advantage": 0.0}
    with pytest.raises(ValueError, match="members and non-members"):
        roc_curve([0.1, 0.2], [1, 1])
    with pytest.raises(ValueError, match="finite"):
        roc_curve([np.nan, 0.2], [1, 0])


def test_masked_word_accuracy_counts_whole_words():
    metric = load_metric("masked_word_accuracy")
    result = metric.compute(predictions=[[5, 6], [7], [8, 9]], references=[[5, 6], [7], [8, 1]])
    assert result == {"masked_word_accuracy": pytest.approx(2 / 3), "words": 3}
    with pytest.raises(ValueError, match="subwords"):
        metric.compute(predictions=[[5]], references=[[5, 6]])
    with pytest.raises(ValueError, match="unknown metric 'roc_auc'"):
        load_metric("roc_auc")


def test_classifier_metrics_are_scikit_learns():
    predictions, references = [0, 1, 1, 2, 2, 0], [0, 1, 2, 2, 2, 1]
    assert load_metric("f1_macro").compute(predictions=predictions, references=references) == {
        "macro_f1": pytest.approx(f1_score(references, predictions, average="macro"), abs=1e-12)}
    assert load_metric("accuracy").compute(predictions=predictions, references=references) == {"accuracy": pytest.approx(4 / 6)}


def test_weighted_curves_with_unit_weights_are_the_curve(tied_scores):
    scores, labels = tied_scores
    fpr, tpr, _ = roc_curve(scores, labels)
    batch_fpr, batch_tpr = Ranking(scores, labels).curves(np.ones((2, len(scores))))
    np.testing.assert_array_equal(batch_fpr[1], fpr)
    np.testing.assert_array_equal(batch_tpr[0], tpr)
    result = roc_figures(scores, labels, np.arange(len(scores)), LEVELS, 200, 0.95, seed=0)
    assert result["auc"] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert result["tpr_at_fpr"]["0.1"] == figures(scores, labels)["0.1"]
    assert result["auc_ci"][0] < result["auc"] < result["auc_ci"][1]
    assert result == roc_figures(scores, labels, np.arange(len(scores)), LEVELS, 200, 0.95, seed=0)  # seeded


def test_unresolved_levels_are_null_with_the_reason():
    """With 50 non-members, FPR 1% and 0.1% cannot be resolved (they need 100 and 1000): no number, a reason."""
    rng = np.random.default_rng(3)
    labels = np.r_[np.ones(40, dtype=int), np.zeros(50, dtype=int)]
    figures = roc_figures(rng.normal(labels, 1.0), labels, np.arange(90), LEVELS, 100, 0.95, seed=1)
    assert figures["tpr_at_fpr"]["0.001"] is None and figures["tpr_at_fpr"]["0.01"] is None
    assert figures["tpr_at_fpr_ci"]["0.01"] is None and figures["tpr_at_fpr"]["0.1"] is not None
    assert (figures["unresolved"]["0.01"]["needs_non_members"] == 100
            and "50 non-members" in figures["unresolved"]["0.01"]["reason"])
    assert set(figures["unresolved"]) == {"0.001", "0.01"}
    assert tpr_text(figures, "0.001") == "not resolved (needs ≥ 1000 non-members)"
    assert non_members_needed(0.1) == 10 and non_members_needed(0.01) == 100


def test_cluster_bootstrap_draws_whole_users_per_class():
    groups = np.array(["a", "a", "b", "c", "c", "c", "d"])
    labels = np.array([1, 1, 1, 0, 0, 0, 0])
    weights = bootstrap_weights(groups, labels, 50, np.random.default_rng(0))
    assert (weights[:, 0] == weights[:, 1]).all() and (weights[:, 3] == weights[:, 5]).all()  # a user comes whole
    assert ((weights[:, 0] + weights[:, 2]) == 2).all() and ((weights[:, 3] + weights[:, 6]) == 2).all()
    renamed = np.array(["z", "z", "k", "b", "b", "b", "a"])  # other pseudonyms (another salt), same rows
    assert (bootstrap_weights(renamed, labels, 50, np.random.default_rng(0)) == weights).all()


def test_auc_intervals_cover_the_true_auc():
    """95% intervals over 200 seeded audits of N(0.8, 1) members against N(0, 1) non-members (60 each)
    contain the true AUC Phi(0.8 / sqrt 2) in 90 to 99% of them."""
    true_auc = norm.cdf(0.8 / math.sqrt(2))
    rng = np.random.default_rng(2026)
    labels = np.r_[np.ones(60, dtype=int), np.zeros(60, dtype=int)]
    covered = 0
    for trial in range(200):
        scores = rng.normal(0.8 * labels, 1.0)
        low, high = roc_figures(scores, labels, np.arange(120), (0.1,), 400, 0.95, seed=trial)["auc_ci"]
        covered += low <= true_auc <= high
    assert 180 <= covered <= 198, covered


def test_privacy_score_interval_is_exact_binomial():
    from scipy.stats import binomtest

    share = leak_share({f"w{i}" for i in range(40)}, {"w1", "w2"}, 0.95)
    low, high = binomtest(2, 40).proportion_ci(0.95, method="exact")
    assert share["score"] == pytest.approx(0.95) and share["score_ci"] == pytest.approx([1 - high, 1 - low])
    assert leak_share(set(), set(), 0.95)["score_ci"] is None
    assert leak_share({"a"}, set(), 0.95)["score_ci"][1] == 1.0
