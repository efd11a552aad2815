"""The class report: the four figures as PNG files and ``index.html`` with the tables behind them.

:func:`report` draws the figures (:mod:`~labkit.classroom.figures`) and writes the page: what it
leaves out (files skipped at collection, figures that could not be drawn, flagged records, lines
left out of files) first, then the figures, the speedups and spreads across machine types, the
machine types, the flagged records, the failed cells and the files collected. The skeleton and
style of the page are the template ``report.html`` beside this module. The page is always
written: a figure or table that cannot be made is named on it, and where the page itself cannot
be made, a plain page says why.
"""

from __future__ import annotations

import html
import math
import os
import string
from pathlib import Path

from ..util import tables
from .db import (
    card_count,
    connect,
    counts,
    failed_cells,
    file_notes,
    files,
    flagged_records,
    machines,
    ratios,
    skipped_files,
    speedup_summary,
    spread,
)
from .figures import FIGURES, draw

__all__ = ["CAPTIONS", "TEMPLATE", "fmt_number", "render", "report"]

#: the page's skeleton and style; its ``$body`` placeholder takes the report's sections
TEMPLATE = Path(__file__).resolve().parent / "report.html"
#: each figure's heading on the page
CAPTIONS = {
    "speedup": "Speedup of each graph mode over its eager baseline, across machine types "
    "(bar: interquartile range, tick: median of the unflagged ones).",
    "families": "Median speedup per CPU family.",
    "ceiling": "Measured throughput against each machine's estimated ceiling for the same cell.",
    "spread": "Spread between machine types against the spread within one.",
}


def fmt_number(x, spec: str = "{:.2f}") -> str:
    """``x`` as the text of a table cell: empty for None or NaN."""
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else spec.format(x)


def report(db: str | os.PathLike = "class.duckdb", out: str | os.PathLike = "class-report") -> Path:
    """Write the figures (PNG) and ``index.html`` of the class report into ``out``; returns the
    page. The page is always written: a figure or table that cannot be made is named on it."""
    con = connect(db, read_only=True)
    try:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        missing = _save_figures(con, out)
        try:
            text = render(con, missing)
        except Exception as exc:  # noqa: BLE001 - still a page, saying what went wrong
            text = _fallback_page(con, f"{type(exc).__name__}: {str(exc)[:300]}", missing)
        page = out / "index.html"
        page.write_text(text, encoding="utf-8")
    finally:
        con.close()
    return page


def _save_figures(con, out: Path) -> dict[str, str]:
    """Each figure as ``out/NAME.png``; the ones that could not be drawn or saved, and why."""
    missing: dict[str, str] = {}
    for name, fig in draw(con).items():
        try:
            if isinstance(fig, Exception):
                raise fig
            fig.savefig(out / f"{name}.png", dpi=100)
        except Exception as exc:  # noqa: BLE001 - named on the page instead
            missing[name] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return missing


def _left_out(con, missing: dict[str, str]) -> str:
    """The page's account of what it leaves out: files skipped at collection, figures that could
    not be drawn, records kept out of the summaries, lines left out of files."""
    skipped = skipped_files(con)
    n = counts(con)
    parts = [
        "<h2>What this report leaves out</h2><ul>",
        f"<li>{len(skipped)} file(s) skipped at collection (below, with the reason)</li>",
        f"<li>{n['flagged']} flagged record(s): shown apart, not counted in the summaries</li>",
        f"<li>{n['failed']} failed or unsupported cell(s): listed, nothing to measure</li>",
    ]
    parts += [
        f"<li>{html.escape(Path(f['name']).name)}: {html.escape(f['note'])}</li>"
        for f in file_notes(con)
    ]
    parts += [
        f"<li>figure {html.escape(k)} could not be drawn: {html.escape(v)}</li>"
        for k, v in missing.items()
    ]
    parts.append("</ul>")
    if skipped:
        parts.append(
            tables.html(("file skipped", "why"), [(f["name"], f["reason"]) for f in skipped])
        )
    return "\n".join(parts)


def _fallback_page(con, error: str, missing: dict[str, str]) -> str:
    try:
        left = _left_out(con, missing)
    except Exception as exc:  # noqa: BLE001 - the database itself is damaged
        left = f"<p>and the database could not be read ({html.escape(str(exc)[:300])})</p>"
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Class results</title></head>"
        f"<body><h1>Class results</h1><p class='note'>The report could not be made in full: "
        f"{html.escape(error)}</p>{left}</body></html>"
    )


# ---------------------------------------------------------------------------------------------
# the page's sections, in order


def _intro(con, ms: list[dict]) -> list[str]:
    """What the database holds, and a note when some machine types are fixtures."""
    n = counts(con)
    held = (
        f"<p>{card_count(con)} result cards from {len(ms)} machine types; {n['records']} records, "
        f"{n['measured']} measured, {n['flagged']} flagged (invalid, or above the machine's "
        "estimated ceiling: shown apart, never counted). Each dot in the figures is one machine "
        "type's latest measurement of a cell.</p>"
    )
    parts = [held]
    fixtures = sum(m["fixture"] for m in ms)
    if fixtures:
        parts.append(
            f"<p class='note'>{fixtures} machine type(s) come from <b>fixture cards</b>: synthetic "
            "cards that show what the report does with machines the class may not have. Their "
            "numbers are not measurements; they are drawn hollow and labelled 'fixture'.</p>"
        )
    return parts


def _figure_sections(missing: dict[str, str]) -> list[str]:
    return [
        f"<h2>{html.escape(CAPTIONS[name])}</h2><img src='{name}.png' alt='{name}'>"
        for name in FIGURES
        if name not in missing
    ]


def _speedup_table(ratio_rows: list[dict]) -> list[str]:
    head = ("task", "graph cell", "baseline", "machines", "median", "Q1", "Q3", "min", "max")
    head += ("graph faster on", "flagged")
    body = [
        (
            s["task"],
            s["cell"],
            s["baseline"],
            s["machines"],
            *(fmt_number(s.get(k)) for k in ("median", "q1", "q3", "min", "max")),
            f"{s.get('faster_on', 0)} of {s['machines']}",
            s["flagged"],
        )
        for s in speedup_summary(ratio_rows)
    ]
    return ["<h2>Speedups across machine types (unflagged)</h2>", tables.html(head, body)]


def _spread_table(con) -> list[str]:
    head = ("task", "cell", "machine types", "between", "within one type (runs)", "within one run")
    body = [
        (
            s["task"],
            s["cell"],
            s["machines"],
            *(fmt_number(s[k], "{:.0%}") for k in ("between", "within_machine", "within_run")),
        )
        for s in spread(con)
    ]
    return ["<h2>Spread between machines and within one</h2>", tables.html(head, body)]


def _machines_table(ms: list[dict]) -> list[str]:
    head = ("machine type", "CPU", "architecture", "cores", "memory GB", "cards", "records")
    keys = ("label", "cpu", "arch", "cores", "memory_gb", "cards", "records")
    return ["<h2>Machine types</h2>", tables.html(head, [[m[k] for k in keys] for m in ms])]


def _flagged_table(flagged: list[dict]) -> list[str]:
    head = ("machine type", "framework", "mode", "task", "precision", "px", "batch", "images/s")
    head += ("why",)
    body = [
        (
            *(f[k] for k in ("label", "framework", "mode", "task", "precision")),
            f["image_size"],
            f["batch_size"],
            fmt_number(f["images_per_s"], "{:.1f}"),
            f["flags"],
        )
        for f in flagged
    ]
    title = f"<h2>Flagged records ({len(flagged)}): kept, shown, not counted</h2>"
    return [title, tables.html(head, body)]


def _failed_table(failed: list[dict]) -> list[str]:
    head = ("machine type", "framework", "mode", "task", "error")
    body = [
        (f["label"], f["framework"], f["mode"], f["task"], (f["error"] or "")[:160]) for f in failed
    ]
    return [f"<h2>Failed or unsupported cells ({len(failed)})</h2>", tables.html(head, body)]


def _files_table(collected: list[dict]) -> list[str]:
    head = ("file", "kind", "records", "new records", "note")
    body = [
        (Path(f["name"]).name, f["kind"], f["records"], f["new_records"], f["note"] or "")
        for f in collected
    ]
    return [f"<h2>Files collected ({len(collected)})</h2>", tables.html(head, body)]


def render(con, missing: dict[str, str] | None = None) -> str:
    """The page of the report over ``con`` (``missing``: the figures that could not be drawn,
    and why): the template with the report's sections in its body."""
    missing = missing or {}
    ms = machines(con)
    ratio_rows = ratios(con)
    flagged, failed, collected = flagged_records(con), failed_cells(con), files(con)
    parts = _intro(con, ms)
    parts.append(_left_out(con, missing))
    parts += _figure_sections(missing)
    parts += _speedup_table(ratio_rows)
    parts += _spread_table(con)
    parts += _machines_table(ms)
    parts += _flagged_table(flagged)
    parts += _failed_table(failed)
    parts += _files_table(collected)
    template = string.Template(TEMPLATE.read_text(encoding="utf-8"))
    return template.substitute(body="\n".join(parts))
