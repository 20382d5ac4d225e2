"""bench/dp_utility.py's ratio of DP over the plain recipe is undefined, not a division error, where the plain recipe
predicts nothing."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import dp_utility  # noqa: E402


def test_ratio_over_seeds_is_the_mean_of_per_seed_ratios():
    mean, low, high = dp_utility.ratio_over_plain([0.30, 0.33, 0.36], [0.40, 0.44, 0.45])
    assert mean == pytest.approx((0.75 + 0.75 + 0.8) / 3, rel=1e-12, abs=1e-12)
    assert low < mean < high


def test_no_ratio_where_the_plain_recipe_predicts_nothing():
    assert dp_utility.ratio_over_plain([0.0, 0.1], [0.0, 0.2]) is None
