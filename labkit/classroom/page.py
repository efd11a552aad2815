"""The class report: the four figures as PNG files and ``index.html`` with the tables behind them.

First what the page leaves out (files skipped at collection, figures that could not be drawn,
flagged records, lines left out of files), then the figures, the speedups and spreads (fixture
machines in rows of their own), the machine types, the flagged records, the failed cells and the
files collected. The skeleton is the template ``report.html`` beside this module. The page is
always written: where it cannot be made, a plain page says why.
"""

from __future__ import annotations

import html
import math
import os
import string
from pathlib import Path

from ..util.tables import html as table
from . import figures
from .figures import FIXTURE, rows, speedup_summary
from .ingest import cell_label, connect

__all__ = ["CAPTIONS", "TEMPLATE", "fmt_number", "render", "report"]

TEMPLATE = Path(__file__).resolve().parent / "report.html"
CAPTIONS = {
    "speedup": "Speedup of each graph mode over its eager baseline, across machine types "
    "(bar: interquartile range, tick: median of the measured, unflagged ones).",
    "ceiling": "Measured throughput against each machine's estimated ceiling for the same cell.",
}


def fmt_number(x, spec: str = "{:.2f}") -> str:
    """``x`` as the text of a table cell: empty for None or NaN."""
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else spec.format(x)


def report(db: str | os.PathLike = "class.duckdb", out: str | os.PathLike = "class-report") -> Path:
    """Write the figures (PNG) and ``index.html`` of the class report into ``out``; the page."""
    con = connect(db, read_only=True)
    try:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        missing: dict[str, str] = {}
        for name, fig in figures.draw(con).items():
            try:
                if isinstance(fig, Exception):
                    raise fig
                fig.savefig(out / f"{name}.png", dpi=100)
            except Exception as exc:  # noqa: BLE001 - named on the page instead
                missing[name] = f"{type(exc).__name__}: {str(exc)[:300]}"
        try:
            text = render(con, missing)
        except Exception as exc:  # noqa: BLE001 - still a page, saying what went wrong
            text = _plain_page(con, f"{type(exc).__name__}: {str(exc)[:300]}", missing)
        page = out / "index.html"
        page.write_text(text, encoding="utf-8")
    finally:
        con.close()
    return page


def _count(con, where: str, table: str = "records") -> int:
    return con.execute(f"SELECT count(*) FROM {table} WHERE {where}").fetchone()[0]


def _table(con, title: str, sql: str) -> str:
    """A section of the page: ``title`` (``{n}``: its number of rows) over the rows of ``sql``,
    the column names as the header, every cell escaped."""
    found = rows(con, sql)
    body = [[fmt_number(v) if isinstance(v, float) else v for v in r.values()] for r in found]
    head = f"<h2>{html.escape(title.format(n=len(found)))}</h2>" if title else ""
    return head + table(list(found[0]) if found else [], body)


def _left_out(con, missing: dict[str, str]) -> str:
    notes = rows(con, "SELECT name, note FROM files WHERE note <> '' ORDER BY name")
    items = [
        f"{_count(con, 'true', 'skipped')} file(s) skipped at collection (below, with the reason)",
        f"{_count(con, 'flagged')} flagged record(s): shown apart, not counted in the summaries",
        f"{_count(con, NOT_OK)} failed or unsupported cell(s): listed, nothing to measure",
        *(f"{Path(f['name']).name}: {f['note']}" for f in notes),
        *(f"figure {k} could not be drawn: {v}" for k, v in missing.items()),
    ]
    lis = "".join(f"<li>{html.escape(i)}</li>" for i in items)
    skipped = 'SELECT name AS "file skipped", reason AS why FROM skipped ORDER BY name'
    return f"<h2>What this report leaves out</h2><ul>{lis}</ul>" + _table(con, "", skipped)


def _plain_page(con, error: str, missing: dict[str, str]) -> str:
    try:
        left = _left_out(con, missing)
    except Exception as exc:  # noqa: BLE001 - the database itself is damaged
        left = f"<p>and the database could not be read ({html.escape(str(exc)[:300])})</p>"
    head = "<!doctype html><html><head><meta charset='utf-8'><title>Class results</title></head>"
    why = f"<p class='note'>The report could not be made in full: {html.escape(error)}</p>"
    return f"{head}<body><h1>Class results</h1>{why}{left}</body></html>"


NOT_OK = "status <> 'ok'"
LABEL = 'm.label AS "machine type"'
#: the page's tables after the figures: (title, query); the query's column names are the header
SECTIONS = (
    ("Speedups across machine types (unflagged)", "speedup"),
    ("Median speedup per CPU family", "family"),
    ("Spread of images/s between machines and within one (IQR / median)", "spread"),
    (
        "Machine types",
        f"""SELECT {LABEL}, cpu AS CPU, arch AS architecture, cores,
        memory_gb AS "memory GB", (SELECT count(*) FROM records r
        WHERE r.machine_id = m.machine_id) AS records FROM machines m
        ORDER BY fixture, family, cores, label""",
    ),
    (
        "Flagged records ({n}): kept, shown, not counted",
        f"""SELECT {LABEL}, framework, mode,
        task, precision, image_size AS px, batch_size AS batch, images_per_s AS "images/s",
        flags AS why FROM records JOIN machines m USING (machine_id) WHERE flagged
        ORDER BY 1, 2, 3""",
    ),
    (
        "Failed or unsupported cells ({n})",
        f"""SELECT {LABEL}, framework, mode, task,
        left(error, 160) AS error FROM records JOIN machines m USING (machine_id)
        WHERE {NOT_OK} ORDER BY 1""",
    ),
    (
        "Files collected ({n})",
        """SELECT regexp_extract(name, '[^/]*$') AS file, kind, records,
        new_records AS "new records", coalesce(note, '') AS note FROM files
        ORDER BY collected_at""",
    ),
)


def _section(con, title: str, what: str) -> str:
    if what not in ("speedup", "family", "spread"):
        return _table(con, title, what)
    found = (
        figures.spread(con)
        if what == "spread"
        else speedup_summary(con, by=what[:6] * (what == "family"))
    )
    for r in found:
        if what == "spread":
            r["cell"] = cell_label(r)
            for k in ("framework", "mode", "precision", "image_size", "batch_size"):
                del r[k]
        r |= {
            k: fmt_number(v, "{:.0%}" if what == "spread" else "{:.2f}")
            for k, v in r.items()
            if isinstance(v, float)
        }
    return f"<h2>{html.escape(title)}</h2>" + table(
        list(found[0]) if found else [], [list(r.values()) for r in found]
    )


def render(con, missing: dict[str, str] | None = None) -> str:
    """The page of the report over ``con`` (``missing``: figures not drawn, and why)."""
    missing, fixtures = missing or {}, _count(con, "fixture", "machines")
    parts = [
        (
            f"<p>{_count(con, 'true', 'files')} result cards and results files from "
            f"{_count(con, 'true', 'machines')} machine types; {_count(con, 'true')} records, "
            f"{_count(con, 'NOT ' + NOT_OK)} measured, {_count(con, 'flagged')} flagged (invalid, "
            "or above the machine's estimated ceiling: shown apart, never counted). Each dot in "
            "the figures is one machine type's latest measurement of a cell.</p>"
        )
    ]
    if fixtures:
        parts.append(
            f"<p class='note'>{fixtures} machine type(s) come from <b>fixture cards</b>: "
            "synthetic cards that show what the report does with machines the class may "
            "not have. Their numbers are not measurements: drawn hollow, marked "
            f"'{FIXTURE}', in rows of their own, never pooled with measured ones.</p>"
        )
    parts.append(_left_out(con, missing))
    parts += [
        f"<h2>{html.escape(CAPTIONS[n])}</h2><img src='{n}.png' alt='{n}'>"
        for n in figures.FIGURES
        if n not in missing
    ]
    parts += [_section(con, title, what) for title, what in SECTIONS]
    template = string.Template(TEMPLATE.read_text(encoding="utf-8"))
    return template.substitute(body="\n".join(parts))
