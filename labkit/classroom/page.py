"""The class report: two figures (PNG) and ``index.html`` (template ``report.html``) with the
tables behind them, first what it leaves out. Flagged records are drawn apart (a red cross), left
out of medians; fixture machines are never pooled with measured ones: hollow markers and the
legend entry :data:`FIXTURE` in a figure, rows of their own (``source``) in a table."""

from __future__ import annotations

import html
import math
import os
import string
from pathlib import Path

from .. import plots
from ..util import stats
from ..util.tables import html as table
from .ingest import FIXTURE, cell_label, connect, machines, ratios, rows

__all__ = ["FIGURES", "TEMPLATE", "ceiling_figure", "render", "report", "speedup_figure"]
__all__ += ["speedup_summary", "spread"]

#: the report's figures by name: the caption, and the figure drawn from the class database
FIGURES = {
    "speedup": "Speedup of each graph mode over its eager baseline, across machine types "
    "(bar: interquartile range, tick: median of the measured, unflagged ones).",
    "ceiling": "Measured throughput against each machine's estimated ceiling for the same cell.",
}
TEMPLATE = Path(__file__).resolve().parent / "report.html"
SOURCE = f"CASE WHEN m.fixture THEN '{FIXTURE}' ELSE 'measured' END AS source"
CELL = "framework, mode, precision, image_size, batch_size"
#: per graph cell and source: the unflagged ratios (``s``), the flagged ones counted apart
SUMMARY = f"""SELECT task, cell, {SOURCE}, {{by}} baseline, count(s) AS machines,
    quantile_cont(s, 0.25) AS q1, quantile_cont(s, 0.75) AS q3, median(s) AS median,
    min(s) AS min, max(s) AS max, count(*) FILTER (s > 1) AS faster_on,
    count(*) FILTER (flagged) AS flagged FROM (SELECT *, CASE WHEN NOT flagged THEN speedup END
    AS s FROM ratios) JOIN machines m USING (machine_id) GROUP BY ALL ORDER BY ALL"""
REL = "(quantile_cont({0}, 0.75) - quantile_cont({0}, 0.25)) / median({0})"  # IQR / median
SPREAD = f"""WITH per AS (SELECT task, {CELL}, {SOURCE}, machine_id, median(images_per_s) AS med,
        count(*) AS n, {REL.format("images_per_s")} AS runs, median(iqr_s / median_s) AS run
        FROM records JOIN machines m USING (machine_id) WHERE status = 'ok' AND NOT flagged
        GROUP BY ALL)
    SELECT task, {CELL}, source, count(*) AS machines,
        CASE WHEN count(*) > 1 THEN {REL.format("med")} END AS between,
        median(runs) FILTER (WHERE n > 1) AS within_machine, median(run) AS within_run
    FROM per GROUP BY ALL ORDER BY task, source, {CELL}"""
NOT_OK = "status <> 'ok'"
#: the page's last tables, title (``{n}``: its number of rows): query
QUERIES = {
    "Flagged records ({n}): kept, shown, not counted": """SELECT m.label AS "machine type",
        framework, mode, task, precision, image_size AS px, batch_size AS batch,
        images_per_s AS "images/s", flags AS why
        FROM records JOIN machines m USING (machine_id) WHERE flagged ORDER BY 1, 2, 3""",
    "Failed or unsupported cells ({n})": f"""SELECT m.label AS "machine type", framework, mode,
        task, left(error, 160) AS error FROM records JOIN machines m USING (machine_id)
        WHERE {NOT_OK} ORDER BY 1""",
    "Files collected ({n})": """SELECT regexp_extract(name, '[^/]*$') AS file, kind, records,
        new_records AS "new records", coalesce(note, '') AS note FROM files
        ORDER BY collected_at""",
}
INTRO = (
    "<p>{} result cards and results files from {} machine types; {} records, {} measured, {} "
    "flagged (invalid, or above the machine's estimated ceiling: shown apart, never counted). "
    "Each dot in the figures is one machine type's latest measurement of a cell.</p>"
)
FIXTURE_NOTE = (
    "<p class='note'>{} machine type(s) come from <b>fixture cards</b>: synthetic cards that show "
    "what the report does with machines the class may not have. Their numbers are not "
    f"measurements: drawn hollow, marked '{FIXTURE}', in rows of their own, never pooled with "
    "measured ones.</p>"
)


def speedup_summary(con, by: str = "") -> list[dict]:
    """Per graph cell and source (measured, or :data:`FIXTURE`; ``by="family"``: and CPU
    family): the unflagged ratios' machines, quartiles, median and range, and the flagged ones."""
    return rows(con, SUMMARY.format(by=f"m.{by}," if by else ""))


def spread(con) -> list[dict]:
    """Per measured cell and source, as IQR / median: ``between`` machine types (of each one's
    median images/s), ``within_machine`` (across the runs of one type, median over types with
    several), ``within_run`` (of a record's call times, median over types). Unflagged only."""
    return rows(con, SPREAD)


def _canvas(width: float, height: float):
    fig = plots.Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def _points(fig, ax, points: list[tuple[float, float, dict]]) -> None:
    """Each ``(x, y, row)`` a point: a dot, or a red cross when flagged; filled when measured,
    hollow for a fixture (flagged or not); and the legend that says so."""
    from matplotlib.lines import Line2D

    for x, y, r in points:
        flagged = r["flagged"]
        color = "tab:red" if flagged else plots.COLORS.get(r["framework"], "tab:gray")
        face = "white" if r["fixture"] else color
        ax.scatter(x, y, s=36 if flagged else 22, marker="X" if flagged else "o", c=face, ec=color)
    marks = (("o", "0.3", "0.3", "measured"), ("o", "0.3", "white", FIXTURE))
    marks += (("X", "tab:red", "tab:red", "flagged (invalid or above the ceiling)"),)
    marks += (("X", "tab:red", "white", f"flagged, {FIXTURE}"),)
    handles = [Line2D([], [], ls="", marker=m, color=c, mfc=f, label=t) for m, c, f, t in marks]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8)


def speedup_figure(ratio_rows: list[dict]):
    """Each graph mode's speedup over eager, a row per task and cell, one dot per machine type;
    the bar (interquartile range) and tick (median) of the measured, unflagged ones only."""
    if not ratio_rows:
        return plots.Nothing("No graph-vs-eager ratios in the class database yet.")
    labels = sorted({(r["task"], r["cell"]) for r in ratio_rows})
    fig, ax = _canvas(9, 0.42 * len(labels) + 1.6)
    points = []
    for i, label in enumerate(labels):
        rs = [r for r in ratio_rows if (r["task"], r["cell"]) == label]
        real = [r["speedup"] for r in rs if not r["flagged"] and not r["fixture"]]
        if len(real) >= 2:
            q1, med, q3 = stats.quartiles(real)
            ax.plot([q1, q3], [i, i], color="0.6", lw=6, alpha=0.5, solid_capstyle="butt")
            ax.plot([med], [i], marker="|", color="black", ms=14)
        for n, r in enumerate(rs):  # side by side, flagged ones apart
            points.append((r["speedup"], i + (n % 5 - 2) * 0.06 + 0.3 * r["flagged"], r))
    _points(fig, ax, points)
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_yticks(range(len(labels)), [f"{t}: {c}" for t, c in labels])
    ax.set(xscale="log", xlabel="speedup (eager median / graph median; > 1: graph faster)")
    ax.set_title("Graph mode over its eager baseline, one dot per machine type", loc="left")
    ax.grid(axis="x", alpha=0.3)
    return fig


def ceiling_figure(con):
    """Measured images/s against the machine's ceiling for the same cell (log-log)."""
    sql = """SELECT r.framework, r.images_per_s AS y, r.ceiling_images_per_s AS x, r.flagged,
        m.fixture FROM records r JOIN machines m USING (machine_id)
        WHERE r.status = 'ok' AND r.ceiling_images_per_s > 0"""
    if not (data := rows(con, sql)):
        return plots.Nothing("No records with a ceiling in the class database yet.")
    fig, ax = _canvas(7, 6)
    _points(fig, ax, [(d["x"], d["y"], d) for d in data])
    lo, hi = min(min(d["x"], d["y"]) for d in data), max(max(d["x"], d["y"]) for d in data)
    for share, ls in ((1.0, "-"), (0.1, ":"), (0.01, ":")):
        ax.plot([lo, hi], [lo * share, hi * share], color="black", lw=0.8, ls=ls)
        ax.text(hi, hi * share, f"{share:.0%} of ceiling", fontsize=7, ha="right", va="bottom")
    ax.set(xscale="log", yscale="log", ylabel="measured images/s")
    ax.set_xlabel("the machine's ceiling for this cell (images/s, estimated)")
    ax.set_title("Throughput against each machine's ceiling", loc="left", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    return fig


def report(db: str | os.PathLike = "class.duckdb", out: str | os.PathLike = "class-report") -> Path:
    """Write the figures (PNG) and ``index.html`` of the class report into ``out``; the page."""
    con, out, missing = connect(db, read_only=True), Path(out), {}
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name in FIGURES:
            try:
                fig = speedup_figure(ratios(con)) if name == "speedup" else ceiling_figure(con)
                if isinstance(fig, plots.Nothing):
                    raise LookupError(fig)
                fig.savefig(out / f"{name}.png", dpi=100)
            except Exception as exc:  # noqa: BLE001 - named on the page instead
                missing[name] = f"{type(exc).__name__}: {str(exc)[:300]}"
        try:
            text = render(con, missing)
        except Exception as exc:  # noqa: BLE001 - still a page, saying what went wrong
            why = html.escape(f"{type(exc).__name__}: {str(exc)[:300]}")
            text = "<!doctype html><meta charset='utf-8'><title>Class results</title><h1>Class "
            text += f"results</h1><p>The report could not be made in full: {why}</p>"
            text += _left_out(con, missing)
        (page := out / "index.html").write_text(text, encoding="utf-8")
    finally:
        con.close()
    return page


def _count(con, where: str, of: str = "records") -> int:
    return con.execute(f"SELECT count(*) FROM {of} WHERE {where}").fetchone()[0]


def _table(title: str, found: list[dict], spec: str = "{:.2f}") -> str:
    """A section of the page: ``title`` (``{n}``: its number of rows) over ``found``, the keys as
    the header, floats as ``spec`` (NaN empty), every cell escaped."""

    def cell(v):
        return ("" if math.isnan(v) else spec.format(v)) if isinstance(v, float) else v

    head = f"<h2>{html.escape(title.format(n=len(found)))}</h2>" if title else ""
    return head + table(list(found[0]) if found else [], [map(cell, r.values()) for r in found])


def _left_out(con, missing: dict[str, str]) -> str:
    notes = rows(con, "SELECT name, note FROM files WHERE note <> '' ORDER BY name")
    items = [
        f"{_count(con, 'true', 'skipped')} file(s) skipped at collection (below, with the reason)",
        f"{_count(con, 'flagged')} flagged record(s): shown apart, not counted in the summaries",
        f"{_count(con, NOT_OK)} failed or unsupported cell(s): listed, nothing to measure",
        *(f"{Path(f['name']).name}: {f['note']}" for f in notes),
        *(f"figure {k} could not be drawn: {v}" for k, v in missing.items()),
    ]
    skipped = rows(con, 'SELECT name AS "file skipped", reason AS why FROM skipped ORDER BY name')
    lis = "".join(f"<li>{html.escape(i)}</li>" for i in items)
    return f"<h2>What this report leaves out</h2><ul>{lis}</ul>" + _table("", skipped)


def render(con, missing: dict[str, str] | None = None) -> str:
    """The page of the report over ``con`` (``missing``: figures not drawn, and why): what it
    leaves out, the figures, the speedups and spreads, the machine types, the flagged records,
    the failed cells and the files collected."""
    counts = [_count(con, "true", of) for of in ("files", "machines", "records")]
    parts = [INTRO.format(*counts, _count(con, "NOT " + NOT_OK), _count(con, "flagged"))]
    if fixtures := _count(con, "fixture", "machines"):
        parts.append(FIXTURE_NOTE.format(fixtures))
    missing = missing or {}
    parts.append(_left_out(con, missing))
    for n in (n for n in FIGURES if n not in missing):
        parts.append(f"<h2>{html.escape(FIGURES[n])}</h2><img src='{n}.png' alt='{n}'>")
    by_cell = [{"task": s.pop("task"), "cell": cell_label(s)} | s for s in spread(con)]
    by_cell = [{k: v for k, v in s.items() if k not in CELL.split(", ")} for s in by_cell]
    names = {"label": "machine type", "cpu": "CPU", "arch": "architecture", "cores": "cores"}
    names |= {"memory_gb": "memory GB", "records": "records"}
    spread_title = "Spread of images/s between machines and within one (IQR / median)"
    parts += [
        _table("Speedups across machine types (unflagged)", speedup_summary(con)),
        _table("Median speedup per CPU family", speedup_summary(con, by="family")),
        _table(spread_title, by_cell, "{:.0%}"),
        _table("Machine types", [{v: m[k] for k, v in names.items()} for m in machines(con)]),
        *(_table(title, rows(con, sql)) for title, sql in QUERIES.items()),
    ]
    template = string.Template(TEMPLATE.read_text(encoding="utf-8"))
    return template.substitute(body="\n".join(parts))
