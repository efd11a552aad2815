"""The plain data a framework's graph becomes (``labkit/frameworks/<name>/graphs.py`` build it):
node counts by kind (:class:`OpCounts`).

Not for: the tables a lesson shows of them (:mod:`labkit.lessons.graphs`).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["OpCounts"]


@dataclass(frozen=True)
class OpCounts:
    """Node counts of one graph, by kind, with the kinds that do no arithmetic set apart."""

    by_kind: dict[str, int]
    bookkeeping: frozenset[str] = frozenset()  # kinds that are not computation

    @classmethod
    def of(cls, kinds: Iterable[str], is_bookkeeping: Callable[[str], bool]) -> OpCounts:
        counts = collections.Counter(kinds)
        return cls(dict(counts.most_common()), frozenset(k for k in counts if is_bookkeeping(k)))

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    @property
    def compute(self) -> int:
        """Nodes that compute on tensors (constants, attribute reads, list building excluded)."""
        return sum(n for k, n in self.by_kind.items() if k not in self.bookkeeping)

    def __getitem__(self, kind: str) -> int:
        return self.by_kind.get(kind, 0)

    def count(self, *substrings: str) -> int:
        """Nodes whose kind contains any of ``substrings`` (e.g. ``count("batch_norm")``)."""
        return sum(n for k, n in self.by_kind.items() if any(s in k for s in substrings))

    def top(self, n: int = 8) -> str:
        return ", ".join(f"{k} x{v}" for k, v in list(self.by_kind.items())[:n])
