"""Questions asked of records (or of JSON rows: hand-ins, the class database): which count
(:func:`valid`), which is latest, the lab's one pairing of two records in the same
:func:`context`; the throughput :func:`ratio` with a bootstrap interval (:func:`speedups`), the
:func:`break_even` of a graph mode's one-off cost, and the text :func:`table`."""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Iterable, Mapping
from dataclasses import astuple, dataclass

from ..frameworks import MODES, NAMES, spec, specs
from ..frameworks.contract import TASKS
from .schema import CONTEXT, DEFAULT_MODEL, DEFAULTS, KEY, MESSAGES, custom, key, model_name

__all__ = [
    "Estimate",
    "best",
    "break_even",
    "break_even_rows",
    "context",
    "flags",
    "is_valid",
    "latest",
    "ok",
    "pair",
    "ratio",
    "speedups",
    "table",
    "valid",
]

#: what each framework's graph modes (every mode but this one) are compared against: its eager
#: mode, or (a runtime of exported graphs) the eager mode of the framework it runs exports of
BASELINE: dict[str, tuple[str, str]] = {
    s.name: (eager := s.name if s.eager else s.exported_from, spec(eager).eager) for s in specs()
}


def ok(records: Iterable[Mapping]) -> list[dict]:
    return [r for r in records if r.get("status") == "ok"]


def is_valid(record: Mapping) -> bool:
    """Whether a record counts as evidence: measured, and its verdict is ``True``."""
    return record.get("status") == "ok" and record.get("valid") is True


def valid(records: Iterable[Mapping]) -> list[dict]:
    return [r for r in records if is_valid(r)]


def flags(record: Mapping) -> list[str]:
    """What a reader must know before trusting a record: why it is invalid, and its notes above
    the ceiling or the measured peak."""
    out = [] if is_valid(record) else list(record.get("invalid_reasons") or ["no validity verdict"])
    above = record.get("above_ceiling")
    if above is None:  # a record that predates the flag: its recorded share says it
        share = record.get("ceiling_share")
        above = isinstance(share, int | float) and share > 1.0
    if above:
        out.append(record.get("ceiling_note") or "above the estimated compute ceiling")
    if record.get("above_measured_peak"):
        out.append(record.get("measured_peak_note") or "above the measured peak")
    return list(dict.fromkeys(out))


def latest(records: Iterable[Mapping]) -> list[dict]:
    """One record per cell: the last one written, in file order."""
    records = list(records)
    last = {key(r): i for i, r in enumerate(records)}  # each cell's last record, by its index
    return [records[i] for i in sorted(last.values())]


def best(records: Iterable[Mapping], framework: str, task: str) -> dict | None:
    """The fastest measured record of ``framework`` on ``task``, or None."""
    found = [r for r in ok(records) if r.get("framework") == framework and r.get("task") == task]
    return max(found, key=lambda r: r["images_per_s"], default=None)


def context(record: Mapping) -> tuple:
    """What a record must share with another to be compared with it (:data:`CONTEXT`)."""
    return tuple(record.get(k, DEFAULTS.get(k)) for k in CONTEXT)


def _cells(records: Iterable[Mapping], include_invalid: bool) -> dict[tuple, dict]:
    """The latest measured record of each cell (valid unless ``include_invalid``) by its framework,
    mode and :func:`context`: the lab's one pairing of records."""
    cells = [r for r in ok(latest(records)) if float(r.get("median_s") or 0) > 0]
    cells = cells if include_invalid else valid(cells)
    return {(r["framework"], r["mode"], context(r)): r for r in cells}


def pair(
    records: Iterable[Mapping],
    num: tuple[str, str],
    den: tuple[str, str],
    task: str,
    precision: str = "fp32",
    device: str = "cpu",
    include_invalid: bool = False,
) -> tuple[dict, dict] | None:
    """The latest records of framework/mode ``num`` and ``den`` on ``task`` in one context (the
    largest image size, then batch, where several), valid unless ``include_invalid``; or None."""
    cells = _cells(records, include_invalid)
    pairs = [
        (r, cells[(*den, c)])
        for (*cell, c), r in cells.items()
        if cell == [*num]
        and (*den, c) in cells
        and (r["task"], r["precision"], r["device"]) == (task, precision, device)
    ]
    return max(
        pairs, key=lambda p: (p[0]["image_size"] or 0, p[0]["batch_size"] or 0), default=None
    )


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

    @property
    def reading(self) -> str:
        """``"faster"`` (the interval lies above 1), ``"slower"`` (below) or ``"cannot tell"``."""
        return "faster" if self.low > 1 else "slower" if self.high < 1 else "cannot tell"

    def __str__(self) -> str:
        return f"{self.value:.2f}x [{self.low:.2f}-{self.high:.2f}]"


def ratio(num: Mapping, den: Mapping) -> Estimate:
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

        rng = np.random.default_rng(0)

        def rates(r: dict) -> np.ndarray:
            t = np.asarray(r["times_s"], dtype=float)
            return r["batch_size"] / np.median(t[rng.integers(0, len(t), (RESAMPLES, len(t)))], 1)

        boot = rates(num) / rates(den)
        lo, hi = np.quantile(boot, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
        method = f"{CONFIDENCE:.0%} bootstrap interval from the raw times"
        return Estimate(value, min(float(lo), value), max(float(hi), value), method)
    rel = math.hypot(*(float(r.get("iqr_s") or 0) / r["median_s"] for r in (num, den)))
    method = "propagated relative IQRs (no raw times)"
    return Estimate(value, max(value * (1 - rel), 0.0), value * (1 + rel), method)


def _pair_rows(records, include_invalid: bool, measure) -> list[dict]:
    """A row per measured graph-mode cell with its :data:`BASELINE` cell in the same context (an
    older labkit's serving records left out): the graph cell's :data:`KEY`, its ``baseline``,
    ``valid`` (both sides), either side's ``flags``, and what ``measure(graph, base)`` gives."""
    rows, cells = [], _cells(records, include_invalid)
    for (framework, mode, c), r in cells.items():
        base = cells.get((*BASELINE.get(framework, ()), c))
        if r["task"] == "serve" or base is None or base is r:
            continue
        why = [f"{r['mode']}: {f}" for f in flags(r)]
        why += [f"{base['mode']} (baseline): {f}" for f in flags(base)]
        rows.append(
            {
                **dict(zip(KEY, key(r))),
                "baseline": f"{base['framework']} {base['mode']}",
                "valid": is_valid(r) and is_valid(base),
                "flags": why,
                **measure(r, base),
            }
        )
    return rows


def _speedup(r: Mapping, base: Mapping) -> dict:
    est = ratio(r, base)
    row = dict(zip(("speedup", "speedup_low", "speedup_high", "interval"), astuple(est)))
    return row | {"significant": est.reading != "cannot tell", "reading": est.reading}


def speedups(records: Iterable[Mapping], include_invalid: bool = False) -> list[dict]:
    """Each graph mode's :func:`ratio` over its eager baseline in the same context (a row per
    pair: ``speedup``, its interval, ``significant``, its ``reading``, ``valid``, either side's
    ``flags``); invalid records left out unless ``include_invalid``."""
    return _pair_rows(records, include_invalid, _speedup)


#: when a graph mode's one-off cost has paid for itself against eager: ``extra_s``, its one-off
#: seconds beyond eager's; ``saving_s``, the seconds each later call saves (eager median - graph
#: median); ``calls``, the calls after the first that repay ``extra_s`` (0: nothing to repay;
#: inf: never)
BreakEven = namedtuple("BreakEven", "extra_s saving_s calls")


def break_even(record: Mapping, eager_record: Mapping) -> BreakEven:
    """The calls after the first that ``record`` (a graph mode) needs to repay its extra one-off
    cost (export + prepare + first call) over ``eager_record`` by its faster calls: 0 when it is
    not slower to start, ``inf`` when it is not faster per call."""
    for name, r in (("record", record), ("eager_record", eager_record)):
        for f in ("first_call_s", "median_s"):
            v = r.get(f)
            if not isinstance(v, int | float) or not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"{name}[{f!r}] must be a finite time >= 0 seconds, got {v!r}")
    one_off = lambda r: sum(float(r.get(f) or 0) for f in ("export_s", "prepare_s", "first_call_s"))
    extra = one_off(record) - one_off(eager_record)
    saving = eager_record["median_s"] - record["median_s"]
    calls = 0.0 if extra <= 0 else (extra / saving if saving > 0 else math.inf)
    return BreakEven(extra, saving, calls)


def _break_even(r: Mapping, base: Mapping) -> dict:
    row = dict(zip(("extra_s", "saving_per_call_s", "break_even_calls"), break_even(r, base)))
    return row | {"cache": r.get("cache", "unknown")}


def break_even_rows(records: Iterable[Mapping], include_invalid: bool = False) -> list[dict]:
    """:func:`break_even` of every graph-mode cell against its eager baseline."""
    return _pair_rows(records, include_invalid, _break_even)


#: the columns of :func:`table` after the cell's own (framework, mode, ...): heading -> the text
#: of a measured record's figure
_FIGURES = {
    "images/s": lambda r: f"{r['images_per_s']:.2f}",
    "median ms": lambda r: f"{r['median_s'] * 1e3:.1f}",
    "IQR ms": lambda r: f"{r['iqr_s'] * 1e3:.1f}",
    "p90 ms": lambda r: f"{r['p90_s'] * 1e3:.1f}",
    "first s": lambda r: f"{r['first_call_s']:.2f}",
    "ceiling": lambda r: _share_text(r["ceiling_share"], r.get("above_ceiling")),
    "peak": lambda r: _share_text(r.get("measured_peak_share"), r.get("above_measured_peak")),
    "RSS MB": lambda r: f"{r['peak_rss_mb']:.0f}",
    "valid": lambda r: "yes" if is_valid(r) else "NO",
}


def accuracy_text(accuracy: dict) -> str:
    """Low precision's cost against fp32 in words (``labkit/data/results.toml``)."""
    say = MESSAGES["accuracy"]
    if accuracy.get("error"):
        return say["error"].format(**accuracy)
    text = say["cost"].format(**accuracy)
    if "centred_top1_agreement" in accuracy:
        text += say["centred"].format(**accuracy)
    return text


def _order(r: Mapping) -> tuple:
    """The table's sort key: the ResNet-50 first, then the registry's and the tasks' orders, the
    cell's context, and the framework's order of modes."""
    rank = lambda seq, x: seq.index(x) if x in seq else len(seq)
    framework = r["framework"]
    return (
        custom(r),
        r.get("model", DEFAULT_MODEL),
        rank(NAMES, framework),
        rank(TASKS, r["task"]),
        *context(r),
        rank(MODES.get(framework, ()), r["mode"]),
    )


def _share_text(share: float | None, above: bool | None) -> str:
    return "-" if share is None else f"{share:.1%}{' (!)' if above else ''}"


def table(records: Iterable[Mapping]) -> str:
    """The latest record of each cell in aligned columns (``ceiling``/``peak``: the share of the
    estimated ceiling / measured peak, ``(!)`` above it), then the flags and accuracy costs."""
    rows = sorted(latest(records), key=_order)
    models = any(custom(r) for r in rows)
    lead = ("model",) * models + ("framework", "mode", "task", "batch", "prec", "size", "dev")
    lines, notes, costs = [], [], []
    for r in rows:
        cells = [model_name(r.get("model", DEFAULT_MODEL))] * models
        cells += [r["framework"], r["mode"], r["task"]]
        name = " ".join(cells)
        size = r.get("input_shape") or str(r["image_size"])
        cells += [str(r["batch_size"]), r["precision"], size, r["device"]]
        if r["status"] != "ok":  # its lead and one message
            err = r["error"] or ""
            lines.append(cells + [f"FAILED: {err if len(err) <= 70 else err[:67] + '...'}"])
            continue
        lines.append(cells + [text(r) for text in _FIGURES.values()])
        if flags(r):
            notes.append(f"  {name}: " + "; ".join(flags(r)))
        if r.get("accuracy"):
            costs.append(f"  {name} {r['precision']}: " + accuracy_text(r["accuracy"]))
    out = _aligned(lead + tuple(_FIGURES), len(lead), lines)
    out += ["", "flags:", *notes] if notes else []
    out += ["", "accuracy against fp32:", *costs] if costs else []
    return "\n".join(out)


def _aligned(head: tuple[str, ...], n: int, lines: list[list[str]]) -> list[str]:
    """Columns: the first ``n`` left-aligned, the figures right-aligned; a failed row (its lead
    and one message) runs on, its message widening no column."""
    full = [head, *(c if len(c) == len(head) else c[:n] for c in lines)]
    widths = [max(len(c[i]) for c in full if i < len(c)) for i in range(len(head))]

    def fmt(cells) -> str:
        return "  ".join(
            c.ljust(w) if i < n else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        )

    out = [fmt(head), fmt(["-" * w for w in widths])]
    return out + [fmt(c) if len(c) == len(head) else f"{fmt(c[:n])}  {c[n]}" for c in lines]
