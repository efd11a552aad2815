"""The class database: its DuckDB schema, storing a collected card, and the queries over it.

One file holds every collected hand-in: ``files`` (each file's content hash, so a file collected
before adds nothing), ``cards``, ``machines`` (machine types, :mod:`labkit.hardware.machines`),
``records`` (each measurement once, with the full record as JSON) and ``skipped`` (the files
that could not be collected, and why). DuckDB is imported only when a database is opened
(``import labkit`` stays fast).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from .. import results
from ..hardware.machines import machine_of
from ..results import cards
from ..util import stats
from .handins import rejudge

__all__ = [
    "MACHINE_COLUMNS",
    "NUMBERS",
    "SCHEMA",
    "card_count",
    "ceiling_points",
    "cell_label",
    "choices",
    "connect",
    "counts",
    "failed_cells",
    "file_notes",
    "files",
    "flagged_records",
    "forget_skipped",
    "has_file",
    "machines",
    "mark_skipped",
    "ratios",
    "record_id",
    "records_of",
    "rows",
    "skipped_files",
    "speedup_summary",
    "spread",
    "store_card",
]

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

#: the columns of ``machines``, in the order of the schema (the keys of :func:`machine_of`)
MACHINE_COLUMNS = (
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
#: the numeric columns of ``records`` read from a record (None where it has no number)
NUMBERS = (
    "images_per_s",
    "median_s",
    "iqr_s",
    "first_call_s",
    "ceiling_images_per_s",
    "ceiling_share",
    "peak_rss_mb",
)


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


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


# ---------------------------------------------------------------------------------------------
# writing


def record_id(r: dict, machine_id: str) -> str:
    """A measurement's identity: the same record as a results file and as a card is one."""
    ident = [machine_id, *results.key(r), r.get("timestamp"), r.get("median_s"), r.get("times_s")]
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:20]


def has_file(con, sha: str) -> bool:
    """Whether a file with this content (its SHA-256) was collected before."""
    return con.execute("SELECT 1 FROM files WHERE sha256 = ?", [sha]).fetchone() is not None


def mark_skipped(con, name: Path, why: str) -> None:
    """Keep a skipped file's name and reason (the report lists what it left out)."""
    con.execute("INSERT OR REPLACE INTO skipped VALUES (?, ?, ?)", [str(name), why, _now()])


def forget_skipped(con, name: Path) -> None:
    """The file went in (or was in already): no longer listed as skipped."""
    con.execute("DELETE FROM skipped WHERE name = ?", [str(name)])


def _record_row(rid: str, sha: str, machine_id: str, r: dict) -> list:
    """The ``records`` row of the judged record ``r``, in the order of the schema."""
    why = results.flags(r) if r.get("status") == "ok" else []
    numbers = [float(r[f]) if isinstance(r.get(f), int | float) else None for f in NUMBERS]
    return [
        rid,
        sha,
        machine_id,
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
        *numbers,
        r["valid"],
        bool(why),
        "; ".join(why),
        str(r.get("timestamp") or ""),
        json.dumps(r, sort_keys=True, default=str),
    ]


def _store_records(con, sha: str, card: dict) -> int:
    """Store each of the card's records, judged again, and its machine type; the number of
    records that were not stored before."""
    fixture = bool(card.get("fixture"))
    card_machine = card.get("machine") or {}
    new = 0
    for raw in card["records"]:
        r = rejudge(raw)  # what a hand-in says about its own validity is not trusted
        m = machine_of(r.get("machine") or card_machine, fixture=fixture)
        con.execute(
            "INSERT INTO machines VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
            [m[k] for k in MACHINE_COLUMNS],
        )
        rid = record_id(raw, m["machine_id"])
        if con.execute("SELECT count(*) FROM records WHERE record_id = ?", [rid]).fetchone()[0]:
            continue
        con.execute(
            "INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            _record_row(rid, sha, m["machine_id"], r),
        )
        new += 1
    return new


def store_card(con, sha: str, path: Path, kind: str, card: dict, note: str) -> int:
    """Store one collected file: its card, its records (each judged again by
    :func:`~labkit.classroom.handins.rejudge`, each measurement once) and the file itself;
    returns the number of new records. The caller holds the transaction."""
    fixture = card.get("fixture")
    fixture_text = (
        fixture if isinstance(fixture, str) else (json.dumps(fixture) if fixture else None)
    )
    new = _store_records(con, sha, card)
    card_machine = card.get("machine") or {}
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
        [sha, str(path), kind, card["card_id"], len(card["records"]), new, note, _now()],
    )
    return new


# ---------------------------------------------------------------------------------------------
# queries


def rows(con, sql: str, params: Sequence = ()) -> list[dict]:
    """The rows of ``sql`` as dicts by column name."""
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
    """Each machine's graph-vs-eager ratios (:func:`labkit.results.cards.ratios` over its
    records)."""
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


def cell_label(r: dict) -> str:
    """A measured cell in words: framework, mode, precision (when not fp32), size and batch."""
    prec = "" if r["precision"] == "fp32" else f" {r['precision']}"
    return f"{r['framework']} {r['mode']}{prec} ({r['image_size']} px, b{r['batch_size']})"


def speedup_summary(ratio_rows: Iterable[dict]) -> list[dict]:
    """Per graph cell across machines: count, median, quartiles, range (unflagged ratios only)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in ratio_rows:
        groups[(r["task"], cell_label(r), r["baseline"])].append(r)
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


def _relative_iqr(xs: list[float]) -> float:
    q1, med, q3 = stats.quartiles(xs)
    return (q3 - q1) / med if med else math.nan


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
        cells[(r["task"], cell_label(r))][r["machine_id"]].append(r)
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
            _relative_iqr([x["images_per_s"] for x in rs])
            for rs in per_machine.values()
            if len(rs) > 1
        ]
        out.append(
            {
                "task": task,
                "cell": cell,
                "machines": len(per_machine),
                "between": _relative_iqr(medians) if len(medians) > 1 else None,
                "within_run": stats.median(runs) if runs else None,
                "within_machine": stats.median(repeated) if repeated else None,
            }
        )
    return out


def choices(con) -> dict[str, list]:
    """The values each explorer filter offers (framework, task, precision, machine)."""

    def col(c: str) -> list:
        return [
            r[0] for r in con.execute(f"SELECT DISTINCT {c} FROM records ORDER BY 1").fetchall()
        ]

    return {
        "framework": col("framework"),
        "task": col("task"),
        "precision": col("precision"),
        "machine": [(m["label"], m["machine_id"]) for m in machines(con)],
    }


# ---------------------------------------------------------------------------------------------
# what the report lists


def card_count(con) -> int:
    """How many cards the database holds."""
    return con.execute("SELECT count(*) FROM cards").fetchone()[0]


def counts(con) -> dict[str, int]:
    """How many records the database holds: all, measured, flagged and failed ones."""
    n_rec, n_ok, n_flag, n_failed = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE flagged), "
        "count(*) FILTER (WHERE status <> 'ok') FROM records"
    ).fetchone()
    return {"records": n_rec, "measured": n_ok, "flagged": n_flag, "failed": n_failed}


def skipped_files(con) -> list[dict]:
    """The files skipped at collection, with the reason (none in a database from before the
    ``skipped`` table existed)."""
    has = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'skipped'"
    ).fetchone()[0]
    return rows(con, "SELECT name, reason FROM skipped ORDER BY name") if has else []


def files(con) -> list[dict]:
    """The files collected, in the order they went in."""
    return rows(
        con, "SELECT name, kind, records, new_records, note FROM files ORDER BY collected_at"
    )


def file_notes(con) -> list[dict]:
    """The collected files with a note (lines left out of them), by name."""
    return rows(con, "SELECT name, note FROM files WHERE note <> '' ORDER BY name")


def flagged_records(con) -> list[dict]:
    """The flagged records (invalid, or above the ceiling) with their machine type's label."""
    return rows(
        con,
        """SELECT m.label, r.framework, r.mode, r.task, r.precision, r.image_size, r.batch_size,
                  r.images_per_s, r.flags FROM records r JOIN machines m USING (machine_id)
           WHERE r.flagged ORDER BY m.label, r.framework, r.mode""",
    )


def failed_cells(con) -> list[dict]:
    """The failed or unsupported cells with their machine type's label and error."""
    return rows(
        con,
        """SELECT m.label, r.framework, r.mode, r.task, r.error FROM records r
           JOIN machines m USING (machine_id) WHERE r.status <> 'ok' ORDER BY m.label""",
    )


def ceiling_points(con) -> list[dict]:
    """The measured records that have a ceiling: images/s against it, per framework."""
    return rows(
        con,
        """SELECT r.framework, r.images_per_s, r.ceiling_images_per_s, r.flagged, m.fixture
           FROM records r JOIN machines m USING (machine_id)
           WHERE r.status = 'ok' AND r.ceiling_images_per_s > 0""",
    )
