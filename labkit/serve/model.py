"""The model a server answers with: ResNet-50 from the canonical weights, in one framework and
serving mode, loaded through the framework's ``serving`` module and warmed up.

:func:`modes` lists what can be served (each registered framework's ``serve_modes``, read from
the specs without importing a framework); :func:`load` builds the model of one of them (its
width is the profile's: ``smoke`` serves a narrow ResNet-50, :func:`network_name` says so) and
runs every batch size it will meet before the server says it is ready (:func:`warm_up`).

Not for: HTTP (:mod:`labkit.serve.app`) or batching (:mod:`labkit.serve.batching`).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import frameworks, profiles, resnet
from .protocol import TensorSpec

__all__ = [
    "CLASSES",
    "INPUT",
    "MODEL_NAME",
    "OUTPUT",
    "Loaded",
    "check_mode",
    "load",
    "modes",
    "network_name",
    "tensor_spec",
    "warm_up",
]

#: the model's name in every URL, its version, its input and output tensors' names
MODEL_NAME = "resnet50"
INPUT, OUTPUT = "images", "logits"
CLASSES = 1000


def modes() -> list[tuple[str, str]]:
    """Every (framework, serving mode) the lab serves, in registry order."""
    return [(s.name, m) for s in frameworks.specs() for m in s.serve_modes]


def check_mode(framework: str, mode: str) -> tuple[str, str]:
    """``(framework, mode)`` if the lab serves it, else ``ValueError`` listing what it serves."""
    spec = frameworks.spec(framework)
    if mode not in spec.serve_modes:
        offered = ", ".join(f"{f}/{m}" for f, m in modes())
        raise ValueError(
            f"{framework} has no serving mode {mode!r}: the lab serves {offered} "
            "(--framework F --mode M)"
        )
    return framework, mode


def network_name(width: int) -> str:
    """ResNet-50, or what a narrower one is (the smoke profile's)."""
    if width == resnet.WIDTH:
        return "ResNet-50"
    return f"a narrow ResNet-50 (width {width} instead of {resnet.WIDTH}: the same layers)"


def tensor_spec(image_size: int, max_request: int) -> TensorSpec:
    """The input the server takes: FP32 images, NCHW, any batch up to ``max_request``."""
    return TensorSpec(INPUT, "FP32", (-1, 3, image_size, image_size), max_request)


@dataclass
class Loaded:
    """A serving model, loaded and warmed up, with what it cost."""

    framework: str
    mode: str
    predict: object  #: NCHW float32 batch -> logits
    notes: str
    fixed_shapes: bool
    image_size: int
    width: int
    export_s: float | None
    prepare_s: float  #: building the model (and exporting, loading it back), seconds
    first_call_s: float = 0.0  #: the first call of the warm-up (a compile, a trace)
    warmup_s: float = 0.0  #: every warm-up call together
    warmup_calls: int = 0
    warmed: set[int] = field(default_factory=set)  #: batch sizes run before ready
    folder: tempfile.TemporaryDirectory | None = None  #: where an export lives, kept with it


def load(
    framework: str, mode: str, image_size: int | None = None, width: int | None = None
) -> Loaded:
    """The model of ``framework``/``mode`` holding :func:`labkit.resnet.init_weights` (seed 0,
    1000 classes) at ``width`` (default: the profile's ``resnet_width``), for ``image_size``
    images (default: the profile's)."""
    check_mode(framework, mode)
    profile = profiles.current()
    image_size = resnet.check_image_size(image_size or profile.image_size)
    width = width or profile.resnet_width
    serving = frameworks.serving(framework)
    folder = tempfile.TemporaryDirectory(prefix="labkit-serve-")
    t0 = time.perf_counter()
    served = serving.load(resnet.init_weights(0, CLASSES, width), mode, Path(folder.name))
    return Loaded(
        framework,
        mode,
        served.predict,
        served.notes,
        served.fixed_shapes,
        image_size,
        width,
        served.export_s,
        time.perf_counter() - t0,
        folder=folder,
    )


def warm_up(model: Loaded, sizes: list[int]) -> Loaded:
    """Run each batch size in ``sizes`` twice (the first call compiles or traces where the mode
    does): what the server does before it says it is ready."""
    t_all = time.perf_counter()
    for n in sizes:
        images = resnet.random_batch(n, model.image_size)[0]
        for _ in range(2):
            t0 = time.perf_counter()
            out = np.asarray(model.predict(images))
            if model.warmup_calls == 0:
                model.first_call_s = time.perf_counter() - t0
            model.warmup_calls += 1
        if out.shape != (n, CLASSES):
            raise RuntimeError(f"the model answered shape {out.shape} for {n} images")
        model.warmed.add(n)
    model.warmup_s = time.perf_counter() - t_all
    return model
