"""The processes of a job: start them, watch them, stop every one of them.

The launcher tracks every process it started and all their descendants (a launcher may put
each worker in its own session, so killing a process group is not enough) and stops them all
(SIGTERM, then SIGKILL) when the job ends: on a worker failure, a timeout, a
``KeyboardInterrupt``, and on success too (a worker may leave a helper process behind).

On Linux each started process also gets SIGTERM when the launching process dies, even by
SIGKILL: it is started through :mod:`labkit.distributed.die_with_parent`, which arms the
parent-death signal and then execs the command (launchers pass a SIGTERM on to their workers).
The signal follows the *thread* that started the process: call :func:`labkit.distributed.launch`
from a thread that outlives the job (a notebook's main thread does). Elsewhere the workers'
watchdogs (:func:`labkit.frameworks._kit.worker.start_watchdog`) still apply.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..util.proc import stop_processes

__all__ = [
    "DIES_WITH_PARENT",
    "ProcessTree",
    "dying_with_parent",
    "program",
    "still_running",
    "wait",
]

#: True where started processes die with their launcher (the parent-death signal: Linux)
DIES_WITH_PARENT = sys.platform.startswith("linux")
_WRAPPER = Path(__file__).with_name("die_with_parent.py")


def dying_with_parent(cmd: list[str]) -> list[str]:
    """``cmd`` started through the wrapper that ties it to this process (Linux; else ``cmd``)."""
    if not DIES_WITH_PARENT:
        return list(cmd)
    return [sys.executable, "-I", str(_WRAPPER), str(os.getpid()), *cmd]


class ProcessTree:
    """Every process we started and every descendant seen since; :meth:`stop` ends them all."""

    def __init__(self):
        import psutil

        self._psutil = psutil
        self.roots: list[subprocess.Popen] = []
        self.seen: dict[int, psutil.Process] = {}

    def start(self, cmd: list[str], env: dict[str, str], log, cwd: Path) -> subprocess.Popen:
        """Start ``cmd`` in its own session, output to ``log``, dying with this process."""
        proc = subprocess.Popen(
            dying_with_parent(cmd),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd,
        )
        self.roots.append(proc)
        self.refresh()
        return proc

    def refresh(self) -> None:
        """Record the current descendants (a worker whose parent died is still known by pid)."""
        for root in self.roots:
            if root.poll() is not None:  # reaped: its pid may belong to someone else by now
                continue
            try:
                p = self._psutil.Process(root.pid)
                self.seen.setdefault(p.pid, p)
                for child in p.children(recursive=True):
                    self.seen.setdefault(child.pid, child)
            except self._psutil.Error:
                continue

    def alive(self) -> list:
        """The processes seen that still run (zombies count as gone)."""
        out = []
        for p in self.seen.values():
            try:  # is_running() also notices a pid that now belongs to another process
                if p.is_running() and p.status() != self._psutil.STATUS_ZOMBIE:
                    out.append(p)
            except self._psutil.Error:
                continue
        return out

    def stop(self, grace_s: float = 3.0) -> int:
        """SIGTERM every live process (and its session's group), SIGKILL what is left after
        ``grace_s``; reap the roots. Returns how many processes were still running (0 when
        everything had already exited)."""
        self.refresh()
        live = self.alive()
        stop_processes(live, grace_s)
        for root in self.roots:
            try:
                root.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL did not take
                pass
        return len(live)

    @property
    def pids(self) -> list[int]:
        return sorted(self.seen)


def still_running(pids: Sequence[int]) -> list[int]:
    """Those of ``pids`` that are still running (zombies, already dead, count as gone)."""
    import psutil

    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def wait(
    tree: ProcessTree,
    start: float,
    timeout: float,
    poll_s: float,
    progress: Callable[[bool], None] | None = None,
) -> str | None:
    """Watch the roots until they end: None when every root exited 0, "timeout", or a
    description of the first failure. ``progress(final)`` is called at every poll."""
    try:
        while True:
            if progress is not None:
                progress(False)
            tree.refresh()
            codes = [p.poll() for p in tree.roots]
            bad = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
            if bad:
                i, code = bad[0]
                return f"process {i} ({program(tree.roots[i])}) exited with code {code}"
            if all(c == 0 for c in codes):
                return None
            if time.perf_counter() - start > timeout:
                return "timeout"
            time.sleep(poll_s)
    finally:
        if progress is not None:
            progress(True)


def program(proc: subprocess.Popen) -> str:
    """What a root process runs: the module after ``-m``, else the program."""
    args = [str(a) for a in proc.args] if isinstance(proc.args, list) else [str(proc.args)]
    return next((args[i + 1] for i in range(len(args) - 1) if args[i] == "-m"), args[0])
