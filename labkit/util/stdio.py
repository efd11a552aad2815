"""What native code writes to this process's standard output or error, captured; log notes hushed."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Iterator

__all__ = ["native_output", "quiet_logs"]


#: the C runtime, whose stdio buffers (C++ iostreams sync with them) are flushed around a capture
LIBC = ctypes.CDLL(None)


def native_output(fn: Callable[[], object], fd: int = 1) -> tuple[object, str]:
    """``(fn's result, what was written to descriptor fd)`` (1: stdout, 2: stderr): native
    output a kernel would show late, out of order, or stall on when it floods."""
    if fd not in (1, 2):
        raise ValueError(f"fd must be 1 (standard output) or 2 (standard error), got {fd!r}")
    stream = sys.stdout if fd == 1 else sys.stderr
    stream.flush()
    LIBC.fflush(None)
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(fd)
        os.dup2(tmp.fileno(), fd)
        try:
            result = fn()
        finally:
            stream.flush()
            LIBC.fflush(None)
            os.dup2(saved, fd)
            os.close(saved)
        tmp.seek(0)
        return result, tmp.read().decode(errors="replace")


@contextlib.contextmanager
def quiet_logs(level: int = logging.WARNING) -> Iterator[None]:
    """Every logger silent at ``level`` and below while the block runs (an exporter's or a
    compiler's notes); the caller's own ``logging.disable`` setting is put back after."""
    before = logging.root.manager.disable
    logging.disable(max(level, before))
    try:
        yield
    finally:
        logging.disable(before)
