"""The class report's four figures, drawn from the class database (matplotlib, no pyplot).

``speedup``: each graph mode's speedup over eager, one dot per machine type; ``families``: the
median speedup per CPU family; ``ceiling``: throughput against each machine's ceiling;
``spread``: the spread between machine types against the spread within one. Flagged records are
drawn apart (a red cross) and left out of medians; fixture machines are drawn hollow.
"""

from __future__ import annotations

import math

from ..util import stats
from .db import ceiling_points, cell_label, ratios, spread

__all__ = [
    "FIGURES",
    "TASK_ORDER",
    "ceiling_figure",
    "draw",
    "family_figure",
    "speedup_figure",
    "spread_figure",
]

FIGURES = ("speedup", "families", "ceiling", "spread")
#: the order tasks are drawn in (any other task after them, by name)
TASK_ORDER = ("latency", "throughput", "train")


def _figure(width: float, height: float):
    from ..plots import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _no_data(what: str):
    fig = _figure(7, 2)
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, f"no {what} in the class database yet", ha="center", va="center")
    ax.set_axis_off()
    return fig


def _speedup_cell(ax, i: int, rs: list[dict]) -> None:
    """One graph cell's row: its interquartile bar and median, and a dot per machine type."""
    from ..plots import COLORS

    good = [r["speedup"] for r in rs if not r["flagged"]]
    if len(good) >= 2:
        q1, med, q3 = stats.quartiles(good)
        ax.plot([q1, q3], [i, i], color="0.6", lw=6, alpha=0.5, solid_capstyle="butt")
        ax.plot([med], [i], marker="|", color="black", ms=14)
    for n, r in enumerate(rs):
        y = i + ((n % 5) - 2) * 0.06
        color = COLORS.get(r["framework"], "tab:gray")
        if r["flagged"]:
            ax.plot(r["speedup"], y + 0.32, "x", color="tab:red", ms=6)
        else:
            ax.plot(r["speedup"], y, "o", color=color, ms=5, mfc="white" if r["fixture"] else color)


def _speedup_task(ax, task: str, labels: list[str], ratio_rows: list[dict]) -> None:
    """One task's panel: a row per graph cell, speedup on a log axis."""
    for i, c in enumerate(labels):
        _speedup_cell(ax, i, [r for r in ratio_rows if r["task"] == task and cell_label(r) == c])
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_xscale("log")
    ax.set_title(
        f"{task}: graph mode over its eager baseline, one dot per machine type",
        loc="left",
        fontsize=10,
    )
    ax.set_xlabel("speedup (eager median / graph median; > 1: graph faster)")
    ax.grid(axis="x", alpha=0.3)


def speedup_figure(ratio_rows: list[dict]):
    """Each graph mode's speedup over eager, one dot per machine type; flagged ones apart."""
    if not ratio_rows:
        return _no_data("graph-vs-eager ratios")
    tasks = [t for t in TASK_ORDER if any(r["task"] == t for r in ratio_rows)]
    tasks += sorted({r["task"] for r in ratio_rows} - set(tasks))
    cells = {t: sorted({cell_label(r) for r in ratio_rows if r["task"] == t}) for t in tasks}
    heights = [max(1.2, 0.42 * len(cells[t]) + 0.8) for t in tasks]
    fig = _figure(9, sum(heights) + 0.6)
    axes = fig.subplots(len(tasks), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, task in zip(axes, tasks):
        _speedup_task(ax, task, cells[task], ratio_rows)
    handles = [
        axes[0].plot([], [], "o", color="0.3", label="measured")[0],
        axes[0].plot([], [], "o", color="0.3", mfc="white", label="fixture (not a measurement)")[0],
        axes[0].plot([], [], "x", color="tab:red", label="flagged (invalid or above the ceiling)")[
            0
        ],
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    return fig


def _family(r: dict) -> str:
    return r["family"] + (" (fixture)" if r["fixture"] else "")


def family_figure(ratio_rows: list[dict]):
    """Median speedup per graph cell and CPU family (a heat map; unflagged ratios)."""
    good = [r for r in ratio_rows if not r["flagged"]]
    if not good:
        return _no_data("unflagged graph-vs-eager ratios")
    cells = sorted({(r["task"], cell_label(r)) for r in good})
    fams = sorted({_family(r) for r in good})
    grid = [[math.nan] * len(fams) for _ in cells]
    counts = [[0] * len(fams) for _ in cells]
    for i, (task, c) in enumerate(cells):
        for j, f in enumerate(fams):
            xs = [
                r["speedup"]
                for r in good
                if (r["task"], cell_label(r)) == (task, c) and _family(r) == f
            ]
            if xs:
                grid[i][j], counts[i][j] = stats.median(xs), len(xs)
    fig = _figure(max(6, 1.6 * len(fams) + 4), 0.42 * len(cells) + 1.6)
    ax = fig.add_subplot()
    logs = [[math.log2(v) if not math.isnan(v) else math.nan for v in row] for row in grid]
    lim = max([abs(v) for row in logs for v in row if not math.isnan(v)] + [0.1])
    im = ax.imshow(logs, cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
    for i in range(len(cells)):
        for j in range(len(fams)):
            if counts[i][j]:
                ax.text(
                    j,
                    i,
                    f"{grid[i][j]:.2f}x\nn={counts[i][j]}",
                    ha="center",
                    va="center",
                    fontsize=7,
                )
    ax.set_xticks(range(len(fams)), fams, rotation=20, ha="right")
    ax.set_yticks(range(len(cells)), [f"{t}: {c}" for t, c in cells])
    cb = fig.colorbar(im, ax=ax, shrink=0.8)
    cb.set_label("log2 median speedup (blue: graph faster)")
    ax.set_title("Median graph-over-eager speedup per CPU family", loc="left", fontsize=10)
    return fig


def _ceiling_points(ax, data: list[dict]) -> None:
    """The unflagged points per framework (hollow: fixture), then the flagged ones."""
    from ..plots import COLORS

    for fw in sorted({d["framework"] for d in data}):
        pts = [d for d in data if d["framework"] == fw and not d["flagged"]]
        for fixture in (False, True):
            sel = [d for d in pts if d["fixture"] == fixture]
            if sel:
                ax.scatter(
                    [d["ceiling_images_per_s"] for d in sel],
                    [d["images_per_s"] for d in sel],
                    s=18,
                    color=COLORS.get(fw, "tab:gray"),
                    facecolors="white" if fixture else COLORS.get(fw, "tab:gray"),
                    label=fw if not fixture else None,
                )
    bad = [d for d in data if d["flagged"]]
    if bad:
        ax.scatter(
            [d["ceiling_images_per_s"] for d in bad],
            [d["images_per_s"] for d in bad],
            marker="x",
            color="tab:red",
            label="flagged",
        )


def ceiling_figure(con):
    """Measured images/s against the machine's ceiling for the same cell (log-log)."""
    data = ceiling_points(con)
    if not data:
        return _no_data("records with a ceiling")
    fig = _figure(7, 5.5)
    ax = fig.add_subplot()
    _ceiling_points(ax, data)
    lo = min(min(d["images_per_s"] for d in data), min(d["ceiling_images_per_s"] for d in data))
    hi = max(max(d["images_per_s"] for d in data), max(d["ceiling_images_per_s"] for d in data))
    for share, ls in ((1.0, "-"), (0.1, ":"), (0.01, ":")):
        ax.plot([lo, hi], [lo * share, hi * share], color="black", lw=0.8, ls=ls)
        ax.annotate(
            f"{share:.0%} of ceiling", (hi, hi * share), fontsize=7, ha="right", va="bottom"
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("the machine's ceiling for this cell (images/s, estimated)")
    ax.set_ylabel("measured images/s")
    ax.set_title(
        "Throughput against each machine's ceiling (hollow: fixture)", loc="left", fontsize=10
    )
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    return fig


def spread_figure(spread_rows: list[dict]):
    """Relative spread between machine types against within one, per measured cell."""
    usable = [r for r in spread_rows if r["between"] is not None]
    if not usable:
        return _no_data("cells measured on two or more machine types")
    fig = _figure(9, 0.4 * len(usable) + 1.4)
    ax = fig.add_subplot()
    ys = range(len(usable))
    h = 0.27
    ax.barh(
        [y - h for y in ys],
        [r["between"] * 100 for r in usable],
        h,
        label="between machine types",
        color="tab:purple",
    )
    ax.barh(
        list(ys),
        [(r["within_machine"] or 0) * 100 for r in usable],
        h,
        label="within one machine type (runs)",
        color="tab:olive",
    )
    ax.barh(
        [y + h for y in ys],
        [(r["within_run"] or 0) * 100 for r in usable],
        h,
        label="within one run (calls)",
        color="tab:cyan",
    )
    ax.set_yticks(list(ys), [f"{r['task']}: {r['cell']}" for r in usable], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("relative spread of images/s, IQR / median (%)")
    ax.set_title(
        "How much machines differ, against how much one machine varies", loc="left", fontsize=10
    )
    ax.legend(fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return fig


def draw(con) -> dict:
    """Each figure of the report by name; one that cannot be drawn is the error it raised."""
    makers = {
        "speedup": lambda: speedup_figure(ratios(con)),
        "families": lambda: family_figure(ratios(con)),
        "ceiling": lambda: ceiling_figure(con),
        "spread": lambda: spread_figure(spread(con)),
    }
    out: dict = {}
    for name, make in makers.items():
        try:
            out[name] = make()
        except Exception as exc:  # noqa: BLE001 - the page is written whatever a record holds
            out[name] = exc
    return out
