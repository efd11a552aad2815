"""What the lessons share: a notebook's own small measurements, compared honestly.

:func:`timed` (sized by the run profile), :func:`us`, :func:`compare` (a ratio with its interval
and both sides' verdicts, :class:`Comparison`), :func:`break_even_calls`, :func:`recorded_warnings`
and :func:`native_output`. Submodules: :mod:`.tracer` (notebook 01), :mod:`.graphs` and
:mod:`.deploy` (notebook 07). The lab's own results are the runner's (:mod:`labkit.runner`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

from .. import bench, profiles, results
from ..util.stdio import native_output

__all__ = [
    "Caught",
    "Comparison",
    "break_even_calls",
    "compare",
    "native_output",
    "recorded_warnings",
    "timed",
    "us",
]


def timed(
    fn: Callable[[], object], label: str = "", profile: profiles.Profile | None = None
) -> bench.Measurement:
    """Time ``fn`` (returning only when its work is done) with :func:`labkit.bench.measure`,
    sized by the profile; the first call (tracing, compiling) is timed apart."""
    p = profile or profiles.current()
    return bench.measure(
        fn,
        warmup=p.warmup,
        min_repeats=p.min_repeats,
        min_time_s=p.min_time_s,
        max_repeats=p.max_repeats,
        images_per_call=1,
        label=label,
    )


@dataclass(frozen=True)
class Comparison:
    """``fast`` against ``slow``: how many times as fast ``fast`` ran (``slow``'s time over
    ``fast``'s, > 1: ``fast`` is faster), its interval, and why either side is invalid."""

    fast: str
    slow: str
    estimate: results.Estimate
    problems: tuple[str, ...]  # empty: both measurements valid

    @property
    def value(self) -> float:
        return self.estimate.value

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def verdict(self) -> str:
        return "valid" if self.valid else "INVALID (" + "; ".join(self.problems) + ")"

    def direction(self) -> str:
        """``"faster"``, ``"slower"`` or ``"cannot tell"``: what the interval shows."""
        return self.estimate.reading

    def sentence(self) -> str:
        """What the run showed, in words, with the ratio, its interval and the verdict."""
        said = {
            "faster": f"{self.fast} ran {self.estimate} as fast as {self.slow}",
            "slower": f"{self.fast} ran slower than {self.slow}: {self.estimate} its speed",
            "cannot tell": f"this run cannot tell {self.fast} from {self.slow} "
            f"({self.estimate}: the interval holds 1)",
        }[self.direction()]
        return f"{said}; {self.verdict}"

    def __str__(self) -> str:
        return f"{self.fast} vs {self.slow}: {self.estimate}, {self.verdict}"


def compare(
    fast: bench.Measurement,
    slow: bench.Measurement,
    threads: int = 1,
    cpu_count: int | None = None,
) -> Comparison:
    """How many times as fast ``fast`` ran as ``slow``, with :func:`labkit.results.ratio`'s
    interval and each side's verdict (``threads``: the CPUs the measured work used)."""
    sides = []
    for m in (fast, slow):
        if not isinstance(m, bench.Measurement):
            raise TypeError(
                f"compare takes two labkit.bench.Measurement (from lessons.timed), "
                f"got {type(m).__name__}"
            )
        sides.append({"batch_size": 1, "median_s": m.median_s, "times_s": list(m.times_s)})
    problems = tuple(
        f"{m.label or name}: {why}"
        for name, m in (("fast", fast), ("slow", slow))
        for why in m.judge(threads, cpu_count)
    )
    return Comparison(fast.label or "fast", slow.label or "slow", results.ratio(*sides), problems)


def us(m: bench.Measurement, per: int = 1) -> str:
    """``"12.3 µs ± 0.4"``: median and interquartile range of ``m``, divided by ``per``."""
    if per < 1:
        raise ValueError(f"per must be a positive count of operations, got {per}")
    return f"{m.median_s * 1e6 / per:,.1f} µs ± {m.iqr_s * 1e6 / per:,.1f}"


def break_even_calls(
    first_call_s: float, eager_s: float, graph_s: float, eager_first_call_s: float = 0.0
) -> float:
    """Calls after which a graph mode has paid back its one-off cost (``inf``: never), by
    :func:`labkit.results.break_even` on two measurements taken in a notebook."""
    graph = {"first_call_s": first_call_s, "median_s": graph_s}
    eager = {"first_call_s": eager_first_call_s, "median_s": eager_s}
    return results.break_even(graph, eager).calls


@dataclass(frozen=True)
class Caught:
    """One warning: its category's name and the first line of its message."""

    category: str
    first_line: str

    def __str__(self) -> str:
        return f"{self.category}: {self.first_line}"


def recorded_warnings(fn: Callable[[], object]) -> tuple[object, list[Caught]]:
    """``(fn's result, every warning it emitted)``, each kept once, even those Python shows
    only once per place (a cell run twice still sees them)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    seen: list[Caught] = []
    for w in caught:
        lines = str(w.message).strip().splitlines()
        item = Caught(w.category.__name__, lines[0] if lines else "")
        if item not in seen:
            seen.append(item)
    return result, seen
