"""``torchrun`` whose rendezvous store listens only on the address it is given.

``python -m labkit.frameworks.torch.torchrun ARGS`` is ``torchrun ARGS``
(:func:`torch.distributed.run.main`) with one more rendezvous backend, ``bound-static``
(:data:`BACKEND`): the ``static`` rendezvous of one machine, whose TCPStore listens on the
endpoint's address alone. labkit starts one-machine jobs with it
(``--rdzv-backend bound-static --rdzv-endpoint 127.0.0.1:PORT``), so nothing of the job can be
reached from another machine.

Why torchrun alone cannot: with PyTorch 2.13 a TCPStore server listens on *every* interface
(``[::]:PORT``, dual-stack) whatever ``host_name`` says, with the libuv backend and the
classic one alike, and torchrun's agent hosts one with every rendezvous backend: ``static``
(``--master-addr``/``--master-port``), ``c10d`` and ``--standalone`` (``c10d`` on
``localhost:0``; ``c10d`` also starts a second, shared store on a free port). The store has no
authentication. The one way PyTorch offers to restrict it is ``TCPStore(master_listen_fd=...)``:
the server then listens on a socket the caller bound. This backend binds that socket to the
endpoint's address and hands it over, and registers through the rendezvous registry's public
``register`` (what torchrun's out-of-tree handlers use). The workers connect to this store as
clients (``TORCHELASTIC_USE_AGENT_STORE``); their gloo sockets follow ``GLOO_SOCKET_IFNAME``.

This module imports PyTorch (it runs in torchrun's process, not in labkit's launcher).
"""

from __future__ import annotations

import socket
from datetime import timedelta

from torch.distributed import PrefixStore, Store, TCPStore
from torch.distributed.elastic.rendezvous import (
    RendezvousHandler,
    RendezvousInfo,
    RendezvousParameters,
    RendezvousStoreInfo,
    rendezvous_handler_registry,
)
from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint

__all__ = [
    "BACKEND",
    "TIMEOUT_S",
    "BoundStaticRendezvous",
    "bound_store",
    "create_handler",
    "listening_socket",
    "main",
]

BACKEND = "bound-static"
TIMEOUT_S = 600  # torchrun's static rendezvous waits as long


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (that address only) and listening."""
    family, kind, proto, _name, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def bound_store(host: str, port: int, timeout: timedelta) -> TCPStore:
    """A TCPStore server (one agent: this one) that listens on ``host:port`` only."""
    sock = listening_socket(host, port)
    return TCPStore(
        host,
        port,
        1,
        True,
        timeout,
        multi_tenant=True,
        master_listen_fd=sock.detach(),  # the store owns (and closes) the socket from now on
    )


class BoundStaticRendezvous(RendezvousHandler):
    """torchrun's static rendezvous of a single machine, its store bound to one address."""

    def __init__(self, host: str, port: int, run_id: str, timeout_s: int):
        self.host, self.port, self.run_id = host, port, run_id
        self.timeout = timedelta(seconds=timeout_s)
        self.store: Store | None = None

    def get_backend(self) -> str:
        return BACKEND

    @property
    def use_agent_store(self) -> bool:
        return True  # the workers are clients of this store: none of them hosts another

    def next_rendezvous(self) -> RendezvousInfo:
        if self.store is None:
            self.store = bound_store(self.host, self.port, self.timeout)
        return RendezvousInfo(
            PrefixStore(self.run_id, self.store),
            0,
            1,
            RendezvousStoreInfo(self.host, self.port),
        )

    def is_closed(self) -> bool:
        return False

    def set_closed(self) -> None:
        pass

    def num_nodes_waiting(self) -> int:
        return 0

    def get_run_id(self) -> str:
        return self.run_id

    def shutdown(self) -> bool:
        return True


def create_handler(params: RendezvousParameters) -> RendezvousHandler:
    if params.max_nodes != 1:
        raise ValueError(
            f"the {BACKEND} rendezvous runs one machine (--nnodes 1), got --nnodes "
            f"{params.min_nodes}:{params.max_nodes}: use --rdzv-backend c10d for several"
        )
    host, port = parse_rendezvous_endpoint(params.endpoint.strip(), -1)
    if not host or port == -1:
        raise ValueError(
            f"the {BACKEND} rendezvous needs --rdzv-endpoint HOST:PORT, got {params.endpoint!r}"
        )
    timeout = int(params.config.get("timeout", TIMEOUT_S))
    return BoundStaticRendezvous(host, port, params.run_id, timeout)


def main(argv: list[str] | None = None) -> None:
    from torch.distributed import run

    rendezvous_handler_registry.register(BACKEND, create_handler)
    run.main(argv)


if __name__ == "__main__":
    main()
