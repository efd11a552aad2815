"""Benchmark results: one record per cell, one JSON object per line (JSON Lines), appended as
each cell finishes. Invalid records are kept and flagged; :func:`valid` is what evidence is drawn
from. Rooms: schema (the record, its checks, the verdict), store (read, append), compare (choose,
pair, ratios, break-even, the text table), cards (a learner's result card). The package exports
the public names of its first three rooms.
"""

from . import cards, compare, schema, store
from .compare import *
from .schema import *
from .store import *

__all__ = ["cards"]
__all__ += schema.__all__ + store.__all__ + compare.__all__
