"""What to run: a data-parallel :class:`Job`, the ports its workers meet at, and the errors."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .. import hardware, resnet
from ..frameworks import launch_module, spec, specs
from ..frameworks._kit.worker import COMM_HOOKS, FAULTS, MODELS, STRATEGIES
from ..util import net

__all__ = [
    "FRAMEWORKS",
    "HOST",
    "WORKER_MODULES",
    "DistributedError",
    "Job",
    "PortInUse",
    "check_framework",
    "pick_ports",
    "worker_source",
]

#: the registered frameworks that have a data-parallel launcher
FRAMEWORKS: tuple[str, ...] = tuple(s.name for s in specs() if s.launcher)
#: the worker module of each framework (run with ``python -m``)
WORKER_MODULES: dict[str, str] = {s.name: s.worker_module for s in specs() if s.launcher}
HOST = net.LOOPBACK


class DistributedError(RuntimeError):
    """A data-parallel job failed or timed out; the message says which worker, why, and what was
    stopped. ``log`` holds the workers' combined output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class PortInUse(DistributedError, net.PortInUse):
    """The port asked for is taken by another program (nothing was started)."""


def check_framework(framework: str) -> str:
    if framework not in FRAMEWORKS:
        raise ValueError(
            f"unknown framework {framework!r} for data-parallel training: "
            f"valid choices are {', '.join(FRAMEWORKS)}"
        )
    return framework


@dataclass(frozen=True)
class Job:
    """One data-parallel training run: ``workers`` processes, each training on ``batch`` images
    per step (the global batch is ``workers * batch``) for ``steps`` SGD-with-momentum steps.

    ``width`` narrows ResNet-50 (:mod:`labkit.resnet`; 64, the default, is the real network):
    the same layers and BatchNorms with a fraction of the weights, so that two workers of a
    framework fit a small machine (the ``smoke`` profile's
    :attr:`~labkit.profiles.Profile.resnet_width`). ``single=True`` runs one plain process with
    no distributed runtime at all (the reference).
    ``fault`` exists to show (and test) what happens when a worker goes wrong: ``"crash"`` makes
    worker ``fault_rank`` raise at its first step, ``"hang"`` makes it stop there for good (its
    peers then wait in the all-reduce until the launcher's timeout), ``"straggler"`` makes it
    start a process that outlives it (the launcher stops it when the job ends), ``"kill"``
    makes it die from SIGKILL at step ``fault_step``, as an out-of-memory killer ends a process.

    Beyond replicas (what a framework's launcher offers, its launch module says):
    ``strategy="fsdp"`` shards the model's parameters, gradients and optimizer state over the
    workers; ``comm_hook="powersgd"`` compresses the gradient all-reduce to rank-
    ``powersgd_rank`` factors; ``max_restarts=N`` lets the launcher start every worker again
    (up to N times) when one fails, each resuming from the checkpoint the job writes after
    every step.
    """

    framework: str
    workers: int = 2
    steps: int = 3
    batch: int = 4
    image_size: int = 32
    model: str = "resnet50"
    width: int = resnet.WIDTH  # ResNet-50's base width (the tiny model ignores it)
    threads: int | None = None  # per worker; default: the cores shared out evenly
    seed: int = 0
    lr: float = 0.01  # 0.1 makes randomly initialised ResNet-50 diverge within 3 steps
    momentum: float = 0.9
    measure: int = 2  # repeats of the compute-only and all-reduce-only timings (0: skip)
    single: bool = False
    fault: str | None = None
    fault_rank: int = 1
    fault_step: int = 1  # the step (1, 2, ...) at which the fault happens
    strategy: str = STRATEGIES[0]
    comm_hook: str | None = None
    powersgd_rank: int = 1
    max_restarts: int = 0

    def __post_init__(self):
        check_framework(self.framework)
        self._check_large_model_options()
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
        if not isinstance(self.fault_step, int) or not 1 <= self.fault_step <= self.steps:
            raise ValueError(f"fault_step must be a step, 1..{self.steps}; got {self.fault_step!r}")
        resnet.check_image_size(self.image_size)
        resnet.check_width(self.width)

    def _check_large_model_options(self) -> None:
        """The strategy, the communication hook and restarts: known, and offered by the
        framework's launcher (its launch module's STRATEGIES, COMM_HOOKS and RESTARTS)."""
        launcher = launch_module(self.framework)
        if self.strategy not in STRATEGIES:
            raise ValueError(
                f"unknown strategy {self.strategy!r}: valid choices are {', '.join(STRATEGIES)}"
            )
        if self.strategy not in getattr(launcher, "STRATEGIES", STRATEGIES[:1]):
            where = _offered_by("STRATEGIES", self.strategy)
            raise ValueError(f"strategy {self.strategy!r} is {where}, not {self.framework}")
        if self.comm_hook is not None:
            if self.comm_hook not in COMM_HOOKS:
                raise ValueError(
                    f"unknown comm_hook {self.comm_hook!r}: valid choices are "
                    f"{', '.join(COMM_HOOKS)} (or None)"
                )
            if self.comm_hook not in getattr(launcher, "COMM_HOOKS", ()):
                where = _offered_by("COMM_HOOKS", self.comm_hook)
                raise ValueError(f"comm_hook {self.comm_hook!r} is {where}, not {self.framework}")
            if self.strategy != "ddp":
                raise ValueError(
                    f"comm_hook {self.comm_hook!r} hooks DDP's all-reduce: use strategy 'ddp'"
                )
        if not isinstance(self.max_restarts, int) or self.max_restarts < 0:
            raise ValueError(f"max_restarts must be a whole number >= 0, got {self.max_restarts!r}")
        if not isinstance(self.powersgd_rank, int) or self.powersgd_rank < 1:
            raise ValueError(
                f"powersgd_rank must be a whole number >= 1, got {self.powersgd_rank!r}"
            )
        if self.max_restarts:
            self._check_restarts(launcher)

    def _check_restarts(self, launcher) -> None:
        if not getattr(launcher, "RESTARTS", False):
            where = _offered_by("RESTARTS", True)
            raise ValueError(f"restarting failed workers is {where}, not {self.framework}")
        if self.single:
            raise ValueError("a single-process job has no launcher to restart it: max_restarts=0")
        if self.comm_hook:
            raise ValueError(
                f"comm_hook {self.comm_hook!r} keeps error-feedback state that the checkpoint "
                "does not hold, so a restarted job would not continue the same run: use "
                "max_restarts=0"
            )

    @property
    def global_batch(self) -> int:
        return self.workers * self.batch

    @property
    def threads_per_worker(self) -> int:
        return self.threads or max(1, hardware.cores() // self.workers)

    @property
    def worker_module(self) -> str:
        """The module each worker process runs (``python -m``)."""
        return WORKER_MODULES[self.framework]

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
            fault_step=1,
            max_restarts=0,
        )

    def worker_args(
        self, out_dir: Path | str, deadline_s: float, threads: bool = True
    ) -> list[str]:
        """The worker module's command-line arguments (``threads=False``: leave the thread count
        to the framework on the machine that runs the worker)."""
        args = ["--out", str(out_dir), "--model", self.model, "--steps", str(self.steps)]
        if self.model == "resnet50" and self.width != resnet.WIDTH:
            args += ["--width", str(self.width)]
        args += ["--batch", str(self.batch), "--image-size", str(self.image_size)]
        if threads:
            args += ["--threads", str(self.threads_per_worker)]
        args += ["--seed", str(self.seed), "--lr", repr(self.lr), "--momentum", repr(self.momentum)]
        args += ["--measure", str(self.measure), "--deadline", f"{deadline_s:.0f}"]
        if self.fault is not None:
            args += ["--fault", self.fault, "--fault-rank", str(self.fault_rank)]
            args += ["--fault-step", str(self.fault_step)] if self.fault_step != 1 else []
        if self.strategy != STRATEGIES[0]:
            args += ["--strategy", self.strategy]
        if self.comm_hook:
            args += ["--comm-hook", self.comm_hook, "--powersgd-rank", str(self.powersgd_rank)]
        if self.max_restarts:
            args += ["--checkpoint", str(Path(out_dir) / CHECKPOINT)]
        return args


#: the file a job that may restart keeps its state in, in the job's folder
CHECKPOINT = "checkpoint.pt"


def _offered_by(attribute: str, value: object) -> str:
    """ "offered by torch": the frameworks whose launch module's ``attribute`` (STRATEGIES,
    COMM_HOOKS, RESTARTS) offers ``value``."""
    names = []
    for name in FRAMEWORKS:
        got = getattr(launch_module(name), attribute, None)
        if got is True or (isinstance(got, tuple) and value in got):
            names.append(name)
    return f"offered by {', '.join(names)}" if names else "offered by no framework here"


def worker_source(framework: str) -> Path:
    """The file of ``framework``'s worker module (to read it; importing it imports the framework)."""
    check_framework(framework)
    return spec(framework).folder / f"{WORKER_MODULES[framework].rsplit('.', 1)[1]}.py"


# --------------------------------------------------------------------------------------------
# Ports


def pick_ports(count: int, port: int | None) -> list[int]:
    """``count`` consecutive ports from ``port``, or free ones when ``port`` is None; each one
    free on every address of this machine (:func:`labkit.util.net.check_port`), else
    :class:`PortInUse` naming the fix, before anything starts."""
    if port is None:
        ports: list[int] = []
        while len(ports) < count:
            p = net.free_port(HOST)
            try:  # free on 127.0.0.1 may still be taken on another address
                if p not in ports:
                    ports.append(net.check_port(p, HOST))
            except net.PortInUse:
                continue
        return ports
    try:
        return [net.check_port(port + i, HOST) for i in range(count)]
    except net.PortInUse as exc:
        raise PortInUse(
            f"{exc}: pass another port, or port=None to let labkit pick a free one"
        ) from None
