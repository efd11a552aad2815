"""MindSpore adapter: ResNet-50 v1.5 as a ``mindspore.nn.Cell``, in PyNative and graph mode.

MindSpore 2.x runs in PyNative mode (eager) by default. Its static graph mode is reached here
with ``mindspore.jit`` (``capture_mode="ast"``: the Python source of ``construct`` is parsed and
compiled to one graph), which works inside a PyNative process, so that one process can run and
compare both modes. Setting ``mindspore.set_context(mode=mindspore.GRAPH_MODE)`` compiles every
Cell call the same way, but it is global to the process.

Layout: MindSpore is NCHW like PyTorch, and its convolution kernels ``(out, in, kh, kw)`` and
``Dense`` weights ``(out, in)`` are the canonical layouts, so the weights load unchanged; only
the BatchNorm names differ (``gamma``, ``beta``, ``moving_mean``, ``moving_variance``).
MindSpore's BatchNorm ``momentum=0.9`` is PyTorch's ``momentum=0.1`` (the weight of the old
running statistic, not of the new batch).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from .. import resnet
from ..bench import DEVICES, PRECISIONS, TASKS, Prepared, Unsupported
from . import MODES as _ALL_MODES

NAME = "mindspore"
MODES: tuple[str, ...] = _ALL_MODES[NAME]  # ("pynative", "graph")

#: canonical (torchvision) BatchNorm tensor name -> MindSpore's
BN_NAMES: dict[str, str] = {"weight": "gamma", "bias": "beta",
                            "running_mean": "moving_mean", "running_var": "moving_variance"}
_BN_MODULES: frozenset[str] = frozenset(c.bn for c in resnet.all_convs())
_BN_MOMENTUM = 0.9  # = torch's 0.1


def version() -> str:
    return ms.__version__


_threads: int | None = None


def set_threads(n: int) -> None:
    """Use ``n`` threads for MindSpore's CPU kernels (intra-op parallelism).

    Calls ``mindspore.device_context.cpu.op_tuning.threads_num(n)`` (MindSpore's default is 25
    threads, whatever the core count). MindSpore accepts this once per process, before the
    first kernel runs: call it first. Asking again for the same number is a no-op; asking for
    a different one raises ``RuntimeError`` (start a new process, as the benchmark runner does).
    """
    global _threads
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"thread count must be an integer >= 1, got {n!r}")
    if _threads == n:
        return
    if _threads is not None:
        raise RuntimeError(f"MindSpore's CPU thread count is already {_threads} in this process and "
                           f"can be set only once; start a new Python process to use {n}")
    ms.device_context.cpu.op_tuning.threads_num(n)
    _threads = n


# --- the network -----------------------------------------------------------------------------

def _conv(c: resnet.Conv) -> nn.Conv2d:
    # explicit symmetric padding ("pad"), as PyTorch; "same" would pad asymmetrically at stride 2
    return nn.Conv2d(c.cin, c.cout, c.kernel, stride=c.stride, pad_mode="pad", padding=c.padding,
                     has_bias=False, weight_init="zeros")


def _bn(c: resnet.Conv) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(c.cout, eps=resnet.BN_EPS, momentum=_BN_MOMENTUM)


class Bottleneck(nn.Cell):
    """1x1 reduce, 3x3 (carries the stride: v1.5), 1x1 expand, plus the (projected) shortcut."""

    def __init__(self, block: resnet.Block):
        super().__init__()
        c1, c2, c3 = block.convs
        self.conv1, self.bn1 = _conv(c1), _bn(c1)
        self.conv2, self.bn2 = _conv(c2), _bn(c2)
        self.conv3, self.bn3 = _conv(c3), _bn(c3)
        self.relu = nn.ReLU()
        d = block.downsample
        self.downsample = None if d is None else nn.SequentialCell([_conv(d), _bn(d)])

    def construct(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet50(nn.Cell):
    """ResNet-50 v1.5 with the canonical structure, so parameter names follow the spec."""

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        s = resnet.stem()
        self.conv1, self.bn1 = _conv(s), _bn(s)
        self.relu = nn.ReLU()
        # MindSpore 2.8's CPU max-pool pads with -inf, as PyTorch (checked in the tests)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="pad", padding=1)
        stages: dict[str, list[Bottleneck]] = {}
        for b in resnet.blocks():
            stages.setdefault(b.name.split(".")[0], []).append(Bottleneck(b))
        self.layer1 = nn.SequentialCell(stages["layer1"])
        self.layer2 = nn.SequentialCell(stages["layer2"])
        self.layer3 = nn.SequentialCell(stages["layer3"])
        self.layer4 = nn.SequentialCell(stages["layer4"])
        self.fc = nn.Dense(512 * resnet.EXPANSION, num_classes)

    def construct(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = ops.mean(x, (2, 3))  # global average pool
        return self.fc(x)


def native_name(canonical: str) -> str:
    """The MindSpore parameter name of a canonical tensor name (only BatchNorm names differ)."""
    module, leaf = canonical.rsplit(".", 1)
    return f"{module}.{BN_NAMES[leaf]}" if module in _BN_MODULES else canonical


def build_resnet50(weights: dict[str, np.ndarray]) -> ResNet50:
    """An eval-mode ResNet-50 Cell holding ``weights`` (BatchNorm running statistics included)."""
    num_classes = resnet.validate_weights(weights)
    net = ResNet50(num_classes)
    params = dict(net.parameters_and_names())
    for name in resnet.param_shapes(num_classes):
        params[native_name(name)].set_data(ms.Tensor(np.asarray(weights[name], dtype=np.float32)))
    net.set_train(False)
    return net


def to_canonical(net: nn.Cell) -> dict[str, np.ndarray]:
    """The Cell's weights under canonical names, as float32 numpy arrays (copies)."""
    params = dict(net.parameters_and_names())
    num_classes = int(params["fc.bias"].shape[0])
    return {name: np.array(params[native_name(name)].asnumpy(), dtype=np.float32, copy=True)
            for name in resnet.param_shapes(num_classes)}


def check_images(images: np.ndarray) -> np.ndarray:
    """Images must be an NCHW float array with 3 channels and a size ResNet-50 can take."""
    shape = np.shape(images)
    if len(shape) != 4 or shape[1] != 3:
        raise ValueError(f"images must be NCHW with 3 channels, e.g. (8, 3, 224, 224); got shape {shape}")
    resnet.check_image_size(int(shape[2]))
    resnet.check_image_size(int(shape[3]))
    return np.ascontiguousarray(images, dtype=np.float32)


def predict(net: nn.Cell, images: np.ndarray) -> np.ndarray:
    """Eval-mode logits of an NCHW float32 batch, as numpy."""
    images = check_images(images)
    net.set_train(False)
    return net(ms.Tensor(images)).asnumpy()


# --- training --------------------------------------------------------------------------------

def _train_fn(net: nn.Cell, lr: float, momentum: float, graph: bool) -> Callable:
    """One step (forward, backward, momentum-SGD update) as ``fn(images, labels) -> loss``.

    ``nn.Momentum`` keeps ``v = momentum * v + g; w -= lr * v`` with ``v`` starting at zero,
    which is ``torch.optim.SGD(momentum=...)`` (its first step is ``w -= lr * g`` as well).
    """
    net.set_train(True)
    loss_fn = nn.CrossEntropyLoss()  # mean over the batch, integer class labels
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=momentum)

    def forward(images, labels):
        return loss_fn(net(images), labels)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)

    def step(images, labels):
        loss, grads = grad_fn(images, labels)
        optimizer(grads)
        return loss

    return ms.jit(step) if graph else step


def _labels(labels: np.ndarray) -> ms.Tensor:
    return ms.Tensor(np.asarray(labels, dtype=np.int32))


def train_step(weights: dict[str, np.ndarray], images: np.ndarray, labels: np.ndarray,
               lr: float = 0.1, momentum: float = 0.9) -> tuple[float, dict[str, np.ndarray]]:
    """One SGD-with-momentum step in train mode (batch statistics) from ``weights``.

    Returns the loss before the update and the new canonical weights (BatchNorm running
    statistics updated too).
    """
    net = build_resnet50(weights)
    images = check_images(images)
    step = _train_fn(net, lr, momentum, graph=False)
    loss = step(ms.Tensor(images), _labels(labels))
    return float(loss.asnumpy()), to_canonical(net)
