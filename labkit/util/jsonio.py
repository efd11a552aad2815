"""JSON files several processes share, and JSON text that may be hostile: strict :func:`loads`,
appends under a lock (:func:`locked`, :func:`write_all`, :func:`unwritable`), :func:`write_atomic`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "JSONError",
    "loads",
    "locked",
    "unwritable",
    "write_all",
    "write_atomic",
]

#: the deepest nesting of arrays and objects accepted (a labkit card or record needs about 6)
MAX_DEPTH = 64
#: the free space a file about to be appended to must have on its disk (a record is a few KiB)
MIN_FREE_BYTES = 1 << 20


class JSONError(ValueError):
    """Text that is not JSON labkit accepts; ``msg`` says why, ``syntax`` whether it is a plain
    syntax error (what an interrupted write leaves) rather than refused content."""

    def __init__(self, msg: str, syntax: bool = False, lineno: int = 0, colno: int = 0):
        super().__init__(msg)
        self.msg, self.syntax, self.lineno, self.colno = msg, syntax, lineno, colno


def depth(value: object) -> int:
    """How deeply the lists and dicts of ``value`` (parsed JSON) nest."""
    if isinstance(value, dict):
        value = list(value.values())
    return 1 + max(map(depth, value), default=0) if isinstance(value, list) else 0


def _refuse_constant(name: str) -> float:
    raise JSONError(f"{name} is not a number labkit accepts (NaN and infinities are refused)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONError(f"{text} is too large for a number (it reads as infinity)")
    return value


def _int64(text: str) -> int:
    value = int(text)
    if abs(value) >= 2**63:
        raise JSONError(f"{text[:20]}... is too large for a number (more than 64 bits)")
    return value


def loads(text: str, max_depth: int = MAX_DEPTH) -> object:
    """``json.loads(text)``, refusing NaN, infinities, integers beyond 64 bits and nesting deeper
    than ``max_depth`` with a :class:`JSONError` that says why."""
    try:
        value = json.loads(
            text, parse_constant=_refuse_constant, parse_float=_finite, parse_int=_int64
        )
        too_deep = depth(value) > max_depth
    except json.JSONDecodeError as exc:
        raise JSONError(exc.msg, syntax=True, lineno=exc.lineno, colno=exc.colno) from None
    except RecursionError:  # deeper than Python's recursion limit (about 1,000 levels)
        too_deep = True
    except ValueError as exc:  # a refusal above, or an integer of more digits than Python reads
        raise JSONError(str(exc)) from None
    if too_deep:
        raise JSONError(f"nested deeper than {max_depth} levels")
    return value


@contextlib.contextmanager
def locked(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """``path`` opened unbuffered for appending, under an exclusive ``flock`` until the block
    ends (a process that dies holding it releases it)."""
    with open(path, "ab", buffering=0) as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield f
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def write_all(f: BinaryIO, data: bytes) -> None:
    """Write all of ``data`` to the unbuffered file ``f`` (a short write is continued), then
    fsync, so that it survives a crash. ``OSError`` (a full disk) may leave part of it written."""
    view = memoryview(data)
    while view:
        view = view[f.write(view) :]
    os.fsync(f.fileno())


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Replace ``path`` with ``data`` (text as UTF-8) in one step: a temporary file beside it,
    renamed over it, so no reader sees a part of it. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def unwritable(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be appended to (no folder, not a file, a full disk), or None; makes
    the missing folders and leaves no file behind."""
    path = Path(path)
    if path.is_dir():
        return "it is a folder, not a file"
    folder = next((f for f in path.parents if f.exists()), None)
    if folder is not None and not folder.is_dir():
        return f"{folder} is a file, not a folder"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # appending to the file, or else making a nameless one beside it, leaves nothing behind
        with open(path, "ab") if path.exists() else tempfile.TemporaryFile(dir=path.parent):
            pass
        disk = os.statvfs(path.parent)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
        return f"{exc.strerror or exc}{where}"
    free = disk.f_bavail * disk.f_frsize
    if free < MIN_FREE_BYTES:
        return f"its disk is full ({free // 1024} KiB free)"
    return None
