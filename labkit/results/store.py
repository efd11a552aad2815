"""Results files: JSON Lines read strictly (:func:`load`, :func:`parse_lines`) and appended
under a lock (:func:`append`); a truncated last line is skipped on reading and set aside on the
next append."""

from __future__ import annotations

import json
import mmap
import os
import warnings
from collections import Counter
from pathlib import Path

from ..frameworks import NAMES
from ..util import jsonio
from .schema import MESSAGES, SCHEMA_VERSION, Record, newer_schema, problems, validate

__all__ = ["BadLine", "UnregisteredFramework", "append", "load", "parse_lines"]


class BadLine(ValueError):
    """A line of a JSON Lines text that is not JSON (and not an interrupted last write)."""

    def __init__(self, line: int, msg: str):
        super().__init__(f"line {line} is not JSON ({msg})")
        self.line, self.msg = line, msg


class UnregisteredFramework(UserWarning):
    """Records of a framework this labkit does not register: kept, compared with nothing."""


def parse_lines(text: str) -> tuple[list[tuple[int, object]], int | None]:
    """``(line number, value)`` of every non-blank line, and the number of a truncated last line
    (no newline after it and not JSON: left out), else None. :class:`BadLine` for any other line
    that is not JSON (NaN, an infinity and deep nesting included: :func:`labkit.util.jsonio.loads`)."""
    lines = text.split("\n")
    parsed: list[tuple[int, object]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            parsed.append((n, jsonio.loads(line)))
        except jsonio.JSONError as exc:
            if exc.syntax and n == len(lines) and not text.endswith("\n"):
                return parsed, n
            raise BadLine(n, exc.msg) from None
    return parsed, None


def load(path: str | os.PathLike) -> list[Record]:
    """All records of a results file, validated, older ones upgraded in memory.

    ``ValueError`` naming the file, the line and the fix for anything that is not a record; a
    truncated last line (an interrupted write) is skipped with a ``UserWarning``."""
    path = Path(path)
    try:
        parsed, truncated = parse_lines(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ValueError(MESSAGES["unreadable"].format(path=path, why=exc.strerror or exc)) from exc
    except UnicodeDecodeError as exc:
        raise ValueError(MESSAGES["not_utf8"].format(path=path, why=exc.reason)) from exc
    except BadLine as exc:
        raise ValueError(
            MESSAGES["not_json"].format(path=path, line=exc.line, why=exc.msg)
        ) from exc
    if truncated:
        text = MESSAGES["truncated"].format(path=path, line=truncated, kept=len(parsed))
        warnings.warn(text, UserWarning, stacklevel=2)
    records = [_checked(path, n, record) for n, record in parsed]
    _warn_unregistered(path, parsed)
    return records


def _checked(path: Path, n: int, record: object) -> Record:
    if (schema := newer_schema(record)) is not None:
        text = MESSAGES["newer"].format(path=path, line=n, schema=schema, ours=SCHEMA_VERSION)
        raise ValueError(text)
    if found := problems(record):
        raise ValueError(
            MESSAGES["not_a_record"].format(path=path, line=n, why="; ".join(found[:4]))
        )
    return Record.from_json(record)


def _warn_unregistered(path: Path, parsed: list[tuple[int, object]]) -> None:
    unknown = Counter(r["framework"] for _, r in parsed if r["framework"] not in NAMES)
    for fw, count in unknown.items():
        line = next(n for n, r in parsed if r["framework"] == fw)
        text = MESSAGES["unregistered"].format(
            path=path, line=line, framework=fw, count=count, known=", ".join(NAMES)
        )
        warnings.warn(UnregisteredFramework(text), stacklevel=3)


def repair_tail(path: str | os.PathLike) -> bytes:
    """Move a truncated last line (the bytes after the last newline) out of ``path`` to
    ``path + '.partial'``, found from the end of the mapped file; returns the bytes moved (b'':
    none). The file exists: :func:`append` opened it."""
    if not (size := os.path.getsize(path)):
        return b""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as whole:
        tail = whole[whole.rfind(b"\n") + 1 :]
    if tail:
        with open(f"{os.fspath(path)}.partial", "ab") as partial:
            partial.write(tail + b"\n")
        os.truncate(path, size - len(tail))
    return tail


def append(path: str | os.PathLike, record: Record | dict) -> None:
    """Validate ``record`` and append it as one fsynced line, under an exclusive lock (two
    processes appending to one file lose nothing); ``OSError`` when it cannot be written."""
    line = json.dumps(dict(validate(record)), sort_keys=True, allow_nan=False) + "\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with jsonio.locked(path) as f:
        repair_tail(path)
        jsonio.write_all(f, line.encode("utf-8"))
