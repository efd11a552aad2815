"""Results files: JSON Lines read strictly and appended under a lock.

:func:`load` reads a results file (every line validated, schema-1 records upgraded, a truncated
last line skipped with a warning, a framework that is not registered kept with a warning);
:func:`parse_lines` is the JSON Lines reader it shares with the class collector;
:func:`append` writes one record, fsynced, under an exclusive lock, first setting aside a
truncated tail (:func:`repair_tail`).
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

from ..frameworks import NAMES
from ..util import jsonio
from .schema import SCHEMA_VERSION, newer_schema, problems, upgrade, validate

__all__ = [
    "BadLine",
    "UnregisteredFramework",
    "append",
    "load",
    "parse_lines",
]

_BENCH_FIX = "python -m labkit bench --resume --out {path}"


class BadLine(ValueError):
    """A line of a JSON Lines text that is not JSON (and not an interrupted last write)."""

    def __init__(self, line: int, msg: str):
        super().__init__(f"line {line} is not JSON ({msg})")
        self.line, self.msg = line, msg


def parse_lines(text: str) -> tuple[list[tuple[int, object]], int | None]:
    """JSON Lines: ``(line number, value)`` of every non-blank line, and the number of a
    truncated last line (no newline after it and not JSON: a write that was interrupted),
    which is left out, else None. Raises :class:`BadLine` for any other line that is not JSON,
    and for a line that holds NaN or an infinity or nests deeper than
    :data:`labkit.util.jsonio.MAX_DEPTH` (read by :func:`labkit.util.jsonio.loads`: never a
    ``RecursionError``)."""
    lines = text.split("\n")
    complete = text.endswith("\n")
    parsed: list[tuple[int, object]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            parsed.append((n, jsonio.loads(line)))
        except jsonio.JSONError as exc:
            if exc.syntax and n == len(lines) and not complete:
                return parsed, n
            raise BadLine(n, exc.msg) from None
    return parsed, None


def load(path: str | os.PathLike) -> list[dict]:
    """All records of a results file, validated; schema-1 records are upgraded in memory
    (:func:`~labkit.results.schema.upgrade`; the file is not changed).

    Raises ``ValueError`` (naming the file, the line and the fix) for a missing or unreadable
    file, a corrupt line or a record that breaks the schema. A truncated last line (an
    interrupted write) is skipped with a ``UserWarning`` instead.
    """
    path = Path(path)
    try:
        parsed, truncated = parse_lines(_read_text(path))
    except BadLine as exc:
        raise ValueError(
            f"{path} line {exc.line} is not valid JSON ({exc.msg}): not a labkit "
            f"results file, or a damaged one; fix: give a file written by "
            f"`python -m labkit bench`, or delete or repair that line (the "
            f"other lines are intact)"
        ) from exc
    if truncated:
        warnings.warn(
            f"{path} line {truncated} is truncated (an interrupted write) and was "
            f"skipped; the {len(parsed)} complete records are kept; "
            f"`{_BENCH_FIX.format(path=path)}` measures that cell again",
            UserWarning,
            stacklevel=2,
        )
    records = [_checked(path, n, record) for n, record in parsed]
    _warn_unregistered(path, parsed)
    return records


def _read_text(path: Path) -> str:
    """The text of a results file; ``ValueError`` with the fix when it cannot be read or is not
    UTF-8."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(
            f"cannot read results file {path}: {exc.strerror or exc}; fix: give "
            f"the path of a file written by `python -m labkit bench --out "
            f"FILE.jsonl`"
        ) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not a labkit results file (not UTF-8 text: {exc.reason}); "
            f"fix: give a .jsonl file written by `python -m labkit bench`"
        ) from exc


def _checked(path: Path, n: int, record: object) -> dict:
    """Line ``n``'s record in today's shape, or ``ValueError`` naming the line and the fix."""
    _refuse_newer(path, n, record)
    found = problems(record)
    if found:
        raise ValueError(
            f"{path} line {n} is not a labkit benchmark record: "
            f"{'; '.join(found[:4])}; fix: give a file written by "
            f"`python -m labkit bench`, or delete that line"
        )
    return upgrade(record)


class UnregisteredFramework(UserWarning):
    """A results file holds records of a framework this labkit does not register: they are kept
    (shown in tables, compared with nothing), and the warning names it."""


def _refuse_newer(path: Path, n: int, record: object) -> None:
    schema = newer_schema(record)
    if schema is not None:
        raise ValueError(
            f"{path} line {n} was written by a newer labkit (results schema {schema}; this "
            f"labkit reads schemas 1 to {SCHEMA_VERSION}); fix: upgrade labkit (pip install -U "
            f"labkit, or git pull in the course folder) and read the file again"
        )


def _warn_unregistered(path: Path, parsed: list[tuple[int, object]]) -> None:
    first: dict[str, tuple[int, int]] = {}  # framework -> (first line, records)
    for n, r in parsed:
        fw = r["framework"]
        if fw not in NAMES:
            line, count = first.get(fw, (n, 0))
            first[fw] = (line, count + 1)
    for fw, (line, count) in first.items():
        warnings.warn(
            UnregisteredFramework(
                f"{path} line {line}: framework {fw!r} ({count} record(s)) is not registered "
                f"in this labkit (it knows {', '.join(NAMES)}); its records are kept and shown, "
                f"but compared with no baseline"
            ),
            stacklevel=3,
        )


def truncated_tail(path: str | os.PathLike) -> bytes:
    """The bytes after the last newline of ``path`` (a write that was interrupted), or b''.

    Reads from the end (a file that ends cleanly costs one byte), so appending stays cheap
    however long the file grows."""
    if not os.path.exists(path):
        return b""
    with open(path, "rb") as f:
        pos, step, tail = f.seek(0, os.SEEK_END), 1, b""
        while pos > 0:
            step = min(step, pos)
            pos = f.seek(pos - step)
            block = f.read(step)
            newline = block.rfind(b"\n")
            if newline >= 0:
                return block[newline + 1 :] + tail
            tail, step = block + tail, 1 << 16
        return tail


def repair_tail(path: str | os.PathLike) -> bytes:
    """Move a truncated last line out of ``path`` (to ``path + '.partial'``): appends stay valid.

    Returns the bytes moved (b'' when the file ends cleanly). Nothing that parses is touched.
    """
    tail = truncated_tail(path)
    if tail:
        with open(f"{os.fspath(path)}.partial", "ab") as f:
            f.write(tail + b"\n")
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - len(tail))
    return tail


def append(path: str | os.PathLike, record: dict) -> None:
    """Validate ``record`` and append it as one line, fsynced (survives a crash).

    One writer at a time: the repair of a truncated tail (:func:`repair_tail`) and the write
    happen under an exclusive lock on the file (:func:`labkit.util.jsonio.locked`), so two processes
    appending to one file (a notebook and a terminal) lose nothing and interleave no lines.
    ``OSError`` when the file cannot be written (a full disk may leave part of the line, which
    the next append moves to ``.partial``)."""
    line = json.dumps(validate(record), sort_keys=True, allow_nan=False) + "\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with jsonio.locked(path) as f:
        repair_tail(path)
        jsonio.write_all(f, line.encode("utf-8"))
