"""How TensorFlow's data-parallel workers are started: one plain process per worker, each told
the cluster and its own index by ``TF_CONFIG``. Framework-free."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

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
    "TensorFlow 2.21's gRPC server (tf.distribute) listens on 0.0.0.0:PORT, every interface, "
    "whatever host TF_CONFIG names (fixed in GrpcServer::Init, no option changes it): each "
    "worker's port is open to the network, without authentication, while the job runs"
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
    return [([sys.executable, *args], {"TF_CONFIG": tf_config(cluster, i)}) for i in range(workers)]


def cluster_commands(
    workers: int, hosts: Sequence[str], port: int, args: list[str], out_dir: str
) -> list[tuple[str, str]]:
    """One command per worker; the workers of one host listen on ``port``, ``port + 1``, ..."""
    placed = [(h, f"{h}:{port + i}") for h in hosts for i in range(workers)]
    cluster = [address for _, address in placed]
    script = shlex.join(["python", *args])
    return [
        (host, f"TF_CONFIG={shlex.quote(tf_config(cluster, index))} {script}")
        for index, (host, _address) in enumerate(placed)
    ]
