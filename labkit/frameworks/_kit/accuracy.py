"""The accuracy cost of a low-precision path: its logits against its framework's fp32 model on
:data:`IMAGES` synthetic images (seeded apart from the timed batch). The lab's random weights give
nearly every synthetic image the same top class, so ``centred_top1_agreement`` (each class's mean
over the images subtracted first) tells whether the low precision keeps what tells them apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ... import resnet
from ...util.numeric import difference, top1_agreement

__all__ = ["cost"]

IMAGES = 256  #: synthetic images (rounded up to a whole number of batches), seed 7


def _logits(run: Callable[[np.ndarray], np.ndarray], x: np.ndarray, batch: int) -> np.ndarray:
    parts = [np.asarray(run(x[i : i + batch]), dtype=np.float64) for i in range(0, len(x), batch)]
    return np.concatenate(parts)


def cost(
    reference: Callable[[np.ndarray], np.ndarray],
    lowp: Callable[[np.ndarray], np.ndarray],
    image_size: int,
    batch: int,
    what: str,
) -> dict:
    """The accuracy cost of ``lowp`` against ``reference`` (both: NCHW images -> logits)."""
    x = resnet.random_batch(batch * math.ceil(IMAGES / batch), image_size, seed=7)[0]
    ref = _logits(reference, x, max(batch, 16))
    got = _logits(lowp, x, batch)
    if got.shape != ref.shape:
        raise ValueError(f"logits of shape {got.shape} against fp32 logits of shape {ref.shape}")
    d = difference(got, ref)
    mean = ref.mean(axis=0)
    return {
        "reference": what,
        "images": len(x),
        "max_abs_diff": d.largest,
        "max_rel_diff": d.relative(),
        "top1_agreement": top1_agreement(ref, got),
        "top1_classes": len(set(ref.argmax(1).tolist())),
        "centred_top1_agreement": top1_agreement(ref - mean, got - mean),
    }
