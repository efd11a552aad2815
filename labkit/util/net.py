"""Ports and interfaces of this machine: a free port, a port free on every address, the interface
that holds an address.
"""

from __future__ import annotations

import errno
import socket

__all__ = ["LOOPBACK", "WILDCARDS", "PortInUse", "check_port", "free_port", "interface_of"]

LOOPBACK = "127.0.0.1"
#: the wildcards: a program that listens on every interface, or on any one address, holds a port
#: for them too, and a server that binds every interface needs the port free on each
WILDCARDS: tuple[str, ...] = ("0.0.0.0", "::")


class PortInUse(ValueError):
    """A port that another program holds; the message says on which address."""


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that nobody listens on right now on ``host`` (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def check_port(port: int, host: str = LOOPBACK) -> int:
    """``port`` if it can be bound on ``host`` and on the wildcards (:data:`WILDCARDS`), else
    :class:`PortInUse` ("port N on HOST is already in use by another program (...)" or "... on
    another address of this machine ..."): a port that another program holds on any address of
    this machine is refused. ``ValueError`` for a number that is not a port."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port must be an integer in 1..65535, got {port!r}")
    for address in dict.fromkeys((host, *WILDCARDS)):
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind((address, port))
        except OSError as exc:
            # a wildcard of a family this machine lacks (no IPv6): nothing can listen there either
            if address != host and exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
                continue
            where = (
                f"on {host} is already in use by another program ({exc.strerror})"
                if address == host
                else f"is already in use by another program on another address of this "
                f"machine (it cannot be bound on {address}, every interface: {exc.strerror})"
            )
            raise PortInUse(f"port {port} {where}") from None
    return port


def interface_of(address: str) -> str | None:
    """The network interface that holds ``address`` (``lo`` for 127.0.0.1 on Linux), None when
    no interface does."""
    import psutil

    for name, addresses in psutil.net_if_addrs().items():
        if any(a.address.split("%")[0] == address for a in addresses):
            return name
    return None
