"""MindSpore's serving modes (:mod:`labkit.serve`):

- ``pynative``: the ``nn.Cell`` called in PyNative mode (eager, MindSpore 2.x's default);
- ``mindir``: the Cell exported as MindIR (``mindspore.export``, dynamic batch and image size)
  and loaded back as an ``nn.GraphCell``: the compiled graph MindSpore's serving tools run. Each
  new batch size costs a little the first time (its kernels are resized), not a new graph.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._kit.cells import check_choice
from .._kit.serving import from_export
from ..contract import Served
from . import SPEC, adapter

__all__ = ["load"]


def load(weights: dict[str, np.ndarray], mode: str, directory: str | Path) -> Served:
    """The model of serving ``mode`` holding ``weights``; ``mindir`` exports it under
    ``directory`` first (``Served.export_s``: the export and the load)."""
    check_choice(SPEC.name, "serving mode", mode, SPEC.serve_modes)
    net = adapter.build_resnet50(weights)
    if mode == "pynative":
        return Served(lambda images: adapter.predict(net, images), "PyNative: plain Cell calls")
    notes = "mindspore.export MindIR (dynamic shape), loaded as nn.GraphCell"
    return from_export(adapter, net, directory, notes)
