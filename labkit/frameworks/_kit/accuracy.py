"""The accuracy cost of a low-precision path: its logits against its framework's fp32 model.

:func:`cost` runs :data:`IMAGES` synthetic images (seeded apart from the timed batch) through both,
in batches of the cell's size, and gives the largest logit difference (absolute and relative to
the largest fp32 logit) and the top-1 agreement. The lab's seeded random weights give nearly
every synthetic image the same top class, so ``centred_top1_agreement`` (each class's mean over
the images subtracted first) is the telling one: whether the low precision keeps what tells the
images apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ... import resnet
from ...util.numeric import difference, top1_agreement

__all__ = ["cost"]

#: synthetic images an accuracy cost is measured on (rounded up to a whole number of batches)
IMAGES = 256
#: their seed (the timed batch uses seed 0)
SEED = 7


def images(image_size: int, batch: int, n: int = IMAGES) -> np.ndarray:
    """``n`` synthetic NCHW float32 images (rounded up to a multiple of ``batch``)."""
    count = batch * math.ceil(n / batch)
    return resnet.random_batch(count, image_size, seed=SEED)[0]


def _logits(run: Callable[[np.ndarray], np.ndarray], x: np.ndarray, batch: int) -> np.ndarray:
    parts = [np.asarray(run(x[i : i + batch]), dtype=np.float64) for i in range(0, len(x), batch)]
    return np.concatenate(parts)


def cost(
    reference: Callable[[np.ndarray], np.ndarray],
    lowp: Callable[[np.ndarray], np.ndarray],
    image_size: int,
    batch: int,
    what: str,
    n: int = IMAGES,
) -> dict:
    """The accuracy cost of ``lowp`` against ``reference`` (both: NCHW images -> logits):
    ``{reference: what, images, max_abs_diff, max_rel_diff, top1_agreement, top1_classes,
    centred_top1_agreement}`` (see the module's docstring)."""
    x = images(image_size, batch, n)
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
