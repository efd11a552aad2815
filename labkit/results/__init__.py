"""Benchmark results: one JSON object per line (JSON Lines), appended as each cell finishes.

A line is one cell (framework x mode x task x batch x precision on a device), measured
(``status: "ok"``) or failed (``"failed"`` with ``error``; ``"unsupported": true`` for a
combination a framework does not offer). The rooms: :mod:`~labkit.results.schema` (the fields,
:data:`FIELDS`, their checks and the validity verdict), :mod:`~labkit.results.store` (strict
reading, locked appends; a truncated last line is skipped with a warning; schema-1 files still
load, :func:`~labkit.results.schema.upgrade`), :mod:`~labkit.results.query` (choosing and pairing records),
:mod:`~labkit.results.compare` (one ratio with a bootstrap interval, break-evens),
:mod:`~labkit.results.summary` (the text table) and :mod:`~labkit.results.cards` (a learner's
result card). Invalid records are kept and flagged; :func:`valid` is what evidence is drawn
from.
"""

from . import cards
from .compare import Estimate, break_even, break_even_rows, ratio, speedups
from .query import (
    best,
    context,
    invalid,
    is_valid,
    latest,
    ok,
    pair,
    valid,
)
from .schema import (
    CACHE_STATES,
    CONTEXT,
    DEFAULT_MODEL,
    FIELDS,
    KEY,
    custom,
    judge,
    key,
    make,
    model_name,
    problems,
)
from .store import (
    BadLine,
    UnregisteredFramework,
    append,
    load,
    parse_lines,
)
from .summary import flags, table

__all__ = [
    "CACHE_STATES",
    "CONTEXT",
    "DEFAULT_MODEL",
    "FIELDS",
    "KEY",
    "BadLine",
    "Estimate",
    "UnregisteredFramework",
    "append",
    "best",
    "break_even",
    "break_even_rows",
    "cards",
    "context",
    "custom",
    "flags",
    "invalid",
    "is_valid",
    "judge",
    "key",
    "latest",
    "load",
    "make",
    "model_name",
    "ok",
    "pair",
    "parse_lines",
    "problems",
    "ratio",
    "speedups",
    "table",
    "valid",
]
