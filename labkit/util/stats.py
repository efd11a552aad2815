"""Order statistics: one quantile for all of labkit (numpy's linear interpolation), and the one
scaling efficiency.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["iqr", "median", "quantile", "quartiles", "scaling_efficiency"]


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values``: ``numpy.quantile`` (linear; q outside 0..1 refused)."""
    if not len(values):
        raise ValueError("quantile of no values: time at least one call")
    return float(np.quantile(values, q))


def median(values: Sequence[float]) -> float:
    return quantile(values, 0.5)


def iqr(values: Sequence[float]) -> float:
    """Interquartile range: the spread of the middle half of the values."""
    return quantile(values, 0.75) - quantile(values, 0.25)


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """The first quartile, the median and the third quartile."""
    return quantile(values, 0.25), quantile(values, 0.5), quantile(values, 0.75)


def scaling_efficiency(many: float, one: float, n: int) -> float:
    """The throughput of ``n`` devices or workers together (``many``) over ``n`` times the
    throughput of one (``one``): 1.0 is linear scaling."""
    return many / (n * one)
