"""What the lessons share: a notebook's own small measurements, compared honestly.

:func:`timed` (sized by the run profile), :func:`us`, :func:`compare` (with the break-even) and
:func:`native_output` (notebook 07's own helpers are beside it: notebooks/deployment/).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import bench, profiles, results
from ..util.stdio import native_output

__all__ = ["Comparison", "compare", "native_output", "timed", "us"]


def timed(fn: Callable[[], object], label: str = "") -> bench.Measurement:
    """Time ``fn`` (returning only when its work is done) with :func:`labkit.bench.measure`,
    sized by the run profile; the first call (tracing, compiling) is timed apart."""
    p = profiles.current()
    sizes = (p.warmup, p.min_repeats, p.min_time_s, p.max_repeats)
    return bench.measure(fn, *sizes, images_per_call=1, label=label)


@dataclass(frozen=True)
class Comparison:
    """How many times as fast ``fast`` ran as ``slow`` (> 1: faster), its interval (its
    ``reading``: ``"faster"``, ``"slower"`` or ``"cannot tell"``), why either side is invalid
    (``problems``, empty when both are valid), and the calls after which ``fast`` has paid back
    its slower first call (``break_even_calls``, :func:`labkit.results.break_even`; inf: never)."""

    fast: str
    slow: str
    estimate: results.Estimate
    problems: tuple[str, ...]
    break_even_calls: float

    @property
    def valid(self) -> bool:
        return not self.problems

    def sentence(self) -> str:
        """What the run showed, in words, with the ratio, its interval and the verdict."""
        fast, slow, est = self.fast, self.slow, self.estimate
        said = {
            "faster": f"{fast} ran {est} as fast as {slow}",
            "slower": f"{fast} ran slower than {slow}: {est} its speed",
            "cannot tell": f"this run cannot tell {fast} from {slow} ({est}: the interval holds 1)",
        }[est.reading]
        return f"{said}; " + ("valid" if self.valid else f"INVALID ({'; '.join(self.problems)})")


def compare(fast: bench.Measurement, slow: bench.Measurement, threads: int = 1) -> Comparison:
    """How many times as fast ``fast`` ran as ``slow``, with :func:`labkit.results.ratio`'s
    interval and each side's verdict (``threads``: the CPUs the measured work used)."""
    if not all(isinstance(m, bench.Measurement) for m in (fast, slow)):
        raise TypeError("compare takes two labkit.bench.Measurement (from lessons.timed)")
    sides = [{**m.as_dict(), "batch_size": 1} for m in (fast, slow)]  # one call per side
    problems = tuple(
        f"{m.label or name}: {why}"
        for name, m in (("fast", fast), ("slow", slow))
        for why in m.judge(threads)
    )
    estimate, calls = results.ratio(*sides), results.break_even(*sides).calls
    return Comparison(fast.label or "fast", slow.label or "slow", estimate, problems, calls)


def us(m: bench.Measurement, per: int = 1) -> str:
    """``"12.3 µs ± 0.4"``: median and interquartile range of ``m``, divided by ``per``."""
    if per < 1:
        raise ValueError(f"per must be a positive count of operations, got {per}")
    return f"{m.median_s * 1e6 / per:,.1f} µs ± {m.iqr_s * 1e6 / per:,.1f}"
