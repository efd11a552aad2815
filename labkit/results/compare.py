"""Comparisons of two records: a throughput ratio with its confidence interval, and when a graph
mode's one-off cost pays for itself.

:func:`ratio` is the lab's one ratio (a bootstrap from the raw call times), :func:`speedups`
applies it to every graph mode against its eager baseline, and :func:`break_even` is the lab's
one break-even formula (:func:`break_even_rows` for every pair). The pairs come from
:mod:`labkit.results.query`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from .query import baseline_pairs, is_valid
from .schema import KEY, key

__all__ = [
    "BreakEven",
    "Estimate",
    "break_even",
    "break_even_rows",
    "one_off_s",
    "ratio",
    "speedups",
]


@dataclass(frozen=True)
class Estimate:
    """A ratio and its confidence interval, and how the interval was found."""

    value: float
    low: float
    high: float
    method: str = ""

    def __post_init__(self):
        if not (self.low <= self.value <= self.high):
            raise ValueError(
                f"estimate {self.value} lies outside its interval [{self.low}, {self.high}]"
            )

    @property
    def significant(self) -> bool:
        """Whether the interval leaves out 1 (the two sides can be told apart)."""
        return not (self.low <= 1.0 <= self.high)

    def __str__(self) -> str:
        return f"{self.value:.2f}x [{self.low:.2f}-{self.high:.2f}]"


#: confidence level of every ratio's interval, and the bootstrap's resamples
CONFIDENCE = 0.95
RESAMPLES = 2000


def _ips(r: dict) -> float:
    return r["batch_size"] / r["median_s"]


def ratio(num: dict, den: dict, confidence: float = CONFIDENCE, seed: int = 0) -> Estimate:
    """Throughput (images/s) of ``num`` over ``den``, with a confidence interval.

    The interval is a percentile bootstrap from the raw call times (:data:`RESAMPLES`
    resamples of each side's times, the ratio of their medians each time; seeded, so the same
    records give the same interval). Records without raw times fall back to propagating the
    two relative IQRs: ``ratio * sqrt((iqr_n/med_n)^2 + (iqr_d/med_d)^2)`` either side.
    """
    for r in (num, den):
        if float(r["median_s"]) <= 0:
            raise ValueError(
                f"record has a non-positive median time {r['median_s']}: "
                f"{r.get('framework')}/{r.get('mode')}/{r.get('task')}"
            )
    value = _ips(num) / _ips(den)
    tn, td = num.get("times_s") or [], den.get("times_s") or []
    if len(tn) >= 2 and len(td) >= 2:
        lo, hi = _bootstrap(num, den, confidence, seed)
        return Estimate(
            value,
            min(lo, value),
            max(hi, value),
            f"{confidence:.0%} bootstrap interval from the raw times",
        )
    rel = math.hypot(
        float(num.get("iqr_s") or 0) / num["median_s"],
        float(den.get("iqr_s") or 0) / den["median_s"],
    )
    return Estimate(
        value,
        max(value * (1 - rel), 0.0),
        value * (1 + rel),
        "propagated relative IQRs (no raw times)",
    )


def _bootstrap(num: dict, den: dict, confidence: float, seed: int) -> tuple[float, float]:
    """The percentile bootstrap interval of the throughput ratio from the two sides' raw times:
    :data:`RESAMPLES` resamples of each side, the ratio of their medians each time."""
    import numpy as np

    rng = np.random.default_rng(seed)

    def medians(times: list[float]) -> np.ndarray:
        t = np.asarray(times, dtype=float)
        return np.median(t[rng.integers(0, len(t), (RESAMPLES, len(t)))], axis=1)

    boot = (num["batch_size"] / medians(num["times_s"])) / (
        den["batch_size"] / medians(den["times_s"])
    )
    lo, hi = np.quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


def _pair_row(r: dict, base: dict) -> dict:
    """The start of a row about ``r`` against its baseline: ``r``'s cell and the baseline's
    framework and mode."""
    return {**dict(zip(KEY, key(r))), "baseline": f"{base['framework']} {base['mode']}"}


def speedups(records: Iterable[dict], include_invalid: bool = False) -> list[dict]:
    """Each graph mode against its eager baseline, same model, task, batch, precision, size and
    device: ``speedup`` = graph images/s over eager's (> 1: the graph mode is faster), with
    its confidence interval (:func:`ratio`). ONNX Runtime is compared with torch eager (see
    :data:`BASELINE`). Invalid records are left out unless ``include_invalid``; each row says
    whether both sides are valid.
    """
    rows = []
    for r, base in baseline_pairs(records, include_invalid):
        est = ratio(r, base)
        rows.append(
            {
                **_pair_row(r, base),
                "speedup": est.value,
                "speedup_low": est.low,
                "speedup_high": est.high,
                "significant": est.significant,
                "interval": est.method,
                "valid": is_valid(r) and is_valid(base),
                "eager_median_s": base["median_s"],
                "graph_median_s": r["median_s"],
            }
        )
    return rows


@dataclass(frozen=True)
class BreakEven:
    """When a graph mode's one-off cost has paid for itself against eager."""

    extra_s: float  #: one-off seconds beyond eager's (export + prepare + first call)
    saving_s: float  #: seconds each later call saves (eager median - graph median)
    calls: float  #: calls after the first that repay ``extra_s``; 0: nothing to repay; inf: never


def one_off_s(record: dict) -> float:
    """A record's one-off seconds before its steady state: export + prepare + first call."""
    return (
        float(record.get("export_s") or 0)
        + float(record.get("prepare_s") or 0)
        + float(record["first_call_s"])
    )


def break_even(record: dict, eager_record: dict) -> BreakEven:
    """How many calls ``record`` (a graph mode) needs before its one-off cost has paid off.

    The lab's one break-even formula. ``extra = one-off(record) - one-off(eager_record)`` (each
    :func:`one_off_s`: export, prepare and first call; missing parts count 0); each later call
    saves ``eager median - graph median``. ``calls = extra / saving`` counts the calls after the
    first: 0 when the graph mode is not even slower to start, ``inf`` when it is not faster per
    call. For ``n`` calls in all, eager takes ``one-off + (n - 1) x median`` and so does the
    graph mode: the two totals meet after ``1 + calls`` calls.
    """
    for name, r in (("record", record), ("eager_record", eager_record)):
        for f in ("first_call_s", "median_s"):
            v = r.get(f)
            if not isinstance(v, int | float) or not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"{name}[{f!r}] must be a finite time >= 0 seconds, got {v!r}")
    extra = one_off_s(record) - one_off_s(eager_record)
    saving = eager_record["median_s"] - record["median_s"]
    calls = 0.0 if extra <= 0 else (extra / saving if saving > 0 else math.inf)
    return BreakEven(extra, saving, calls)


def break_even_rows(records: Iterable[dict], include_invalid: bool = False) -> list[dict]:
    """:func:`break_even` of every graph-mode cell against its eager baseline (see
    :func:`baseline_pairs`; invalid records left out unless ``include_invalid``)."""
    rows = []
    for r, base in baseline_pairs(records, include_invalid):
        b = break_even(r, base)
        rows.append(
            {
                **_pair_row(r, base),
                "extra_s": b.extra_s,
                "saving_per_call_s": b.saving_s,
                "break_even_calls": b.calls,
                "cache": r.get("cache", "unknown"),
                "valid": is_valid(r) and is_valid(base),
            }
        )
    return rows
