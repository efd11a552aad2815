"""How PyTorch's data-parallel workers are started: ``torchrun`` running the worker script.
Framework-free. On one machine everything listens
on ``host`` (127.0.0.1): the rendezvous store through :mod:`labkit.frameworks.torch.torchrun`
(torchrun with one more rendezvous backend: plain torchrun's store listens on every interface),
gloo and NCCL through ``GLOO_SOCKET_IFNAME``/``NCCL_SOCKET_IFNAME``. On several machines, plain
torchrun with a c10d rendezvous at the first (the others must reach its store).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from ...util import net

__all__ = [
    "BOUND_BACKEND",
    "BOUND_TORCHRUN",
    "CLUSTER_VARIABLES",
    "ENVIRONMENT",
    "EVERY_INTERFACE",
    "cluster_commands",
    "local_commands",
    "ports_needed",
]

CLUSTER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
ENVIRONMENT: dict[str, str] = {"OMP_NUM_THREADS": "1"}  # the worker sets its own threads
EVERY_INTERFACE: str | None = None
BOUND_TORCHRUN = "labkit.frameworks.torch.torchrun"
BOUND_BACKEND = "bound-static"  # labkit.frameworks.torch.torchrun.BACKEND


def ports_needed(workers: int) -> int:
    """One port: the rendezvous store that every worker meets at."""
    return 1


def local_commands(
    workers: int, ports: Sequence[int], args: list[str], out_dir: Path, host: str
) -> list[tuple[list[str], dict[str, str]]]:
    """torchrun with the bound rendezvous at ``host``; gloo and NCCL on ``host``'s interface."""
    interface = net.interface_of(host)
    env = {k: interface for k in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")} if interface else {}
    cmd = [sys.executable, "-m", BOUND_TORCHRUN, "--nproc-per-node", str(workers)]
    cmd += ["--rdzv-backend", BOUND_BACKEND, "--rdzv-endpoint", f"{host}:{ports[0]}"]
    return [(cmd + list(args), env)]


def cluster_commands(
    workers: int, hosts: Sequence[str], port: int, args: list[str], out_dir: str
) -> list[tuple[str, str]]:
    """The same torchrun line on every host: a c10d rendezvous at the first host."""
    cmd = ["torchrun", "--nnodes", str(len(hosts)), "--nproc-per-node", str(workers)]
    cmd += ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"{hosts[0]}:{port}"]
    return [(host, shlex.join(cmd + list(args))) for host in hosts]
