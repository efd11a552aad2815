"""What native code writes to this process's standard output or error, captured.

Not for: Python's own streams in a notebook kernel (``contextlib.redirect_stdout`` is the tool
there), nor the output of other processes. Imports nothing of labkit.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from collections.abc import Callable

__all__ = ["native_output"]


def flush_c_stdio() -> None:
    """Flush the C runtime's stdio buffers (C++ iostreams sync with them); nothing where no C
    runtime is reachable this way (Windows)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):
        pass


def native_output(fn: Callable[[], object], fd: int = 1) -> tuple[object, str]:
    """Run ``fn`` with file descriptor ``fd`` (1: stdout, 2: stderr) sent to a temporary file.

    Returns ``(result, text written to fd)``. For output that native code writes straight to the
    process's descriptors: a notebook kernel forwards it to the cell late and out of order, and a
    flood of it (hundreds of KB of C++ logging) can even stall the kernel, whose pipe fills up.
    Python's own ``print`` is captured too where ``sys.stdout`` writes to descriptor 1 (a script,
    a terminal), not in a Jupyter kernel, whose ``sys.stdout`` is a separate stream.
    """
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
