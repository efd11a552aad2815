"""``torchrun`` whose rendezvous store listens only on the address it is given.

``python -m labkit.frameworks.torch.torchrun ARGS`` is ``torchrun ARGS`` with one more
rendezvous backend, ``bound-static`` (``--rdzv-backend bound-static --rdzv-endpoint
127.0.0.1:PORT``). Why: in PyTorch 2.13 a TCPStore server listens on *every* interface whatever
``host_name`` says, with no authentication; its one way to restrict it is
``TCPStore(master_listen_fd=...)``, a socket the caller bound: this backend binds it and
registers itself through the rendezvous registry's public ``register``.
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
    "main",
]

BACKEND = "bound-static"
TIMEOUT_S = 600  # torchrun's static rendezvous waits as long


def bound_store(host: str, port: int, timeout: timedelta) -> TCPStore:
    """A TCPStore server (one agent: this one) that listens on ``host:port`` only."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=128)  # host:port only
    # the store owns (and closes) the socket from now on
    fd = sock.detach()
    return TCPStore(host, port, 1, True, timeout, multi_tenant=True, master_listen_fd=fd)


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
        where = RendezvousStoreInfo(self.host, self.port)
        return RendezvousInfo(PrefixStore(self.run_id, self.store), 0, 1, where)

    def is_closed(self) -> bool:  # one machine, one round: never closed, nobody waiting
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
