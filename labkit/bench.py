"""Framework-free timing of a prepared step, as ``torch.utils.benchmark`` does: :func:`measure`
returns a :class:`Measurement`; :func:`verdict` is the validity verdict (enough samples and time,
a small spread, a quiet machine); :func:`peak_rss_mb` the memory high-water mark."""

from __future__ import annotations

import contextlib
import gc
import math
import os
import sys
import time
import timeit
from collections.abc import Sequence
from dataclasses import dataclass

from .util import stats

__all__ = [
    "MAX_REL_IQR",
    "MAX_STOLEN",
    "Measurement",
    "busy_elsewhere",
    "cpu_sample",
    "load_1min",
    "measure",
    "peak_rss_mb",
    "verdict",
]


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, MiB. On Linux ``VmHWM``: ``ru_maxrss`` is
    inherited across fork and exec, so a cell would report its notebook kernel's peak."""
    with contextlib.suppress(OSError), open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**10  # KiB
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes vs KiB


#: the spread a valid measurement may have: IQR / median at most this (``torch.utils.benchmark``
#: warns from 10 %)
MAX_REL_IQR = 0.10
#: other processes may take at most this share of the CPUs a cell's threads use (beyond the CPUs
#: the cell leaves free) while it is timed
MAX_STOLEN = 0.10


def load_1min() -> float | None:
    """The machine's 1-minute load average (None where the OS has none, e.g. Windows)."""
    with contextlib.suppress(OSError, AttributeError):
        return os.getloadavg()[0]
    return None


def cpu_sample() -> tuple[float, float, float]:
    """``(wall s, machine's busy CPU-s (steal included), this process's CPU-s)``."""
    import psutil

    machine, own = psutil.cpu_times(), os.times()
    parts = ("user", "nice", "system", "irq", "softirq", "steal")  # guest is in user
    busy = sum(getattr(machine, p, 0.0) for p in parts)
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
    number_per_run: int = 1,
    max_rel_iqr: float = MAX_REL_IQR,
) -> list[str]:
    """Why a measurement is invalid (MLPerf's run rules, in spirit; [] is valid): fewer than
    ``min_repeats`` samples (each of ``number_per_run`` calls) or ``min_time_s`` of timed calls,
    an IQR/median above ``max_rel_iqr``, or a busy machine: other processes kept more than the
    CPUs the cell leaves free plus :data:`MAX_STOLEN` of its ``threads`` busy (without
    ``/proc/stat``: a 1-minute load at or above the CPU count)."""
    reasons = []
    n, total = len(times_s), float(sum(times_s)) * number_per_run
    if n < min_repeats:
        what = "timed calls" if number_per_run == 1 else f"timed samples of {number_per_run} calls"
        reasons.append(f"{n} {what}, fewer than the {min_repeats} required")
    if total < min_time_s:
        reasons.append(
            f"{total:.2f} s of timed calls, less than the {min_time_s:g} s required "
            "(the profile's max_repeats stopped the loop first)"
        )
    if n:
        rel = stats.iqr(times_s) / stats.median(times_s) if stats.median(times_s) > 0 else math.inf
        if rel > max_rel_iqr:
            reasons.append(f"spread too wide: IQR/median {rel:.0%} > {max_rel_iqr:.0%}")
    cpus = cpu_count or os.cpu_count() or 1
    if others is not None:
        limit = max(0, cpus - threads) + MAX_STOLEN * threads
        if others > limit:
            reasons.append(
                f"busy machine: other processes kept {others:.2f} CPUs busy while timing "
                f"(at most {limit:.2f} with {threads} threads on {cpus} CPUs)"
            )
    elif load is not None and load >= cpus:
        reasons.append(f"busy machine: 1-minute load {load:.1f} >= {cpus} CPUs when timing started")
    return reasons


def _block(target_s: float, call_s: float) -> int:
    """The calls one sample must hold to take ``target_s`` when one call takes ``call_s`` (at
    most 2**20: a call of a few nanoseconds still ends)."""
    if call_s >= target_s:
        return 1
    return min(2**20, math.ceil(target_s / max(call_s, 1e-9)))


@dataclass
class Measurement:
    """Timed calls of one step, in the shape of ``torch.utils.benchmark.Measurement``: the raw
    seconds per call of each sample (of ``number_per_run`` calls), the first call apart."""

    times_s: list[float]
    first_call_s: float
    images_per_call: int
    warmup: int
    label: str = ""
    min_repeats: int = 1
    min_time_s: float = 0.0
    others_cpus: float | None = None  # other processes' busy CPUs while timing (/proc/stat)
    load_1min: float | None = None  # the machine's load average when timing started
    number_per_run: int = 1  # calls in each timed sample (1: each call timed alone)

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
    def images_per_s(self) -> float:
        return self.images_per_call / self.median_s

    def judge(self, threads: int, cpu_count: int | None = None) -> list[str]:
        limits = (self.min_repeats, self.min_time_s, threads, self.others_cpus, self.load_1min)
        return verdict(self.times_s, *limits, cpu_count, self.number_per_run)

    def as_dict(self) -> dict:
        """The fields of a results record it fills (:class:`labkit.results.Record`'s names)."""
        own = ("first_call_s", "warmup", "number_per_run", "others_cpus", "load_1min", "repeats")
        figures = {k: getattr(self, k) for k in (*own, "median_s", "iqr_s", "images_per_s")}
        p90, mean = stats.quantile(self.times_s, 0.9), sum(self.times_s) / self.repeats
        return figures | {"p90_s": p90, "mean_s": mean, "times_s": list(self.times_s)}

    def __repr__(self) -> str:
        unit, scale = ("ms", 1e3) if self.median_s < 1 else ("s", 1.0)
        q1, q3 = stats.quantile(self.times_s, 0.25), stats.quantile(self.times_s, 0.75)
        return (
            f"<labkit.bench.Measurement> {self.label}\n"
            f"  Median: {self.median_s * scale:.2f} {unit}   "
            f"({self.images_per_s:.2f} images/s)\n"
            f"  IQR:    {self.iqr_s * scale:.2f} {unit} "
            f"({q1 * scale:.2f} to {q3 * scale:.2f})\n"
            f"  p90:    {stats.quantile(self.times_s, 0.9) * scale:.2f} {unit}\n"
            f"  first call: {self.first_call_s:.2f} s\n"
            f"  {self.repeats} measurements, {self.images_per_call} images each"
            + (f", each the mean of {self.number_per_run} calls" if self.number_per_run > 1 else "")
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
    """Time ``prepared.step`` (or a bare callable, with ``images_per_call``): the first call
    apart, ``warmup`` untimed calls, then samples with garbage collection off until
    ``min_repeats`` and ``min_time_s`` are reached (at most ``max_repeats``). A call shorter than
    a sample's target (``max_repeats`` samples make twice ``min_time_s``) is timed in blocks
    sized by the fastest warm-up call (without warm-up, by the samples); blocks that still fall
    short (the calls got faster) become warm-up and are sized again, once, by the samples."""
    step = prepared if callable(prepared) else prepared.step
    images = images_per_call or getattr(prepared, "batch_size", None)
    if not images or images < 1:
        raise ValueError("images_per_call must be at least 1 (a Prepared carries its batch_size)")
    if min_repeats < 1 or max_repeats < min_repeats or warmup < 0 or min_time_s < 0:
        raise ValueError(
            f"need 1 <= min_repeats <= max_repeats, warmup >= 0, min_time_s >= 0; got "
            f"min_repeats={min_repeats}, max_repeats={max_repeats}, warmup={warmup}, "
            f"min_time_s={min_time_s}"
        )
    untimed_s = []
    for _ in range(1 + warmup):
        t0 = time.perf_counter()
        step()
        untimed_s.append(time.perf_counter() - t0)
    target = 2.0 * min_time_s / max_repeats  # the shortest a sample may take
    # the first call (a compilation, often) says nothing of the others: without warm-up calls
    # to size it from, a block starts at one call and the samples size it (below)
    number, untimed = (_block(target, min(untimed_s[1:])) if warmup else 1), warmup
    load = load_1min()
    times, others = _samples(step, number, min_repeats, min_time_s, max_repeats)
    if len(times) == max_repeats and 0 < sum(times) * number < min_time_s:  # calls got faster
        untimed += len(times) * number  # those samples become warm-up
        number, load = _block(target, stats.median(times)), load_1min()
        times, others = _samples(step, number, min_repeats, min_time_s, max_repeats)
    return Measurement(
        times,
        untimed_s[0],
        int(images),
        untimed,
        label,
        min_repeats=min_repeats,
        min_time_s=min_time_s,
        others_cpus=others,
        load_1min=load,
        number_per_run=number,
    )


def _samples(
    step, number: int, min_repeats: int, min_time_s: float, max_repeats: int
) -> tuple[list[float], float | None]:
    """The samples (seconds per call), each timed by :mod:`timeit` (garbage collection off while
    it runs), and the CPUs others kept busy."""
    timer, times = timeit.Timer(step), []
    gc.collect()
    before = cpu_sample()
    while len(times) < max_repeats and (
        len(times) < min_repeats or sum(times) * number < min_time_s
    ):
        times.append(timer.timeit(number) / number)
    return times, busy_elsewhere(before, cpu_sample())
