"""ONNX Runtime's serving mode (:mod:`labkit.serve`): ``ort``, the ResNet-50 that PyTorch exports
to ONNX (dynamic batch, height and width), run by an optimised session (``ORT_ENABLE_ALL``).

The export is the adapter's, cached per exporter version and weights
(:func:`labkit.frameworks.onnxruntime.adapter.model_file`); ``Served.export_s`` is the time it
took here (seconds for a cached file, tens of seconds for a fresh export). Every batch size runs
through the same session: no new graph per shape.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .._kit.cells import check_choice
from ..contract import Served
from . import SPEC, adapter

__all__ = ["load"]


def load(weights: dict[str, np.ndarray], mode: str, directory: str | Path) -> Served:
    """The session of serving ``mode`` (``ort``) holding ``weights`` (the ONNX file lives in the
    adapter's cache, not in ``directory``)."""
    check_choice(SPEC.name, "serving mode", mode, SPEC.serve_modes)
    t0 = time.perf_counter()
    path = adapter.model_file(weights)
    export_s = time.perf_counter() - t0
    session = adapter.session_from_file(path)
    notes = (
        f"torch.onnx.export (dynamo, dynamic batch) + ORT_ENABLE_ALL on "
        f"{session.get_providers()[0]}"
    )
    return Served(lambda images: adapter.predict(session, images), notes, export_s=export_s)
