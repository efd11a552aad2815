"""The plain-text :func:`table` of records (what ``python -m labkit report`` prints)."""

from __future__ import annotations

from collections.abc import Iterable

from ..frameworks import MODES, NAMES
from ..frameworks.contract import TASKS
from .query import flags, is_valid, latest
from .schema import DEFAULT_MODEL, model_name

__all__ = ["table"]

#: the columns of :func:`table` after the cell's own (framework, mode, ...)
_FIGURE_COLUMNS = (
    "images/s",
    "median ms",
    "IQR ms",
    "p90 ms",
    "first s",
    "ceiling",
    "peak",
    "RSS MB",
    "valid",
)


def accuracy_text(accuracy: dict | None) -> str:
    if not accuracy:
        return ""
    if accuracy.get("error"):
        return f"accuracy not measured: {accuracy['error']}"
    text = (
        f"largest logit difference {accuracy['max_abs_diff']:.2g} ({accuracy['max_rel_diff']:.1%}"
        f" of the largest fp32 logit), top-1 agreement {accuracy['top1_agreement']:.0%} on "
        f"{accuracy['images']} synthetic images"
    )
    if "centred_top1_agreement" in accuracy:
        text += (
            f" ({accuracy['top1_classes']} top class(es) in fp32; on the image-dependent part "
            f"of the logits {accuracy['centred_top1_agreement']:.0%})"
        )
    return text


def _order():
    """The table's sort key: the ResNet-50 first, the registry's and the tasks' orders."""
    order = {fw: i for i, fw in enumerate(NAMES)}
    modes = {(fw, m): i for fw, ms in MODES.items() for i, m in enumerate(ms)}
    tasks = {t: i for i, t in enumerate(TASKS)}
    return lambda r: (
        r.get("model", DEFAULT_MODEL) != DEFAULT_MODEL,
        r.get("model", DEFAULT_MODEL),
        order.get(r["framework"], 9),
        tasks.get(r["task"], 9),
        r["precision"],
        r["batch_size"],
        r["image_size"],
        r.get("input_shape", ""),
        r["device"],
        modes.get((r["framework"], r["mode"]), 9),
    )


def _share_text(share: float | None, above: bool) -> str:
    if share is None:
        return "-"
    return f"{share:.1%}" + (" (!)" if above else "")


def table(records: Iterable[dict]) -> str:
    """The latest record of each cell in aligned columns (``ceiling``/``peak``: the share of the
    estimated ceiling / measured peak, ``(!)`` above it), then the flags and accuracy costs."""
    rows = sorted(latest(records), key=_order())
    models = any(r.get("model", DEFAULT_MODEL) != DEFAULT_MODEL for r in rows)
    lead = ("model",) * models + ("framework", "mode", "task", "batch", "prec", "size", "dev")
    n = len(lead)
    lines, notes, costs = [], [], []
    for r in rows:
        cells = _cells(r, models)
        ok_, why = r["status"] == "ok", flags(r)
        if ok_ and why:
            notes.append(f"{' '.join(cells[: n - 4])}: " + "; ".join(why))
        if ok_ and r.get("accuracy"):
            costs.append(
                f"{' '.join(cells[: n - 4])} {r['precision']}: " + accuracy_text(r["accuracy"])
            )
        lines.append(cells)
    out = _aligned(lead + _FIGURE_COLUMNS, n, lines)
    if notes:
        out += ["", "flags:"] + [f"  {n}" for n in notes]
    if costs:
        out += ["", "accuracy against fp32:"] + [f"  {c}" for c in costs]
    return "\n".join(out)


def _cells(r: dict, models: bool) -> list[str]:
    cells = [model_name(r.get("model", DEFAULT_MODEL))] * models + [
        r["framework"],
        r["mode"],
        r["task"],
        str(r["batch_size"]),
        r["precision"],
        r.get("input_shape") or str(r["image_size"]),
        r["device"],
    ]
    if r["status"] != "ok":
        err = r["error"] or ""
        return cells + [f"FAILED: {err if len(err) <= 70 else err[:67] + '...'}"]
    return cells + [
        f"{r['images_per_s']:.2f}",
        f"{r['median_s'] * 1e3:.1f}",
        f"{r['iqr_s'] * 1e3:.1f}",
        f"{r['p90_s'] * 1e3:.1f}",
        f"{r['first_call_s']:.2f}",
        _share_text(r["ceiling_share"], bool(r.get("above_ceiling"))),
        _share_text(r.get("measured_peak_share"), bool(r.get("above_measured_peak"))),
        f"{r['peak_rss_mb']:.0f}",
        "yes" if is_valid(r) else "NO",
    ]


def _aligned(head: tuple[str, ...], n: int, lines: list[list[str]]) -> list[str]:
    """Columns: the first ``n`` left-aligned, the figures right-aligned; a failed row's message
    runs on, not widening any column."""
    widths = [
        max(
            [len(h)] + [len(c[i]) for c in lines if i < len(c) and not (len(c) == n + 1 and i == n)]
        )
        for i, h in enumerate(head)
    ]
    fmt = lambda cs: "  ".join(
        c.ljust(w) if i < n else c.rjust(w) for i, (c, w) in enumerate(zip(cs, widths))
    )
    out = [fmt(head), fmt(["-" * w for w in widths])]
    for c in lines:
        out.append(fmt(c) if len(c) == len(head) else fmt(c[:n]) + "  " + c[n])
    return out
