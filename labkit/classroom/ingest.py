"""Collecting hand-ins: each card or results file read, checked and stored once.

:func:`collect` adds result cards (:mod:`labkit.results.cards`) and JSONL results files, given as
files or folders (a shared folder on a hub, an LMS download), to the class database
(:mod:`~labkit.classroom.db`). It is idempotent: a file whose content was collected before adds
nothing, and a measurement that arrives twice (as a results file and as the card made from it)
is stored once. A truncated, foreign or wrong-schema file is named with the reason and skipped;
each file goes in inside its own transaction, so nothing collected before is ever lost. Hand-ins
are untrusted input (:mod:`~labkit.classroom.handins`): files are read within size and depth
limits, zips opened safely, and every record judged again from its raw times (a card's own
verdict is not believed).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import results
from ..results import cards
from ..util import jsonio
from . import handins
from .db import connect, forget_skipped, has_file, mark_skipped, store_card
from .handins import Skip

__all__ = ["CORE", "FIXTURES", "OK_NUMBERS", "Collected", "collect", "fixture_cards", "read"]

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
#: the synthetic fixture cards shipped with labkit, one folder per profile
FIXTURES = Path(__file__).resolve().parent.parent / "data" / "class_fixtures"


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


def _one_document(whole: object, name: str) -> tuple[str, dict, str]:
    """A hand-in that is one JSON document: a card, one record, or a foreign file."""
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


def _results_lines(text: str, error: jsonio.JSONError, name: str) -> tuple[str, dict, str]:
    """A hand-in that is not one JSON document: a results file (one record per line), or
    damaged (``error``: why it is not one document)."""
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


def read(data: bytes, name: str = "") -> tuple[str, dict, str]:
    """``(kind, card, note)`` for the bytes of one hand-in (read within the limits of
    :mod:`~labkit.classroom.handins`): ``kind`` is ``"card"`` or ``"results"``; a results file
    becomes a card (anonymous, like any card). Raises :class:`Skip` with the reason."""
    text = handins.text_of(data)
    try:
        whole = handins.loads(text)
    except jsonio.JSONError as exc:
        return _results_lines(text, exc, name)
    return _one_document(whole, name)


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


# ---------------------------------------------------------------------------------------------
# collecting


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
    mark_skipped(con, name, why)


def _collect_one(con, item: handins.HandIn, done: Collected) -> None:
    if item.skip:
        return _skip(con, done, item.name, item.skip)
    sha = hashlib.sha256(item.data).hexdigest()
    if has_file(con, sha):
        forget_skipped(con, item.name)
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
        new = store_card(con, sha, item.name, kind, card, note)
        forget_skipped(con, item.name)
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
# fixtures


def fixture_cards(profile: str | None = None) -> list[Path]:
    """The synthetic fixture cards for ``profile`` (default: the current one). NOT measurements:
    each says so in its ``fixture`` field, and the report labels their machines 'fixture'."""
    from .. import profiles

    name = profiles.get(profile).name
    found = sorted((FIXTURES / name).glob("*.json"))
    if not found:
        raise ValueError(f"no fixture cards for profile {name!r} in {FIXTURES}")
    return found
