"""PyTorch's serving modes (:mod:`labkit.serve`): the eval-mode ResNet-50 as an inference server
runs it, one host batch of any size at a time.

- ``eager``: plain ``nn.Module`` calls under ``torch.inference_mode``;
- ``compile``: ``torch.compile(model, dynamic=False)``: Inductor compiles one graph per input
  shape, so every new batch size is compiled the first time it arrives (tens of seconds for
  ResNet-50 on a laptop CPU). A server pads batches to a few sizes and compiles each one before
  it says it is ready;
- ``compile_dynamic``: ``torch.compile(model, dynamic=True)``: the batch dimension is symbolic,
  so one graph serves every batch size from 2 up (size 1 is specialised: a second graph).

Compilation happens on the first call of each shape, in this process (the caller sets
``TORCHINDUCTOR_COMPILE_THREADS=1`` to keep Inductor's compile workers out of a server's process
tree).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ... import resnet
from .._kit.cells import check_choice
from ..contract import Served
from . import SPEC, adapter

__all__ = ["load"]

_NOTES = {
    "eager": "eager nn.Module, torch.inference_mode",
    "compile": "torch.compile(dynamic=False): one Inductor graph per batch size",
    "compile_dynamic": "torch.compile(dynamic=True): one Inductor graph for every batch size >= 2",
}


def load(weights: dict[str, np.ndarray], mode: str, directory: str | Path) -> Served:
    """The model of serving ``mode`` holding ``weights`` (``directory`` is not needed: nothing
    is exported)."""
    check_choice(SPEC.name, "serving mode", mode, SPEC.serve_modes)
    model = adapter.build_resnet50(weights)
    net = model
    if mode != "eager":
        # Inductor loads torch.utils.mkldnn, built on TorchScript, which warns as it loads
        with adapter.quiet_torchscript():
            net = torch.compile(model, dynamic=mode == "compile_dynamic")

    def predict(images: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(resnet.check_images(images))
        with torch.inference_mode():
            return net(x).numpy()

    return Served(predict, _NOTES[mode], fixed_shapes=mode == "compile")
