"""One item of a table by its ``key``, or an error that lists the keys there are.

Not for: tables keyed on several fields (each says its own way which rows it has).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

__all__ = ["by_key"]

T = TypeVar("T")


def by_key(items: Iterable[T], key: str, what: str, known: str) -> T:
    """The first of ``items`` whose ``.key`` is ``key``; otherwise a ValueError
    ``unknown {what} 'x': {known} a, b, c`` (``known``: "valid claims are", say)."""
    items = tuple(items)
    for item in items:
        if item.key == key:
            return item
    raise ValueError(f"unknown {what} {key!r}: {known} {', '.join(i.key for i in items)}")
