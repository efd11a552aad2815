"""The one training recipe every framework's training step follows (:data:`TRAIN`), so that a
training benchmark runs the same work everywhere; each adapter reads it back from the objects it
built (:func:`applied`). The learning rate is small: hundreds of steps on one batch must not
drive the weights into divergence or denormals, which would change the speed."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["TRAIN", "Recipe", "applied"]


@dataclass(frozen=True)
class Recipe:
    """SGD with momentum on the mean cross-entropy: the classic ResNet-50 training step."""

    optimizer: str = "sgd"  #: stochastic gradient descent with (heavy-ball) momentum
    lr: float = 1e-3
    momentum: float = 0.9
    nesterov: bool = False
    weight_decay: float = 0.0
    #: softmax cross-entropy of the logits against integer labels, averaged over the batch
    loss: str = "cross_entropy_mean"

    def as_dict(self) -> dict:
        return asdict(self)


#: the recipe of every training step in the lab
TRAIN = Recipe()


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
    return Recipe("sgd", lr, momentum, bool(nesterov), weight_decay, loss).as_dict()
