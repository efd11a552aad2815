"""Do the frameworks compute the same ResNet-50? Each one against PyTorch's in float64.

Two float32 implementations differ by their rounding (the order each one sums in), so each one
may be off the float64 answer by :data:`FP32_SPREAD` times PyTorch's own float32 error, measured
in the same run (or the float32 rounding of the answer itself); a wrong layout, weight or recipe
is off by order 1.
"""

from __future__ import annotations

import numpy as np

from .. import frameworks as fw
from .. import resnet
from ..util.numeric import max_rel_diff

__all__ = ["FP32_SPREAD", "REFERENCE", "crosscheck", "reference_logits", "step_check"]

#: the framework every other one's logits are compared with
REFERENCE = "torch"

#: How many times PyTorch's own float32 error another float32 implementation may be off.
#: Measured (ResNet-50, 64 px, batch 2-3, 1 and 2 threads, AVX2 and AVX-512): logits within 1x;
#: one training step's update within 3.5x, 4.8x on the worst tensor (BatchNorm at a tiny batch
#: conditions the gradient badly: a summation order moves an update by percents, a bug by 100%).
FP32_SPREAD = 10.0


def crosscheck(
    frameworks: list[str] | None = None,
    seed: int = 0,
    batch: int = 2,
    image_size: int = 64,
    width: int = resnet.WIDTH,
) -> dict:
    """``{"errors": {framework: error}, "limit": ...}``: each framework's eval logits (every
    available one by default; PyTorch's float32 run always) against float64 on the same weights
    and batch (:func:`max_rel_diff`), and the limit of :func:`reference_logits`."""
    names = fw.available() if frameworks is None else [fw.spec(n).name for n in frameworks]
    weights = resnet.init_weights(seed, width=width)
    images, _ = resnet.random_batch(batch, image_size, seed)
    exact, limit = reference_logits(weights, images)
    errors = {}
    for name in fw.import_order(dict.fromkeys([REFERENCE, *names])):  # PaddlePaddle first
        adapter = fw.get(name)
        logits = np.asarray(adapter.predict(adapter.build_resnet50(weights), images))
        if logits.shape != exact.shape:
            raise RuntimeError(
                f"{name} returned logits of shape {logits.shape}, the reference {exact.shape}"
            )
        errors[name] = max_rel_diff(logits, exact)
    return {"errors": {n: errors[n] for n in dict.fromkeys([REFERENCE, *names])}, "limit": limit}


def reference_logits(
    weights: dict[str, np.ndarray], images: np.ndarray
) -> tuple[np.ndarray, float]:
    """The float64 logits of ``weights`` on ``images``, and the limit on a float32 run's
    :func:`max_rel_diff` from them (from PyTorch's own float32 error)."""
    torch_adapter = fw.get(REFERENCE)
    exact = torch_adapter.predict_float64(weights, images)
    mine = torch_adapter.predict(torch_adapter.build_resnet50(weights), images)
    floor = max_rel_diff(exact.astype(np.float32), exact)  # the float32 rounding of the answer
    return exact, FP32_SPREAD * max(max_rel_diff(mine, exact), floor)


def step_check(
    frameworks: list[str],
    weights: dict[str, np.ndarray],
    images: np.ndarray,
    labels: np.ndarray,
) -> dict:
    """One training step of each framework (PyTorch's float32 one too) against float64:
    ``{"errors": {framework: {tensor: error}}, "limits": {tensor: limit}}``, a tensor's error
    being that of its update as a share of the reference update (``"update"``: all trainable
    tensors at once; ``"loss"``: the loss's relative error). Running variances follow each
    framework's convention (Keras folds in the biased batch variance) and are left out."""
    exact_loss, exact = fw.get(REFERENCE).train_step_float64(weights, images, labels)
    tensors = [n for n in weights if resnet.is_trainable(n) or n.endswith("running_mean")]
    exact_update = {n: exact[n] - weights[n] for n in tensors}
    trainable = [n for n in tensors if resnet.is_trainable(n)]

    def share(update: dict[str, np.ndarray], names: list[str]) -> float:
        """``||update - exact|| / ||exact||`` over ``names`` together (float64 updates)."""
        diff = np.concatenate([(update[n] - exact_update[n]).ravel() for n in names])
        whole = np.concatenate([exact_update[n].ravel() for n in names])
        return float(np.linalg.norm(diff)) / (float(np.linalg.norm(whole)) or 1.0)

    def relative(update: dict[str, np.ndarray]) -> dict[str, float]:
        return {n: share(update, [n]) for n in tensors} | {"update": share(update, trainable)}

    stored = {n: exact[n].astype(np.float32).astype(np.float64) - weights[n] for n in tensors}
    floors = relative(stored) | {"loss": float(np.finfo(np.float32).eps)}
    errors = {}
    for name in [REFERENCE, *fw.import_order(n for n in frameworks if n != REFERENCE)]:
        loss, new = fw.get(name).train_step(weights, images, labels)
        update = {n: new[n].astype(np.float64) - weights[n] for n in tensors}
        errors[name] = relative(update) | {"loss": abs(loss - exact_loss) / abs(exact_loss)}
    # PyTorch's error on a tensor or over the whole update, the larger (one tensor's own error
    # is one sample of the rounding; the whole update's is steadier)
    ref = errors[REFERENCE]
    scale = {t: e if t in ("update", "loss") else max(e, ref["update"]) for t, e in ref.items()}
    limits = {t: FP32_SPREAD * max(scale[t], floors[t]) for t in floors}
    return {"errors": errors, "limits": limits}
