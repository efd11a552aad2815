"""One batch through every framework's ResNet-50: do they compute the same function?

Framework-agnostic: it reaches each framework through the registry (:func:`labkit.frameworks.get`),
never by importing one, and compares with PyTorch, the reference.
"""

from __future__ import annotations

import numpy as np

from . import frameworks as fw
from . import resnet

REFERENCE = fw.REFERENCE


def crosscheck(
    frameworks: list[str] | None = None,
    seed: int = 0,
    batch: int = 2,
    image_size: int = 64,
    width: int = resnet.WIDTH,
) -> dict[str, float]:
    """Run the same weights and batch through each framework and compare with the reference.

    Returns, per framework (every available one if ``frameworks`` is None), the largest
    absolute difference of its eval-mode logits from PyTorch's, divided by the largest absolute
    PyTorch logit: 0.0 for PyTorch itself, around 1e-6 when two frameworks compute the same
    float32 function, order 1 when a layout or weight is wrong. Needs PyTorch (the reference).
    ``width`` narrows the network (:mod:`labkit.resnet`; 64 is ResNet-50 itself).
    """
    names = fw.available() if frameworks is None else [fw.check_name(n) for n in frameworks]
    weights = resnet.init_weights(seed, width=width)
    images, _ = resnet.random_batch(batch, image_size, seed)
    reference = fw.get(REFERENCE)
    ref = reference.predict(reference.build_resnet50(weights), images)
    scale = float(np.abs(ref).max())
    result: dict[str, float] = {}
    for name in names:
        if name == REFERENCE:
            result[name] = 0.0
            continue
        adapter = fw.get(name)
        logits = np.asarray(adapter.predict(adapter.build_resnet50(weights), images))
        if logits.shape != ref.shape:
            raise RuntimeError(
                f"{name} returned logits of shape {logits.shape}, {REFERENCE} {ref.shape}"
            )
        result[name] = float(np.abs(logits.astype(np.float64) - ref).max()) / scale
    return result
