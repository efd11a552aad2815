"""What native code writes to this process's standard output or error, captured."""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from collections.abc import Callable

__all__ = ["native_output"]


def flush_c_stdio() -> None:
    """Flush the C runtime's stdio buffers (C++ iostreams sync with them)."""
    ctypes.CDLL(None).fflush(None)


def native_output(fn: Callable[[], object], fd: int = 1) -> tuple[object, str]:
    """``(fn's result, what was written to descriptor fd)`` (1: stdout, 2: stderr): native
    output a kernel would show late, out of order, or stall on when it floods."""
    if fd not in (1, 2):
        raise ValueError(f"fd must be 1 (standard output) or 2 (standard error), got {fd!r}")
    stream = sys.stdout if fd == 1 else sys.stderr
    stream.flush()
    flush_c_stdio()
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(fd)
        os.dup2(tmp.fileno(), fd)
        try:
            result = fn()
        finally:
            stream.flush()
            flush_c_stdio()
            os.dup2(saved, fd)
            os.close(saved)
        tmp.seek(0)
        return result, tmp.read().decode(errors="replace")
