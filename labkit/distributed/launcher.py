"""Launch a job: its commands (from the framework's launch module), its environment, the wait
with a timeout and a progress bar, and the results or a clear error.

The commands come from ``labkit/frameworks/<name>/launch.py`` (found through the registry,
:func:`labkit.frameworks.launch_module`); this module names no framework.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

from ..frameworks import launch_module, specs
from ..util import proc
from .folders import new_output_dir
from .job import CHECKPOINT, HOST, DistributedError, Job, pick_ports
from .processes import ProcessTree, wait
from .runs import Run

__all__ = ["WORKER_FILES", "cluster_commands", "commands", "environment", "launch"]

#: files a worker writes into the job's folder (deleted before a job reuses the folder)
WORKER_FILES = (
    "rank*.json",
    "rank*.npz",
    "rank*.hang",
    "rank*.steps",
    "rank*.straggler",
    "rank*.killed",
    CHECKPOINT,
)


def cluster_commands(
    job: Job,
    hosts: Sequence[str],
    port: int = 29500,
    out_dir: str = "results/distributed",
    deadline_s: float = 86400.0,
) -> list[tuple[str, str]]:
    """Shell commands to run ``job`` on several machines, as ``(host, command)`` pairs to type
    in a terminal on that host; each host runs ``job.workers`` workers and the first host
    coordinates. How many commands a host gets, and which ports they use, is the framework's
    launcher's business (its launch module says). Thread counts are left to each machine's
    framework defaults."""
    if not hosts:
        raise ValueError("give at least one host name or address")
    args = job.worker_args(out_dir, deadline_s, threads=False)
    return launch_module(job.framework).cluster_commands(job.workers, hosts, port, args, out_dir)


def environment(job: Job) -> dict[str, str]:
    """The workers' environment: ours (no cluster variable of any launcher: a stale cluster
    description must not leak in), the lab's thread policy at the job's threads per worker
    (:func:`labkit.util.proc.child_env`), unbuffered output, this interpreter first on ``PATH``
    and the framework's launch settings."""
    cluster = [k for s in specs() if s.launcher for k in launch_module(s.name).CLUSTER_VARIABLES]
    return proc.child_env(
        job.threads_per_worker,
        drop=cluster,
        extra={
            "PYTHONUNBUFFERED": "1",
            # a launcher that calls `python` from PATH gets this interpreter
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
            **launch_module(job.framework).ENVIRONMENT,
        },
    )


def commands(
    job: Job, out_dir: Path, ports: list[int], deadline_s: float
) -> list[tuple[list[str], dict[str, str]]]:
    """(command, extra environment) of each process to start on this machine."""
    args = job.worker_args(out_dir, deadline_s)
    if job.single:  # the reference: one plain process, no launcher
        return [([sys.executable, "-m", job.worker_module, *args], {})]
    restarts = {"restarts": job.max_restarts} if job.max_restarts else {}  # launchers that can
    return launch_module(job.framework).local_commands(
        job.workers, ports, args, out_dir, HOST, **restarts
    )


def launch(
    job: Job,
    *,
    port: int | None = None,
    timeout: float = 300.0,
    out_dir: str | Path | None = None,
    progress: bool = False,
    poll_s: float = 0.1,
) -> Run:
    """Start ``job``'s processes, wait for all of them, and return their results.

    ``port``: the rendezvous port (where the launcher needs several, the first of consecutive
    ports); None picks free ones. A port in use raises :class:`PortInUse` before anything
    starts. A worker that fails, a run longer than ``timeout`` seconds, or a KeyboardInterrupt
    stops every process of the job and raises :class:`DistributedError` (KeyboardInterrupt is
    re-raised); a job that succeeds has its processes stopped too (anything a worker left
    running). ``out_dir`` receives the workers' files; by default a temporary folder that is
    deleted with the returned :class:`Run` (ResNet-50 weights take 100 MB per worker), or at once
    when the job fails. ``progress=True`` shows a progress bar of the workers' training steps.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    needed = 0 if job.single else launch_module(job.framework).ports_needed(job.workers)
    ports = pick_ports(needed, port) if needed else []
    if out_dir is not None:
        out = Path(out_dir).resolve()
        out.mkdir(parents=True, exist_ok=True)
        return _launch(job, out, ports, timeout, progress, poll_s)
    out = new_output_dir(job.framework)
    try:
        run = _launch(job, out, ports, timeout, progress, poll_s)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    weakref.finalize(run, shutil.rmtree, str(out), True)
    return run


def _launch(
    job: Job, out: Path, ports: list[int], timeout: float, progress: bool, poll_s: float
) -> Run:
    for pattern in WORKER_FILES:
        for stale in out.glob(pattern):
            stale.unlink()
    cmds = commands(job, out, ports, deadline_s=timeout + 30)
    env = environment(job)
    log_path = out / "workers.log"
    tree = ProcessTree()
    start = time.perf_counter()
    what = f"{job.framework} job ({job.workers} worker{'s' * (job.workers > 1)})"
    with open(log_path, "w") as log:
        try:
            for cmd, extra in cmds:
                tree.start(cmd, {**env, **extra}, log, cwd=out)  # framework debris lands there too
            failed = wait(
                tree, start, timeout, poll_s, _progress(job, out, what) if progress else None
            )
        except KeyboardInterrupt:
            n = tree.stop()
            print(f"interrupted: stopped the {n} processes of the {what}", file=sys.stderr)
            raise
        finally:  # success too: a process a worker left behind goes with the job
            stopped = tree.stop()
    wall = time.perf_counter() - start
    text = log_path.read_text(errors="replace")
    if failed == "timeout":
        raise DistributedError(
            f"the {what} did not finish within {timeout:.0f} s: stopped all {len(tree.pids)} of "
            f"its processes ({stopped} still running). Raise timeout= if the machine is just "
            f"slow.{_tail(text)}",
            text,
        )
    results = _read_results(out, job.workers)
    errors = [r for r in results if r and "error" in r]
    if failed is not None or errors or len([r for r in results if r]) < job.workers:
        message = _failure_message(what, results, errors, failed, tree, text)
        raise DistributedError(_killed(out) + message, text)
    return Run(job, results, wall, [c for c, _ in cmds], [e for _, e in cmds], out, text, tree.pids)


def _progress(job: Job, out: Path, what: str) -> Callable[[bool], None]:
    """A callback that moves a tqdm bar to the number of steps the workers have reported."""
    from tqdm.auto import tqdm

    bar = tqdm(total=job.workers * job.steps, desc=f"{what}: starting", unit="step", leave=True)

    def update(final: bool) -> None:
        done = min(sum(p.stat().st_size for p in out.glob("rank*.steps")), bar.total)
        if done > bar.n:
            if bar.n == 0:
                bar.set_description_str(f"{what}: training steps", refresh=False)
            bar.update(done - bar.n)
        if final:
            bar.close()

    return update


def _read_results(out: Path, workers: int) -> list[dict | None]:
    results: list[dict | None] = []
    for rank in range(workers):
        path = out / f"rank{rank}.json"
        try:
            results.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            results.append(None)
    return results


def _failure_message(what, results, errors, failed, tree: ProcessTree, text: str) -> str:
    if errors:  # the first to fail is the cause; its peers then fail to reach it
        first, *others = sorted(errors, key=lambda r: r.get("time", 0.0))
        why = f"worker {first['rank']} raised {first['error']}"
        if others:
            why += (
                f" (then worker{'s' * (len(others) > 1)} {', '.join(str(r['rank']) for r in others)} "
                "lost contact and failed too)"
            )
    else:
        missing = [i for i, r in enumerate(results) if not r]
        why = f"worker(s) {missing} wrote no result" + (f"; {failed}" if failed else "")
    detail = _tail(
        errors and min(errors, key=lambda r: r.get("time", 0.0)).get("traceback") or text,
        "its traceback" if errors else "the workers' output",
    )
    return (
        f"the {what} failed: {why}. All {len(tree.pids)} of its processes were stopped "
        f"(pids {tree.pids}).{detail}"
    )


def _killed(out: Path) -> str:
    """What the ``kill`` fault did, first: the cause its peers' errors come from."""
    said = []
    for path in sorted(out.glob("rank*.killed")):
        pid, step = (path.read_text().split() + ["?", "?"])[:2]
        said.append(f"worker {path.stem[4:]} (pid {pid}) was killed with SIGKILL at step {step}")
    return f"{'; '.join(said)} (the kill fault), and no restart was left. " if said else ""


def _tail(text: str, what: str = "the workers' output", lines: int = 8) -> str:
    kept = proc.last_lines(text, lines)
    return (f"\nLast lines of {what}:\n  " + "\n  ".join(kept)) if kept else ""
