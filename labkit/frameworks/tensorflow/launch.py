"""How TensorFlow's data-parallel workers are started: one plain process per worker, each told
the whole cluster and its own index by the ``TF_CONFIG`` environment variable.

Framework-free: it builds command lines (a :class:`labkit.frameworks.contract.Launch`) for
:mod:`labkit.distributed`. TensorFlow has no launcher of its own: every worker runs
:mod:`labkit.frameworks.tensorflow.distributed` (``MultiWorkerMirroredStrategy``), whose gRPC
server listens on the port of its own ``host:port`` of the cluster list, on every interface
(:data:`EVERY_INTERFACE`: TensorFlow gives no way to bind it to ``host``).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from . import SPEC

__all__ = [
    "CLUSTER_VARIABLES",
    "ENVIRONMENT",
    "EVERY_INTERFACE",
    "cluster_commands",
    "local_commands",
    "ports_needed",
    "tf_config",
]

CLUSTER_VARIABLES: tuple[str, ...] = ("TF_CONFIG",)
ENVIRONMENT: dict[str, str] = {"TF_CPP_MIN_LOG_LEVEL": "2"}  # errors only
EVERY_INTERFACE: str | None = (
    "TensorFlow's gRPC server (tf.distribute, TF 2.21) listens on 0.0.0.0:PORT, every "
    "interface, whatever host TF_CONFIG names: the address is fixed in its C++ code "
    "(GrpcServer::Init) and no option or environment variable changes it. Each worker's port "
    "is open to the network while the job runs, without authentication"
)


def ports_needed(workers: int) -> int:
    """One port per worker: each worker's server listens on its own."""
    return workers


def tf_config(hosts: Sequence[str], index: int) -> str:
    """The ``TF_CONFIG`` of worker ``index`` in a cluster of ``host:port`` workers."""
    return json.dumps(
        {"cluster": {"worker": list(hosts)}, "task": {"type": "worker", "index": index}}
    )


def local_commands(
    workers: int, ports: Sequence[int], args: list[str], out_dir: Path, host: str
) -> list[tuple[list[str], dict[str, str]]]:
    cluster = [f"{host}:{p}" for p in ports[:workers]]
    module = [sys.executable, "-m", SPEC.worker_module, *args]
    return [(module, {"TF_CONFIG": tf_config(cluster, i)}) for i in range(workers)]


def cluster_commands(
    workers: int, hosts: Sequence[str], port: int, args: list[str], out_dir: str
) -> list[tuple[str, str]]:
    """One command per worker process; the workers of one host listen on ``port``,
    ``port + 1``, ..."""
    placed = [(h, f"{h}:{port + i}") for h in hosts for i in range(workers)]
    cluster = [address for _, address in placed]
    module = shlex.join(["python", "-m", SPEC.worker_module, *args])
    return [
        (host, f"TF_CONFIG={shlex.quote(tf_config(cluster, index))} {module}")
        for index, (host, _address) in enumerate(placed)
    ]
