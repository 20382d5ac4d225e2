"""What the audit prints: the verdict of the sharing policy with its reasons, and the identifiers a privacy score's
interval needs (the end-to-end lines are checked in test_training.py, test_audit.py and test_hf.py)."""
import pytest
from scipy.stats import binomtest

from ppmlm.audit.console import identifiers_for_threshold, interval_text, verdict_lines
from ppmlm.audit.policy import SharingPolicy


@pytest.mark.parametrize("threshold, confidence", [(0.99, 0.95), (0.95, 0.95), (0.99, 0.9)])
def test_the_identifiers_a_privacy_threshold_needs_are_the_fewest_that_clear_it(threshold, confidence):
    needed = identifiers_for_threshold(threshold, confidence)
    lowest = [1 - binomtest(0, n).proportion_ci(confidence, method="exact").high for n in (needed - 1, needed)]
    assert lowest[0] < threshold <= lowest[1]  # none predicted of `needed` clears it; of one fewer, not
    assert identifiers_for_threshold(1.0, confidence) is None


def test_a_verdict_without_anything_to_resolve_says_so():
    figures = {"epoch": 3, "audited": {"non_member_users": 5, "non_member_samples": 12}, "privacy": {}, "attacks": {}}
    unchecked = SharingPolicy(min_privacy_score=None, max_tpr_at_1pct_fpr=dict.fromkeys(SharingPolicy().max_tpr_at_1pct_fpr))
    assert verdict_lines(figures, unchecked) == ["verdict on epoch 3: passed: every check of the sharing policy passes"]
    failed = verdict_lines(figures)  # the defaults check figures this audit did not produce: failed, and said why
    assert failed[0].startswith("verdict on epoch 3: failed: privacy score not measured (required >= 0.99)")
    assert interval_text(0.2, None, 2) == "0.20 (no interval)" and interval_text(None, None, 2) == "n/a"


def test_an_inconclusive_privacy_score_asks_for_the_identifiers_it_needs():
    score = {"score": 1.0, "score_ci": [0.9623, 1.0], "identifiers": 96, "leaked": 0}
    figures = {"epoch": 4, "privacy": {**score, "direct": score, "indirect": score}, "attacks": {},
               "audited": {"non_member_users": 5, "non_member_samples": 15, "member_samples": 15,
                           "member_chunks_available": 15}}
    privacy_only = SharingPolicy(max_tpr_at_1pct_fpr=dict.fromkeys(SharingPolicy().max_tpr_at_1pct_fpr))
    lines = verdict_lines(figures, privacy_only)
    assert lines[0] == ("verdict on epoch 4: inconclusive: privacy score interval reaches below 0.99 (overall "
                        "[0.9623, 1.0000], direct [0.9623, 1.0000], indirect [0.9623, 1.0000])")
    assert "≥ 368 identifiers of each kind, none predicted; this audit had 96 (96 direct, 96 indirect)" in lines[2]
    assert not any("--max-tokens 0" in line for line in lines)  # every member chunk is audited already
    figures["audited"]["member_chunks_available"] = 40
    assert "more identifiers: 40 member chunks instead of 15" in verdict_lines(figures, privacy_only)[-1]
