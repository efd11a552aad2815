"""The class's results: hand-ins (untrusted: :mod:`.handins`) collected into a DuckDB database
(:data:`SCHEMA`; each file and each measurement once, judged again), and the class report: two
figures and a page (``report.html``) saying first what it leaves out. Flagged records are drawn
apart and left out of medians; fixture (synthetic) machines are marked everywhere, never pooled
with measured ones. A *machine* is a machine type (:func:`labkit.hardware.machine_of`), not a host.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
import string
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib.lines import Line2D

from .. import plots, profiles, results
from ..hardware import machine_of
from ..results import cards
from ..util import stats
from ..util.tables import html as html_table
from . import handins
from .handins import Skip

__all__ = ["FIGURES", "FIXTURE", "Collected", "Skip", "ceiling_figure", "cell_label", "collect"]
__all__ += ["connect", "fixture_cards", "html_table", "machines", "ratios", "report", "rows"]
__all__ += ["speedup_figure", "speedup_summary", "spread", "store_card"]

#: the synthetic fixture cards shipped with labkit, one folder per profile (NOT measurements)
FIXTURES = Path(__file__).resolve().parent.parent / "data" / "class_fixtures"
FIXTURE = "fixture (synthetic)"  #: how a fixture machine's figures are marked, everywhere
KEYS = ("framework", "mode", "task", "batch_size", "precision", "image_size", "device")
KEYS += ("profile", "status", "error")
NUMBERS = ("images_per_s", "median_s", "iqr_s", "first_call_s", "ceiling_images_per_s")
NUMBERS += ("ceiling_share", "peak_rss_mb")
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS files (sha256 VARCHAR PRIMARY KEY, name VARCHAR, kind VARCHAR,
    card_id VARCHAR, records INTEGER, new_records INTEGER, note VARCHAR,
    collected_at TIMESTAMP DEFAULT current_localtimestamp());
CREATE TABLE IF NOT EXISTS machines (machine_id VARCHAR PRIMARY KEY, label VARCHAR, cpu VARCHAR,
    family VARCHAR, isa VARCHAR, cores INTEGER, arch VARCHAR, memory_gb DOUBLE, fixture BOOLEAN,
    fingerprint VARCHAR);
CREATE TABLE IF NOT EXISTS records (record_id VARCHAR PRIMARY KEY, sha256 VARCHAR,
    machine_id VARCHAR, framework VARCHAR, mode VARCHAR, task VARCHAR, batch_size INTEGER,
    precision VARCHAR, image_size INTEGER, device VARCHAR, profile VARCHAR, status VARCHAR,
    error VARCHAR, {" DOUBLE, ".join(NUMBERS)} DOUBLE, valid BOOLEAN, flagged BOOLEAN,
    flags VARCHAR, timestamp VARCHAR, record VARCHAR);
CREATE TABLE IF NOT EXISTS ratios (machine_id VARCHAR, task VARCHAR, framework VARCHAR,
    cell VARCHAR, baseline VARCHAR, speedup DOUBLE, flagged BOOLEAN, flags VARCHAR);
CREATE TABLE IF NOT EXISTS skipped (name VARCHAR PRIMARY KEY, reason VARCHAR,
    skipped_at TIMESTAMP DEFAULT current_localtimestamp());
"""


def cell_label(r: dict) -> str:
    """A measured cell in words: framework, mode, precision (when not fp32), size and batch."""
    prec = "" if r["precision"] == "fp32" else f" {r['precision']}"
    return f"{r['framework']} {r['mode']}{prec} ({r['image_size']} px, b{r['batch_size']})"


def connect(db: str | os.PathLike, read_only: bool = False):
    """Open (or create) the class database; ``ValueError`` when the file is not one."""
    import duckdb

    if read_only and not (db := Path(db)).exists():
        fix = f"python -m labkit class collect FOLDER --db {db}"
        raise ValueError(f"no class database at {db}; fix: {fix}")
    try:
        con = duckdb.connect(str(db), read_only=read_only)
    except duckdb.Error as exc:
        why = f"{db} is not a class database ({str(exc).splitlines()[0]})"
        fix = "give --db a new file name or one written by `python -m labkit class collect`"
        raise ValueError(f"{why}; fix: {fix}") from None
    if not read_only:
        con.execute(SCHEMA)
    return con


def _insert(con, table: str, row: dict, tail: str = "") -> int:
    """Insert ``row`` (column: value) into ``table``; the number of rows ``tail`` returns."""
    sql = f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))}) {tail}"
    cur = con.execute(sql, list(row.values()))
    return len(cur.fetchall()) if "RETURNING" in tail else 0


def store_card(con, sha: str, path: Path, kind: str, card: dict, note: str) -> int:
    """Store one collected file (in the caller's transaction): its records, each judged again and
    each measurement once, their machine types and ratios; the number of new records."""
    new, seen, new_only = 0, set(), "ON CONFLICT DO NOTHING RETURNING 1"
    for raw in card["records"]:
        m = machine_of(raw.get("machine") or card["machine"], fixture=bool(card.get("fixture")))
        _insert(con, "machines", m, new_only)
        seen.add(mid := m["machine_id"])
        r = handins.rejudge(raw)  # what a hand-in says about its own validity is not believed
        why = results.flags(r) if r.get("status") == "ok" else []
        # one id for one measurement, handed in as a results file or as the card made from it
        ident = [mid, *results.key(raw), raw.get("timestamp"), raw.get("median_s")]
        ident = json.dumps([*ident, raw.get("times_s")], sort_keys=True, default=str)
        row = {k: r.get(k) for k in KEYS} | {"sha256": sha, "machine_id": mid}
        row |= {k: float(r[k]) if isinstance(r.get(k), int | float) else None for k in NUMBERS}
        row |= {"record_id": hashlib.sha256(ident.encode()).hexdigest()[:20], "valid": r["valid"]}
        row |= {"flagged": bool(why), "flags": "; ".join(why), "record": json.dumps(r, default=str)}
        new += _insert(con, "records", row | {"timestamp": str(r.get("timestamp") or "")}, new_only)
    for mid in seen:  # each machine type's graph-vs-eager ratios, over all its records
        sql = "SELECT record FROM records WHERE machine_id = ? ORDER BY timestamp"
        found = [json.loads(text) for (text,) in con.execute(sql, [mid]).fetchall()]
        con.execute("DELETE FROM ratios WHERE machine_id = ?", [mid])
        for r in cards.ratios(found):
            row = {k: r[k] for k in ("task", "framework", "baseline", "speedup", "flagged")}
            row |= {"machine_id": mid, "cell": cell_label(r), "flags": "; ".join(r["flags"])}
            _insert(con, "ratios", row)
    row = {"sha256": sha, "name": str(path), "kind": kind, "card_id": card["card_id"]}
    _insert(con, "files", row | {"records": len(card["records"]), "new_records": new, "note": note})
    return new


@dataclass
class Collected:
    """What :func:`collect` did, file by file."""

    db: Path
    added: list[tuple[Path, str]] = field(default_factory=list)  # (file, what went in)
    already: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # (file, why)
    partial: list[tuple[Path, str]] = field(default_factory=list)  # went in, part left out
    ignored: list[Path] = field(default_factory=list)  # other files: not cards, not archives

    @property
    def exit_status(self) -> int:
        """0: every file went in (or was in already); 1: some were skipped or cut short."""
        return 1 if self.skipped or self.partial or not (self.added or self.already) else 0

    def text(self) -> str:
        again = [(p, "collected before (same content), nothing added") for p in self.already]
        tags = {"added": self.added, "partly": self.partial, "already": again}
        tags["SKIPPED"] = self.skipped
        lines = [f"{tag:<8} {p}: {what}" for tag, pairs in tags.items() for p, what in pairs]
        if not (self.added or self.already or self.skipped):
            lines.append("no card or results files (.json, .jsonl, .zip) found")
        ignored = f", {len(self.ignored)} other files ignored" if self.ignored else ""
        n = len(self.added), len(self.already), len(self.skipped)
        lines.append("{} added, {} already collected, {} skipped".format(*n) + ignored)
        return "\n".join(lines) + f" -> {self.db}"


def collect(paths: Sequence[str | os.PathLike], db: str | os.PathLike = "class.duckdb"):
    """Add every card and results file under ``paths`` to the database ``db``; a
    :class:`Collected`. ``ValueError`` (nothing written) for a missing path or a foreign ``db``."""
    files, ignored, given = handins.find(paths, skip=(db := Path(db)))
    con, done = connect(db), Collected(db, ignored=ignored)
    try:
        for f in files:
            for item in handins.open_each(f, done.ignored, given=f in given):
                _collect_one(con, item, done)
    finally:
        con.close()
    return done


def _collect_one(con, item: handins.HandIn, done: Collected) -> None:
    """One hand-in into the database in its own transaction, or into ``skipped`` with why."""
    name, sha, began = str(item.name), hashlib.sha256(item.data or b"").hexdigest(), False
    if not item.skip and con.execute("SELECT 1 FROM files WHERE sha256 = ?", [sha]).fetchone():
        con.execute("DELETE FROM skipped WHERE name = ?", [name])
        return done.already.append(item.name)
    try:
        if item.skip:
            raise Skip(item.skip)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kind, card, note = handins.read(item.data, item.name.name)
        began = con.execute("BEGIN TRANSACTION") is not None
        new = store_card(con, sha, item.name, kind, card, note)
        con.execute("DELETE FROM skipped WHERE name = ?", [name])
        con.execute("COMMIT")
    except Exception as exc:  # noqa: BLE001 - a hostile file must not stop the class
        if began:  # what it wrote is undone
            con.execute("ROLLBACK")
        why = str(exc) if isinstance(exc, Skip) else f"could not be collected ({exc!r})"
        done.skipped.append((item.name, why))
        con.execute("INSERT OR REPLACE INTO skipped (name, reason) VALUES (?, ?)", [name, why])
        return
    n = len(card["records"])
    what = f"{kind}, {n} records" + (f" ({n - new} collected before)" if new < n else "")
    (done.partial if note else done.added).append((item.name, f"{what}; {note}" if note else what))


def fixture_cards(profile: str | None = None) -> list[Path]:
    """The synthetic fixture cards for ``profile`` (default: the current one): NOT measurements,
    as each says in its ``fixture`` field."""
    name = profiles.get(profile).name
    if not (found := sorted((FIXTURES / name).glob("*.json"))):
        raise ValueError(f"no fixture cards for profile {name!r} in {FIXTURES}")
    return found


def rows(con, sql: str, params=()) -> list[dict]:
    """The rows of ``sql`` as dicts by column name."""
    cur = con.execute(sql, list(params))
    return [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]


def machines(con) -> list[dict]:
    """One row per machine type (measured first, then fixtures), with its records."""
    return rows(con, QUERIES["Machine types"])


def ratios(con) -> list[dict]:
    """Each machine type's graph-vs-eager ratios, with its label, family and ``fixture``."""
    sql = """SELECT r.*, m.label AS machine, m.family, m.fixture FROM ratios r
        JOIN machines m USING (machine_id) ORDER BY r.task, r.cell, m.fixture, m.label"""
    return rows(con, sql)


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
        FROM records JOIN machines m USING (machine_id) WHERE status = 'ok' AND NOT flagged GROUP BY ALL)
    SELECT task, {CELL}, source, count(*) AS machines,
        CASE WHEN count(*) > 1 THEN {REL.format("med")} END AS between,
        median(runs) FILTER (WHERE n > 1) AS within_machine, median(run) AS within_run
    FROM per GROUP BY ALL ORDER BY task, source, {CELL}"""
NOT_OK = "status <> 'ok'"
#: the page's last tables, title (``{n}``: its number of rows): query
QUERIES = {
    "Machine types": """SELECT label AS "machine type", cpu AS CPU, arch AS architecture, cores,
        memory_gb AS "memory GB", (SELECT count(*) FROM records r WHERE r.machine_id = m.machine_id)
        AS records FROM machines m ORDER BY fixture, family, cores, label""",
    "Flagged records ({n}): kept, shown, not counted": """SELECT m.label AS "machine type",
        framework, mode, task, precision, image_size AS px, batch_size AS batch,
        images_per_s AS "images/s", flags AS why
        FROM records JOIN machines m USING (machine_id) WHERE flagged ORDER BY 1, 2, 3""",
    "Failed or unsupported cells ({n})": f"""SELECT m.label AS "machine type", framework, mode,
        task, left(error, 160) AS error FROM records JOIN machines m USING (machine_id)
        WHERE {NOT_OK} ORDER BY 1""",
    "Files collected ({n})": """SELECT regexp_extract(name, '[^/]*$') AS file, kind, records,
        new_records AS "new records", coalesce(note, '') AS note FROM files ORDER BY collected_at""",
}


def speedup_summary(con, by: str = "") -> list[dict]:
    """Per graph cell and source (and ``by`` CPU family): the unflagged ratios' quartiles, etc."""
    return rows(con, SUMMARY.format(by=f"m.{by}," if by else ""))


def spread(con) -> list[dict]:
    """Per measured cell and source, IQR / median between machine types, within one, in a run."""
    return rows(con, SPREAD)


def _canvas(width: float, height: float):
    fig = plots.Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def _points(fig, ax, points: list[tuple[float, float, dict]]) -> None:
    """Each ``(x, y, row)`` a dot, or a red cross when flagged; hollow for a fixture; a legend."""
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
    ax.set(xscale="log", yscale="log", xlabel="ceiling, images/s", ylabel="measured images/s")
    ax.set_title("Throughput against each machine's estimated ceiling", loc="left", fontsize=10)
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
                if isinstance(fig, plots.Nothing):  # nothing to draw: the page says so
                    missing[name] = str(fig)
                    continue
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
    """``title`` (``{n}``: its rows) over a table of ``found``, floats as ``spec``, escaped."""

    def cell(v):
        return ("" if math.isnan(v) else spec.format(v)) if isinstance(v, float) else v

    head = f"<h2>{html.escape(title.format(n=len(found)))}</h2>" if title else ""
    cols = list(found[0]) if found else []
    return head + html_table(cols, [map(cell, r.values()) for r in found])


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
    """The report's page over ``con`` (``missing``: figures not drawn, and why)."""
    counts = {of: _count(con, "true", of) for of in ("files", "machines", "records")}
    counts |= {"measured": _count(con, "NOT " + NOT_OK), "flagged": _count(con, "flagged")}
    fixtures, missing = _count(con, "fixture", "machines"), missing or {}
    counts |= {"fixtures": fixtures, "fixture": FIXTURE, "hidden": "" if fixtures else " hidden"}
    parts = [_left_out(con, missing)]
    for n in (n for n in FIGURES if n not in missing):
        parts.append(f"<h2>{html.escape(FIGURES[n])}</h2><img src='{n}.png' alt='{n}'>")
    by_cell = [{"task": s.pop("task"), "cell": cell_label(s)} | s for s in spread(con)]
    by_cell = [{k: v for k, v in s.items() if k not in CELL.split(", ")} for s in by_cell]
    spread_title = "Spread of images/s between machines and within one (IQR / median)"
    parts += [
        _table("Speedups across machine types (unflagged)", speedup_summary(con)),
        _table("Median speedup per CPU family", speedup_summary(con, by="family")),
        _table(spread_title, by_cell, "{:.0%}"),
        *(_table(title, rows(con, sql)) for title, sql in QUERIES.items()),
    ]
    template = string.Template(TEMPLATE.read_text(encoding="utf-8"))
    return template.substitute(body="\n".join(parts), **counts)
