"""The one training recipe: what every framework's training step does, framework-free.

A fair training benchmark runs the *same work* everywhere: the same ResNet-50 weights and batch
(``resnet.random_batch(batch, image_size, seed=0)``: standard-normal images, integer class
labels), the same loss and the same optimizer with the same hyper-parameters. Every adapter's
``train_step`` takes its defaults from :data:`TRAIN` and every benchmark training cell builds
its optimizer from it; each adapter reads the values back from the optimizer and loss objects
it really built (``Prepared.recipe``), and ``tests/test_registry.py`` compares them with
:data:`TRAIN` for every framework.

The learning rate is small on purpose: a benchmark repeats the step hundreds of times on one
batch, and a large rate would drive the weights to divergence or into denormal numbers, which
changes the speed, not only the numbers.
"""

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
    """The recipe as an adapter read it back from its framework's objects (floats rounded to
    float32 precision, which is how frameworks store them), in :meth:`Recipe.as_dict`'s shape."""

    def f32(x: float) -> float:
        return float(f"{float(x):.7g}")

    loss = "cross_entropy_mean" if loss_reduction_is_mean and not label_smoothing else "other"
    return Recipe(
        "sgd", f32(lr), f32(momentum), bool(nesterov), f32(weight_decay or 0.0), loss
    ).as_dict()
