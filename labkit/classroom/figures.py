"""The class database's queries and the report's two figures (matplotlib, no pyplot).

``speedup``: each graph mode's speedup over eager, one dot per machine type; ``ceiling``:
throughput against each machine's ceiling (the spread between machine types against the spread
within one is a table: :func:`spread`). Flagged records are drawn apart (a red cross) and left out of medians.
**Fixture machines** (synthetic cards, not measurements) are never pooled with measured ones:
hollow markers and the legend entry :data:`FIXTURE` in a figure, rows of their own in a table.
"""

from __future__ import annotations

from ..util import stats

__all__ = ["FIGURES", "FIXTURE", "ceiling_figure", "draw", "machines", "ratios", "rows"]
__all__ += ["speedup_figure", "speedup_summary", "spread"]

FIGURES = ("speedup", "ceiling")
FIXTURE = "fixture (synthetic)"  #: how a fixture machine's figures are marked, everywhere
SOURCE = f"CASE WHEN m.fixture THEN '{FIXTURE}' ELSE 'measured' END AS source"
CELL = "framework, mode, precision, image_size, batch_size"


def rows(con, sql: str, params=()) -> list[dict]:
    """The rows of ``sql`` as dicts by column name."""
    cur = con.execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def machines(con) -> list[dict]:
    """One row per machine type (measured first, then fixtures), with its records."""
    return rows(
        con,
        """SELECT m.*, (SELECT count(*) FROM records r
        WHERE r.machine_id = m.machine_id) AS records FROM machines m
        ORDER BY m.fixture, m.family, m.cores, m.label""",
    )


def ratios(con) -> list[dict]:
    """Each machine type's graph-vs-eager ratios (:func:`labkit.results.cards.ratios` over its
    records, kept at collection) with its label, family and whether it is a fixture."""
    return rows(
        con,
        """SELECT r.*, m.label AS machine, m.family, m.fixture FROM ratios r
        JOIN machines m USING (machine_id) ORDER BY r.task, r.cell, m.fixture, m.label""",
    )


def speedup_summary(con, by: str = "") -> list[dict]:
    """Per graph cell and source (measured, or :data:`FIXTURE`; ``by="family"``: and CPU
    family): the unflagged ratios' machines, median, quartiles and range, and the flagged ones.
    Fixture machines are rows of their own, never pooled with measured ones."""
    q = "{}(speedup{}) FILTER (NOT flagged) AS {}"
    stat = [q.format("quantile_cont", f", {p}", n) for n, p in (("q1", 0.25), ("q3", 0.75))]
    stat += [q.format(f, "", n) for f, n in (("median", "median"), ("min", "min"), ("max", "max"))]
    return rows(
        con,
        f"""SELECT task, cell, {SOURCE}, {f"m.{by}, " if by else ""} baseline,
        count(*) FILTER (NOT flagged) AS machines, {", ".join(stat)},
        count(*) FILTER (NOT flagged AND speedup > 1) AS faster_on,
        count(*) FILTER (flagged) AS flagged
        FROM ratios JOIN machines m USING (machine_id) GROUP BY ALL ORDER BY ALL""",
    )


def spread(con) -> list[dict]:
    """Per measured cell and source: ``between`` (IQR / median of images/s across machine types,
    each machine's median), ``within_machine`` (IQR / median across the runs of one machine
    type, median over types with several), ``within_run`` (a record's IQR / median of its call
    times, median over types). Unflagged records only."""
    rel = "(quantile_cont({0}, 0.75) - quantile_cont({0}, 0.25)) / median({0})"
    return rows(
        con,
        f"""WITH per AS (
        SELECT task, {CELL}, {SOURCE}, machine_id, median(images_per_s) AS med, count(*) AS n,
               {rel.format("images_per_s")} AS runs, median(iqr_s / median_s) AS run
        FROM records JOIN machines m USING (machine_id)
        WHERE status = 'ok' AND NOT flagged GROUP BY ALL)
      SELECT task, {CELL}, source, count(*) AS machines,
             CASE WHEN count(*) > 1 THEN {rel.format("med")} END AS between,
             median(runs) FILTER (WHERE n > 1) AS within_machine, median(run) AS within_run
      FROM per GROUP BY ALL ORDER BY task, source, {CELL}""",
    )


# ---------------------------------------------------------------------------------------------
# figures


def _figure(width: float, height: float, what: str = ""):
    from ..plots import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    if what:
        ax = fig.add_subplot()
        ax.text(0.5, 0.5, f"no {what} in the class database yet", ha="center", va="center")
        ax.set_axis_off()
    return fig


def _marker(ax, x, y, fw: str, fixture: bool, flagged: bool = False, **kw) -> None:
    """A point: filled (measured), hollow (fixture), or a red cross (flagged)."""
    from ..plots import COLORS

    if flagged:
        return ax.scatter(x, y, marker="x", color="tab:red", s=30, **kw)
    color = COLORS.get(fw, "tab:gray")
    return ax.scatter(x, y, s=22, edgecolors=color, facecolors="white" if fixture else color, **kw)


def _legend(fig) -> None:
    from matplotlib.lines import Line2D

    marks = (("o", "0.3", "measured"), ("o", "white", FIXTURE))
    handles = [Line2D([], [], ls="", marker=m, color="0.3", mfc=f, label=t) for m, f, t in marks]
    handles.append(
        Line2D(
            [],
            [],
            ls="",
            marker="x",
            color="tab:red",
            label="flagged (invalid or above the ceiling)",
        )
    )
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)


def speedup_figure(ratio_rows: list[dict]):
    """Each graph mode's speedup over eager, a row per task and cell, one dot per machine type;
    the bar (interquartile range) and tick (median) of the measured, unflagged ones only."""
    if not ratio_rows:
        return _figure(7, 2, "graph-vs-eager ratios")
    labels = sorted({(r["task"], r["cell"]) for r in ratio_rows})
    fig = _figure(9, 0.42 * len(labels) + 1.6)
    ax = fig.add_subplot()
    for i, label in enumerate(labels):
        rs = [r for r in ratio_rows if (r["task"], r["cell"]) == label]
        real = [r["speedup"] for r in rs if not r["flagged"] and not r["fixture"]]
        if len(real) >= 2:
            q1, med, q3 = stats.quartiles(real)
            ax.plot([q1, q3], [i, i], color="0.6", lw=6, alpha=0.5, solid_capstyle="butt")
            ax.plot([med], [i], marker="|", color="black", ms=14)
        for n, r in enumerate(rs):
            y = i + ((n % 5) - 2) * 0.06 + 0.3 * r["flagged"]
            _marker(ax, r["speedup"], y, r["framework"], r["fixture"], r["flagged"])
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_yticks(range(len(labels)), [f"{t}: {c}" for t, c in labels])
    ax.set_xscale("log")
    ax.set_xlabel("speedup (eager median / graph median; > 1: graph faster)")
    ax.set_title("Graph mode over its eager baseline, one dot per machine type", loc="left")
    ax.grid(axis="x", alpha=0.3)
    _legend(fig)
    return fig


def ceiling_figure(con):
    """Measured images/s against the machine's ceiling for the same cell (log-log)."""
    data = rows(
        con,
        """SELECT r.framework, r.images_per_s AS y, r.ceiling_images_per_s AS x,
        r.flagged, m.fixture FROM records r JOIN machines m USING (machine_id)
        WHERE r.status = 'ok' AND r.ceiling_images_per_s > 0""",
    )
    if not data:
        return _figure(7, 2, "records with a ceiling")
    fig = _figure(7, 6)
    ax = fig.add_subplot()
    for d in data:
        _marker(ax, d["x"], d["y"], d["framework"], d["fixture"], d["flagged"])
    lo, hi = min(min(d["x"], d["y"]) for d in data), max(max(d["x"], d["y"]) for d in data)
    for share, ls in ((1.0, "-"), (0.1, ":"), (0.01, ":")):
        ax.plot([lo, hi], [lo * share, hi * share], color="black", lw=0.8, ls=ls)
        ax.annotate(
            f"{share:.0%} of ceiling", (hi, hi * share), fontsize=7, ha="right", va="bottom"
        )
    ax.set(
        xscale="log",
        yscale="log",
        ylabel="measured images/s",
        xlabel="the machine's ceiling for this cell (images/s, estimated)",
    )
    ax.set_title("Throughput against each machine's ceiling", loc="left", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    _legend(fig)
    return fig


def draw(con) -> dict:
    """Each figure of the report by name; one that cannot be drawn is the error it raised."""
    makers = {
        "speedup": lambda: speedup_figure(ratios(con)),
        "ceiling": lambda: ceiling_figure(con),
    }
    out: dict = {}
    for name, make in makers.items():
        try:
            out[name] = make()
        except Exception as exc:  # noqa: BLE001 - the page is written whatever a record holds
            out[name] = exc
    return out
