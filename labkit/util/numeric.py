"""The lab's one agreement measure, ``max |got - ref| / max |ref|`` in float64 (each caller has
its own bound), and the share of inputs whose top class agrees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Difference", "difference", "max_rel_diff", "top1_agreement"]


@dataclass(frozen=True)
class Difference:
    """The largest ``|got - ref|`` and the largest ``|ref|`` (both 0 for empty arrays)."""

    largest: float
    scale: float

    def relative(self) -> float:
        """``largest / scale``; ``largest`` itself when the scale is 0."""
        return self.largest / self.scale if self.scale else self.largest

    def exceeds(self, rtol: float, floor: float = 0.0) -> bool:
        """Whether ``largest`` is more than ``rtol`` times ``max(scale, floor)``."""
        return self.largest > rtol * max(self.scale, floor)


def difference(got, ref, skip_nan: bool = False) -> Difference:
    """The :class:`Difference` of ``got`` from ``ref``, in float64. A NaN on either side makes
    both NaN, unless ``skip_nan``: then the places where either side is NaN are left out."""
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    diff = np.abs(got - ref)
    if skip_nan:
        keep = ~(np.isnan(got) | np.isnan(ref))
        diff, ref = diff[keep], np.broadcast_to(ref, keep.shape)[keep]
    return Difference(float(diff.max(initial=0.0)), float(np.abs(ref).max(initial=0.0)))


def max_rel_diff(got, ref) -> float:
    """The largest ``|got - ref|`` divided by the largest ``|ref|``; the largest difference
    itself when the scale is 0 (0 when both are zero)."""
    return difference(got, ref).relative()


def top1_agreement(reference, other) -> float:
    """The share of rows (inputs) whose largest value (top class) is in the same column in
    ``other`` as in ``reference`` (two batch x classes arrays of the same shape)."""
    reference, other = np.asarray(reference), np.asarray(other)
    return float(np.mean(reference.argmax(1) == other.argmax(1)))
