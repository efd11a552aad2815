"""Questions asked of loaded records: which count (:func:`valid`), which is latest, and the lab's
one pairing of two records in the same :func:`context` (:func:`pair`, :func:`baseline_pairs`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..frameworks import specs
from .schema import CONTEXT, DEFAULTS, key

__all__ = [
    "BASELINE",
    "baseline_pairs",
    "best",
    "context",
    "flags",
    "invalid",
    "is_valid",
    "latest",
    "ok",
    "pair",
    "valid",
]

#: the eager mode of each framework that has one; every other mode is a graph mode
EAGER_MODES: dict[str, str] = {s.name: s.eager for s in specs() if s.eager is not None}
#: what each framework's graph modes are compared against: its eager mode, or (a runtime of
#: exported graphs) the eager mode of the framework it runs exports of
BASELINE: dict[str, tuple[str, str]] = {
    s.name: (s.name, s.eager) if s.eager else (s.exported_from, EAGER_MODES[s.exported_from])
    for s in specs()
}


def ok(records: Iterable[dict]) -> list[dict]:
    return [r for r in records if r.get("status") == "ok"]


def is_valid(record: dict) -> bool:
    """Whether a record counts as evidence: measured, and its verdict is ``True``."""
    return record.get("status") == "ok" and record.get("valid") is True


def valid(records: Iterable[dict]) -> list[dict]:
    return [r for r in records if is_valid(r)]


def invalid(records: Iterable[dict]) -> list[dict]:
    return [r for r in ok(records) if not is_valid(r)]


def flags(record: dict) -> list[str]:
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


def latest(records: Iterable[dict]) -> list[dict]:
    """One record per cell: the last one written, in file order."""
    by_key: dict[tuple, dict] = {}
    for r in records:
        by_key.pop(key(r), None)
        by_key[key(r)] = r
    return list(by_key.values())


def best(records: Iterable[dict], framework: str, task: str) -> dict | None:
    """The fastest measured record of ``framework`` on ``task``, or None."""
    found = [r for r in ok(records) if r.get("framework") == framework and r.get("task") == task]
    return max(found, key=lambda r: r["images_per_s"], default=None)


def context(record: dict) -> tuple:
    """What a record must share with another to be compared with it (:data:`CONTEXT`)."""
    defaults = {**DEFAULTS, "precision": "fp32", "device": "cpu"}
    return tuple(record.get(k, defaults.get(k)) for k in CONTEXT)


def _usable(records: Iterable[dict], include_invalid: bool) -> list[dict]:
    cells = [r for r in ok(latest(records)) if float(r.get("median_s") or 0) > 0]
    return cells if include_invalid else valid(cells)


def pair(
    records: Iterable[dict],
    num: tuple[str, str],
    den: tuple[str, str],
    task: str,
    precision: str = "fp32",
    device: str = "cpu",
    include_invalid: bool = False,
) -> tuple[dict, dict] | None:
    """The latest records of framework/mode ``num`` and ``den`` on ``task`` in one context (the
    largest image size, then batch, where several), valid unless ``include_invalid``; or None."""
    cells = [
        r
        for r in _usable(records, include_invalid)
        if r.get("task") == task
        and r.get("precision", "fp32") == precision
        and r.get("device", "cpu") == device
    ]
    nums = {context(r): r for r in cells if (r["framework"], r["mode"]) == tuple(num)}
    dens = {context(r): r for r in cells if (r["framework"], r["mode"]) == tuple(den)}
    shared = set(nums) & set(dens)
    if not shared:
        return None
    size, batch = CONTEXT.index("image_size"), CONTEXT.index("batch_size")
    best_ctx = max(shared, key=lambda c: (c[size] or 0, c[batch] or 0))
    return nums[best_ctx], dens[best_ctx]


def baseline_pairs(
    records: Iterable[dict], include_invalid: bool = False
) -> Iterator[tuple[dict, dict]]:
    """Each measured graph-mode cell with its :data:`BASELINE` cell in the same context (an
    older labkit's serving records left out)."""
    cells = [r for r in _usable(records, include_invalid) if r.get("task") != "serve"]
    pool = {(r["framework"], r["mode"], context(r)): r for r in cells}
    for r in cells:
        if EAGER_MODES.get(r["framework"]) == r["mode"] or r["framework"] not in BASELINE:
            continue
        base = pool.get((*BASELINE[r["framework"]], context(r)))
        if base is not None:
            yield r, base
