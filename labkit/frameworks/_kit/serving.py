"""What the framework packages' serving modules share (``<name>/serving.py``): a serving mode
that runs a model through its deployment format, exported and loaded back, timed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..contract import Served

__all__ = ["from_export"]


def from_export(adapter: Any, model: Any, directory: str | Path, notes: str) -> Served:
    """``model`` written by ``adapter.export`` under ``directory`` and loaded back with
    ``adapter.load_exported``: the callable a server runs, with the seconds both took
    (``Served.export_s``)."""
    t0 = time.perf_counter()
    run = adapter.load_exported(adapter.export(model, directory))
    return Served(run, notes, export_s=time.perf_counter() - t0)
