"""How PyTorch's data-parallel workers are started: ``torchrun``
(``python -m torch.distributed.run``).

Framework-free: it builds command lines (a :class:`labkit.frameworks.contract.Launch`) for
:mod:`labkit.distributed`. On one machine torchrun starts ``workers`` processes that meet at
``host:port`` and run :mod:`labkit.frameworks.torch.distributed` (DDP; gloo on CPUs, NCCL on
GPUs); on one machine everything listens on ``host`` only (127.0.0.1): torchrun's store (see
:mod:`labkit.frameworks.torch.torchrun`), gloo and NCCL (``GLOO_SOCKET_IFNAME`` and
``NCCL_SOCKET_IFNAME``: the interface of ``host``). On several machines one torchrun per machine
joins a c10d rendezvous at the first one (its store then listens on every interface, as the other
machines must reach it).
torchrun gives each worker ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and
``MASTER_PORT``.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from ...util import net
from . import SPEC

__all__ = [
    "BOUND_BACKEND",
    "BOUND_TORCHRUN",
    "CLUSTER_VARIABLES",
    "ENVIRONMENT",
    "EVERY_INTERFACE",
    "SOCKET_INTERFACES",
    "cluster_commands",
    "local_commands",
    "ports_needed",
    "torchrun_command",
]

CLUSTER_VARIABLES: tuple[str, ...] = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
)
ENVIRONMENT: dict[str, str] = {}
EVERY_INTERFACE: str | None = None  # the store and gloo listen on host (see local_commands)
#: torchrun with a rendezvous whose store listens on the endpoint's address only (one machine;
#: :mod:`labkit.frameworks.torch.torchrun` says why plain torchrun listens on every interface)
BOUND_TORCHRUN = "labkit.frameworks.torch.torchrun"
BOUND_BACKEND = "bound-static"  # labkit.frameworks.torch.torchrun.BACKEND
#: the variables that tell gloo and NCCL which network interface to use
SOCKET_INTERFACES: tuple[str, ...] = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
#: what this launcher's workers offer beyond data-parallel replicas (labkit.distributed.Job
#: checks a job against them): sharded training, PowerSGD, and restarts of failed workers
STRATEGIES: tuple[str, ...] = ("ddp", "fsdp")
COMM_HOOKS: tuple[str, ...] = ("powersgd",)
RESTARTS = True  # torchrun --max-restarts: every worker starts again when one fails


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
    bound: bool = False,
    restarts: int = 0,
) -> list[str]:
    """``torchrun`` starting ``workers`` processes on this node of ``nnodes``.

    ``bound`` (one node): labkit's torchrun (:data:`BOUND_TORCHRUN`), whose rendezvous store
    listens on ``master`` alone; else torchrun itself, whose store listens on every interface
    (one node: the static rendezvous at ``master``; several: a c10d rendezvous there).
    ``restarts``: ``--max-restarts``, how often torchrun starts the whole group of workers
    again after one fails (they resume from the job's checkpoint)."""
    if bound:
        if nnodes != 1:
            raise ValueError(f"a bound rendezvous runs one machine, got nnodes={nnodes}")
        cmd = [python, "-m", BOUND_TORCHRUN, "--nnodes", "1", "--nproc-per-node", str(workers)]
        cmd += ["--rdzv-backend", BOUND_BACKEND, "--rdzv-endpoint", f"{master}:{port}"]
        return [*cmd, "--max-restarts", str(restarts), "-m", SPEC.worker_module]
    cmd = [python, "-m", "torch.distributed.run", "--nnodes", str(nnodes)]
    cmd += ["--nproc-per-node", str(workers)]
    if nnodes == 1:
        cmd += ["--master-addr", master, "--master-port", str(port)]
    else:
        cmd += ["--node-rank", str(node_rank), "--rdzv-backend", "c10d"]
        cmd += ["--rdzv-endpoint", f"{master}:{port}"]
    return [*cmd, "--max-restarts", str(restarts), "-m", SPEC.worker_module]


def local_commands(
    workers: int,
    ports: Sequence[int],
    args: list[str],
    out_dir: Path,
    host: str,
    restarts: int = 0,
) -> list[tuple[list[str], dict[str, str]]]:
    """torchrun on ``host`` (the store listens there only); gloo's sockets, and NCCL's
    bootstrap sockets on GPUs, on ``host``'s interface (NCCL otherwise picks the first
    interface that is not loopback; this one is not checked here: the lab's machines have
    no GPUs)."""
    interface = net.interface_of(host)
    env = {k: interface for k in SOCKET_INTERFACES} if interface else {}
    command = torchrun_command(workers, ports[0], master=host, bound=True, restarts=restarts)
    return [(command + list(args), env)]


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
