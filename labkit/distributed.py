"""Data-parallel training, launched for real: start the workers, watch them, collect their results.

Framework-free (no framework is imported here). A :class:`Job` says what to train; :func:`launch`
starts its worker processes the way each framework expects and waits for them:

- PyTorch: ``torchrun`` (``python -m torch.distributed.run``) starts ``workers`` processes that
  meet at ``127.0.0.1:port`` and run :mod:`labkit.frameworks.torch.distributed` (DDP; gloo on CPU,
  NCCL on GPUs);
- TensorFlow: one plain process per worker, each told the whole cluster and its own index by the
  ``TF_CONFIG`` environment variable, running :mod:`labkit.frameworks.tensorflow.distributed`
  (``MultiWorkerMirroredStrategy``);
- MindSpore: ``msrun`` starts a scheduler and the workers of
  :mod:`labkit.frameworks.mindspore.distributed` (data-parallel mode, MindSpore's own collectives).

Each worker writes ``rank<r>.json`` (losses, step times, the cost of its gradient all-reduce) and
``rank<r>.npz`` (its final weights) into the job's output folder; :class:`Run` reads them back.

Nothing is left behind: the launcher tracks every process it started and all their descendants
(torchrun puts each worker in its own session, so killing a process group is not enough), and on
a worker failure, a timeout or ``KeyboardInterrupt`` it terminates them all (SIGTERM, then
SIGKILL) before raising :class:`DistributedError`. Each worker also runs a watchdog that exits
when its parent disappears or its deadline passes, so even a launcher killed with SIGKILL leaves
no orphan for long.

Command line: ``python -m labkit.distributed --framework torch --workers 2`` (``--help``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import hardware, resnet
from .frameworks import spec, specs

#: the registered frameworks that have a data-parallel launcher
FRAMEWORKS: tuple[str, ...] = tuple(s.name for s in specs() if s.launcher)
#: resnet50: the course's model (BatchNorm: statistics per worker); tiny: a small CNN without
#: BatchNorm, for which data-parallel training equals one process on the concatenated batch
MODELS: tuple[str, ...] = ("resnet50", "tiny")
TINY_CLASSES = 10
#: deliberate worker faults, for demonstrations and tests
FAULTS: tuple[str, ...] = ("crash", "hang")
HOST = "127.0.0.1"
#: the worker module of each framework (run with ``python -m``)
WORKER_MODULES: dict[str, str] = {s.name: s.worker_module for s in specs() if s.launcher}
_REPO = Path(__file__).resolve().parents[1]
#: msrun runs a script file, not a module: this two-line script runs the MindSpore worker module
MINDSPORE_ENTRY = (
    f"import runpy\nrunpy.run_module('{WORKER_MODULES['mindspore']}', "
    "run_name='__main__', alter_sys=True)\n"
)


class DistributedError(RuntimeError):
    """A data-parallel job failed or timed out; the message says which worker, why, and what was
    stopped. ``log`` holds the workers' combined output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class PortInUse(DistributedError, ValueError):
    """The port asked for is taken by another program (nothing was started)."""


# --------------------------------------------------------------------------------------------
# What to run


@dataclass(frozen=True)
class Job:
    """One data-parallel training run: ``workers`` processes, each training on ``batch`` images
    per step (the global batch is ``workers * batch``) for ``steps`` SGD-with-momentum steps.

    ``single=True`` runs one plain process with no distributed runtime at all (the reference).
    ``fault`` exists to show (and test) what happens when a worker goes wrong: ``"crash"`` makes
    worker ``fault_rank`` raise at its first step, ``"hang"`` makes it stop there for good (its
    peers then wait in the all-reduce until the launcher's timeout).
    """

    framework: str
    workers: int = 2
    steps: int = 3
    batch: int = 4
    image_size: int = 32
    model: str = "resnet50"
    threads: int | None = None  # per worker; default: the cores shared out evenly
    seed: int = 0
    lr: float = 0.01  # 0.1 makes randomly initialised ResNet-50 diverge within 3 steps
    momentum: float = 0.9
    measure: int = 2  # repeats of the compute-only and all-reduce-only timings (0: skip)
    single: bool = False
    fault: str | None = None
    fault_rank: int = 1

    def __post_init__(self):
        if self.framework not in FRAMEWORKS:
            raise ValueError(
                f"unknown framework {self.framework!r} for data-parallel training: "
                f"valid choices are {', '.join(FRAMEWORKS)}"
            )
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}: valid choices are {', '.join(MODELS)}")
        for name in ("workers", "steps", "batch"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
        if self.single and self.workers != 1:
            raise ValueError(
                "a single-process job has workers=1 (use Job.reference() to build one)"
            )
        if self.threads is not None and self.threads < 1:
            raise ValueError(
                f"threads must be >= 1 (or None for the cores shared out), got {self.threads}"
            )
        if self.measure < 0:
            raise ValueError(f"measure must be >= 0 repeats, got {self.measure}")
        if self.fault is not None:
            if self.fault not in FAULTS:
                raise ValueError(
                    f"unknown fault {self.fault!r}: valid choices are {', '.join(FAULTS)} (or None)"
                )
            if not 0 <= self.fault_rank < self.workers:
                raise ValueError(
                    f"fault_rank must name a worker, 0..{self.workers - 1}; got {self.fault_rank}"
                )
        resnet.check_image_size(self.image_size)

    @property
    def global_batch(self) -> int:
        return self.workers * self.batch

    @property
    def threads_per_worker(self) -> int:
        return self.threads or max(1, hardware.cores() // self.workers)

    def reference(self, threads: int | None = None) -> Job:
        """The same training in one plain process on the concatenated batch (workers x batch)."""
        return dataclasses.replace(
            self,
            workers=1,
            batch=self.global_batch,
            single=True,
            threads=threads,
            fault=None,
            fault_rank=0,
        )

    def worker_args(
        self, out_dir: Path | str, deadline_s: float, threads: bool = True
    ) -> list[str]:
        """The worker module's command-line arguments (``threads=False``: leave the thread count
        to the framework on the machine that runs the worker)."""
        args = [
            "--out",
            str(out_dir),
            "--model",
            self.model,
            "--steps",
            str(self.steps),
            "--batch",
            str(self.batch),
            "--image-size",
            str(self.image_size),
        ]
        if threads:
            args += ["--threads", str(self.threads_per_worker)]
        args += [
            "--seed",
            str(self.seed),
            "--lr",
            repr(self.lr),
            "--momentum",
            repr(self.momentum),
            "--measure",
            str(self.measure),
            "--deadline",
            f"{deadline_s:.0f}",
        ]
        if self.fault is not None:
            args += ["--fault", self.fault, "--fault-rank", str(self.fault_rank)]
        return args


def worker_source(framework: str) -> Path:
    """The file of ``framework``'s worker module (to read it; importing it imports the framework)."""
    if framework not in FRAMEWORKS:
        raise ValueError(
            f"unknown framework {framework!r}: valid choices are {', '.join(FRAMEWORKS)}"
        )
    return spec(framework).folder / "distributed.py"


# --------------------------------------------------------------------------------------------
# Ports


def free_port(host: str = HOST) -> int:
    """A TCP port that nobody listens on right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def check_port(port: int, host: str = HOST) -> int:
    """Raise :class:`PortInUse` (naming the fix) if ``port`` cannot be bound on ``host``."""
    if not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port must be an integer in 1..65535, got {port!r}")
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            raise PortInUse(
                f"port {port} on {host} is already in use by another program ({exc.strerror}): "
                "pass another port, or port=None to let labkit pick a free one"
            ) from None
    return port


def pick_ports(count: int, port: int | None) -> list[int]:
    """``count`` consecutive ports from ``port`` (each checked), or free ones when ``port`` is None."""
    if port is None:
        ports: list[int] = []
        while len(ports) < count:
            p = free_port()
            if p not in ports:
                ports.append(p)
        return ports
    return [check_port(port + i) for i in range(count)]


# --------------------------------------------------------------------------------------------
# The commands, for this machine or for several


def tf_config(hosts: Sequence[str], index: int) -> str:
    """The ``TF_CONFIG`` of worker ``index`` in a cluster of ``host:port`` workers."""
    return json.dumps(
        {"cluster": {"worker": list(hosts)}, "task": {"type": "worker", "index": index}}
    )


def torchrun_command(
    job: Job,
    port: int,
    nnodes: int = 1,
    node_rank: int = 0,
    master: str = HOST,
    python: str = sys.executable,
) -> list[str]:
    """``torchrun`` starting ``job.workers`` processes on this node of ``nnodes``."""
    cmd = [
        python,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        str(nnodes),
        "--nproc-per-node",
        str(job.workers),
    ]
    if nnodes == 1:
        cmd += ["--master-addr", master, "--master-port", str(port)]
    else:
        cmd += [
            "--node-rank",
            str(node_rank),
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            f"{master}:{port}",
        ]
    return cmd + ["--max-restarts", "0", "-m", WORKER_MODULES["torch"]]


def msrun_command(
    job: Job,
    port: int,
    entry: str,
    log_dir: str,
    nnodes: int = 1,
    node_rank: int = 0,
    master: str = HOST,
    python: str = sys.executable,
) -> list[str]:
    """``msrun`` starting ``job.workers`` MindSpore workers on this node of ``nnodes``."""
    return [
        python,
        "-m",
        "mindspore.parallel.cluster.run",
        "--worker_num",
        str(job.workers * nnodes),
        "--local_worker_num",
        str(job.workers),
        "--master_addr",
        master,
        "--master_port",
        str(port),
        "--node_rank",
        str(node_rank),
        "--join",
        "True",
        "--log_dir",
        log_dir,
        entry,
    ]


def cluster_commands(
    job: Job,
    hosts: Sequence[str],
    port: int = 29500,
    out_dir: str = "results/distributed",
    deadline_s: float = 86400.0,
) -> list[tuple[str, str]]:
    """Shell commands to run ``job`` on several machines, as ``(host, command)`` pairs to type
    in a terminal on that host; each host runs ``job.workers`` workers. The first host
    coordinates (torchrun's rendezvous, MindSpore's scheduler); TensorFlow needs one command per
    worker process, listening on ``port``, ``port + 1``, ... Thread counts are left to each
    machine's framework defaults."""
    if not hosts:
        raise ValueError("give at least one host name or address")
    args = " ".join(job.worker_args(out_dir, deadline_s, threads=False))
    lines: list[tuple[str, str]] = []
    if job.framework == "torch":
        for rank, host in enumerate(hosts):
            cmd = torchrun_command(
                job, port, nnodes=len(hosts), node_rank=rank, master=hosts[0], python="python"
            )
            lines.append((host, " ".join(cmd) + " " + args))
    elif job.framework == "tensorflow":
        workers = [(h, f"{h}:{port + i}") for h in hosts for i in range(job.workers)]
        cluster = [address for _, address in workers]
        for index, (host, _address) in enumerate(workers):
            lines.append(
                (
                    host,
                    (
                        f"TF_CONFIG='{tf_config(cluster, index)}' python -m "
                        f"{WORKER_MODULES['tensorflow']} {args}"
                    ),
                )
            )
    else:
        entry = MINDSPORE_ENTRY.replace("\n", "; ").strip("; ")
        for rank, host in enumerate(hosts):
            cmd = msrun_command(
                job,
                port,
                "mindspore_entry.py",
                f"{out_dir}/msrun_logs",
                nnodes=len(hosts),
                node_rank=rank,
                master=hosts[0],
                python="python",
            )
            lines.append(
                (host, f'echo "{entry}" > mindspore_entry.py && ' + " ".join(cmd) + " " + args)
            )
    return lines


# --------------------------------------------------------------------------------------------
# Processes: start, watch, stop all


def _libc_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl  # resolved here, not in the forked child
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()


def _die_with_parent() -> None:
    """In the child before exec (Linux): get SIGTERM when the launching process dies, even by
    SIGKILL; torchrun and msrun pass a SIGTERM on to their workers. Elsewhere the workers'
    watchdogs still apply."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class ProcessTree:
    """Every process we started and every descendant seen since; :meth:`stop` ends them all."""

    def __init__(self):
        import psutil

        self._psutil = psutil
        self.roots: list[subprocess.Popen] = []
        self.seen: dict[int, psutil.Process] = {}

    def start(self, cmd: list[str], env: dict[str, str], log, cwd: Path) -> subprocess.Popen:
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd,
            preexec_fn=_die_with_parent if _PRCTL is not None else None,  # noqa: PLW1509
        )
        self.roots.append(proc)
        self.refresh()
        return proc

    def refresh(self) -> None:
        """Record the current descendants (a worker whose parent died is still known by pid)."""
        for root in self.roots:
            try:
                p = self._psutil.Process(root.pid)
                self.seen.setdefault(p.pid, p)
                for child in p.children(recursive=True):
                    self.seen.setdefault(child.pid, child)
            except self._psutil.Error:
                continue

    def alive(self) -> list:
        out = []
        for p in self.seen.values():
            try:
                if p.is_running() and p.status() != self._psutil.STATUS_ZOMBIE:
                    out.append(p)
            except self._psutil.Error:
                continue
        return out

    def stop(self, grace_s: float = 3.0) -> int:
        """SIGTERM every live process (and its session's group), SIGKILL what is left after
        ``grace_s``; reap the roots. Returns how many processes were still running."""
        self.refresh()
        live = self.alive()
        for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            for p in live:
                try:
                    if os.getpgid(p.pid) == p.pid:  # a session/group leader: its whole group
                        os.killpg(p.pid, sig)
                    p.send_signal(sig)
                except (ProcessLookupError, PermissionError, self._psutil.Error):
                    pass
            _gone, live = self._psutil.wait_procs(live, timeout=wait)
            if not live:
                break
        for root in self.roots:
            try:
                root.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL did not take
                pass
        return len(self.seen)

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


# --------------------------------------------------------------------------------------------
# Results


@dataclass
class Run:
    """A finished job: one result dict per worker (rank order), the wall time, the commands."""

    job: Job
    workers: list[dict]
    wall_s: float
    commands: list[list[str]]
    environments: list[dict[str, str]]  # what each command got on top of os.environ (TF_CONFIG)
    out_dir: Path
    log: str
    pids: list[int]  # every process started for the job (all gone now)

    def weights(self, rank: int = 0) -> dict[str, np.ndarray]:
        with np.load(self.out_dir / self.workers[rank]["weights"]) as f:
            return {k: f[k] for k in f.files}

    def max_difference_between_workers(self, names: Callable[[str], bool] | None = None) -> float:
        """Largest absolute difference of any weight between worker 0 and any other worker."""
        first = self.weights(0)
        return max(
            (max_difference(first, self.weights(r), names) for r in range(1, len(self.workers))),
            default=0.0,
        )

    @property
    def step_s(self) -> float:
        """Median steady-state step time over workers (the first step, with its warm-up, left out)."""
        return float(np.median([steady(w["step_s"]) for w in self.workers]))

    @property
    def images_per_s(self) -> float:
        """Images per second of the whole job (all workers together) in the steady state."""
        return self.job.global_batch / self.step_s

    @property
    def images_per_s_per_worker(self) -> float:
        return self.images_per_s / self.job.workers

    @property
    def final_loss(self) -> float:
        """Loss of the last step on the global batch (the mean of the workers' equal-size shards)."""
        return float(np.mean([w["losses"][-1] for w in self.workers]))

    def summary(self) -> dict:
        w0 = self.workers[0]
        return {
            "framework": self.job.framework,
            "workers": self.job.workers,
            "launcher": w0.get("launcher", ""),
            "backend": w0.get("backend", ""),
            "threads_per_worker": w0.get("threads"),
            "global_batch": self.job.global_batch,
            "step_s": round(self.step_s, 4),
            "images_per_s": round(self.images_per_s, 2),
            "compute_s": w0.get("compute_s"),
            "allreduce_s": w0.get("allreduce_s"),
            "gradient_mb": w0.get("gradient_mb"),
            "final_loss": self.final_loss,
            "wall_s": round(self.wall_s, 1),
        }


def steady(times: Sequence[float]) -> float:
    """Median of the step times without the first (warm-up) step, when there are several."""
    times = list(times)
    return float(np.median(times[1:] if len(times) > 1 else times))


def max_difference(
    a: dict[str, np.ndarray], b: dict[str, np.ndarray], names: Callable[[str], bool] | None = None
) -> float:
    """Largest absolute elementwise difference over the tensors both dicts hold (optionally only
    the names for which ``names(name)`` is true)."""
    if set(a) != set(b):
        raise ValueError(f"the weights hold different tensors: {sorted(set(a) ^ set(b))[:3]}")
    keys = [k for k in a if names is None or names(k)]
    return max((float(np.max(np.abs(a[k].astype(np.float64) - b[k]))) for k in keys), default=0.0)


def is_running_statistic(name: str) -> bool:
    """BatchNorm running mean/variance (not trained by gradients; updated from each batch)."""
    return name.endswith(resnet.BN_BUFFERS)


def scaling_efficiency(multi: Run, single: Run) -> float:
    """Throughput of ``multi`` over ``workers`` x the throughput of one process (1.0 = linear)."""
    return multi.images_per_s / (multi.job.workers * single.images_per_s)


# --------------------------------------------------------------------------------------------
# Launch


def _env(job: Job) -> dict[str, str]:
    env = dict(os.environ)
    threads = str(job.threads_per_worker)
    env.update(
        {
            "OMP_NUM_THREADS": threads,
            "MKL_NUM_THREADS": threads,
            "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python",
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "PYTHONUNBUFFERED": "1",
            "GLOG_v": "3",  # MindSpore: errors only
            "PYTHONPATH": os.pathsep.join([str(_REPO), env.get("PYTHONPATH", "")]).rstrip(
                os.pathsep
            ),
            # msrun calls `python` from PATH: make it this interpreter
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        }
    )
    for key in ("TF_CONFIG", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)  # a stale cluster description must not leak into the workers
    return env


def _commands(
    job: Job, out_dir: Path, ports: list[int], deadline_s: float
) -> list[tuple[list[str], dict]]:
    """(command, extra environment) of each process to start."""
    args = job.worker_args(out_dir, deadline_s)
    module = [sys.executable, "-m", WORKER_MODULES[job.framework]]
    if job.single:
        return [(module + args, {})]
    if job.framework == "torch":
        return [(torchrun_command(job, ports[0]) + args, {})]
    if job.framework == "tensorflow":
        hosts = [f"{HOST}:{p}" for p in ports]
        return [(module + args, {"TF_CONFIG": tf_config(hosts, i)}) for i in range(job.workers)]
    entry = out_dir / "mindspore_entry.py"  # msrun runs a script file, not a module
    entry.write_text(MINDSPORE_ENTRY)
    return [(msrun_command(job, ports[0], str(entry), str(out_dir / "msrun_logs")) + args, {})]


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

    ``port``: the rendezvous port (TensorFlow: the first of ``workers`` consecutive ports);
    None picks free ones. A port in use raises :class:`PortInUse` before anything starts.
    A worker that fails, a run longer than ``timeout`` seconds, or a KeyboardInterrupt stops
    every process of the job and raises :class:`DistributedError` (KeyboardInterrupt is
    re-raised). ``out_dir`` receives the workers' files; by default a temporary folder that is
    deleted with the returned :class:`Run` (ResNet-50 weights take 100 MB per worker), or at once
    when the job fails. ``progress=True`` shows a progress bar of the workers' training steps.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    ports = (
        [] if job.single else pick_ports(job.workers if job.framework == "tensorflow" else 1, port)
    )
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


#: temporary output folders start with this; each holds ``owner.pid``, the process that made it
TMP_PREFIX = "labkit-dp-"


def new_output_dir(framework: str) -> Path:
    """A fresh temporary folder for a job's files, after deleting the folders of dead owners."""
    sweep_orphaned_outputs()
    out = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{framework}-"))
    (out / "owner.pid").write_text(str(os.getpid()))
    return out


def sweep_orphaned_outputs() -> list[Path]:
    """Delete this user's temporary job folders whose owner process is gone (a kernel that was
    killed, not shut down, never ran its clean-up); returns the folders deleted."""
    import psutil

    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{TMP_PREFIX}*"):
        try:
            owner = int((folder / "owner.pid").read_text())
            if folder.stat().st_uid == os.getuid() and not psutil.pid_exists(owner):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
        except (OSError, ValueError):
            continue
    return removed


def _launch(
    job: Job, out: Path, ports: list[int], timeout: float, progress: bool, poll_s: float
) -> Run:
    for stale in [
        *out.glob("rank*.json"),
        *out.glob("rank*.npz"),
        *out.glob("rank*.hang"),
        *out.glob("rank*.steps"),
    ]:
        stale.unlink()
    commands = _commands(job, out, ports, deadline_s=timeout + 30)
    env = _env(job)
    log_path = out / "workers.log"
    tree = ProcessTree()
    start = time.perf_counter()
    what = f"{job.framework} job ({job.workers} worker{'s' * (job.workers > 1)})"
    with open(log_path, "w") as log:
        try:
            for cmd, extra in commands:
                tree.start(cmd, {**env, **extra}, log, cwd=out)  # framework debris lands there too
            failed = _wait(
                tree, start, timeout, poll_s, _progress(job, out, what) if progress else None
            )
        except KeyboardInterrupt:
            n = tree.stop()
            print(f"interrupted: stopped the {n} processes of the {what}", file=sys.stderr)
            raise
        except BaseException:
            tree.stop()
            raise
        if failed is not None:  # stop the others before reading anything
            tree.stop()
    wall = time.perf_counter() - start
    text = log_path.read_text(errors="replace")
    if failed == "timeout":
        raise DistributedError(
            f"the {what} did not finish within {timeout:.0f} s: stopped all {len(tree.pids)} of its "
            f"processes. Raise timeout= if the machine is just slow.{_tail(text)}",
            text,
        )
    results = _read_results(out, job.workers)
    errors = [r for r in results if r and "error" in r]
    if failed is not None or errors or len([r for r in results if r]) < job.workers:
        raise DistributedError(_failure_message(what, results, errors, failed, tree, text), text)
    return Run(
        job, results, wall, [c for c, _ in commands], [e for _, e in commands], out, text, tree.pids
    )


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


def _wait(
    tree: ProcessTree,
    start: float,
    timeout: float,
    poll_s: float,
    progress: Callable[[bool], None] | None = None,
) -> str | None:
    """None when every root exited 0; "timeout"; or a description of the first failure."""
    try:
        return _poll(tree, start, timeout, poll_s, progress)
    finally:
        if progress is not None:
            progress(True)


def _poll(tree, start, timeout, poll_s, progress) -> str | None:
    while True:
        if progress is not None:
            progress(False)
        tree.refresh()
        codes = [p.poll() for p in tree.roots]
        bad = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
        if bad:
            i, code = bad[0]
            return f"process {i} ({_name(tree.roots[i])}) exited with code {code}"
        if all(c == 0 for c in codes):
            return None
        if time.perf_counter() - start > timeout:
            return "timeout"
        time.sleep(poll_s)


def _name(proc: subprocess.Popen) -> str:
    args = proc.args if isinstance(proc.args, list) else [str(proc.args)]
    return next((a for a in args if a.startswith(("torch.", "labkit.", "mindspore."))), args[0])


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


def _tail(text: str, what: str = "the workers' output", lines: int = 8) -> str:
    kept = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return (f"\nLast lines of {what}:\n  " + "\n  ".join(kept)) if kept else ""


# --------------------------------------------------------------------------------------------
# Worker side: shared by the framework worker modules (still framework-free)


def synthetic_sample(
    index: int, image_size: int, seed: int, num_classes: int
) -> tuple[np.ndarray, int]:
    """Sample ``index`` of the synthetic data set: a CHW float32 image and a label. Any process
    computes the same sample from its index, so workers need to share nothing but indices."""
    rng = np.random.default_rng([seed, index])
    x = rng.standard_normal((3, image_size, image_size), dtype=np.float32)
    return x, int(rng.integers(num_classes))


def worker_parser(framework: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"python -m {WORKER_MODULES[framework]}",
        description=f"one {framework} data-parallel worker (see labkit.distributed)",
    )
    p.add_argument("--out", required=True, help="folder for rank<r>.json and rank<r>.npz")
    p.add_argument("--model", choices=MODELS, default="resnet50")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=4, help="images per worker per step")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument(
        "--threads", type=int, default=0, help="threads per worker (0: the framework's default)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--measure", type=int, default=2)
    p.add_argument(
        "--deadline", type=float, default=600.0, help="seconds before the worker gives up"
    )
    p.add_argument(
        "--fault", choices=FAULTS, default=None, help="go wrong on purpose (demos, tests)"
    )
    p.add_argument("--fault-rank", type=int, default=1)
    return p


def start_watchdog(deadline_s: float, poll_s: float = 0.5) -> None:
    """Exit this worker if its parent process disappears or ``deadline_s`` passes (a daemon
    thread): a worker never outlives its launcher, even one killed with SIGKILL."""
    parent, until = os.getppid(), time.monotonic() + deadline_s

    def watch():
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:
                os._exit(3)
            if time.monotonic() > until:
                print(
                    f"worker watchdog: deadline of {deadline_s:.0f} s passed, exiting",
                    file=sys.stderr,
                    flush=True,
                )
                os._exit(4)

    threading.Thread(target=watch, daemon=True, name="labkit-watchdog").start()


def report_step(out: str | Path, rank: int) -> None:
    """Count one finished training step (the launcher's progress bar reads ``rank<r>.steps``)."""
    with open(Path(out) / f"rank{rank}.steps", "a") as f:
        f.write(".")


def write_result(
    out: str | Path, rank: int, result: dict, weights: dict[str, np.ndarray] | None
) -> None:
    """Write ``rank<r>.npz`` (weights) then ``rank<r>.json`` (the launcher reads the JSON)."""
    out = Path(out)
    if weights is not None:
        np.savez(out / f"rank{rank}.npz", **weights)
        result = {**result, "weights": f"rank{rank}.npz"}
    tmp = out / f".rank{rank}.json.tmp"
    tmp.write_text(json.dumps(result))
    tmp.replace(out / f"rank{rank}.json")


def run_worker(
    framework: str, rank: int, main: Callable[[], None], out: str | Path, hard_exit: bool = True
) -> None:
    """Run a worker's ``main``; on an exception write the error for the launcher, then exit 1.

    With ``hard_exit`` a successful worker also ends with ``os._exit(0)`` once its result is on
    disk: gloo's C++ threads can abort the interpreter's teardown ("terminate called without an
    active exception"), which would turn a finished job into a failed one. MindSpore needs the
    normal teardown (its workers say goodbye to the scheduler there): ``hard_exit=False``.
    """
    try:
        main()
    except BaseException as exc:  # noqa: BLE001 - the launcher must learn why, whatever it was
        write_result(
            out,
            rank,
            {
                "framework": framework,
                "rank": rank,
                "pid": os.getpid(),
                "error": f"{type(exc).__name__}: {exc}",
                "time": time.time(),
                "traceback": traceback.format_exc(),
            },
            None,
        )
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    if hard_exit:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


class WorkerFailure(RuntimeError):
    """Raised on purpose by the worker that ``--fault crash --fault-rank r`` names."""


def maybe_fault(rank: int, args: argparse.Namespace) -> None:
    """Go wrong here if this worker was asked to: raise (crash) or stop for good (hang; a file
    ``rank<r>.hang`` says that the worker got this far)."""
    if args.fault is None or rank != args.fault_rank:
        return
    if args.fault == "crash":
        raise WorkerFailure(f"worker {rank} was told to crash (--fault crash --fault-rank {rank})")
    (Path(args.out) / f"rank{rank}.hang").write_text(str(os.getpid()))
    while True:  # the launcher's timeout, or this worker's watchdog, ends it
        time.sleep(1.0)


# --------------------------------------------------------------------------------------------
# Command line


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    p = parser or argparse.ArgumentParser(
        prog="python -m labkit.distributed",
        description="data-parallel training with real worker processes",
    )
    p.add_argument("--framework", choices=FRAMEWORKS, default="torch")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=4, help="images per worker per step")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--model", choices=MODELS, default="resnet50")
    p.add_argument(
        "--threads", type=int, default=None, help="per worker (default: cores / workers)"
    )
    p.add_argument("--port", type=int, default=None, help="rendezvous port (default: a free one)")
    p.add_argument(
        "--timeout", type=float, default=300.0, help="seconds before everything is stopped"
    )
    p.add_argument(
        "--out", default=None, help="folder for the workers' results (default: temporary)"
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="also train one plain process on the concatenated batch and compare",
    )
    p.add_argument(
        "--fault",
        choices=FAULTS,
        default=None,
        help="make one worker crash or hang on purpose (to see the clean-up)",
    )
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument(
        "--hosts",
        default=None,
        help="comma-separated machines: print the commands to run there instead",
    )
    p.set_defaults(func=cli)
    return p


def cli(args: argparse.Namespace) -> int:
    job = Job(
        args.framework,
        workers=args.workers,
        steps=args.steps,
        batch=args.batch,
        image_size=args.image_size,
        model=args.model,
        threads=args.threads,
        fault=args.fault,
        fault_rank=args.fault_rank,
    )
    if args.hosts:
        hosts = [h.strip() for h in args.hosts.split(",") if h.strip()]
        for host, command in cluster_commands(job, hosts, port=args.port or 29500):
            print(f"# on {host}:\n{command}")
        return 0
    try:
        run = launch(job, port=args.port, timeout=args.timeout, out_dir=args.out)
    except DistributedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    summary = {
        **run.summary(),
        "max_difference_between_workers": run.max_difference_between_workers(
            lambda n: not is_running_statistic(n)
        ),
        "out_dir": str(run.out_dir),
    }
    if args.compare:
        ref = launch(job.reference(), timeout=args.timeout)
        summary["single_process"] = ref.summary()
        summary["max_difference_vs_single_process"] = max_difference(
            run.weights(0), ref.weights(0), lambda n: not is_running_statistic(n)
        )
        summary["scaling_efficiency"] = round(scaling_efficiency(run, ref), 3)
    print(json.dumps(summary, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
