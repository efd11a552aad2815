"""TensorFlow's serving modes (:mod:`labkit.serve`):

- ``eager``: the Keras model called eagerly (``training=False``), op by op;
- ``savedmodel``: the model exported as a SavedModel (Keras 3 ``model.export``, what TensorFlow
  Serving loads) and loaded back with ``tf.saved_model.load``; requests run its
  ``serving_default`` signature, a graph traced once for any batch size.

TensorFlow Serving itself (``tensorflow_model_server``) runs the same SavedModel folder; it is
not installable from the package registries here, so the lab runs the SavedModel in its own
server (notebook 07b says how to start TF Serving on it).
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
    """The model of serving ``mode`` holding ``weights``; ``savedmodel`` exports it under
    ``directory`` first (``Served.export_s``: the export and the load)."""
    check_choice(SPEC.name, "serving mode", mode, SPEC.serve_modes)
    model = adapter.build_resnet50(weights)
    if mode == "eager":
        return Served(lambda images: adapter.predict(model, images), "eager Keras calls")
    notes = "Keras model.export SavedModel, serving_default signature (tf.saved_model.load)"
    return from_export(adapter, model, directory, notes)
