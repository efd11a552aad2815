"""Framework-free timing of ResNet-50 steps: the core of the benchmark engine.

An adapter's ``prepare(...)`` returns a :class:`labkit.frameworks.contract.Prepared`: a
zero-argument ``step`` that runs one inference batch or one training step on a host batch
prepared in advance and returns only when the work is done (results synchronised / copied to the
host, the GPU synchronised).

:func:`measure` times a step the way ``torch.utils.benchmark`` does and returns a
:class:`Measurement` (raw times, median, IQR, p90, images/s, and how it was taken); the first
call (tracing, compilation) is timed apart, and garbage collection is off while it times.
:meth:`Measurement.judge` gives the validity verdict (:func:`verdict`: enough calls and time,
a small spread, a quiet machine). :func:`peak_rss_mb` gives the memory high-water mark.
Statistics are plain Python (:mod:`labkit.util.stats` interpolates as numpy does).

Not for: what a cell is or which ones exist (:mod:`labkit.frameworks.contract`), nor running
cells (:mod:`labkit.runner`).
"""

from __future__ import annotations

import gc
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .util import stats

__all__ = [
    "MAX_REL_IQR",
    "MAX_STOLEN",
    "Measurement",
    "busy_elsewhere",
    "busy_machine",
    "cpu_sample",
    "load_1min",
    "measure",
    "peak_rss_mb",
    "verdict",
]


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, MiB (the high-water mark, not the current).

    On Linux this is ``VmHWM`` from ``/proc/self/status``: ``getrusage``'s ``ru_maxrss`` is
    carried over from the parent into a forked and exec'd child, so a benchmark cell started
    from a large notebook kernel would report the kernel's peak instead of its own.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**10  # KiB
    except OSError:
        pass
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes vs KiB
    except ImportError:  # Windows
        import psutil

        info = psutil.Process().memory_info()
        return getattr(info, "peak_wset", info.rss) / 2**20


# ---------------------------------------------------------------------------------------------
# is the machine quiet? (MLPerf-style validity rules)

#: the spread a valid measurement may have: IQR / median at most this (``torch.utils.benchmark``
#: warns from 10 %)
MAX_REL_IQR = 0.10
#: other processes may take at most this share of the CPUs a cell's threads use (beyond the CPUs
#: the cell leaves free) while it is timed
MAX_STOLEN = 0.10


def load_1min() -> float | None:
    """The machine's 1-minute load average (None where the OS has none, e.g. Windows)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def cpu_sample() -> tuple[float, float, float] | None:
    """``(wall s, CPU-seconds busy on the whole machine, CPU-seconds of this process)``, or None
    where ``/proc/stat`` is missing. Two samples give what *other* processes used in between
    (busy includes ``steal``: time a hypervisor gave to other virtual machines)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        hz = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    busy = (user + nice + system + irq + softirq + steal) / hz
    own = os.times()
    return time.perf_counter(), busy, own.user + own.system


def busy_elsewhere(before: tuple | None, after: tuple | None) -> float | None:
    """CPUs that processes other than this one kept busy, on average, between two samples."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    wall = after[0] - before[0]
    return max(0.0, ((after[1] - before[1]) - (after[2] - before[2])) / wall)


def verdict(
    times_s: Sequence[float],
    min_repeats: int,
    min_time_s: float,
    threads: int,
    others: float | None,
    load: float | None,
    cpu_count: int | None = None,
) -> list[str]:
    """Why a measurement is *invalid* (MLPerf's run rules, in spirit): an empty list is valid.

    - at least ``min_repeats`` timed calls and ``min_time_s`` seconds of them (the profile's);
    - a spread (IQR / median) of at most :data:`MAX_REL_IQR`;
    - a quiet machine: while timing, other processes kept at most the CPUs the cell leaves free
      plus :data:`MAX_STOLEN` of the cell's ``threads`` busy (from ``/proc/stat``); where that
      cannot be read, a 1-minute load average below the CPU count when timing started.
    """
    reasons = []
    n, total = len(times_s), float(sum(times_s))
    if n < min_repeats:
        reasons.append(f"{n} timed calls, fewer than the {min_repeats} required")
    if total < min_time_s:
        reasons.append(
            f"{total:.2f} s of timed calls, less than the {min_time_s:g} s required "
            "(the profile's max_repeats stopped the loop first)"
        )
    if n:
        rel = stats.iqr(times_s) / stats.median(times_s) if stats.median(times_s) > 0 else math.inf
        if rel > MAX_REL_IQR:
            reasons.append(f"spread too wide: IQR/median {rel:.0%} > {MAX_REL_IQR:.0%}")
    return reasons + busy_machine(threads, others, load, cpu_count)


def busy_machine(
    threads: int, others: float | None, load: float | None, cpu_count: int | None = None
) -> list[str]:
    """Why the machine was too busy for a measurement that used ``threads`` CPUs (empty: quiet
    enough): other processes kept more than the CPUs it left free plus :data:`MAX_STOLEN` of its
    ``threads`` busy (``others``, from ``/proc/stat``); where that could not be read, a 1-minute
    load average of at least the CPU count when it started."""
    cpus = cpu_count or os.cpu_count() or 1
    if others is not None:
        limit = max(0, cpus - threads) + MAX_STOLEN * threads
        if others > limit:
            return [
                (
                    f"busy machine: other processes kept {others:.2f} CPUs busy while timing "
                    f"(at most {limit:.2f} with {threads} threads on {cpus} CPUs)"
                )
            ]
    elif load is not None and load >= cpus:
        return [f"busy machine: 1-minute load {load:.1f} >= {cpus} CPUs when timing started"]
    return []


@dataclass
class Measurement:
    """Timed calls of one step, in the shape of ``torch.utils.benchmark.Measurement``.

    Carries its raw times and says how they were taken (:attr:`how`): the first call (tracing or
    compilation) is timed apart, then ``warmup`` untimed calls, then calls timed one by one
    with ``time.perf_counter`` until both ``min_repeats`` calls and ``min_time_s`` seconds are
    reached (or ``max_repeats``). Each step returns only when its work is done. It also keeps
    what the validity verdict needs (:meth:`judge`): the minimums it was asked for, the CPUs
    other processes kept busy while it timed and the load average when timing started.
    """

    times_s: list[float]
    first_call_s: float
    images_per_call: int
    warmup: int
    label: str = ""
    how: str = ""
    min_repeats: int = 1
    min_time_s: float = 0.0
    others_cpus: float | None = None  # other processes' busy CPUs while timing (/proc/stat)
    load_1min: float | None = None  # the machine's load average when timing started

    @property
    def repeats(self) -> int:
        return len(self.times_s)

    @property
    def median_s(self) -> float:
        return stats.median(self.times_s)

    @property
    def iqr_s(self) -> float:
        return stats.iqr(self.times_s)

    @property
    def p90_s(self) -> float:
        return stats.quantile(self.times_s, 0.9)

    @property
    def mean_s(self) -> float:
        return sum(self.times_s) / len(self.times_s)

    @property
    def images_per_s(self) -> float:
        return self.images_per_call / self.median_s

    def judge(self, threads: int, cpu_count: int | None = None) -> list[str]:
        """Why this measurement is invalid (empty: valid); see :func:`verdict`."""
        return verdict(
            self.times_s,
            self.min_repeats,
            self.min_time_s,
            threads,
            self.others_cpus,
            self.load_1min,
            cpu_count,
        )

    def as_dict(self) -> dict:
        return {
            "first_call_s": self.first_call_s,
            "median_s": self.median_s,
            "iqr_s": self.iqr_s,
            "p90_s": self.p90_s,
            "mean_s": self.mean_s,
            "images_per_s": self.images_per_s,
            "repeats": self.repeats,
            "warmup": self.warmup,
            "times_s": list(self.times_s),
            "others_cpus": self.others_cpus,
            "load_1min": self.load_1min,
        }

    def __repr__(self) -> str:
        unit, scale = ("ms", 1e3) if self.median_s < 1 else ("s", 1.0)
        q1, q3 = stats.quantile(self.times_s, 0.25), stats.quantile(self.times_s, 0.75)
        return (
            f"<labkit.bench.Measurement> {self.label}\n"
            f"  Median: {self.median_s * scale:.2f} {unit}   "
            f"({self.images_per_s:.2f} images/s)\n"
            f"  IQR:    {self.iqr_s * scale:.2f} {unit} "
            f"({q1 * scale:.2f} to {q3 * scale:.2f})\n"
            f"  p90:    {self.p90_s * scale:.2f} {unit}\n"
            f"  first call: {self.first_call_s:.2f} s\n"
            f"  {self.repeats} measurements, {self.images_per_call} images each"
        )


def measure(
    prepared: object,
    warmup: int,
    min_repeats: int,
    min_time_s: float,
    max_repeats: int,
    images_per_call: int | None = None,
    label: str = "",
) -> Measurement:
    """Time ``prepared.step``: first call apart, ``warmup`` untimed calls, then timed repeats.

    Timing stops after ``max(min_repeats, calls within min_time_s)`` calls, never more than
    ``max_repeats``. ``prepared`` is an adapter's ``Prepared`` (its ``step`` and
    ``batch_size``) or a bare callable (then give ``images_per_call``).
    Garbage collection is off while the calls are timed (as ``timeit`` does), so a collection
    of earlier garbage cannot land in one call's time; it is back on afterwards.
    """
    step = prepared if callable(prepared) else prepared.step
    images = (
        images_per_call if images_per_call is not None else getattr(prepared, "batch_size", None)
    )
    if not images or images < 1:
        raise ValueError("images_per_call must be at least 1 (a Prepared carries its batch_size)")
    if min_repeats < 1 or max_repeats < min_repeats or warmup < 0 or min_time_s < 0:
        raise ValueError(
            f"need 1 <= min_repeats <= max_repeats, warmup >= 0, min_time_s >= 0; got "
            f"min_repeats={min_repeats}, max_repeats={max_repeats}, warmup={warmup}, "
            f"min_time_s={min_time_s}"
        )
    clock = time.perf_counter
    t0 = clock()
    step()
    first = clock() - t0
    for _ in range(warmup):
        step()
    times: list[float] = []
    total = 0.0
    load = load_1min()
    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    before = cpu_sample()
    try:
        while len(times) < max_repeats and (len(times) < min_repeats or total < min_time_s):
            t0 = clock()
            step()
            dt = clock() - t0
            times.append(dt)
            total += dt
    finally:
        after = cpu_sample()
        if collecting:
            gc.enable()
    how = (
        f"first call timed apart; {warmup} untimed warm-up calls; {len(times)} calls timed one "
        f"by one with time.perf_counter, garbage collection off (at least {min_repeats} calls "
        f"and {min_time_s:g} s, at most {max_repeats} calls); each call returns when its work "
        "is done"
    )
    return Measurement(
        times,
        first,
        int(images),
        warmup,
        label,
        how,
        min_repeats,
        min_time_s,
        busy_elsewhere(before, after),
        load,
    )
