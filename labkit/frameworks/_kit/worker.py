"""The worker side of data-parallel training, shared by every framework's worker module
(``labkit/frameworks/<name>/distributed.py``) and framework-free: the models and faults a job
may ask for, the synthetic data set, the command line and the watchdog (:func:`start`), the
steps as they are taken (:class:`Steps`: the fault, the progress file), the result files, and
error reporting (:func:`run_worker`).

Each worker writes ``rank<r>.json`` (losses, step times, the cost of its gradient all-reduce) and
``rank<r>.npz`` (its final weights) into the job's output folder; the launcher
(:mod:`labkit.distributed`) reads them back.

Not for: starting, watching or stopping the workers (:mod:`labkit.distributed`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ...resnet import WIDTH
from ...util import jsonio, proc
from ..contract import FrameworkSpec

__all__ = [
    "COMM_HOOKS",
    "FAULTS",
    "MODELS",
    "STRATEGIES",
    "TINY_CLASSES",
    "Steps",
    "SyntheticImages",
    "WorkerFailure",
    "maybe_fault",
    "report_step",
    "result_fields",
    "run_worker",
    "start",
    "start_watchdog",
    "synthetic_sample",
    "worker_parser",
    "write_result",
]

#: resnet50: the course's model (BatchNorm: statistics per worker); tiny: a small CNN without
#: BatchNorm, for which data-parallel training equals one process on the concatenated batch
MODELS: tuple[str, ...] = ("resnet50", "tiny")
TINY_CLASSES = 10
#: deliberate worker faults, for demonstrations and tests (:func:`maybe_fault`)
FAULTS: tuple[str, ...] = ("crash", "hang", "straggler", "kill")
#: how the workers hold the model: ``ddp`` every worker a whole replica (data parallel: DDP,
#: MirroredStrategy, msrun's data parallel); ``fsdp`` each worker a shard of the parameters,
#: gradients and optimizer state, gathered layer by layer when needed (PyTorch's FSDP2);
#: ``auto_parallel`` MindSpore's AutoParallel, which plans the parallelism of a static graph
#: (the lab asks for its data-parallel form)
STRATEGIES: tuple[str, ...] = ("ddp", "fsdp", "auto_parallel")
#: gradient communication hooks: ``powersgd`` all-reduces low-rank factors of each gradient
#: matrix instead of the matrix (PyTorch's PowerSGD DDP hook)
COMM_HOOKS: tuple[str, ...] = ("powersgd",)


def synthetic_sample(
    index: int, image_size: int, seed: int, num_classes: int
) -> tuple[np.ndarray, int]:
    """Sample ``index`` of the synthetic data set: a CHW float32 image and a label. Any process
    computes the same sample from its index, so workers need to share nothing but indices."""
    rng = np.random.default_rng([seed, index])
    x = rng.standard_normal((3, image_size, image_size), dtype=np.float32)
    return x, int(rng.integers(num_classes))


class SyntheticImages:
    """``length`` samples of :func:`synthetic_sample`, by index (a random-access data set):
    sample i is the same in every process. A framework's data set turns each into its types."""

    def __init__(self, length: int, image_size: int, seed: int, num_classes: int):
        self.length, self.image_size, self.seed, self.num_classes = (
            length,
            image_size,
            seed,
            num_classes,
        )

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> tuple[np.ndarray, int]:
        return synthetic_sample(int(i), self.image_size, self.seed, self.num_classes)


def worker_parser(spec: FrameworkSpec) -> argparse.ArgumentParser:
    """The command line of ``spec``'s worker module (:meth:`labkit.distributed.Job.worker_args`
    writes it)."""
    p = argparse.ArgumentParser(
        prog=f"python -m {spec.worker_module}",
        description=f"one {spec.name} data-parallel worker (see labkit.distributed)",
    )
    p.add_argument("--out", required=True, help="folder for rank<r>.json and rank<r>.npz")
    p.add_argument("--model", choices=MODELS, default="resnet50")
    p.add_argument(
        "--width", type=int, default=WIDTH, help=f"ResNet-50's base width ({WIDTH}: the real one)"
    )
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
    p.add_argument("--fault-step", type=int, default=1, help="the step (1, 2, ...) it happens at")
    p.add_argument("--strategy", choices=STRATEGIES, default=STRATEGIES[0])
    p.add_argument("--comm-hook", choices=COMM_HOOKS, default=None)
    p.add_argument("--powersgd-rank", type=int, default=1, help="PowerSGD's approximation rank")
    p.add_argument("--checkpoint", default="", help="file to save after every step and resume from")
    return p


def start_watchdog(deadline_s: float, poll_s: float = 0.5) -> None:
    """Exit this worker if its parent process disappears or ``deadline_s`` passes (a daemon
    thread, :func:`labkit.util.proc.exit_with_parent`): a worker never outlives its launcher,
    even one killed with SIGKILL."""
    proc.exit_with_parent(
        os.getppid(), deadline_s=deadline_s, poll_s=poll_s, label="worker watchdog"
    )


def start(spec: FrameworkSpec, argv: list[str] | None = None) -> argparse.Namespace:
    """What every worker does first: read its command line (:func:`worker_parser`) and start
    its watchdog (:func:`start_watchdog`) with the deadline it was given."""
    args = worker_parser(spec).parse_args(argv)
    start_watchdog(args.deadline)
    return args


def report_step(out: str | Path, rank: int) -> None:
    """Count one finished training step (the launcher's progress bar reads ``rank<r>.steps``)."""
    with open(Path(out) / f"rank{rank}.steps", "a") as f:
        f.write(".")


class Steps:
    """A worker's training steps as it takes them: before each (:meth:`begin`) the deliberate
    fault (before step ``--fault-step``, :func:`maybe_fault`) and the sum of the images it is
    about to train on (which images this worker saw); after each (:meth:`end`) its loss and
    time, and one more step in the progress file (:func:`report_step`).

    ``attempt``: 0 the first time the worker runs, 1 after a restart by its launcher, ...; a
    restarted worker that resumes from a checkpoint first takes the steps done before
    (:meth:`resume`), so its losses cover the whole run and ``resumed_from`` says where it
    started."""

    def __init__(self, args: argparse.Namespace, rank: int, attempt: int = 0):
        self.args, self.rank, self.attempt = args, rank, attempt
        self.losses: list[float] = []
        self.step_s: list[float] = []
        self.data_sum = 0.0
        self.resumed_from = 0

    def resume(self, losses: list[float]) -> None:
        """Continue after the steps a checkpoint holds (their losses, in order)."""
        self.losses = [float(v) for v in losses]
        self.resumed_from = len(self.losses)

    def begin(self, images_sum: float) -> float:
        """Before a step: returns its start time (``time.perf_counter``)."""
        if len(self.losses) + 1 == self.args.fault_step:
            maybe_fault(self.rank, self.args, self.attempt)
        self.data_sum += images_sum
        return time.perf_counter()

    def end(self, loss: float, started: float) -> None:
        """After a step whose ``loss`` is on the host (the work is done)."""
        self.step_s.append(time.perf_counter() - started)
        self.losses.append(loss)
        report_step(self.args.out, self.rank)


def result_fields(
    steps: Steps,
    *,
    world: int,
    parameters: int,
    init_s: float,
    **framework: object,
) -> dict:
    """A worker's result: what every framework's worker reports (the run, its losses and step
    times, the size of the gradient it all-reduces), after the ``framework``'s own fields
    (name, version, launcher, backend, device, threads)."""
    args, rank = steps.args, steps.rank
    return {
        **framework,
        "rank": rank,
        "world_size": world,
        "pid": os.getpid(),
        "model": args.model,
        "width": args.width if args.model == "resnet50" else None,
        "batch": args.batch,
        "image_size": args.image_size,
        "steps": args.steps,
        "losses": steps.losses,
        "step_s": steps.step_s,
        "attempt": steps.attempt,
        "resumed_from_step": steps.resumed_from,
        "data_sum": steps.data_sum,
        "init_s": init_s,
        "parameters": int(parameters),
        "gradient_mb": int(parameters) * 4 / 1e6,
    }


def write_result(
    out: str | Path, rank: int, result: dict, weights: dict[str, np.ndarray] | None
) -> None:
    """Write ``rank<r>.npz`` (weights) then ``rank<r>.json`` (the launcher reads the JSON)."""
    out = Path(out)
    if weights is not None:
        np.savez(out / f"rank{rank}.npz", **weights)
        result = {**result, "weights": f"rank{rank}.npz"}
    jsonio.write_atomic(out / f"rank{rank}.json", json.dumps(result))


def run_worker(
    framework: str, rank: int, main: Callable[[], None], out: str | Path, hard_exit: bool = True
) -> None:
    """Run a worker's ``main``; on an exception write the error for the launcher, then exit 1.

    With ``hard_exit`` a successful worker also ends with ``os._exit(0)`` once its result is on
    disk: a collective library's C++ threads can abort the interpreter's teardown ("terminate
    called without an active exception"), which would turn a finished job into a failed one. A
    framework whose workers say goodbye to a scheduler during the normal teardown passes
    ``hard_exit=False``.
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


def maybe_fault(rank: int, args: argparse.Namespace, attempt: int = 0) -> None:
    """Go wrong here if this worker was asked to: raise (crash), stop for good (hang; a file
    ``rank<r>.hang`` says that the worker got this far), start a process that outlives it
    (straggler, as a data-loader or compiler helper may: ``rank<r>.straggler`` holds its pid),
    or die at once from SIGKILL, as a machine's out-of-memory killer ends a process (kill; on
    the first attempt only, so that a restarted worker runs on; ``rank<r>.killed`` holds the
    pid and the step)."""
    if args.fault is None or rank != args.fault_rank:
        return
    if args.fault == "kill":
        if attempt == 0:
            (Path(args.out) / f"rank{rank}.killed").write_text(f"{os.getpid()} {args.fault_step}")
            os.kill(os.getpid(), signal.SIGKILL)
        return
    if args.fault == "crash":
        raise WorkerFailure(f"worker {rank} was told to crash (--fault crash --fault-rank {rank})")
    if args.fault == "straggler":
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"],
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # out of reach of signals to the worker's process group
        )
        (Path(args.out) / f"rank{rank}.straggler").write_text(str(child.pid))
        time.sleep(2.0)  # the launcher notes the job's processes at every poll (0.1 s)
        return
    (Path(args.out) / f"rank{rank}.hang").write_text(str(os.getpid()))
    while True:  # the launcher's timeout, or this worker's watchdog, ends it
        time.sleep(1.0)
