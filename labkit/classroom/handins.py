"""Hand-ins are untrusted input: the files an instructor collects, found and read within limits.

``labkit class collect`` (:mod:`labkit.classroom.ingest`) reads what learners hand in: a shared
hub folder, an LMS download, a zip. Any of those files may be damaged, misnamed, huge or hostile,
and one such file must never stop the class. This module decides what is read and how:

- **Which files.** Under a folder: every ``.json`` (a card) and ``.jsonl`` (a results file), in
  any case (``CARD.JSON``); ``.zip`` archives, opened safely (below); hidden files and folders
  (``.ipynb_checkpoints``, ``__MACOSX``) left out. Named as skipped, with the fix: other
  archives (``.tar.gz``, ``.7z``, ...: "unpack it first"), a card with another ending
  (``card.json.txt``: "rename it"), a symbolic link (not followed). Every other file (notes,
  notebooks, images) is counted as ignored. A file named on the command line is read as it is.
- **Limits.** A file or archive member of at most :data:`MAX_BYTES`; JSON nested at most
  :data:`MAX_DEPTH` deep; only finite numbers (no NaN or Infinity) that fit 64 bits. A UTF-8
  byte-order mark (Windows editors write one) is dropped; UTF-16 with its mark is read too.
- **Zips.** Nothing is extracted to disk; a member with an absolute name or ``..`` is refused;
  at most :data:`ZIP_MAX_MEMBERS` members and :data:`ZIP_MAX_TOTAL` bytes unpacked (the sizes the
  archive declares are checked first, then each member is read with a cap, so an archive that
  lies about its sizes is refused too: a zip bomb); an archive inside an archive is not opened.
- **Validity.** What a record says about itself is not trusted: :func:`rejudge` recomputes its
  figures from its raw times, its verdict with today's rules (:func:`labkit.results.judge`) and
  its share of its machine's ceiling, and makes an impossible figure invalid, saying why.
"""

from __future__ import annotations

import codecs
import math
import os
import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import results
from ..util import jsonio, stats

__all__ = [
    "CARD_SUFFIXES",
    "MAX_BYTES",
    "MAX_CALLS",
    "MAX_DEPTH",
    "MAX_FLOPS",
    "MIN_CALL_S",
    "OTHER_ARCHIVES",
    "TOLERANCE",
    "ZIP_MAX_MEMBERS",
    "ZIP_MAX_TOTAL",
    "Found",
    "HandIn",
    "Skip",
    "find",
    "kind",
    "loads",
    "open_each",
    "rejudge",
    "text_of",
]

#: A card holds every record of a run with its raw call times. The longest profile (full)
#: measures 54 cells (every framework, mode and task at both precisions) of at most 1,000 timed
#: calls each: a card of about 1.5 MB, written indented. 8 MiB leaves room for a results file of
#: several runs and refuses anything far bigger (a 50 MB "card" is not one, and would make a
#: report page nobody can open).
MAX_BYTES = 8 * 2**20
#: a card is nested 5 levels deep (card > records > record > machine > peak_gflops); 32 is
#: generous, and far below the depth at which Python's JSON reader gives up (RecursionError)
MAX_DEPTH = 32
#: an LMS download of a whole class: one or a few files per learner
ZIP_MAX_MEMBERS = 5000
#: all members of one archive unpacked together (a class of cards is a few tens of MB at most)
ZIP_MAX_TOTAL = 256 * 2**20
CARD_SUFFIXES = (".json", ".jsonl")
#: archives that are named as skipped ("unpack it first"), never opened
OTHER_ARCHIVES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".gz", ".bz2", ".xz", ".7z")
OTHER_ARCHIVES += (".rar",)
#: more calls than any profile times (the full profile stops at 1,000)
MAX_CALLS = 100_000
#: No single machine computes ResNet-50 this fast: 100 PFLOP/s is about a hundred times the
#: dense bf16 rate of today's fastest GPU (an H200: about 1 PFLOP/s). A figure above it is an
#: error or a forgery, never a fast machine.
MAX_FLOPS = 1e17
#: one call of a framework from Python takes microseconds at least: a shorter median is a
#: timing error (a step that returns before its work is done)
MIN_CALL_S = 1e-6
#: a record's figure may differ from what its raw times give by rounding, no more
TOLERANCE = 1e-3


class Skip(Exception):
    """A file that cannot be collected; the message says why."""


@dataclass(frozen=True)
class HandIn:
    """One file to collect (a file, or a member of a zip, ``archive.zip:member``): its bytes,
    or why it is skipped."""

    name: Path
    data: bytes | None = None
    skip: str = ""


@dataclass
class Found:
    """What :func:`find` found: the files and archives to open, and the other files."""

    files: list[Path] = field(default_factory=list)
    ignored: list[Path] = field(default_factory=list)
    given: set[Path] = field(default_factory=set)  #: named on the command line


# ---------------------------------------------------------------------------------------------
# which files


def kind(name: str) -> str:
    """``card`` (.json, .jsonl, any case), ``zip``, ``archive`` (another archive), ``misnamed``
    (a card with another ending: ``card.json.txt``), or ``''`` (any other file)."""
    low = name.lower()
    if low.endswith(CARD_SUFFIXES):
        return "card"
    if low.endswith(".zip"):
        return "zip"
    if low.endswith(OTHER_ARCHIVES):
        return "archive"
    if re.search(r"\.jsonl?\.", low):
        return "misnamed"
    return ""


def find(paths: Sequence[str | os.PathLike], skip: Path | None = None) -> Found:
    """The files to collect under ``paths`` (see the module's doc); ``skip``: the database.

    ``ValueError`` for a path that does not exist.
    """
    found = Found()
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                rel = f.relative_to(p).parts
                if any(part.startswith(".") for part in rel) or not (f.is_file() or f.is_symlink()):
                    continue
                (found.files if kind(f.name) else found.ignored).append(f)
        elif p.is_file():
            found.files.append(p)
            found.given.add(p)
        else:
            raise ValueError(f"no such file or folder: {p}; fix: give card files or folders")
    skip = skip.resolve() if skip else None
    found.files = list(dict.fromkeys(f for f in found.files if f.resolve() != skip))
    return found


def _misnamed(name: str) -> str:
    return (
        f"not a card: its name ends in {PurePosixPath(name).suffix!r}, not .json or .jsonl; "
        "fix: rename it to end in .json (a card) or .jsonl (a results file) and collect again"
    )


def _archive(name: str) -> str:
    return (
        f"an archive labkit does not open ({name}): unpack it first (e.g. tar xf FILE) and "
        "collect the folder, or hand in a .zip"
    )


def _too_big(size: int) -> str:
    return (
        f"{size / 1e6:.1f} MB, more than the {MAX_BYTES // 2**20} MiB a card or results file can "
        "be: not read; fix: hand in the card itself (python -m labkit card)"
    )


def open_each(path: Path, ignored: list[Path], given: bool = False) -> Iterator[HandIn]:
    """The hand-ins in ``path``: the file itself, or each member of a zip (other files in the
    zip are added to ``ignored``). ``given``: named on the command line (read whatever its name)."""
    what = kind(path.name)
    if path.is_symlink() and not given:
        yield HandIn(path, skip="a symbolic link: not followed; fix: collect the file itself")
    elif what == "zip":
        yield from _zip_members(path, ignored)
    elif what == "archive":
        yield HandIn(path, skip=_archive(path.name))
    elif what == "misnamed" and not given:
        yield HandIn(path, skip=_misnamed(path.name))
    else:
        yield _read_file(path)


def _read_file(path: Path) -> HandIn:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            return HandIn(path, skip=_too_big(size))
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        return HandIn(path, skip=f"cannot read it ({exc.strerror or exc})")
    if len(data) > MAX_BYTES:  # it grew while being read
        return HandIn(path, skip=_too_big(len(data)))
    return HandIn(path, data)


def _zip_members(path: Path, ignored: list[Path]) -> Iterator[HandIn]:
    try:
        size = path.stat().st_size
        if size > ZIP_MAX_TOTAL:
            yield HandIn(path, skip=f"an archive of {size / 1e6:.0f} MB: too big to open")
            return
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        yield HandIn(path, skip=f"not a readable zip archive ({exc}); fix: ask for it again")
        return
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        declared = sum(i.file_size for i in infos)
        if len(infos) > ZIP_MAX_MEMBERS:
            why = f"holds {len(infos)} files, more than the {ZIP_MAX_MEMBERS} a class hands in"
            yield HandIn(path, skip=f"{why}: not opened")
            return
        if declared > ZIP_MAX_TOTAL:
            yield HandIn(
                path,
                skip=f"would unpack to {declared / 1e6:.0f} MB, more than the "
                f"{ZIP_MAX_TOTAL // 2**20} MiB an archive of cards can (a zip bomb?): not opened",
            )
            return
        budget = ZIP_MAX_TOTAL
        for info in infos:
            item = _member(archive, path, info, budget, ignored)
            if item is not None:
                budget -= len(item.data or b"")
                yield item


def _member(
    archive: zipfile.ZipFile, path: Path, info: zipfile.ZipInfo, budget: int, ignored: list[Path]
) -> HandIn | None:
    """One member of a zip, read in memory with a cap (None: hidden, or not a card: ignored)."""
    raw = info.filename.replace("\\", "/")
    name = Path(f"{path}:{raw}")
    parts = PurePosixPath(raw).parts
    if raw.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
        return HandIn(name, skip="an unsafe name in the archive (absolute, or with '..'): not read")
    if not parts or any(p.startswith(".") or p == "__MACOSX" for p in parts):
        return None
    what = kind(parts[-1])
    if not what:
        ignored.append(name)
        return None
    if what in ("zip", "archive"):
        return HandIn(
            name, skip="an archive inside an archive: not opened; fix: unpack it and collect that"
        )
    if what == "misnamed":
        return HandIn(name, skip=_misnamed(parts[-1]))
    if info.flag_bits & 0x1:
        return HandIn(name, skip="encrypted: not read; fix: hand in the card without a password")
    if info.file_size > MAX_BYTES:
        return HandIn(name, skip=_too_big(info.file_size))
    limit = min(MAX_BYTES, budget)
    try:
        with archive.open(info) as f:
            data = f.read(limit + 1)
    except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError, zlib.error) as exc:
        return HandIn(name, skip=f"cannot be unpacked ({exc}); fix: ask for the archive again")
    if len(data) > limit:
        return HandIn(name, skip="unpacks to more than it declares (a zip bomb?): not read")
    return HandIn(name, data)


# ---------------------------------------------------------------------------------------------
# reading one


def text_of(data: bytes) -> str:
    """The text of a hand-in: UTF-8 (a byte-order mark dropped), or UTF-16 with its mark.
    :class:`Skip` for an empty or binary file."""
    try:
        if data.startswith(codecs.BOM_UTF8):
            text = data[len(codecs.BOM_UTF8) :].decode("utf-8")
        elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            text = data.decode("utf-16")
        else:
            text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Skip("not a text file (not UTF-8): not a card or a results file") from None
    if not text.strip():
        raise Skip("empty file")
    return text


def loads(text: str) -> object:
    """:func:`labkit.util.jsonio.loads` within a card's depth (:data:`MAX_DEPTH`). A syntax error
    passes through (a :class:`~labkit.util.jsonio.JSONError` with ``syntax``: the caller tells a
    results file from a damaged card); any other refusal is a :class:`Skip` saying why."""
    try:
        return jsonio.loads(text, max_depth=MAX_DEPTH)
    except jsonio.JSONError as exc:
        if exc.syntax:
            raise
        raise Skip(f"{exc.msg} (a card has 5 levels, finite numbers): not read") from None


# ---------------------------------------------------------------------------------------------
# judging a record again


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= TOLERANCE * max(abs(a), abs(b))


def _from_times(r: dict) -> list[str]:
    """Recompute ``r``'s figures from its raw times (in place); the contradictions found, or a
    reason it cannot be judged at all (then the first reason starts with "cannot judge")."""
    batch, times = r["batch_size"], r.get("times_s")
    if batch < 1:
        return [f"cannot judge: batch size {batch} is not a measurement"]
    claimed = r["images_per_s"]
    if times:
        if not isinstance(times, list) or len(times) > MAX_CALLS:
            return ["cannot judge: its raw times (times_s) are not a list of timed calls"]
        if not all(_number(t) and t > 0 for t in times):
            return ["cannot judge: its raw times (times_s) are not all positive numbers"]
        med = stats.median(times)
        r.update(
            median_s=med,
            iqr_s=stats.iqr(times),
            p90_s=stats.quantile(times, 0.9),
            mean_s=sum(times) / len(times),
            repeats=len(times),
        )
    else:
        n, med = r.get("repeats"), r["median_s"]
        if not _number(n) or n != int(n) or not 1 <= n <= MAX_CALLS:
            return [f"cannot judge: no raw times, and {n!r} is not a number of timed calls"]
        r["repeats"] = int(n)
    r["images_per_s"] = batch / med
    if not _close(claimed, r["images_per_s"]):
        src = "the median of its raw times" if times else "its median time"
        why = f"its figure ({claimed:.4g} images/s) contradicts {src} "
        return [why + f"({batch} / {med:.4g} s = {r['images_per_s']:.4g} images/s)"]
    return []


def _impossible(r: dict) -> list[str]:
    """Why ``r``'s figure cannot be a measurement on any machine (empty: it can)."""
    from .. import resnet

    med, ips, out = r["median_s"], r["images_per_s"], []
    if med < MIN_CALL_S:
        out.append(
            f"impossible: a median call of {med:.3g} s, shorter than the {MIN_CALL_S:g} s any "
            "framework call from Python takes (a timing error)"
        )
    if not results.custom(r):
        try:
            per_image = resnet.flops(r["image_size"], training=r["task"] == "train")
        except ValueError:
            return out
        if ips * per_image > MAX_FLOPS:
            out.append(
                f"impossible: {ips:.3g} images/s of ResNet-50 at {r['image_size']} px is "
                f"{ips * per_image:.2g} FLOP/s, more than any one machine computes "
                f"({MAX_FLOPS:.0e} FLOP/s)"
            )
    return out


def _ceiling(r: dict) -> dict:
    """The ceiling fields of ``r`` recomputed from its figure and its machine's ceiling."""
    top = r.get("ceiling_images_per_s")
    if r.get("status") != "ok" or not _number(top) or top <= 0:
        return {"ceiling_share": None, "above_ceiling": False, "ceiling_note": ""}
    share = r["images_per_s"] / top
    note = r.get("ceiling_note") if r.get("above_ceiling") else ""
    if share > 1 and not (isinstance(note, str) and note):
        note = "above the estimated ceiling of its machine (judged again when collected)"
    return {
        "ceiling_share": share,
        "above_ceiling": share > 1,
        "ceiling_note": note if share > 1 else "",
    }


def rejudge(record: dict) -> dict:
    """``record`` judged again by today's rules, ignoring what it says about itself.

    Its median, spread and images/s are recomputed from its raw times (a figure that
    contradicts them is invalid); an impossible figure (:data:`MAX_FLOPS`, :data:`MIN_CALL_S`)
    is invalid; its verdict is :func:`labkit.results.judge`'s; its ceiling share and
    above-ceiling flag follow from the recomputed figure. Returns a new dict.
    """
    r = dict(record)
    threads = r.get("threads")
    if isinstance(threads, int) and not isinstance(threads, bool):  # schema 1: a number
        r["threads"] = {"intra": threads, "inter": None}
    elif not isinstance(threads, dict):
        r["threads"] = {"intra": None, "inter": None}
    if not isinstance(r.get("machine"), dict):
        r["machine"] = {}
    reasons: list[str] = []
    if r.get("status") == "ok":
        reasons = _from_times(r)
        if not (reasons and reasons[0].startswith("cannot judge")):
            reasons += _impossible(r)
    if not (reasons and reasons[0].startswith("cannot judge")):
        try:
            reasons += results.judge(r)
        except (TypeError, ValueError, AttributeError) as exc:
            reasons.append(f"cannot judge: a field the verdict reads is malformed ({exc})")
    r.update(valid=not reasons, invalid_reasons=list(dict.fromkeys(reasons)), **_ceiling(r))
    return r
