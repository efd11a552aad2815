"""Child processes: their environment (:func:`child_env`), stopping them with all they started,
and why they ended.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

__all__ = [
    "ROOT",
    "THREAD_ENV",
    "child_env",
    "crash_reason",
    "ended",
    "exit_with_parent",
    "kill_group",
    "last_lines",
    "stop_processes",
    "tail",
]

#: the folder that holds the ``labkit`` package: first on every child's ``PYTHONPATH``, so that
#: the child imports this labkit (a source checkout, or the installed one)
ROOT = Path(__file__).resolve().parents[2]
#: environment variables that size the intra-op thread pools of every framework's math libraries
THREAD_ENV = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "TF_NUM_INTRAOP_THREADS",
)
#: the exit status of a process that :func:`exit_with_parent` ended
PARENT_GONE = 3


def child_env(
    threads: int | None,
    *,
    path: Sequence[str | os.PathLike] = (),
    extra: Mapping[str, str] | None = None,
    drop: Collection[str] = (),
) -> dict[str, str]:
    """The environment of a Python child that runs labkit code: this one's without ``drop``,
    ``PYTHONPATH`` starting with :data:`ROOT` then ``path``, protobuf's Python implementation,
    the lab's thread policy (``threads`` intra-op in every math library, TensorFlow one inter-op;
    ``threads=None``: the frameworks' defaults), then ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    entries = [str(ROOT), *map(str, path), *env.get("PYTHONPATH", "").split(os.pathsep)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(e for e in entries if e))
    env["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"
    if threads is not None:
        env.update(dict.fromkeys(THREAD_ENV, str(threads)), TF_NUM_INTEROP_THREADS="1")
    env.update(extra or {})
    return env


def kill_group(proc: subprocess.Popen, wait_s: float = 10.0) -> None:
    """SIGKILL the process group that ``proc`` leads (started with ``start_new_session=True``),
    so that what it started goes too, and reap ``proc``. A group already gone is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait_s)


def stop_processes(processes: Sequence, grace_s: float = 3.0) -> None:
    """End ``processes`` (``psutil.Process`` objects): SIGTERM each one (and the whole group of
    one that leads a group), then SIGKILL what still runs ``grace_s`` seconds later."""
    import psutil

    live = list(processes)
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        for p in live:
            with contextlib.suppress(ProcessLookupError, PermissionError, psutil.Error):
                if os.getpgid(p.pid) == p.pid:  # a session/group leader: its whole group
                    os.killpg(p.pid, sig)
                p.send_signal(sig)
        _gone, live = psutil.wait_procs(live, timeout=wait)
        if not live:
            return


def exit_with_parent(parent: int, *, remove: str | os.PathLike | None = None) -> None:
    """End this process, its group and ``remove`` (a folder) when ``parent`` dies (even by
    SIGKILL), exiting with :data:`PARENT_GONE`; a daemon thread watches, twice a second."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        if remove is not None:
            shutil.rmtree(remove, ignore_errors=True)
        if os.getpgrp() == os.getpid():
            with contextlib.suppress(OSError):
                os.killpg(os.getpid(), signal.SIGKILL)
        os._exit(PARENT_GONE)

    threading.Thread(target=watch, daemon=True, name="labkit-parent-watch").start()


def ended(code: int) -> str:
    """How a process with exit status ``code`` ended: ``killed by SIGSEGV`` (``killed by signal
    77`` for a signal without a name), ``exited with status 1``."""
    if code >= 0:
        return f"exited with status {code}"
    with contextlib.suppress(ValueError):
        return f"killed by {signal.Signals(-code).name}"
    return f"killed by signal {-code}"


def crash_reason(code: int, log: str, what: str = "the process", fix: str = "") -> str:
    """Why ``what`` died without a result (out of memory, a crash, an exit status), from its
    exit status and the end of its output; ``fix`` follows the memory cases."""
    fix = f"; {fix}" if fix else ""
    if "MemoryError" in log or "std::bad_alloc" in log or "out of memory" in log.lower():
        return f"out of memory: {what} died (exit status {code}) running out of memory{fix}"
    if code == -signal.SIGKILL:
        return (
            "killed by SIGKILL: most likely the out-of-memory killer (the machine ran out "
            f"of memory){fix}"
        )
    if code < 0:
        return f"{what} crashed ({ended(code)})"
    return f"{what} exited with status {code} without a result"


def tail(path: str | os.PathLike, chars: int = 2000) -> str:
    """The last ``chars`` bytes of the file ``path`` as text ("" when it cannot be read)."""
    with contextlib.suppress(OSError):
        data = Path(path).read_bytes()[-chars:]
        return data.decode("utf-8", errors="replace")
    return ""


def last_lines(text: str, count: int) -> list[str]:
    """The last ``count`` lines of ``text`` that are not blank."""
    return [ln for ln in text.splitlines() if ln.strip()][-count:] if count > 0 else []
