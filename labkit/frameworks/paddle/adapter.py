"""PaddlePaddle adapter: ResNet-50 v1.5 as a ``paddle.nn.Layer`` (``nn.Linear`` keeps ``(in,
out)``, the transpose of ``fc.weight``). Modes: ``dygraph`` (eager); ``sot``
(``to_static(full_graph=False)``: bytecode capture with graph breaks); ``ast``
(``to_static(full_graph=True)``: source conversion into one program, or an error), with
``backend=None`` (the CPU wheel has no CINN).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import paddle
from paddle import nn
from paddle.vision.models.resnet import BottleneckBlock

from ... import recipe, resnet
from .._kit import cells
from .._kit.cells import check_cell, check_threads, host_batch
from ..contract import Prepared, Unsupported
from . import SPEC

__all__ = [
    "build_resnet50",
    "native_name",
    "predict",
    "prepare",
    "set_threads",
    "threads",
    "to_canonical",
    "train_step",
    "version",
]

#: Paddle's name of a canonical tensor (BatchNorm's statistics differ)
native_name = cells.renamer(running_mean="_mean", running_var="_variance")
#: the flags that hold the lab's thread policy (Paddle has no getter for its math threads)
THREAD_FLAGS = ("FLAGS_paddle_num_threads", "FLAGS_enable_pir_in_executor_trace_run")
#: the recipe's loss: softmax cross-entropy of logits against integer labels, batch mean
LOSS = nn.CrossEntropyLoss(reduction="mean")

paddle.set_device("cpu")


def version() -> str:
    return paddle.__version__


def set_threads(n: int) -> None:
    """``n`` intra-op threads (the math library); a program's operators one after another."""
    n = check_threads(n)
    paddle.base.core.set_num_threads(n)
    paddle.set_flags({THREAD_FLAGS[0]: n, THREAD_FLAGS[1]: True})


def threads() -> dict[str, int | None]:
    flags = paddle.get_flags(list(THREAD_FLAGS))
    return {"intra": int(flags[THREAD_FLAGS[0]]), "inter": 1 if flags[THREAD_FLAGS[1]] else None}


def _conv(c: resnet.Conv) -> nn.Conv2D:
    return nn.Conv2D(c.cin, c.cout, c.kernel, stride=c.stride, padding=c.padding, bias_attr=False)


def _bn(channels: int) -> nn.BatchNorm2D:
    return nn.BatchNorm2D(channels, momentum=0.9, epsilon=resnet.BN_EPS)  # torch's 0.1


def _block(block: resnet.Block) -> BottleneckBlock:
    """Paddle's own bottleneck (v1.5: the 3x3 carries the stride) for one of the spec's blocks."""
    c1, c2, _ = block.convs
    d = block.downsample
    shortcut = None if d is None else nn.Sequential(_conv(d), _bn(d.cout))
    return BottleneckBlock(c1.cin, c1.cout, c2.stride, shortcut, norm_layer=_bn)


class ResNet50(nn.Layer):
    """ResNet-50 v1.5 under torchvision's names."""

    def __init__(self, num_classes: int = 1000, width: int = resnet.WIDTH):
        super().__init__()
        stem = resnet.stem(width)
        self.conv1, self.bn1 = _conv(stem), _bn(stem.cout)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        for stage, blocks in itertools.groupby(
            resnet.blocks(width), lambda b: b.name.split(".")[0]
        ):
            setattr(self, stage, nn.Sequential(*map(_block, blocks)))
        self.avgpool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(resnet.features(width), num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(paddle.flatten(self.avgpool(x), 1))


def build_resnet50(weights: dict[str, np.ndarray]) -> ResNet50:
    """An eval-mode ``ResNet50`` holding ``weights`` (``ValueError`` names a bad tensor)."""
    model = ResNet50(resnet.validate_weights(weights), resnet.width_of(weights))
    state = model.state_dict()
    for name, value in weights.items():
        value = np.asarray(value, dtype=np.float32)
        state[native_name(name)].set_value(value.T if name == "fc.weight" else value)
    model.eval()
    return model


def to_canonical(model: nn.Layer) -> dict[str, np.ndarray]:
    return cells.canonical_weights(model.state_dict(), native_name, transposed=("fc.weight",))


def predict(model: nn.Layer, images: np.ndarray) -> np.ndarray:
    """Eval-mode logits for a host batch (NCHW float32)."""
    x = paddle.to_tensor(resnet.check_images(images))
    model.eval()
    with paddle.no_grad():
        return model(x).numpy()


def _step_fn(net: nn.Layer, lr: float, momentum: float) -> tuple[Callable, dict]:
    """One training step of ``net`` (in train mode now) as ``fn(images, labels) -> loss``, and
    the recipe its optimizer and loss read back; ``Momentum`` keeps ``v = momentum * v + g;
    w -= lr * v``."""
    r = recipe.TRAIN
    net.train()
    opt = paddle.optimizer.Momentum(
        lr, momentum, net.parameters(), use_nesterov=r.nesterov, weight_decay=r.weight_decay or None
    )

    def step(x: paddle.Tensor, y: paddle.Tensor) -> paddle.Tensor:
        loss = LOSS(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    decay = opt.regularization  # Paddle has public getters for neither momentum nor decay
    return step, recipe.applied(
        opt.get_lr(),
        opt._momentum,
        opt._use_nesterov,
        0.0 if decay is None else float(decay._coeff),
        LOSS.reduction == "mean",
        float(LOSS.label_smoothing or 0.0),
    )


def train_step(
    weights: dict[str, np.ndarray],
    images: np.ndarray,
    labels: np.ndarray,
    lr: float = recipe.TRAIN.lr,
    momentum: float = recipe.TRAIN.momentum,
) -> tuple[float, dict[str, np.ndarray]]:
    """One SGD-with-momentum step in train mode: the loss before it and the new weights."""
    model = build_resnet50(weights)
    step, _ = _step_fn(model, lr, momentum)
    loss = step(paddle.to_tensor(resnet.check_images(images)), paddle.to_tensor(labels, "int64"))
    return float(loss.numpy()), to_canonical(model)


def prepare(
    weights: dict[str, np.ndarray],
    mode: str,
    task: str,
    batch_size: int,
    precision: str = "fp32",
    image_size: int = 224,
    device: str = "cpu",
) -> Prepared:
    """One benchmark step: inference under ``paddle.no_grad``, or a training step with the lab's
    recipe; each step copies the host batch in and the result out (``sot``/``ast``: the first
    call captures the program)."""
    check_cell(SPEC, mode, task, batch_size, precision, device)
    if device == "gpu" and not paddle.is_compiled_with_cuda():
        raise Unsupported(dict(SPEC.why_not)["gpu"])
    paddle.set_device(device)
    images, labels = host_batch(weights, batch_size, image_size)
    net = build_resnet50(weights)
    if mode != "dygraph":  # to_static wraps the Layer's forward in place
        net = paddle.jit.to_static(net, full_graph=mode == "ast", backend=None)
    run, applied = net, None
    if task == "train":
        train, applied = _step_fn(net, recipe.TRAIN.lr, recipe.TRAIN.momentum)
        labels = paddle.to_tensor(labels)  # int64
        run = lambda x: train(x, labels)

    def step() -> np.ndarray:  # the logits, or the loss
        with paddle.set_grad_enabled(task == "train"):
            return run(paddle.to_tensor(images)).numpy()

    return Prepared(step, int(batch_size), dict(SPEC.mode_notes)[mode], recipe=applied)
