"""How MindSpore's data-parallel workers are started: ``msrun``
(``python -m mindspore.parallel.cluster.run``).

Framework-free: it builds command lines (a :class:`labkit.frameworks.contract.Launch`) for
:mod:`labkit.distributed`. msrun starts a scheduler process and the workers, giving each its
role and rank in environment variables (``MS_ROLE``, ``MS_SCHED_HOST``, ``MS_SCHED_PORT``,
``MS_WORKER_NUM``, ``RANK_ID``); the scheduler listens on the master's port. msrun runs a script
file, not a module, so a two-line entry script runs :mod:`labkit.frameworks.mindspore.distributed`
(data-parallel mode, MindSpore's own collectives).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from . import SPEC

__all__ = [
    "CLUSTER_VARIABLES",
    "ENTRY",
    "ENTRY_FILE",
    "ENVIRONMENT",
    "EVERY_INTERFACE",
    "cluster_commands",
    "local_commands",
    "msrun_command",
    "ports_needed",
]

CLUSTER_VARIABLES: tuple[str, ...] = (
    "MS_ROLE",
    "MS_SCHED_HOST",
    "MS_SCHED_PORT",
    "MS_WORKER_NUM",
    "MS_NODE_ID",
    "MS_SIMULATION_LEVEL",
    "RANK_ID",
    "RANK_SIZE",
)
ENVIRONMENT: dict[str, str] = {"GLOG_v": "3"}  # errors only
#: beside data-parallel replicas: AutoParallel in its data-parallel form (its compile refuses
#: CPUs in MindSpore 2.8, which the job then reports)
STRATEGIES: tuple[str, ...] = ("ddp", "auto_parallel")
#: the scheduler listens on the master address, each worker on ``MS_WORKER_IP`` (without it, on
#: the first network interface MindSpore finds): both are ``host`` on one machine
EVERY_INTERFACE: str | None = None
#: msrun runs a script file, not a module: this script runs the worker module
ENTRY = (
    f"import runpy\nrunpy.run_module('{SPEC.worker_module}', run_name='__main__', alter_sys=True)\n"
)
ENTRY_FILE = "mindspore_entry.py"


def ports_needed(workers: int) -> int:
    """One port: the scheduler's."""
    return 1


def msrun_command(
    workers: int,
    port: int,
    entry: str,
    log_dir: str,
    nnodes: int = 1,
    node_rank: int = 0,
    master: str = "127.0.0.1",
    python: str = sys.executable,
) -> list[str]:
    """``msrun`` starting ``workers`` MindSpore workers on this node of ``nnodes``."""
    return [
        python,
        "-m",
        "mindspore.parallel.cluster.run",
        "--worker_num",
        str(workers * nnodes),
        "--local_worker_num",
        str(workers),
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


def local_commands(
    workers: int, ports: Sequence[int], args: list[str], out_dir: Path, host: str
) -> list[tuple[list[str], dict[str, str]]]:
    """msrun on the entry script, which is written into ``out_dir`` (msrun's logs go there too);
    the scheduler and the workers listen on ``host`` only."""
    entry = Path(out_dir) / ENTRY_FILE
    entry.write_text(ENTRY)
    cmd = msrun_command(
        workers, ports[0], str(entry), str(Path(out_dir) / "msrun_logs"), master=host
    )
    return [(cmd + list(args), {"MS_WORKER_IP": host})]


def cluster_commands(
    workers: int, hosts: Sequence[str], port: int, args: list[str], out_dir: str
) -> list[tuple[str, str]]:
    """Each host writes the entry script, then runs msrun on it."""
    entry = ENTRY.replace("\n", "; ").strip("; ")  # one line, for echo
    lines = []
    for rank, host in enumerate(hosts):
        cmd = msrun_command(
            workers,
            port,
            ENTRY_FILE,
            f"{out_dir}/msrun_logs",
            nnodes=len(hosts),
            node_rank=rank,
            master=hosts[0],
            python="python",
        )
        lines.append((host, f'echo "{entry}" > {ENTRY_FILE} && ' + shlex.join(cmd + list(args))))
    return lines
