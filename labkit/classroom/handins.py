"""Hand-ins are untrusted: found (``.json``, ``.jsonl``, ``.zip``, any case; hidden files, links,
other archives and ``card.json.txt`` skipped with the fix), read within limits (:data:`MAX_BYTES`,
:data:`MAX_DEPTH`, finite numbers, UTF-8 or UTF-16 with its BOM; zips in memory, no unsafe names,
sizes checked as declared and while read, no archive in an archive), parsed, and judged again
(:func:`rejudge` believes nothing a record says about itself)."""

from __future__ import annotations

import codecs
import math
import os
import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .. import resnet, results
from ..results import cards
from ..util import jsonio, stats

__all__ = ["MAX_BYTES", "MAX_DEPTH", "ZIP_MAX_MEMBERS", "ZIP_MAX_TOTAL", "HandIn", "Skip"]
__all__ += ["find", "kind", "open_each", "read", "rejudge"]

MAX_BYTES = 8 * 2**20  #: a full-profile card is 1.5 MB: room for a results file of several runs
MAX_DEPTH = 32  #: a card nests 5 levels; far below where Python's JSON reader gives up
ZIP_MAX_MEMBERS = 5000  #: an LMS download of a whole class
ZIP_MAX_TOTAL = 256 * 2**20  #: all members of one archive, unpacked
OTHER_ARCHIVES = (".tgz", ".tar", ".gz", ".bz2", ".xz", ".7z", ".rar")  # .tar.gz among them
MAX_CALLS = 100_000  #: more timed calls than any profile makes (full stops at 1,000)
MAX_FLOPS = 1e17  #: about a hundred H200s' dense bf16 rate: above it, an error or a forgery
MIN_CALL_S = 1e-6  #: a framework call from Python takes microseconds at least
TOLERANCE = 1e-3  #: a record's figure may differ from its raw times' by rounding, no more
NESTED = "an archive inside an archive: not opened; fix: unpack it and collect that"
MISNAMED = "not a card: its name ends in {!r}, not .json or .jsonl; fix: rename it to end in "
MISNAMED += ".json (a card) or .jsonl (a results file) and collect again"
TOO_BIG = f"{{:.1f}} MB, more than the {MAX_BYTES >> 20} MiB a card or results file can be: "
TOO_BIG += "not read; fix: hand in the card itself (python -m labkit card)"


class Skip(Exception):
    """A file that cannot be collected; the message says why."""


@dataclass(frozen=True)
class HandIn:
    """One file to collect (a file, or ``archive.zip:member``): its bytes, or why it is skipped."""

    name: Path
    data: bytes | None = None
    skip: str = ""


def kind(name: str) -> str:
    """``card`` (.json[l]), ``zip``, ``archive``, ``misnamed`` (``card.json.txt``) or ``''``."""
    low = name.lower()
    if low.endswith((".json", ".jsonl")):
        return "card"
    if low.endswith((".zip", *OTHER_ARCHIVES)):
        return "zip" if low.endswith(".zip") else "archive"
    return "misnamed" if re.search(r"\.jsonl?\.", low) else ""


def find(paths: Sequence[str | os.PathLike], skip: Path | None = None):
    """``(files, ignored, given)`` under ``paths`` but ``skip`` (the database); or ValueError."""
    files, ignored, given = [], [], set()
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                hidden = any(part.startswith(".") for part in f.relative_to(p).parts)
                if not hidden and (f.is_file() or f.is_symlink()):
                    (files if kind(f.name) else ignored).append(f)
        elif p.is_file():
            files.append(p)
            given.add(p)
        else:
            raise ValueError(f"no such file or folder: {p}; fix: give card files or folders")
    skip = skip.resolve() if skip else None
    return list(dict.fromkeys(f for f in files if f.resolve() != skip)), ignored, given


def open_each(path: Path, ignored: list[Path], given: bool = False) -> Iterator[HandIn]:
    """The hand-ins in ``path``: the file, or each member of a zip (other members go to
    ``ignored``). ``given``: named on the command line (read whatever its name)."""
    what = kind(path.name)
    if path.is_symlink() and not given:
        yield HandIn(path, skip="a symbolic link: not followed; fix: collect the file itself")
    elif what == "zip":
        yield from _zip_members(path, ignored)
    elif what == "archive":
        fix = "unpack it first (e.g. tar xf FILE) and collect the folder, or hand in a .zip"
        yield HandIn(path, skip=f"an archive labkit does not open: {fix}")
    elif what == "misnamed" and not given:
        yield HandIn(path, skip=MISNAMED.format(path.suffix))
    else:
        try:
            with path.open("rb") as f:
                data, size = f.read(MAX_BYTES + 1), os.fstat(f.fileno()).st_size
        except OSError as exc:
            yield HandIn(path, skip=f"cannot read it ({exc.strerror or exc})")
            return
        big = len(data) > MAX_BYTES
        yield HandIn(path, skip=TOO_BIG.format(size / 1e6)) if big else HandIn(path, data)


def _zip_members(path: Path, ignored: list[Path]) -> Iterator[HandIn]:
    try:
        if path.stat().st_size > ZIP_MAX_TOTAL:
            raise ValueError(f"{path.stat().st_size / 1e6:.0f} MB: too big to open")
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        yield HandIn(path, skip=f"not a readable zip archive ({exc}); fix: ask for it again")
        return
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        declared, why = sum(i.file_size for i in infos), ""
        if len(infos) > ZIP_MAX_MEMBERS:
            why = f"holds {len(infos)} files, more than the {ZIP_MAX_MEMBERS} a class hands in"
        elif declared > ZIP_MAX_TOTAL:
            why = f"would unpack to {declared / 1e6:.0f} MB, more than the "
            why += f"{ZIP_MAX_TOTAL // 2**20} MiB an archive of cards can (a zip bomb?)"
        if why:
            yield HandIn(path, skip=f"{why}: not opened")
            return
        budget = ZIP_MAX_TOTAL  # what the members read so far leave of the archive's limit
        for info in infos:
            item = _member(archive, path, info, budget, ignored)
            if item is not None:
                budget -= len(item.data or b"")
                yield item


def _member(archive, path: Path, info: zipfile.ZipInfo, budget: int, ignored: list[Path]):
    """One member of a zip, read in memory with a cap (None: hidden, or not a card)."""
    raw = info.filename.replace("\\", "/")
    name, parts = Path(f"{path}:{raw}"), PurePosixPath(raw).parts
    if raw.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
        return HandIn(name, skip="an unsafe name in the archive (absolute, or with '..'): not read")
    if not parts or any(p.startswith(".") or p == "__MACOSX" for p in parts):
        return None
    if not (what := kind(parts[-1])):
        return ignored.append(name)
    skip = ""
    if info.flag_bits & 0x1:
        skip = "encrypted: not read; fix: hand in the card without a password"
    elif info.file_size > MAX_BYTES:
        skip = TOO_BIG.format(info.file_size / 1e6)
    elif what != "card":
        skip = MISNAMED.format(PurePosixPath(raw).suffix) if what == "misnamed" else NESTED
    if skip:
        return HandIn(name, skip=skip)
    try:
        with archive.open(info) as f:
            data = f.read((limit := min(MAX_BYTES, budget)) + 1)
    except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError, zlib.error) as exc:
        return HandIn(name, skip=f"cannot be unpacked ({exc}); fix: ask for the archive again")
    if len(data) > limit:
        return HandIn(name, skip="unpacks to more than it declares (a zip bomb?): not read")
    return HandIn(name, data)


def _check_records(records: list, where: str) -> None:
    for i, r in enumerate(records, start=1):
        if found := results.problems(r):  # the schema of the record's own version
            why = f"not a labkit benchmark record ({'; '.join(found[:3])})"
            raise Skip(f"wrong schema: {where} {i} is {why}")


def _check_card(card: dict) -> dict:
    if not isinstance(fmt := card.get("format"), int) or isinstance(fmt, bool):
        raise Skip("wrong schema: a card without a format number")
    if fmt > cards.FORMAT:
        fix = "update labkit (pip install -U labkit, or git pull) and collect again"
        raise Skip(f"card format {fmt!r} is newer than this labkit reads ({cards.FORMAT}): {fix}")
    for f, types in (("records", list), ("machine", dict), ("card_id", str)):
        if not isinstance(card.get(f), types):
            raise Skip(f"wrong schema: a card without a valid {f!r}")
    if not card["records"]:
        raise Skip("the card holds no records")
    return _check_records(card["records"], "record") or card


def _results_lines(text: str, error: jsonio.JSONError, name: str) -> tuple[str, dict, str]:
    """Not one JSON document: a results file (a record a line), or damaged (``error``)."""
    first = next(n for n, ln in enumerate(text.split("\n"), start=1) if ln.strip())
    try:
        parsed, truncated = results.parse_lines(text)
    except results.BadLine as exc:
        if exc.line != first:
            raise Skip(f"line {exc.line} is not JSON ({exc.msg}): a damaged results file") from None
        parsed, truncated = [], None
    if not parsed:
        where = f"{error.msg} at line {error.lineno} column {error.colno}"
        if text.lstrip().startswith(("{", "[")):
            raise Skip(f"truncated or damaged JSON ({where}): ask for the file again")
        raise Skip("not JSON: not a labkit result card or results file")
    _check_records(records := [r for _, r in parsed], "line")
    note = f"line {truncated} is truncated (an interrupted write) and was left out"
    return "results", cards.build(records, source=name, local=False), note if truncated else ""


def read(data: bytes, name: str = "") -> tuple[str, dict, str]:
    """``(kind, card, note)`` of one hand-in's bytes: ``kind`` ``"card"`` or ``"results"`` (a
    results file becomes an anonymous card). :class:`Skip` with the reason."""
    try:  # UTF-16 with its byte-order mark (Notepad), else UTF-8 with or without one
        utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
        text = data.decode("utf-16") if utf16 else data.removeprefix(codecs.BOM_UTF8).decode()
    except UnicodeDecodeError:
        raise Skip("not a text file (not UTF-8): not a card or a results file") from None
    if not text.strip():
        raise Skip("empty file")
    try:
        whole = jsonio.loads(text, max_depth=MAX_DEPTH)
    except jsonio.JSONError as exc:
        if exc.syntax:
            return _results_lines(text, exc, name)
        raise Skip(f"{exc.msg} (a card has 5 levels, finite numbers): not read") from None
    if isinstance(whole, dict) and whole.get("kind") == cards.KIND:
        return "card", _check_card(whole), ""
    if isinstance(whole, dict) and "framework" in whole and "status" in whole:
        _check_records([whole], "record")
        return "results", cards.build([whole], source=name, local=False), ""
    keys = ", ".join(map(repr, list(whole)[:6])) if isinstance(whole, dict) else ""
    what = f"a JSON object with keys {keys}" if keys else f"a JSON {type(whole).__name__}"
    raise Skip(f"foreign file: {what}, not a labkit result card or results file")


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _recheck(r: dict) -> list[str]:
    """An ok record's figures recomputed from its raw times (in place); its contradicted or
    impossible figures, or why it cannot be judged (then the first reason starts "cannot judge")."""
    batch, times, claimed = r["batch_size"], r.get("times_s"), r["images_per_s"]
    if batch < 1:
        return [f"cannot judge: batch size {batch} is not a measurement"]
    if times:
        if not isinstance(times, list) or len(times) > MAX_CALLS:
            return ["cannot judge: its raw times (times_s) are not a list of timed calls"]
        if not all(_number(t) and t > 0 for t in times):
            return ["cannot judge: its raw times (times_s) are not all positive numbers"]
        med = stats.median(times)
        r.update(median_s=med, iqr_s=stats.iqr(times), p90_s=stats.quantile(times, 0.9))
        r.update(mean_s=sum(times) / len(times), repeats=len(times))
    else:
        n, med = r.get("repeats"), r["median_s"]
        if not _number(n) or n != int(n) or not 1 <= n <= MAX_CALLS:
            return [f"cannot judge: no raw times, and {n!r} is not a number of timed calls"]
        r["repeats"] = int(n)
    r["images_per_s"] = ips = batch / med
    out, train = [], r["task"] == "train"
    if abs(claimed - ips) > TOLERANCE * max(abs(claimed), ips):
        src = "the median of its raw times" if times else "its median time"
        why = f"its figure ({claimed:.4g} images/s) contradicts {src} "
        out.append(why + f"({batch} / {med:.4g} s = {ips:.4g} images/s)")
    if med < MIN_CALL_S:
        why = f"impossible: a median call of {med:.3g} s, shorter than the {MIN_CALL_S:g} s "
        out.append(why + "any framework call from Python takes (a timing error)")
    try:  # a learner's own model: no FLOP count to check against
        flop = 0 if results.custom(r) else ips * resnet.flops(r["image_size"], training=train)
    except ValueError:
        flop = 0
    if flop > MAX_FLOPS:
        why = f"impossible: {ips:.3g} images/s of ResNet-50 at {r['image_size']} px is {flop:.2g} "
        out.append(why + f"FLOP/s, more than any one machine computes ({MAX_FLOPS:.0e} FLOP/s)")
    return out


def rejudge(record: dict) -> dict:
    """A new ``record`` judged again, believing nothing it says of itself: figures from its raw
    times, impossible ones (:data:`MAX_FLOPS`, :data:`MIN_CALL_S`) invalid, the ceiling share."""
    r, threads = dict(record), record.get("threads")
    if not isinstance(threads, dict):  # schema 1: the number of intra-op threads
        r["threads"] = {"intra": threads if type(threads) is int else None, "inter": None}
    r["machine"] = r["machine"] if isinstance(r.get("machine"), dict) else {}
    reasons = _recheck(r) if r.get("status") == "ok" else []
    if not (reasons and reasons[0].startswith("cannot judge")):
        try:
            reasons += results.judge(r)
        except (TypeError, ValueError, AttributeError) as exc:
            reasons.append(f"cannot judge: a field the verdict reads is malformed ({exc})")
    r.update(valid=not reasons, invalid_reasons=list(dict.fromkeys(reasons)))
    if r.get("status") != "ok" or not _number(top := r.get("ceiling_images_per_s")) or top <= 0:
        return r | {"ceiling_share": None, "above_ceiling": False, "ceiling_note": ""}
    share, note = r["images_per_s"] / top, "above the estimated ceiling (judged when collected)"
    r.update(ceiling_share=share, above_ceiling=share > 1, ceiling_note=note if share > 1 else "")
    return r
