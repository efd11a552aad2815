"""Data-parallel training, launched for real: start the workers, watch them, collect their results.

Framework-free: no framework is imported here, and none is named. A :class:`Job` says what to
train; :func:`launch` starts its worker processes the way the framework expects and waits for
them. How a framework's workers are started (its launcher's command lines and environment) is
written in that framework's package, ``labkit/frameworks/<name>/launch.py``, and what a worker
does in ``labkit/frameworks/<name>/distributed.py`` (with the helpers every worker shares,
:mod:`labkit.frameworks._kit.worker`); the registry (:mod:`labkit.frameworks`) finds both.

One module per concern:

- :mod:`~labkit.distributed.job`: the :class:`Job` spec, its checks, the ports, the errors;
- :mod:`~labkit.distributed.launcher`: :func:`launch` (commands, environment, wait, results) and
  :func:`cluster_commands` (the same job on several machines);
- :mod:`~labkit.distributed.processes`: the process tree (start, watch, stop every process);
- :mod:`~labkit.distributed.folders`: temporary job folders, and the sweep of abandoned ones;
- :mod:`~labkit.distributed.runs`: a finished :class:`Run` and its statistics (step time,
  throughput, weight differences, scaling efficiency);
- :mod:`~labkit.distributed.cli`: ``python -m labkit.distributed`` (``--help``).

Each worker writes ``rank<r>.json`` (losses, step times, the cost of its gradient all-reduce) and
``rank<r>.npz`` (its final weights) into the job's output folder; :class:`Run` reads them back.

Nothing is left behind: the launcher tracks every process it started and all their descendants,
and when the job ends (a worker failure, a timeout, ``KeyboardInterrupt``, or success) it stops
any that still run (SIGTERM, then SIGKILL); a failure raises :class:`DistributedError`. Each
process also dies with its launcher, and each worker runs a watchdog that exits when its parent
disappears or its deadline passes, so even a launcher killed with SIGKILL leaves no orphan for
long.
"""

from .cli import build_parser, cli, main
from .folders import TMP_PREFIX, new_output_dir, sweep_orphaned_outputs
from .job import (
    CHECKPOINT,
    COMM_HOOKS,
    FAULTS,
    FRAMEWORKS,
    HOST,
    MODELS,
    STRATEGIES,
    WORKER_MODULES,
    DistributedError,
    Job,
    PortInUse,
    pick_ports,
    worker_source,
)
from .launcher import cluster_commands, launch
from .processes import ProcessTree, still_running
from .runs import Run, is_running_statistic, max_difference, scaling_efficiency, steady

__all__ = [
    "CHECKPOINT",
    "COMM_HOOKS",
    "FAULTS",
    "FRAMEWORKS",
    "HOST",
    "MODELS",
    "STRATEGIES",
    "TMP_PREFIX",
    "WORKER_MODULES",
    "DistributedError",
    "Job",
    "PortInUse",
    "ProcessTree",
    "Run",
    "build_parser",
    "cli",
    "cluster_commands",
    "is_running_statistic",
    "launch",
    "main",
    "max_difference",
    "new_output_dir",
    "pick_ports",
    "scaling_efficiency",
    "steady",
    "still_running",
    "sweep_orphaned_outputs",
    "worker_source",
]
