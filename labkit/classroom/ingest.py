"""Collecting hand-ins into the class database (DuckDB), each file once, each in a transaction.

Tables: ``files`` (each file's content hash: a file collected before adds nothing), ``machines`` (machine types, :mod:`labkit.hardware.machines`; ``fixture`` marks the synthetic
ones), ``records`` (each measurement once, judged again, the full record as JSON) and
``skipped`` (files that could not be collected, and why). A measurement handed in as a results
file and as the card made from it is stored once. DuckDB is imported only when a database is
opened.
"""

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

__all__ = ["FIXTURES", "SCHEMA", "Collected", "cell_label", "collect", "connect", "fixture_cards"]
__all__ += ["store_card"]

#: the synthetic fixture cards shipped with labkit, one folder per profile (NOT measurements)
FIXTURES = Path(__file__).resolve().parent.parent / "data" / "class_fixtures"
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


RECORD_KEYS = ("framework", "mode", "task", "batch_size", "precision", "image_size", "device")
RECORD_KEYS += ("profile", "status")


def connect(db: str | os.PathLike, read_only: bool = False):
    """Open (or create) the class database; ``ValueError`` when the file is not one."""
    try:
        import duckdb
    except ImportError:
        raise ValueError("the class database needs duckdb; fix: pip install duckdb") from None
    db = Path(db)
    if read_only and not db.exists():
        fix = f"python -m labkit class collect FOLDER --db {db}"
        raise ValueError(f"no class database at {db}; fix: {fix}")
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


def _record_row(sha: str, machine_id: str, raw: dict) -> list:
    """The ``records`` row of ``raw`` judged again (its id first: the same measurement as a
    results file and as a card has one id)."""
    r = handins.rejudge(raw)  # what a hand-in says about its own validity is not believed
    ident = [machine_id, *results.key(raw), raw.get("timestamp"), raw.get("median_s")]
    ident.append(raw.get("times_s"))
    rid = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:20]
    why = results.flags(r) if r.get("status") == "ok" else []
    numbers = [float(r[f]) if isinstance(r.get(f), int | float) else None for f in NUMBERS]
    return [
        rid,
        sha,
        machine_id,
        *(r[k] for k in RECORD_KEYS),
        r.get("error"),
        *numbers,
        r["valid"],
        bool(why),
        "; ".join(why),
        str(r.get("timestamp") or ""),
        json.dumps(r, sort_keys=True, default=str),
    ]


def store_card(con, sha: str, path: Path, kind: str, card: dict, note: str) -> int:
    """Store one collected file: its records (each judged again, each measurement once), their
    machine types, its card and the file; the number of new records. The caller holds the
    transaction."""
    fixture, new, seen = card.get("fixture"), 0, set()
    for raw in card["records"]:
        m = machine_of(raw.get("machine") or card["machine"], fixture=bool(fixture))
        con.execute(
            "INSERT INTO machines VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
            list(m.values()),
        )
        row = _record_row(sha, m["machine_id"], raw)
        seen.add(m["machine_id"])
        new += len(
            con.execute(
                f"INSERT INTO records VALUES ({','.join('?' * len(row))}) ON CONFLICT DO NOTHING "
                "RETURNING 1",
                row,
            ).fetchall()
        )
    for mid in seen:  # each machine type's graph-vs-eager ratios, over all its records
        sql = "SELECT record FROM records WHERE machine_id = ? ORDER BY timestamp"
        found = [json.loads(text) for (text,) in con.execute(sql, [mid]).fetchall()]
        con.execute("DELETE FROM ratios WHERE machine_id = ?", [mid])
        for r in cards.ratios(found):
            row = [mid, r["task"], r["framework"], cell_label(r), r["baseline"], r["speedup"]]
            con.execute(
                "INSERT INTO ratios VALUES (?,?,?,?,?,?,?,?)",
                [*row, r["flagged"], "; ".join(r["flags"])],
            )
    con.execute(
        "INSERT INTO files (sha256, name, kind, card_id, records, new_records, note) "
        "VALUES (?,?,?,?,?,?,?)",
        [sha, str(path), kind, card["card_id"], len(card["records"]), new, note],
    )
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
    why, sha = item.skip, hashlib.sha256(item.data or b"").hexdigest()
    if not why and con.execute("SELECT 1 FROM files WHERE sha256 = ?", [sha]).fetchone():
        con.execute("DELETE FROM skipped WHERE name = ?", [str(item.name)])
        return done.already.append(item.name)
    if not why:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kind, card, note = handins.read(item.data, item.name.name)
            con.execute("BEGIN TRANSACTION")
            try:
                new = store_card(con, sha, item.name, kind, card, note)
                con.execute("DELETE FROM skipped WHERE name = ?", [str(item.name)])
                con.execute("COMMIT")
            except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
                con.execute("ROLLBACK")
                why = f"could not be stored ({type(exc).__name__}: {exc})"
        except Skip as exc:
            why = str(exc)
        except Exception as exc:  # noqa: BLE001 - a hostile file must not stop the class
            why = f"could not be read ({type(exc).__name__}: {exc})"
    if why:
        done.skipped.append((item.name, why))
        return con.execute(
            "INSERT OR REPLACE INTO skipped (name, reason) VALUES (?, ?)", [str(item.name), why]
        )
    n = len(card["records"])
    what = f"{kind}, {n} records" + (f" ({n - new} collected before)" if new < n else "")
    (done.partial if note else done.added).append((item.name, f"{what}; {note}" if note else what))


def fixture_cards(profile: str | None = None) -> list[Path]:
    """The synthetic fixture cards for ``profile`` (default: the current one). NOT measurements:
    each says so in its ``fixture`` field, and the report marks their machines 'fixture'."""
    from .. import profiles

    name = profiles.get(profile).name
    found = sorted((FIXTURES / name).glob("*.json"))
    if not found:
        raise ValueError(f"no fixture cards for profile {name!r} in {FIXTURES}")
    return found
