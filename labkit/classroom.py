"""The class's results in one place: result cards collected into DuckDB, and the class report.

``collect(paths, db)`` adds result cards (:mod:`labkit.cards`) and JSONL results files, given as
files or folders (a shared folder on a hub, an LMS download), to an embedded analytical database
(DuckDB, one file). It is idempotent: a file whose content was collected before adds nothing,
and a measurement that arrives twice (as a results file and as the card made from it) is stored
once. A truncated, foreign or wrong-schema file is named with the reason and skipped; each file
goes in inside its own transaction, so nothing collected before is ever lost. Hand-ins are
untrusted input (:mod:`labkit.handins`): files are read within size and depth limits, zips
opened safely, and every record judged again from its raw times (a card's own verdict is not
believed).

``report(db, out)`` writes the class report: figures (each graph mode's speedup over eager
across the class's machines, as a distribution and per CPU family; throughput against each
machine's ceiling; the spread between machines against the spread within one) and an HTML page
with the tables behind them. Flagged records (invalid, or above the ceiling) are drawn and listed
apart and left out of the summaries. The page is always written, and names what it left out.

A *machine* here is a hardware type: the fingerprint's CPU model, core count, architecture,
vector extensions, GPUs and memory (never a host name). Thirty learners on identical hub nodes
are thirty runs on one machine type; that is what "the spread within one machine" measures.

DuckDB is imported only when a database is opened (``import labkit`` stays fast).
"""

from __future__ import annotations

import datetime
import hashlib
import html
import json
import math
import os
import warnings
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import cards, handins, results
from .hardware.machines import machine_of
from .util import jsonio, stats, tables

#: the record fields the class report needs (a record without them is the wrong schema)
CORE: dict[str, tuple[type, ...]] = {
    "framework": (str,),
    "mode": (str,),
    "task": (str,),
    "batch_size": (int,),
    "precision": (str,),
    "image_size": (int,),
    "device": (str,),
    "profile": (str,),
    "status": (str,),
}
OK_NUMBERS = ("median_s", "images_per_s")

SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    sha256 VARCHAR PRIMARY KEY, name VARCHAR, kind VARCHAR, card_id VARCHAR,
    records INTEGER, new_records INTEGER, note VARCHAR, collected_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS cards (
    card_id VARCHAR, sha256 VARCHAR PRIMARY KEY, name VARCHAR, fixture VARCHAR,
    created VARCHAR, labkit VARCHAR, profile VARCHAR, machine_id VARCHAR, versions VARCHAR);
CREATE TABLE IF NOT EXISTS machines (
    machine_id VARCHAR PRIMARY KEY, label VARCHAR, cpu VARCHAR, family VARCHAR,
    isa VARCHAR, cores INTEGER, arch VARCHAR, memory_gb DOUBLE, fixture BOOLEAN,
    fingerprint VARCHAR);
CREATE TABLE IF NOT EXISTS records (
    record_id VARCHAR PRIMARY KEY, sha256 VARCHAR, machine_id VARCHAR,
    framework VARCHAR, mode VARCHAR, task VARCHAR, batch_size INTEGER, precision VARCHAR,
    image_size INTEGER, device VARCHAR, profile VARCHAR, status VARCHAR, error VARCHAR,
    images_per_s DOUBLE, median_s DOUBLE, iqr_s DOUBLE, first_call_s DOUBLE,
    ceiling_images_per_s DOUBLE, ceiling_share DOUBLE, peak_rss_mb DOUBLE,
    valid BOOLEAN, flagged BOOLEAN, flags VARCHAR, timestamp VARCHAR, record VARCHAR);
CREATE TABLE IF NOT EXISTS skipped (name VARCHAR PRIMARY KEY, reason VARCHAR, skipped_at TIMESTAMP);
"""


Skip = handins.Skip  # a file that cannot be collected; the message says why


# ---------------------------------------------------------------------------------------------
# reading a file


def _record_problems(r: object) -> list[str]:
    if not isinstance(r, dict):
        return [f"a record must be a JSON object, not {type(r).__name__}"]
    out = [f"no {f!r}" for f in CORE if f not in r]
    out += [
        f"{f!r} is {type(r[f]).__name__}"
        for f, types in CORE.items()
        if f in r and (not isinstance(r[f], types) or isinstance(r[f], bool))
    ]
    if r.get("status") == "ok":
        out += [
            f"measured record without a positive {f!r}"
            for f in OK_NUMBERS
            if not isinstance(r.get(f), int | float) or not r[f] > 0
        ]
    elif r.get("status") not in ("failed", None):
        out.append(f"status {r.get('status')!r} is neither 'ok' nor 'failed'")
    return out


def _check_records(records: list, where: str) -> None:
    for i, r in enumerate(records, start=1):
        found = _record_problems(r)
        if found:
            raise Skip(
                f"wrong schema: {where} {i} is not a labkit benchmark record ({'; '.join(found[:3])})"
            )


def _keys(obj: dict) -> str:
    keys = list(obj)[:6]
    return ", ".join(map(repr, keys)) + (", ..." if len(obj) > 6 else "")


def read(data: bytes, name: str = "") -> tuple[str, dict, str]:
    """``(kind, card, note)`` for the bytes of one hand-in (read within the limits of
    :mod:`labkit.handins`): ``kind`` is ``"card"`` or ``"results"``; a results file becomes a
    card (anonymous, like any card). Raises :class:`Skip` with the reason."""
    text = handins.text_of(data)
    try:
        whole = handins.loads(text)
    except jsonio.JSONError as exc:
        whole, error = None, exc
    else:
        error = None
    if error is None:
        if isinstance(whole, dict) and whole.get("kind") == cards.KIND:
            return "card", _check_card(whole), ""
        if isinstance(whole, dict) and "framework" in whole and "status" in whole:
            _check_records([whole], "record")
            return "results", cards.build([whole], source=name, local=False), ""
        what = (
            f"a JSON object with keys {_keys(whole)}"
            if isinstance(whole, dict)
            else (f"a JSON {type(whole).__name__}")
        )
        raise Skip(f"foreign file: {what}, not a labkit result card or results file")
    # not one JSON document: a results file (one record per line), or damaged
    first = next(n for n, ln in enumerate(text.split("\n"), start=1) if ln.strip())
    try:
        parsed, truncated = results.parse_lines(text)
    except results.BadLine as exc:
        if exc.line != first:
            raise Skip(f"line {exc.line} is not JSON ({exc.msg}): a damaged results file") from None
        parsed, truncated = [], None
    if not parsed:  # not even its first line is JSON
        if text.lstrip().startswith(("{", "[")):
            raise Skip(
                f"truncated or damaged JSON ({error.msg} at line {error.lineno} column "
                f"{error.colno}): ask for the file again"
            )
        raise Skip("not JSON: not a labkit result card or results file")
    records = [r for _, r in parsed]
    note = (
        f"line {truncated} is truncated (an interrupted write) and was left out"
        if truncated
        else ""
    )
    _check_records(records, "line")
    return "results", cards.build(records, source=name, local=False), note


def _check_card(card: dict) -> dict:
    fmt = card.get("format")
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise Skip("wrong schema: a card without a format number")
    if fmt > cards.FORMAT:
        raise Skip(
            f"card format {fmt!r} is newer than this labkit reads ({cards.FORMAT}): "
            "update labkit (pip install -U labkit, or git pull) and collect again"
        )
    for f, types in (("records", list), ("machine", dict), ("card_id", str)):
        if not isinstance(card.get(f), types):
            raise Skip(f"wrong schema: a card without a valid {f!r}")
    if not card["records"]:
        raise Skip("the card holds no records")
    _check_records(card["records"], "record")
    return card


def _record_id(r: dict, machine_id: str) -> str:
    ident = [machine_id, *results.key(r), r.get("timestamp"), r.get("median_s"), r.get("times_s")]
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:20]


# ---------------------------------------------------------------------------------------------
# the database


def connect(db: str | os.PathLike, read_only: bool = False):
    """Open (or create) the class database; ``ValueError`` when the file is not one."""
    try:
        import duckdb
    except ImportError:
        raise ValueError(
            "the class database needs duckdb; fix: make install (or pip install duckdb)"
        ) from None
    db = Path(db)
    if read_only and not db.exists():
        raise ValueError(
            f"no class database at {db}; fix: python -m labkit class collect FOLDER --db {db}"
        )
    try:
        con = duckdb.connect(str(db), read_only=read_only)
    except duckdb.Error as exc:
        raise ValueError(
            f"{db} is not a class database ({str(exc).splitlines()[0]}); fix: give --db a new "
            "file name or one written by `python -m labkit class collect`"
        ) from None
    if not read_only:
        con.execute(SCHEMA)
    return con


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
        lines = [f"added    {p}: {what}" for p, what in self.added]
        lines += [f"partly   {p}: {why}" for p, why in self.partial]
        lines += [
            f"already  {p}: collected before (same content), nothing added" for p in self.already
        ]
        lines += [f"SKIPPED  {p}: {why}" for p, why in self.skipped]
        if not (self.added or self.already or self.skipped):
            lines.append("no card or results files (.json, .jsonl, .zip) found")
        ignored = f", {len(self.ignored)} other files ignored" if self.ignored else ""
        lines.append(
            f"{len(self.added)} added, {len(self.already)} already collected, "
            f"{len(self.skipped)} skipped{ignored} -> {self.db}"
        )
        return "\n".join(lines)


def _insert(con, sha: str, path: Path, kind: str, card: dict, note: str) -> int:
    fixture = card.get("fixture")
    fixture_text = (
        fixture if isinstance(fixture, str) else (json.dumps(fixture) if fixture else None)
    )
    new = 0
    card_machine = card.get("machine") or {}
    for raw in card["records"]:
        r = handins.rejudge(raw)  # what a hand-in says about its own validity is not trusted
        m = machine_of(r.get("machine") or card_machine, fixture=bool(fixture))
        con.execute(
            "INSERT INTO machines VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
            [
                m[k]
                for k in (
                    "machine_id",
                    "label",
                    "cpu",
                    "family",
                    "isa",
                    "cores",
                    "arch",
                    "memory_gb",
                    "fixture",
                    "fingerprint",
                )
            ],
        )
        rid = _record_id(raw, m["machine_id"])
        why = results.flags(r) if r.get("status") == "ok" else []
        num = lambda f, r=r: float(r[f]) if isinstance(r.get(f), int | float) else None
        before = con.execute("SELECT count(*) FROM records WHERE record_id = ?", [rid]).fetchone()[
            0
        ]
        if before:
            continue
        con.execute(
            "INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                rid,
                sha,
                m["machine_id"],
                r["framework"],
                r["mode"],
                r["task"],
                r["batch_size"],
                r["precision"],
                r["image_size"],
                r["device"],
                r["profile"],
                r["status"],
                r.get("error"),
                num("images_per_s"),
                num("median_s"),
                num("iqr_s"),
                num("first_call_s"),
                num("ceiling_images_per_s"),
                num("ceiling_share"),
                num("peak_rss_mb"),
                r["valid"],
                bool(why),
                "; ".join(why),
                str(r.get("timestamp") or ""),
                json.dumps(r, sort_keys=True, default=str),
            ],
        )
        new += 1
    main = machine_of(card_machine or card["records"][0].get("machine") or {}, bool(fixture))
    con.execute(
        "INSERT INTO cards VALUES (?,?,?,?,?,?,?,?,?)",
        [
            card["card_id"],
            sha,
            card.get("name"),
            fixture_text,
            str(card.get("created", "")),
            str(card.get("labkit", "")),
            str(card.get("profile", "")),
            main["machine_id"],
            json.dumps(card.get("versions") or {}, sort_keys=True),
        ],
    )
    con.execute(
        "INSERT INTO files VALUES (?,?,?,?,?,?,?,?)",
        [
            sha,
            str(path),
            kind,
            card["card_id"],
            len(card["records"]),
            new,
            note,
            datetime.datetime.now(datetime.UTC).replace(tzinfo=None),
        ],
    )
    return new


def collect(
    paths: Sequence[str | os.PathLike], db: str | os.PathLike = "class.duckdb"
) -> Collected:
    """Add every card and results file under ``paths`` to the database ``db`` (see module doc).

    ``ValueError`` (before anything is written) for a path that does not exist or a ``db`` that
    is not a class database.
    """
    if not paths:
        raise ValueError("nothing to collect; fix: name card files or folders")
    db = Path(db)
    found = handins.find(paths, skip=db)
    con = connect(db)
    done = Collected(db, ignored=found.ignored)
    try:
        for f in found.files:
            for item in handins.open_each(f, done.ignored, given=f in found.given):
                _collect_one(con, item, done)
    finally:
        con.close()
    return done


def _skip(con, done: Collected, name: Path, why: str) -> None:
    """Name a skipped file, here and in the database (the report lists what it left out)."""
    done.skipped.append((name, why))
    con.execute(
        "INSERT OR REPLACE INTO skipped VALUES (?, ?, ?)",
        [str(name), why, datetime.datetime.now(datetime.UTC).replace(tzinfo=None)],
    )


def _collect_one(con, item: handins.HandIn, done: Collected) -> None:
    if item.skip:
        return _skip(con, done, item.name, item.skip)
    sha = hashlib.sha256(item.data).hexdigest()
    if con.execute("SELECT 1 FROM files WHERE sha256 = ?", [sha]).fetchone():
        con.execute("DELETE FROM skipped WHERE name = ?", [str(item.name)])
        done.already.append(item.name)
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kind, card, note = read(item.data, item.name.name)
    except Skip as why:
        return _skip(con, done, item.name, str(why))
    except Exception as exc:  # noqa: BLE001 - a hostile file must not stop the class
        return _skip(con, done, item.name, f"could not be read ({type(exc).__name__}: {exc})")
    con.execute("BEGIN TRANSACTION")
    try:
        new = _insert(con, sha, item.name, kind, card, note)
        con.execute("DELETE FROM skipped WHERE name = ?", [str(item.name)])
        con.execute("COMMIT")
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
        con.execute("ROLLBACK")
        return _skip(con, done, item.name, f"could not be stored ({type(exc).__name__}: {exc})")
    n = len(card["records"])
    what = f"{kind}, {n} records" + (f" ({n - new} collected before)" if new < n else "")
    if note:
        done.partial.append((item.name, f"{what}; {note}"))
    else:
        done.added.append((item.name, what))
    return None


# ---------------------------------------------------------------------------------------------
# queries


def rows(con, sql: str, params: Sequence = ()) -> list[dict]:
    cur = con.execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def machines(con) -> list[dict]:
    """One row per machine type, with its number of cards and records."""
    return rows(
        con,
        """SELECT m.*, (SELECT count(*) FROM cards c WHERE c.machine_id = m.machine_id) AS cards,
                  (SELECT count(*) FROM records r WHERE r.machine_id = m.machine_id) AS records
           FROM machines m ORDER BY m.fixture, m.family, m.cores, m.label""",
    )


def records_of(con, **where) -> list[dict]:
    """The stored records (the full JSON), filtered by column values (None: any)."""
    sql = "SELECT machine_id, record FROM records"
    clauses = [(k, v) for k, v in where.items() if v is not None]
    if clauses:
        sql += " WHERE " + " AND ".join(f"{k} = ?" for k, _ in clauses)
    out = []
    for mid, text in con.execute(sql + " ORDER BY timestamp", [v for _, v in clauses]).fetchall():
        r = json.loads(text)
        r["_machine_id"] = mid
        out.append(r)
    return out


def ratios(con, **where) -> list[dict]:
    """Each machine's graph-vs-eager ratios (:func:`labkit.cards.ratios` over its records)."""
    by_machine: dict[str, list[dict]] = defaultdict(list)
    for r in records_of(con, **where):
        by_machine[r["_machine_id"]].append(r)
    labels = {m["machine_id"]: m for m in machines(con)}
    out = []
    for mid, recs in by_machine.items():
        for row in cards.ratios(recs):
            out.append(
                {
                    **row,
                    "machine_id": mid,
                    "machine": labels[mid]["label"],
                    "family": labels[mid]["family"],
                    "fixture": labels[mid]["fixture"],
                }
            )
    return out


def _cell_label(r: dict) -> str:
    prec = "" if r["precision"] == "fp32" else f" {r['precision']}"
    return f"{r['framework']} {r['mode']}{prec} ({r['image_size']} px, b{r['batch_size']})"


def speedup_summary(ratio_rows: Iterable[dict]) -> list[dict]:
    """Per graph cell across machines: count, median, quartiles, range (unflagged ratios only)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in ratio_rows:
        groups[(r["task"], _cell_label(r), r["baseline"])].append(r)
    out = []
    for (task, cell, baseline), rs in sorted(groups.items()):
        good = [r["speedup"] for r in rs if not r["flagged"]]
        row = {
            "task": task,
            "cell": cell,
            "baseline": baseline,
            "machines": len(good),
            "flagged": len(rs) - len(good),
        }
        if good:
            q1, med, q3 = stats.quartiles(good)
            row.update(
                median=med,
                q1=q1,
                q3=q3,
                min=min(good),
                max=max(good),
                faster_on=sum(s > 1 for s in good),
            )
        out.append(row)
    return out


def spread(con) -> list[dict]:
    """Per measured cell: the spread between machines against the spread within one.

    ``between``: IQR / median of images/s across machine types (each machine's median run);
    ``within_run``: the median, over machines, of a record's own IQR / median of its call times;
    ``within_machine``: IQR / median across the runs of one machine type, where a machine has
    several (several learners on identical nodes, or re-runs), median over such machines.
    Unflagged measured records only.
    """
    data = rows(
        con,
        """SELECT machine_id, framework, mode, task, batch_size, precision, image_size, device,
                  images_per_s, iqr_s, median_s
           FROM records WHERE status = 'ok' AND NOT flagged""",
    )
    cells: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in data:
        k = (r["task"], _cell_label(r))
        cells[k][r["machine_id"]].append(r)

    def rel(xs: list[float]) -> float:
        q1, med, q3 = stats.quartiles(xs)
        return (q3 - q1) / med if med else math.nan

    out = []
    for (task, cell), per_machine in sorted(cells.items()):
        medians = [stats.median(x["images_per_s"] for x in rs) for rs in per_machine.values()]
        runs = [
            x["iqr_s"] / x["median_s"]
            for rs in per_machine.values()
            for x in rs
            if x["iqr_s"] is not None and x["median_s"]
        ]
        repeated = [
            rel([x["images_per_s"] for x in rs]) for rs in per_machine.values() if len(rs) > 1
        ]
        out.append(
            {
                "task": task,
                "cell": cell,
                "machines": len(per_machine),
                "between": rel(medians) if len(medians) > 1 else None,
                "within_run": stats.median(runs) if runs else None,
                "within_machine": stats.median(repeated) if repeated else None,
            }
        )
    return out


# ---------------------------------------------------------------------------------------------
# figures


def _figure(width: float, height: float):
    from .plots import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _no_data(what: str):
    fig = _figure(7, 2)
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, f"no {what} in the class database yet", ha="center", va="center")
    ax.set_axis_off()
    return fig


def speedup_figure(ratio_rows: list[dict]):
    """Each graph mode's speedup over eager, one dot per machine type; flagged ones apart."""
    from .plots import COLORS

    if not ratio_rows:
        return _no_data("graph-vs-eager ratios")
    tasks = [
        t for t in ("latency", "throughput", "train") if any(r["task"] == t for r in ratio_rows)
    ]
    tasks += sorted({r["task"] for r in ratio_rows} - set(tasks))
    cells = {t: sorted({_cell_label(r) for r in ratio_rows if r["task"] == t}) for t in tasks}
    heights = [max(1.2, 0.42 * len(cells[t]) + 0.8) for t in tasks]
    fig = _figure(9, sum(heights) + 0.6)
    axes = fig.subplots(len(tasks), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, task in zip(axes, tasks):
        labels = cells[task]
        ys = {c: i for i, c in enumerate(labels)}
        for i, c in enumerate(labels):
            rs = [r for r in ratio_rows if r["task"] == task and _cell_label(r) == c]
            good = [r["speedup"] for r in rs if not r["flagged"]]
            if len(good) >= 2:
                q1, med, q3 = stats.quartiles(good)
                ax.plot([q1, q3], [i, i], color="0.6", lw=6, alpha=0.5, solid_capstyle="butt")
                ax.plot([med], [i], marker="|", color="black", ms=14)
            for n, r in enumerate(rs):
                y = ys[c] + ((n % 5) - 2) * 0.06
                color = COLORS.get(r["framework"], "tab:gray")
                if r["flagged"]:
                    ax.plot(r["speedup"], y + 0.32, "x", color="tab:red", ms=6)
                else:
                    ax.plot(
                        r["speedup"],
                        y,
                        "o",
                        color=color,
                        ms=5,
                        mfc="white" if r["fixture"] else color,
                    )
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
    handles = [
        axes[0].plot([], [], "o", color="0.3", label="measured")[0],
        axes[0].plot([], [], "o", color="0.3", mfc="white", label="fixture (not a measurement)")[0],
        axes[0].plot([], [], "x", color="tab:red", label="flagged (invalid or above the ceiling)")[
            0
        ],
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    return fig


def family_figure(ratio_rows: list[dict]):
    """Median speedup per graph cell and CPU family (a heat map; unflagged ratios)."""
    good = [r for r in ratio_rows if not r["flagged"]]
    if not good:
        return _no_data("unflagged graph-vs-eager ratios")
    cells = sorted({(r["task"], _cell_label(r)) for r in good})
    fams = sorted({r["family"] + (" (fixture)" if r["fixture"] else "") for r in good})
    grid = [[math.nan] * len(fams) for _ in cells]
    counts = [[0] * len(fams) for _ in cells]
    for i, (task, c) in enumerate(cells):
        for j, f in enumerate(fams):
            xs = [
                r["speedup"]
                for r in good
                if (r["task"], _cell_label(r)) == (task, c)
                and r["family"] + (" (fixture)" if r["fixture"] else "") == f
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


def ceiling_figure(con):
    """Measured images/s against the machine's ceiling for the same cell (log-log)."""
    from .plots import COLORS

    data = rows(
        con,
        """SELECT r.framework, r.images_per_s, r.ceiling_images_per_s, r.flagged, m.fixture
           FROM records r JOIN machines m USING (machine_id)
           WHERE r.status = 'ok' AND r.ceiling_images_per_s > 0""",
    )
    if not data:
        return _no_data("records with a ceiling")
    fig = _figure(7, 5.5)
    ax = fig.add_subplot()
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


# ---------------------------------------------------------------------------------------------
# the report


def _f(x, fmt="{:.2f}") -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


FIGURES = ("speedup", "families", "ceiling", "spread")

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222}table{border-collapse:collapse;margin:1em 0;font-size:0.9em}td,th{border:1px solid #ccc;
padding:3px 8px;text-align:left}th{background:#f3f3f3}img{max-width:100%;border:1px solid #eee}
.note{background:#fff7e0;border-left:4px solid #e0a000;padding:0.5em 1em}"""


def figures(con) -> dict:
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


def report(db: str | os.PathLike = "class.duckdb", out: str | os.PathLike = "class-report") -> Path:
    """Write the figures (PNG) and ``index.html`` of the class report into ``out``; returns the
    page. The page is always written: a figure or table that cannot be made is named on it."""
    con = connect(db, read_only=True)
    try:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        missing: dict[str, str] = {}
        for name, fig in figures(con).items():
            try:
                if isinstance(fig, Exception):
                    raise fig
                fig.savefig(out / f"{name}.png", dpi=100)
            except Exception as exc:  # noqa: BLE001 - named on the page instead
                missing[name] = f"{type(exc).__name__}: {str(exc)[:300]}"
        try:
            text = _html(con, missing)
        except Exception as exc:  # noqa: BLE001 - still a page, saying what went wrong
            text = _fallback_page(con, f"{type(exc).__name__}: {str(exc)[:300]}", missing)
        page = out / "index.html"
        page.write_text(text, encoding="utf-8")
    finally:
        con.close()
    return page


def _left_out(con, missing: dict[str, str]) -> str:
    """The page's account of what it leaves out: files skipped at collection, figures that could
    not be drawn, records kept out of the summaries, lines left out of files."""
    has = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'skipped'"
    ).fetchone()[0]
    skipped = rows(con, "SELECT name, reason FROM skipped ORDER BY name") if has else []
    n_flag, n_failed = con.execute(
        "SELECT count(*) FILTER (WHERE flagged), count(*) FILTER (WHERE status <> 'ok') FROM records"
    ).fetchone()
    notes = rows(con, "SELECT name, note FROM files WHERE note <> '' ORDER BY name")
    parts = [
        "<h2>What this report leaves out</h2><ul>",
        f"<li>{len(skipped)} file(s) skipped at collection (below, with the reason)</li>",
        f"<li>{n_flag} flagged record(s): shown apart, not counted in the summaries</li>",
        f"<li>{n_failed} failed or unsupported cell(s): listed, nothing to measure</li>",
    ]
    parts += [
        f"<li>{html.escape(Path(f['name']).name)}: {html.escape(f['note'])}</li>" for f in notes
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


def _html(con, missing: dict[str, str] | None = None) -> str:
    ms = machines(con)
    n_cards = con.execute("SELECT count(*) FROM cards").fetchone()[0]
    n_rec, n_ok, n_flag = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE flagged) FROM records"
    ).fetchone()
    fixtures = sum(m["fixture"] for m in ms)
    ratio_rows = ratios(con)
    flagged = rows(
        con,
        """SELECT m.label, r.framework, r.mode, r.task, r.precision, r.image_size, r.batch_size,
                  r.images_per_s, r.flags FROM records r JOIN machines m USING (machine_id)
           WHERE r.flagged ORDER BY m.label, r.framework, r.mode""",
    )
    failed = rows(
        con,
        """SELECT m.label, r.framework, r.mode, r.task, r.error FROM records r
           JOIN machines m USING (machine_id) WHERE r.status <> 'ok' ORDER BY m.label""",
    )
    files = rows(
        con, "SELECT name, kind, records, new_records, note FROM files ORDER BY collected_at"
    )
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Class results: eager vs graph</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Class results: eager vs graph execution</h1>",
        (
            f"<p>{n_cards} result cards from {len(ms)} machine types; {n_rec} records, {n_ok} measured, "
            f"{n_flag} flagged (invalid, or above the machine's estimated ceiling: shown apart, never "
            "counted). Each dot in the figures is one machine type's latest measurement of a cell.</p>"
        ),
    ]
    if fixtures:
        parts.append(
            f"<p class='note'>{fixtures} machine type(s) come from <b>fixture cards</b>: synthetic "
            "cards that show what the report does with machines the class may not have. Their "
            "numbers are not measurements; they are drawn hollow and labelled 'fixture'.</p>"
        )
    captions = {
        "speedup": "Speedup of each graph mode over its eager baseline, across machine types "
        "(bar: interquartile range, tick: median of the unflagged ones).",
        "families": "Median speedup per CPU family.",
        "ceiling": "Measured throughput against each machine's estimated ceiling for the same cell.",
        "spread": "Spread between machine types against the spread within one.",
    }
    parts.append(_left_out(con, missing or {}))
    for name in FIGURES:
        if name not in (missing or {}):
            parts.append(
                f"<h2>{html.escape(captions[name])}</h2><img src='{name}.png' alt='{name}'>"
            )
    summary = speedup_summary(ratio_rows)
    parts.append("<h2>Speedups across machine types (unflagged)</h2>")
    parts.append(
        tables.html(
            (
                "task",
                "graph cell",
                "baseline",
                "machines",
                "median",
                "Q1",
                "Q3",
                "min",
                "max",
                "graph faster on",
                "flagged",
            ),
            [
                (
                    s["task"],
                    s["cell"],
                    s["baseline"],
                    s["machines"],
                    _f(s.get("median")),
                    _f(s.get("q1")),
                    _f(s.get("q3")),
                    _f(s.get("min")),
                    _f(s.get("max")),
                    f"{s.get('faster_on', 0)} of {s['machines']}",
                    s["flagged"],
                )
                for s in summary
            ],
        )
    )
    parts.append("<h2>Spread between machines and within one</h2>")
    parts.append(
        tables.html(
            (
                "task",
                "cell",
                "machine types",
                "between",
                "within one type (runs)",
                "within one run",
            ),
            [
                (
                    s["task"],
                    s["cell"],
                    s["machines"],
                    _f(s["between"], "{:.0%}"),
                    _f(s["within_machine"], "{:.0%}"),
                    _f(s["within_run"], "{:.0%}"),
                )
                for s in spread(con)
            ],
        )
    )
    parts.append("<h2>Machine types</h2>")
    parts.append(
        tables.html(
            ("machine type", "CPU", "architecture", "cores", "memory GB", "cards", "records"),
            [
                (
                    m["label"],
                    m["cpu"],
                    m["arch"],
                    m["cores"],
                    m["memory_gb"],
                    m["cards"],
                    m["records"],
                )
                for m in ms
            ],
        )
    )
    parts.append(f"<h2>Flagged records ({len(flagged)}): kept, shown, not counted</h2>")
    parts.append(
        tables.html(
            (
                "machine type",
                "framework",
                "mode",
                "task",
                "precision",
                "px",
                "batch",
                "images/s",
                "why",
            ),
            [
                (
                    f["label"],
                    f["framework"],
                    f["mode"],
                    f["task"],
                    f["precision"],
                    f["image_size"],
                    f["batch_size"],
                    _f(f["images_per_s"], "{:.1f}"),
                    f["flags"],
                )
                for f in flagged
            ],
        )
    )
    parts.append(f"<h2>Failed or unsupported cells ({len(failed)})</h2>")
    parts.append(
        tables.html(
            ("machine type", "framework", "mode", "task", "error"),
            [
                (f["label"], f["framework"], f["mode"], f["task"], (f["error"] or "")[:160])
                for f in failed
            ],
        )
    )
    parts.append(f"<h2>Files collected ({len(files)})</h2>")
    parts.append(
        tables.html(
            ("file", "kind", "records", "new records", "note"),
            [
                (Path(f["name"]).name, f["kind"], f["records"], f["new_records"], f["note"] or "")
                for f in files
            ],
        )
    )
    parts.append("<p>Written by <code>python -m labkit class report</code>.</p></body></html>")
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# fixtures and the notebook's explorer

FIXTURES = Path(__file__).resolve().parent / "data" / "class_fixtures"


def fixture_cards(profile: str | None = None) -> list[Path]:
    """The synthetic fixture cards for ``profile`` (default: the current one). NOT measurements:
    each says so in its ``fixture`` field, and the report labels their machines 'fixture'."""
    from . import profiles

    name = profiles.get(profile).name
    found = sorted((FIXTURES / name).glob("*.json"))
    if not found:
        raise ValueError(f"no fixture cards for profile {name!r} in {FIXTURES}")
    return found


def choices(con) -> dict[str, list]:
    """The values each explorer filter offers (framework, task, precision, machine)."""
    col = lambda c: [
        r[0] for r in con.execute(f"SELECT DISTINCT {c} FROM records ORDER BY 1").fetchall()
    ]
    return {
        "framework": col("framework"),
        "task": col("task"),
        "precision": col("precision"),
        "machine": [(m["label"], m["machine_id"]) for m in machines(con)],
    }


def explorer(db: str | os.PathLike = "class.duckdb"):
    """Widgets over the class database: filter by framework, task, precision and machine; the
    speedup figure and the summary table follow. Returns the widget box (``.filters`` holds the
    dropdowns by name, so a notebook cell can set them)."""
    import ipywidgets as w
    from IPython.display import HTML, display

    con = connect(db, read_only=True)
    try:
        opts = choices(con)
        all_ratios = ratios(con)
    finally:
        con.close()
    any_ = [("any", None)]
    filters = {
        "framework": w.Dropdown(
            options=any_ + [(v, v) for v in opts["framework"]], description="Framework"
        ),
        "task": w.Dropdown(options=any_ + [(v, v) for v in opts["task"]], description="Task"),
        "precision": w.Dropdown(
            options=any_ + [(v, v) for v in opts["precision"]], description="Precision"
        ),
        "machine": w.Dropdown(options=any_ + opts["machine"], description="Machine"),
    }
    out = w.Output()

    def show(_=None) -> None:
        sel = [
            r
            for r in all_ratios
            if all(
                v.value is None or r[k if k != "machine" else "machine_id"] == v.value
                for k, v in filters.items()
            )
        ]
        out.clear_output(wait=True)
        with out:
            if not sel:
                print("no graph-vs-eager ratio matches these filters")
                return
            display(speedup_figure(sel))
            summary = speedup_summary(sel)
            display(
                HTML(
                    tables.html(
                        ("task", "graph cell", "machines", "median", "min", "max", "flagged"),
                        [
                            (
                                s["task"],
                                s["cell"],
                                s["machines"],
                                _f(s.get("median")),
                                _f(s.get("min")),
                                _f(s.get("max")),
                                s["flagged"],
                            )
                            for s in summary
                        ],
                    )
                )
            )

    for f in filters.values():
        f.observe(show, names="value")

    class Explorer(w.VBox):
        def __repr__(self) -> str:  # what a page without a kernel (the course site) shows
            return "[the class explorer: filters and a figure; run the notebook to use them]"

    box = Explorer([w.HBox(list(filters.values())[:2]), w.HBox(list(filters.values())[2:]), out])
    box.filters = filters
    show()
    return box
