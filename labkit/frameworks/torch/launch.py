"""How PyTorch's data-parallel workers are started: ``torchrun``
(``python -m torch.distributed.run``).

Framework-free: it builds command lines (a :class:`labkit.frameworks.contract.Launch`) for
:mod:`labkit.distributed`. On one machine torchrun starts ``workers`` processes that meet at
``host:port`` and run :mod:`labkit.frameworks.torch.distributed` (DDP; gloo on CPUs, NCCL on
GPUs). On several machines one torchrun per machine joins a c10d rendezvous at the first one.
torchrun gives each worker ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and
``MASTER_PORT``.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from . import SPEC

CLUSTER_VARIABLES: tuple[str, ...] = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
)
ENVIRONMENT: dict[str, str] = {}


def ports_needed(workers: int) -> int:
    """One port: the rendezvous (torchrun's store) that every worker meets at."""
    return 1


def torchrun_command(
    workers: int,
    port: int,
    nnodes: int = 1,
    node_rank: int = 0,
    master: str = "127.0.0.1",
    python: str = sys.executable,
) -> list[str]:
    """``torchrun`` starting ``workers`` processes on this node of ``nnodes``."""
    cmd = [python, "-m", "torch.distributed.run", "--nnodes", str(nnodes)]
    cmd += ["--nproc-per-node", str(workers)]
    if nnodes == 1:
        cmd += ["--master-addr", master, "--master-port", str(port)]
    else:
        cmd += ["--node-rank", str(node_rank), "--rdzv-backend", "c10d"]
        cmd += ["--rdzv-endpoint", f"{master}:{port}"]
    return [*cmd, "--max-restarts", "0", "-m", SPEC.worker_module]


def local_commands(
    workers: int, ports: Sequence[int], args: list[str], out_dir: Path, host: str
) -> list[tuple[list[str], dict[str, str]]]:
    return [(torchrun_command(workers, ports[0], master=host) + list(args), {})]


def cluster_commands(
    workers: int, hosts: Sequence[str], port: int, args: list[str], out_dir: str
) -> list[tuple[str, str]]:
    return [
        (
            host,
            shlex.join(
                torchrun_command(workers, port, len(hosts), rank, master=hosts[0], python="python")
                + list(args)
            ),
        )
        for rank, host in enumerate(hosts)
    ]
