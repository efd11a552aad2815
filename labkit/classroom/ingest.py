"""The class database (DuckDB, imported only when one is opened): ``files`` (by content hash,
each collected once, in a transaction), ``machines`` (types; ``fixture`` marks synthetic ones),
``records`` (each measurement once, judged again), ``ratios`` (each machine type's
graph-vs-eager ratios over all its records) and ``skipped`` (files not collected, and why)."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import results
from ..hardware.machines import machine_of
from ..results import cards
from . import handins
from .handins import Skip

__all__ = ["FIXTURE", "FIXTURES", "SCHEMA", "Collected", "cell_label", "collect", "connect"]
__all__ += ["fixture_cards", "machines", "ratios", "rows", "store_card"]

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

    db = Path(db)
    if read_only and not db.exists():
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
    """Store one collected file: its records (each judged again, each measurement once), their
    machine types and ratios, and the file; the number of new records. The caller holds the
    transaction."""
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
        lines = [f"{t:<8} {p}: {what}" for t, ps in tags.items() for p, what in ps]
        lines += [f"SKIPPED  {p}: {why}" for p, why in self.skipped]
        if not (self.added or self.already or self.skipped):
            lines.append("no card or results files (.json, .jsonl, .zip) found")
        n, ignored = len(self.ignored), f", {len(self.ignored)} other files ignored"
        done = f"{len(self.added)} added, {len(self.already)} already collected"
        return "\n".join(
            [*lines, f"{done}, {len(self.skipped)} skipped{ignored * bool(n)} -> {self.db}"]
        )


def collect(paths: Sequence[str | os.PathLike], db: str | os.PathLike = "class.duckdb"):
    """Add every card and results file under ``paths`` to the database ``db``; a
    :class:`Collected`. ``ValueError`` (before anything is written) for a path that does not
    exist or a ``db`` that is not a class database."""
    if not paths:
        raise ValueError("nothing to collect; fix: name card files or folders")
    db = Path(db)
    files, ignored, given = handins.find(paths, skip=db)
    con = connect(db)
    done = Collected(db, ignored=ignored)
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
    """The synthetic fixture cards for ``profile`` (default: the current one). NOT measurements:
    each says so in its ``fixture`` field, and the report marks their machines 'fixture'."""
    from .. import profiles

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
    count = "(SELECT count(*) FROM records r WHERE r.machine_id = m.machine_id) AS records"
    sql = f"SELECT m.*, {count} FROM machines m ORDER BY fixture, family, cores, label"
    return rows(con, sql)


def ratios(con) -> list[dict]:
    """Each machine type's graph-vs-eager ratios (:func:`labkit.results.cards.ratios` over its
    records, kept at collection) with its label, family and whether it is a fixture."""
    sql = """SELECT r.*, m.label AS machine, m.family, m.fixture FROM ratios r
        JOIN machines m USING (machine_id) ORDER BY r.task, r.cell, m.fixture, m.label"""
    return rows(con, sql)
