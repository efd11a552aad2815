"""How MindSpore's data-parallel workers are started: ``msrun`` running the worker script.
Framework-free. msrun starts a scheduler and the
workers, giving each its role and rank in the environment (``MS_ROLE``, ``MS_SCHED_HOST``,
``MS_SCHED_PORT``, ``MS_WORKER_NUM``, ``RANK_ID``); the scheduler listens on the master's port,
each worker on ``MS_WORKER_IP`` (both ``host`` on one machine).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "CLUSTER_VARIABLES",
    "ENVIRONMENT",
    "EVERY_INTERFACE",
    "cluster_commands",
    "local_commands",
    "msrun_command",
    "ports_needed",
]

CLUSTER_VARIABLES: tuple[str, ...] = (
    "MS_ROLE", "MS_SCHED_HOST", "MS_SCHED_PORT", "MS_WORKER_NUM", "MS_NODE_ID", "RANK_ID",
    "RANK_SIZE",
)  # fmt: skip
ENVIRONMENT: dict[str, str] = {"GLOG_v": "3"}  # errors only
EVERY_INTERFACE: str | None = None


def ports_needed(workers: int) -> int:
    """One port: the scheduler's."""
    return 1


def msrun_command(workers: int, port: int, log_dir: str, nodes: int = 1, rank: int = 0,
                  master: str = "127.0.0.1") -> list[str]:  # fmt: skip
    """``msrun`` starting ``workers`` MindSpore workers on node ``rank`` of ``nodes``."""
    return [
        "msrun", "--worker_num", str(workers * nodes), "--local_worker_num", str(workers),
        "--master_addr", master, "--master_port", str(port), "--node_rank", str(rank),
        "--join", "True", "--log_dir", log_dir,
    ]  # fmt: skip


def local_commands(
    workers: int, ports: Sequence[int], args: list[str], out_dir: Path, host: str
) -> list[tuple[list[str], dict[str, str]]]:
    """msrun (this interpreter's, first on PATH); its logs go to ``out_dir``/msrun_logs."""
    cmd = msrun_command(workers, ports[0], str(Path(out_dir) / "msrun_logs"), master=host)
    return [(cmd + list(args), {"MS_WORKER_IP": host})]


def cluster_commands(
    workers: int, hosts: Sequence[str], port: int, args: list[str], out_dir: str
) -> list[tuple[str, str]]:
    log_dir, master = f"{out_dir}/msrun_logs", hosts[0]
    cmds = [msrun_command(workers, port, log_dir, len(hosts), i, master) for i in range(len(hosts))]
    return [(host, shlex.join(cmd + list(args))) for host, cmd in zip(hosts, cmds)]
