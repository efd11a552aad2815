"""labkit.util.numeric: the lab's one agreement measure, max |got - ref| / max |ref|."""

import math

from labkit.util import numeric

import numpy as np
import pytest


def test_max_rel_diff_is_the_largest_difference_over_the_largest_reference_value():
    ref = np.array([[1.0, -4.0], [2.0, 0.5]])
    got = ref + np.array([[0.0, 0.0], [0.2, -0.1]])
    assert numeric.max_rel_diff(got, ref) == pytest.approx(0.2 / 4.0)
    assert numeric.max_rel_diff(ref, ref) == 0.0
    # float32 against float64 is measured in float64, not in the coarser type
    assert numeric.max_rel_diff(np.float32(1 / 3), 1 / 3) == pytest.approx(
        abs(float(np.float32(1 / 3)) - 1 / 3) * 3, rel=1e-6
    )


def test_a_zero_reference_gives_the_difference_itself():
    zeros = np.zeros(3)
    assert numeric.max_rel_diff(zeros, zeros) == 0.0
    assert numeric.max_rel_diff(zeros + 0.5, zeros) == 0.5
    assert numeric.max_rel_diff(np.array([]), np.array([])) == 0.0


def test_nan_poisons_the_measure_unless_left_out():
    ref = np.array([1.0, np.nan, 4.0])
    got = np.array([1.5, np.nan, 4.0])
    assert math.isnan(numeric.max_rel_diff(got, ref))
    d = numeric.difference(got, ref, skip_nan=True)
    assert (d.largest, d.scale) == (0.5, 4.0)
    assert d.relative() == pytest.approx(0.125)
    assert d.exceeds(0.1) and not d.exceeds(0.2)
    every = numeric.difference([np.nan], [np.nan], skip_nan=True)  # nothing left to compare
    assert (every.largest, every.scale) == (0.0, 0.0) and not every.exceeds(1e-3, floor=1e-6)
    # the floor keeps a tiny reference from turning rounding into a failure
    tiny = numeric.difference([1e-9], [0.0])
    assert tiny.exceeds(1e-3) and not tiny.exceeds(1e-3, floor=1e-6)
