"""The one training recipe every framework's training step follows (:data:`TRAIN`), so that a
training benchmark runs the same work everywhere; each adapter reads it back from the objects it
built (:func:`applied`). The learning rate is small: hundreds of steps on one batch must not
drive the weights into divergence or denormals, which would change the speed."""

from __future__ import annotations

from collections import namedtuple

__all__ = ["TRAIN", "Recipe", "applied"]

#: a training step's recipe; "sgd": stochastic gradient descent with (heavy-ball) momentum,
#: "cross_entropy_mean": the softmax cross-entropy of the logits against integer labels, batch mean
Recipe = namedtuple("Recipe", ["optimizer", "lr", "momentum", "nesterov", "weight_decay", "loss"])
#: the recipe of every training step in the lab, the classic ResNet-50 one
TRAIN = Recipe("sgd", 1e-3, 0.9, False, 0.0, "cross_entropy_mean")


def applied(
    lr: float,
    momentum: float,
    nesterov: bool,
    weight_decay: float,
    loss_reduction_is_mean: bool,
    label_smoothing: float = 0.0,
) -> dict:
    """The recipe as an adapter read it back (floats at float32 precision), as a dict."""
    lr, momentum, weight_decay = (
        float(f"{float(x):.7g}") for x in (lr, momentum, weight_decay or 0)
    )
    loss = "cross_entropy_mean" if loss_reduction_is_mean and not label_smoothing else "other"
    return Recipe("sgd", lr, momentum, bool(nesterov), weight_decay, loss)._asdict()
