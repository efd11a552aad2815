"""What a lesson shows a learner: the helpers two notebooks share, and what a lesson displays.

For: a notebook's own small measurements and demonstrations, the same way in every notebook.

- :func:`timed`: time a zero-argument callable with :func:`labkit.bench.measure`, sized by the
  run profile (``LABKIT_PROFILE``), so every notebook measures the same way;
- :func:`us`: a measurement as "median ± IQR" in microseconds (or per operation);
- :func:`compare`: how many times as fast one measurement ran as another, with its bootstrap
  interval and both sides' validity verdict (:class:`Comparison`), and a sentence chosen from
  them, so a lesson never states a direction its run did not show;
- :func:`break_even_calls`: how many calls pay back a graph mode's one-off compile cost;
- :func:`recorded_warnings`: run a callable and keep the warnings it emits (category, first line),
  for showing and asserting deprecation and tracer warnings in a notebook;
- :func:`native_output`: run a callable and capture what native (C/C++) code writes to standard
  output or error, such as MindSpore's graph-mode ``print``, which ``redirect_stdout`` cannot see
  (defined in :mod:`labkit.util.stdio`, which the framework packages use too);
- :func:`show`: the source of a helper, displayed, so a learner can read what it does.

Its modules: :mod:`.tracer` (a tracer small enough to read in one screen, notebook 01),
:mod:`.graphs` (a lesson's rows as a Markdown table, notebook 07), :mod:`.deploy` (the
deployment formats as data, artefact sizes, logit agreement, a record for a path timed in the
notebook; notebook 07).

Not for: measuring what the lab reports as its results (the runner times each cell in a process
of its own, :mod:`labkit.runner`; the timing primitives are :mod:`labkit.bench`), nor anything
a framework package needs (that is :mod:`labkit.frameworks._kit`: nothing here is imported by
a framework).
"""

from __future__ import annotations

import inspect
import math
import re
import sys
import textwrap
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
    "show",
    "timed",
    "us",
]


def timed(
    fn: Callable[[], object], label: str = "", profile: profiles.Profile | None = None
) -> bench.Measurement:
    """Time ``fn`` (which must return only when its work is done) as the profile says.

    The first call is timed apart (tracing/compilation shows up there), then ``profile.warmup``
    untimed calls, then at least ``min_repeats`` samples and ``min_time_s`` seconds of timed
    calls (a call too short for that within ``max_repeats`` samples is timed in blocks:
    :func:`labkit.bench.measure`).
    """
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
        """``"faster"``, ``"slower"`` or ``"no difference"``: what the interval shows."""
        if not self.estimate.significant:
            return "no difference"
        return "faster" if self.value > 1 else "slower"

    def sentence(self) -> str:
        """What the run showed, in words, with the ratio, its interval and the verdict."""
        said = {
            "faster": f"{self.fast} ran {self.estimate} as fast as {self.slow}",
            "slower": f"{self.fast} ran slower than {self.slow}: {self.estimate} its speed",
            "no difference": f"this run cannot tell {self.fast} from {self.slow} "
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
    """How many times as fast ``fast`` ran as ``slow``: the ratio of their median times with
    :func:`labkit.results.compare.ratio`'s 95% bootstrap interval from the raw times, and each
    side's validity verdict (:meth:`labkit.bench.Measurement.judge`; ``threads``: the CPUs the
    measured work used)."""
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
    """Calls after which a graph mode has paid back its one-off cost (``inf``: never).

    The extra one-off cost is the graph's first call (trace + compile + run) minus eager's first
    call; each later call saves ``eager_s - graph_s`` (both steady-state medians). 0 when the
    graph mode is not slower to start. This is :func:`labkit.results.break_even` (the lab's one
    formula) on two measurements taken in a notebook.
    """
    for name, value in (
        ("first_call_s", first_call_s),
        ("eager_s", eager_s),
        ("graph_s", graph_s),
        ("eager_first_call_s", eager_first_call_s),
    ):
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError(f"{name} must be a finite time >= 0 seconds, got {value!r}")
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
    """Run ``fn`` and return ``(its result, the warnings it emitted)``, each warning kept once.

    Every warning is recorded, including those Python would show only once per place (so a
    notebook cell that runs twice still sees them); duplicates (same category and first line)
    are dropped, in order.
    """
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


def show(fn: object) -> None:
    """Display the source of ``fn`` (a function, class or module), so a learner reads what a
    helper does: a highlighted code block in Jupyter, plain text anywhere else."""
    try:
        source = textwrap.dedent(inspect.getsource(fn)).rstrip("\n") + "\n"
    except (OSError, TypeError) as e:
        raise ValueError(
            f"no source to show for {fn!r} ({e}): pass a function, class or module written in "
            "Python, such as lessons.timed"
        ) from None
    if not _in_notebook():
        print(source, end="")
        return
    from IPython.display import Markdown, display

    longest = max((len(run) for run in _BACKTICKS.findall(source)), default=0)
    fence = "`" * max(3, longest + 1)  # a fence no run of backticks in the source can close
    display(Markdown(f"{fence}python\n{source}{fence}"))


_BACKTICKS = re.compile("`+")


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (not plain Python, not a terminal IPython)."""
    ipython = sys.modules.get("IPython")  # never imported here: only a running one counts
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None
