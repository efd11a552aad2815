"""Benchmark results: one record per cell, one JSON object per line (JSON Lines), appended as
each cell finishes. Invalid records are kept and flagged; :func:`valid` is what evidence is drawn
from. Rooms: schema (fields, checks, verdict), store (read, append), query (choose, pair),
compare (ratios, break-even), summary (the text table), cards (a learner's result card).
"""

from . import cards
from .compare import Estimate, break_even, break_even_rows, ratio, speedups
from .query import (
    best,
    context,
    flags,
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
    Record,
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
from .summary import table

__all__ = [
    "CACHE_STATES",
    "CONTEXT",
    "DEFAULT_MODEL",
    "FIELDS",
    "KEY",
    "BadLine",
    "Estimate",
    "Record",
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
