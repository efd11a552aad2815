"""Exec a command that gets SIGTERM when the process that launched it dies (Linux).

``python -I die_with_parent.py PARENT_PID COMMAND [ARG...]`` arms the parent-death signal
(``prctl(PR_SET_PDEATHSIG)``), checks that its parent is still ``PARENT_PID``, then ``exec``s the
command (same pid; the setting survives). Not ``subprocess``'s ``preexec_fn``: Python between fork
and exec can deadlock in a process with threads, such as a Jupyter kernel. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

__all__ = ["PARENT_GONE", "PR_SET_PDEATHSIG", "main"]

PR_SET_PDEATHSIG = 1
PARENT_GONE = 3


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: die_with_parent.py PARENT_PID COMMAND [ARG...]", file=sys.stderr)
        return 2
    parent = int(argv[0])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
        print(f"die_with_parent: prctl failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 4
    if os.getppid() != parent:  # the launcher died before the signal was armed
        print(f"die_with_parent: launcher {parent} gone; not starting {argv[1]}", file=sys.stderr)
        return PARENT_GONE
    os.execvp(argv[1], argv[1:])
    return 0  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
