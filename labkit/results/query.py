"""Questions asked of loaded records: which count, which is latest, which two to compare.

:func:`valid` is what evidence (claims, the guide) is drawn from; :func:`latest` keeps one record
per cell; :func:`pair` and :func:`baseline_pairs` are the lab's one pairing (same
:func:`context`), which the ratios and break-evens of :mod:`labkit.results.compare` use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..frameworks import specs
from .schema import CONTEXT, DEFAULTS, key

__all__ = [
    "BASELINE",
    "baseline_pairs",
    "best",
    "context",
    "invalid",
    "is_valid",
    "latest",
    "ok",
    "pair",
    "valid",
]

#: the eager mode of each framework that has one (from the registry); every other mode is a
#: graph mode. A runtime of exported graphs (ONNX Runtime) has none: its speedup is measured
#: against the eager mode of the framework it runs exports of (see :data:`BASELINE`).
EAGER_MODES: dict[str, str] = {s.name: s.eager for s in specs() if s.eager is not None}
BASELINE: dict[str, tuple[str, str]] = {
    s.name: (s.name, s.eager)
    if s.eager is not None
    else (s.exported_from, EAGER_MODES[s.exported_from])
    for s in specs()
}


def ok(records: Iterable[dict]) -> list[dict]:
    return [r for r in records if r.get("status") == "ok"]


def is_valid(record: dict) -> bool:
    """Whether a record counts as evidence: measured, and its validity verdict is ``True``.

    Every record that :func:`load` or :func:`make` returns carries a verdict (version-1 lines
    are judged on loading); a hand-made dict without one is not evidence.
    """
    return record.get("status") == "ok" and record.get("valid") is True


def valid(records: Iterable[dict]) -> list[dict]:
    """The measured records that passed their validity verdict: what counts as evidence."""
    return [r for r in records if is_valid(r)]


def invalid(records: Iterable[dict]) -> list[dict]:
    """The measured records that did not pass their validity verdict (kept, shown flagged)."""
    return [r for r in ok(records) if not is_valid(r)]


def latest(records: Iterable[dict]) -> list[dict]:
    """One record per cell: the last one written (a later run re-measures a cell)."""
    by_key: dict[tuple, dict] = {}
    for r in records:
        by_key.pop(key(r), None)  # keep file order of the latest
        by_key[key(r)] = r
    return list(by_key.values())


def best(records: Iterable[dict], framework: str, task: str) -> dict | None:
    """The fastest measured record (highest images/s) of ``framework`` on ``task``, or None."""
    found = [r for r in ok(records) if r.get("framework") == framework and r.get("task") == task]
    return max(found, key=lambda r: r["images_per_s"], default=None)


# ---------------------------------------------------------------------------------------------
# one pairing


def context(record: dict) -> tuple:
    """What a record must share with another to be compared with it (:data:`CONTEXT`)."""
    defaults = {**DEFAULTS, "precision": "fp32", "device": "cpu"}
    return tuple(record.get(k, defaults.get(k)) for k in CONTEXT)


def _usable(records: Iterable[dict], include_invalid: bool) -> list[dict]:
    """The latest record of each cell, measured (and valid unless ``include_invalid``)."""
    cells = [r for r in latest(records) if r.get("status") == "ok"]
    cells = [r for r in cells if float(r.get("median_s") or 0) > 0]
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
    """The two records to compare: framework/mode ``num`` against ``den``, declared up front.

    Both sides are the latest record of their cell, measured and (unless ``include_invalid``)
    valid, on ``task``, ``precision`` and ``device``, in the same :func:`context` (model, image
    size, batch size). Where both were measured in several contexts, the largest image size
    (then batch) wins. None when a side is missing.
    """
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
    """Each measured graph-mode cell with the eager cell it is compared against (its
    :data:`BASELINE`, same :func:`context`). Serving records (an older labkit's) are left out: a
    server's modes are compared at a latency bound, not by one speedup."""
    cells = [r for r in _usable(records, include_invalid) if r.get("task") != "serve"]
    pool = {(r["framework"], r["mode"], context(r)): r for r in cells}
    for r in cells:
        if EAGER_MODES.get(r["framework"]) == r["mode"] or r["framework"] not in BASELINE:
            continue
        base = pool.get((*BASELINE[r["framework"]], context(r)))
        if base is not None:
            yield r, base
