"""Start a data-parallel job on this machine, on loopback only, and stop every process with it:
the learner's scripts (``notebooks/distributed/``) started as each framework's launcher does;
every process, descendant and process-group member is tracked with the sockets it listens on,
and stopped (SIGTERM, then SIGKILL) however the job ends. Names no framework, imports none."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..frameworks import launch_module, specs
from ..util import net, proc
from ..util.proc import stop_processes

__all__ = [
    "HOST",
    "DistributedError",
    "PortInUse",
    "Run",
    "cluster_commands",
    "launch",
    "pick_ports",
    "still_running",
]

HOST = net.LOOPBACK
#: Linux: every process started gets SIGTERM when this one dies, even by SIGKILL
_WRAPPER = Path(__file__).with_name("die_with_parent.py") if sys.platform == "linux" else None
PortInUse = net.PortInUse


class DistributedError(RuntimeError):
    """A job that failed or ran out of time: every one of its processes has been stopped."""


def pick_ports(count: int, base: int | None = None) -> list[int]:
    """``count`` consecutive ports free on every address, from ``base`` (None: the OS picks)."""
    if base is None:
        for _ in range(50):
            try:
                return pick_ports(count, net.free_port())
            except (PortInUse, ValueError):
                continue
        raise DistributedError(f"no {count} consecutive free ports found on this machine")
    try:
        return [net.check_port(base + i) for i in range(count)]
    except PortInUse as exc:
        raise PortInUse(f"{exc}; choose another port, or port=None for a free one") from None


class ProcessTree:
    """Every process we started and every descendant seen since; :meth:`stop` ends them all."""

    def __init__(self):
        import psutil

        self._psutil = psutil
        self.roots: list[subprocess.Popen] = []
        self.seen: dict[int, psutil.Process] = {}
        self.listening: dict[tuple[str, int], str] = {}  # (address, port) -> "pid N (program)"

    def start(self, cmd: list[str], env: dict[str, str], log, cwd: Path) -> subprocess.Popen:
        """Start ``cmd`` in its own session, output to ``log``, dying with this process."""
        if _WRAPPER:
            cmd = [sys.executable, "-I", str(_WRAPPER), str(os.getpid()), *cmd]
        self.roots.append(
            subprocess.Popen(
                cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=cwd,
            )
        )  # fmt: skip
        self.refresh()
        return self.roots[-1]

    def refresh(self) -> None:
        """Record the current descendants and the sockets they listen on."""
        psutil = self._psutil
        for root in self.roots:
            if root.poll() is not None:  # reaped: its pid may belong to someone else by now
                continue
            try:
                p = psutil.Process(root.pid)
                for q in [p, *p.children(recursive=True)]:
                    self.seen.setdefault(q.pid, q)
            except psutil.Error:
                continue
        groups = {root.pid for root in self.roots}  # a grandchild whose parent exited: its group
        for q in psutil.process_iter():
            try:
                if os.getpgid(q.pid) in groups:
                    self.seen.setdefault(q.pid, q)
            except (OSError, psutil.Error):
                continue
        for p in self.alive():
            try:
                for s in p.net_connections(kind="inet"):
                    if s.status == psutil.CONN_LISTEN:
                        who = f"pid {p.pid} ({' '.join(p.cmdline()[1:3])})"
                        self.listening.setdefault((s.laddr.ip, s.laddr.port), who)
            except psutil.Error:
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

    def wait(self, start: float, timeout: float, poll_s: float = 0.2) -> str | None:
        """Watch the roots until they end: None when all exited 0, else what went wrong."""
        while True:
            self.refresh()
            codes = [p.poll() for p in self.roots]
            bad = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
            if bad:
                return f"process {bad[0][0]} exited with code {bad[0][1]}"
            if all(c == 0 for c in codes):
                return None
            if time.perf_counter() - start > timeout:
                return f"ran past its timeout of {timeout:.0f} s"
            time.sleep(poll_s)

    def stop(self, grace_s: float = 3.0) -> int:
        """SIGTERM every live process, SIGKILL what is left after ``grace_s``; reap the roots.
        Returns how many were still running."""
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


@dataclass
class Run:
    """A finished job: its commands, what each worker wrote, every process and listener seen."""

    commands: list[tuple[list[str], dict[str, str]]]
    out_dir: Path
    workers: list[dict]
    pids: list[int]
    listening: dict[tuple[str, int], str] = field(default_factory=dict)  # (ip, port) -> who
    wall_s: float = 0.0

    def weights(self, rank: int) -> dict:
        import numpy as np

        with np.load(self.out_dir / f"rank{rank}.npz") as f:
            return {k: f[k] for k in f.files}

    def max_difference_between_workers(self) -> float:
        """The largest |w(rank r) - w(rank 0)| over every weight the workers saved."""
        first = self.weights(0)
        return max(
            float(abs(w[k] - first[k]).max())
            for r in range(1, len(self.workers))
            for w in [self.weights(r)]
            for k in first
        )

    def shell(self) -> list[str]:
        """The commands as one would type them (environment first, ``python`` for this one)."""
        return [
            " ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), shlex.join(cmd)]).replace(
                sys.executable, "python"
            )
            for cmd, env in self.commands
        ]


def _environment(framework: str, threads: int) -> dict[str, str]:
    """Ours without launchers' cluster variables, the lab's threads, this interpreter first."""
    cluster = [k for s in specs() if s.launcher for k in launch_module(s.name).CLUSTER_VARIABLES]
    bin_dir = str(Path(sys.executable).parent)
    extra = {"PYTHONUNBUFFERED": "1", "PATH": os.pathsep.join([bin_dir, os.environ["PATH"]])}
    return proc.child_env(
        threads, drop=cluster, extra={**extra, **launch_module(framework).ENVIRONMENT}
    )


def launch(
    framework: str,
    script: str | Path,
    args: Sequence[str] = (),
    *,
    out_dir: str | Path,
    workers: int = 2,
    port: int | None = None,
    timeout: float = 300.0,
) -> Run:
    """Run ``workers`` copies of ``script`` (given ``--out OUT_DIR`` and ``args``) with
    ``framework``'s launcher, all on 127.0.0.1. A port in use raises :class:`PortInUse` first; a
    failure or a run past ``timeout`` s stops the job: :class:`DistributedError`, log's end."""
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    if not Path(script).is_file():
        raise FileNotFoundError(f"no worker script {script}: give the path of a .py file")
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("rank*.*"):
        old.unlink()
    launcher = launch_module(framework)
    ports = pick_ports(launcher.ports_needed(workers), port)
    full_args = [str(Path(script).resolve()), "--out", str(out), *args]
    commands = launcher.local_commands(workers, ports, full_args, out, HOST)
    env = _environment(framework, max(1, (os.cpu_count() or 1) // workers))
    scratch = out / "tmp"  # the job's temp files (torchelastic's folders...), removed with it
    scratch.mkdir(exist_ok=True)
    env["TMPDIR"] = str(scratch)
    tree, start = ProcessTree(), time.perf_counter()
    logs = [out / f"launcher{i}.log" for i in range(len(commands))]
    try:
        for (cmd, extra), log in zip(commands, logs):
            with open(log, "wb") as f:
                tree.start(cmd, {**env, **extra}, f, out)
        failure = tree.wait(start, timeout)
    finally:
        tree.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    if failure:
        text = [(g, g.read_text(errors="replace").splitlines()) for g in logs]
        tails = [
            f"{g}:\n" + "\n".join([x for x in t if "Error" in x][-3:] + t[-6:]) for g, t in text
        ]
        raise DistributedError(
            f"{framework} job: {failure}; every process stopped.\n" + "\n".join(tails)
        )
    results = sorted(out.glob("rank*.json"), key=lambda p: int(p.stem[4:]))
    found = [json.loads(p.read_text()) for p in results]
    if len(found) != workers:
        raise DistributedError(f"{len(found)} of {workers} workers wrote results into {out}")
    return Run(commands, out, found, tree.pids, tree.listening, time.perf_counter() - start)


def cluster_commands(
    framework: str, script: str, hosts: Sequence[str], workers: int = 2, port: int = 29500
) -> list[tuple[str, str]]:
    """``(host, command)`` to type on each of ``hosts`` (the first coordinates)."""
    if not hosts:
        raise ValueError("give at least one host name or address")
    args = [script, "--out", "results"]
    return launch_module(framework).cluster_commands(workers, hosts, port, args, "results")


def still_running(pids: Sequence[int]) -> list[int]:
    """Those of ``pids`` that still run (zombies count as gone)."""
    import psutil

    def running(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    return [pid for pid in pids if running(pid)]
