"""Two records compared: the throughput :func:`ratio` with a bootstrap interval (every graph
mode against its eager baseline: :func:`speedups`), and the :func:`break_even` of a graph mode's
one-off cost."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from .query import baseline_pairs, flags, is_valid
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

#: confidence level of every ratio's interval, and the bootstrap's resamples
CONFIDENCE = 0.95
RESAMPLES = 2000


@dataclass(frozen=True)
class Estimate:
    """A ratio, its confidence interval, and how the interval was found."""

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

    @property
    def reading(self) -> str:
        """``"faster"`` (the interval lies above 1), ``"slower"`` (below) or ``"cannot tell"``."""
        return "faster" if self.low > 1 else "slower" if self.high < 1 else "cannot tell"

    def __str__(self) -> str:
        return f"{self.value:.2f}x [{self.low:.2f}-{self.high:.2f}]"


def ratio(num: dict, den: dict, confidence: float = CONFIDENCE, seed: int = 0) -> Estimate:
    """Images/s of ``num`` over ``den``: a seeded percentile bootstrap of the ratio of medians
    from the raw times, or without them the two relative IQRs propagated."""
    for r in (num, den):
        if float(r["median_s"]) <= 0:
            raise ValueError(
                f"record has a non-positive median time {r['median_s']}: "
                f"{r.get('framework')}/{r.get('mode')}/{r.get('task')}"
            )
    value = (num["batch_size"] / num["median_s"]) / (den["batch_size"] / den["median_s"])
    if len(num.get("times_s") or []) >= 2 and len(den.get("times_s") or []) >= 2:
        import numpy as np

        rng = np.random.default_rng(seed)

        def rates(r: dict) -> np.ndarray:
            t = np.asarray(r["times_s"], dtype=float)
            return r["batch_size"] / np.median(t[rng.integers(0, len(t), (RESAMPLES, len(t)))], 1)

        boot = rates(num) / rates(den)
        lo, hi = np.quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2])
        method = f"{confidence:.0%} bootstrap interval from the raw times"
        return Estimate(value, min(float(lo), value), max(float(hi), value), method)
    rel = math.hypot(
        float(num.get("iqr_s") or 0) / num["median_s"],
        float(den.get("iqr_s") or 0) / den["median_s"],
    )
    method = "propagated relative IQRs (no raw times)"
    return Estimate(value, max(value * (1 - rel), 0.0), value * (1 + rel), method)


def _row(r: dict, base: dict) -> dict:
    why = [f"{r['mode']}: {f}" for f in flags(r)]
    why += [f"{base['mode']} (baseline): {f}" for f in flags(base)]
    return {
        **dict(zip(KEY, key(r))),
        "baseline": f"{base['framework']} {base['mode']}",
        "valid": is_valid(r) and is_valid(base),
        "flags": why,
    }


def speedups(records: Iterable[dict], include_invalid: bool = False) -> list[dict]:
    """Each graph mode's :func:`ratio` over its eager baseline in the same context (a row per
    pair: ``speedup``, its interval, ``significant``, its ``reading``, ``valid``, either side's ``flags``);
    invalid records left out unless ``include_invalid``."""
    rows = []
    for r, base in baseline_pairs(records, include_invalid):
        est = ratio(r, base)
        rows.append(
            {
                **_row(r, base),
                "speedup": est.value,
                "speedup_low": est.low,
                "speedup_high": est.high,
                "significant": est.significant,
                "reading": est.reading,
                "interval": est.method,
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
    parts = (record.get("export_s"), record.get("prepare_s"), record["first_call_s"])
    return sum(float(p or 0) for p in parts)


def break_even(record: dict, eager_record: dict) -> BreakEven:
    """The calls after the first that ``record`` (a graph mode) needs to repay its extra one-off
    cost (:func:`one_off_s`) over ``eager_record`` by its faster calls: 0 when it is not slower
    to start, ``inf`` when it is not faster per call."""
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
    """:func:`break_even` of every graph-mode cell against its eager baseline."""
    rows = []
    for r, base in baseline_pairs(records, include_invalid):
        b = break_even(r, base)
        rows.append(
            {
                **_row(r, base),
                "extra_s": b.extra_s,
                "saving_per_call_s": b.saving_s,
                "break_even_calls": b.calls,
                "cache": r.get("cache", "unknown"),
            }
        )
    return rows
