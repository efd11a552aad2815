"""MindSpore adapter: ResNet-50 v1.5 as a ``mindspore.nn.Cell``, in PyNative and graph mode
(``mindspore.jit`` inside a PyNative process, so one process runs both). Importing it sends
MindSpore's compile-failure reports (``MS_OM_PATH``) to this user's scratch folder.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from ... import recipe, resnet
from ...util import tempdirs
from .. import kernel_support
from .._kit import cells
from .._kit.cells import check_cell, check_threads, host_batch
from ..contract import Prepared, Unsupported
from . import SPEC

__all__ = [
    "build_resnet50",
    "max_pool",
    "native_name",
    "predict",
    "prepare",
    "scratch_folder",
    "set_threads",
    "threads",
    "to_canonical",
    "train_step",
    "version",
]

#: MindSpore's name of a canonical tensor (BatchNorm's differ)
native_name = cells.renamer(
    weight="gamma", bias="beta", running_mean="moving_mean", running_var="moving_variance"
)


def version() -> str:
    return ms.__version__


def scratch_folder() -> Path:
    """This user's scratch folder for MindSpore's files."""
    return tempdirs.private_dir("graphlab") / "mindspore"


# importing the adapter is enough: MindSpore's compile-failure reports (rank_0/om/analyze_fail.ir,
# beside a notebook by default) go to MS_OM_PATH where one is set, else to the scratch folder
os.environ.setdefault("MS_OM_PATH", str(scratch_folder()))


_threads: int | None = None
_INTER = 1  # the lab's inter-op policy: one dispatch (runtime) thread


def set_threads(n: int) -> None:
    """``n`` CPU kernel threads and one dispatch thread; MindSpore takes them once per process:
    the same count again is a no-op, another one ``RuntimeError``."""
    global _threads
    n = check_threads(n)
    if _threads is not None and _threads != n:
        raise RuntimeError(
            f"MindSpore's CPU thread count is already {_threads} in this process and "
            f"can be set only once; start a new Python process to use {n}"
        )
    if _threads is None:
        ms.device_context.cpu.op_tuning.threads_num(n)
        ms.runtime.dispatch_threads_num(_INTER)
        _threads = n


def threads() -> dict[str, int | None]:
    """``intra`` read back; ``inter`` as set (MindSpore 2.8 has no getter; None: unset)."""
    inter = None if _threads is None else _INTER
    return {"intra": int(ms.get_context("runtime_num_threads")), "inter": inter}


def _conv(c: resnet.Conv) -> nn.Conv2d:
    # explicit symmetric padding ("pad"), as PyTorch; "same" would pad asymmetrically at stride 2
    return nn.Conv2d(
        c.cin, c.cout, c.kernel, c.stride, "pad", c.padding, has_bias=False, weight_init="zeros"
    )


def _bn(c: resnet.Conv) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(c.cout, eps=resnet.BN_EPS, momentum=0.9)  # torch's 0.1


def max_pool(x):
    """The stem's max-pool, padded with -inf as PyTorch's (``nn.MaxPool2d(pad_mode="pad")``
    breaks a MindIR export with a dynamic input shape)."""
    return ops.max_pool2d(x, kernel_size=3, stride=2, padding=1)


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
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet50(nn.Cell):
    """ResNet-50 v1.5 with the canonical structure, so parameter names follow the spec."""

    def __init__(self, num_classes: int = 1000, width: int = resnet.WIDTH):
        super().__init__()
        s = resnet.stem(width)
        self.conv1, self.bn1 = _conv(s), _bn(s)
        self.relu = nn.ReLU()
        for stage, blocks in itertools.groupby(
            resnet.blocks(width), lambda b: b.name.split(".")[0]
        ):
            setattr(self, stage, nn.SequentialCell([Bottleneck(b) for b in blocks]))
        self.fc = nn.Dense(resnet.features(width), num_classes)

    def construct(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = max_pool(x)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = ops.mean(x, (2, 3))  # global average pool
        return self.fc(x)


def build_resnet50(weights: dict[str, np.ndarray]) -> ResNet50:
    """An eval-mode ResNet-50 Cell holding ``weights``."""
    net = ResNet50(resnet.validate_weights(weights), resnet.width_of(weights))
    params = dict(net.parameters_and_names())
    for name, value in weights.items():
        params[native_name(name)].set_data(ms.Tensor(np.asarray(value, dtype=np.float32)))
    net.set_train(False)
    return net


def to_canonical(net: nn.Cell) -> dict[str, np.ndarray]:
    return cells.canonical_weights(dict(net.parameters_and_names()), native_name)


def predict(net: nn.Cell, images: np.ndarray) -> np.ndarray:
    """Eval-mode logits of an NCHW float32 batch, as numpy (the Cell is set to eval mode)."""
    images = resnet.check_images(images)
    net.set_train(False)
    return net(ms.Tensor(images)).asnumpy()


def _train_fn(net: nn.Cell, lr: float, momentum: float, graph: bool) -> tuple[Callable, dict]:
    """One step as ``fn(images, labels) -> loss`` (MindSpore's ``TrainOneStepCell``), and the
    recipe its optimizer and loss read back; ``nn.Momentum`` keeps ``v = momentum * v + g;
    w -= lr * v``, as PyTorch's SGD."""
    net.set_train(True)
    r = recipe.TRAIN
    loss_fn = nn.CrossEntropyLoss()  # mean over the batch, integer class labels
    optimizer = nn.Momentum(
        net.trainable_params(),
        learning_rate=lr,
        momentum=momentum,
        weight_decay=r.weight_decay,
        use_nesterov=r.nesterov,
    )
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
    applied = recipe.applied(
        float(optimizer.learning_rate.asnumpy()),
        float(optimizer.momentum.asnumpy()),
        optimizer.use_nesterov,
        float(optimizer.weight_decay),
        loss_fn.reduction == "mean",
        float(loss_fn.label_smoothing),
    )
    return (ms.jit(step) if graph else step), applied


def train_step(
    weights: dict[str, np.ndarray],
    images: np.ndarray,
    labels: np.ndarray,
    lr: float = recipe.TRAIN.lr,
    momentum: float = recipe.TRAIN.momentum,
) -> tuple[float, dict[str, np.ndarray]]:
    """One SGD-with-momentum step in train mode: the loss before it and the new weights."""
    net = build_resnet50(weights)
    step, _ = _train_fn(net, lr, momentum, graph=False)
    loss = step(ms.Tensor(resnet.check_images(images)), ms.Tensor(np.asarray(labels, np.int32)))
    return float(loss.asnumpy()), to_canonical(net)


def _bf16_conv() -> str | None:
    """Why a bfloat16 convolution fails here (its informative lines), None where it runs."""
    conv = nn.Conv2d(3, 4, 3, pad_mode="pad", padding=1, has_bias=False).to_float(ms.bfloat16)
    try:
        ops.cast(conv(ms.Tensor(np.ones((1, 3, 8, 8), np.float32))), ms.float32).asnumpy()
    except (TypeError, RuntimeError, ValueError) as exc:  # framed by rulers and call stacks
        lines = [ln.strip() for ln in str(exc).splitlines()]
        return " ".join([ln for ln in lines if ln and not ln.startswith(("-", "node:"))][:2])
    return None


def prepare(
    weights: dict[str, np.ndarray],
    mode: str,
    task: str,
    batch_size: int,
    precision: str = "fp32",
    image_size: int = 224,
    device: str = "cpu",
) -> Prepared:
    """One benchmark step: ``pynative`` calls the Cell (or the training step) as plain Python;
    ``graph`` wraps the same function in ``mindspore.jit``, compiled whole on its first call.
    ``bf16``: ``mindspore.amp.auto_mixed_precision`` where a bfloat16 convolution runs."""
    check_cell(SPEC, mode, task, batch_size, precision, device)
    if device == "gpu":
        if not ms.device_context.gpu.is_available():
            raise Unsupported(dict(SPEC.why_not)["gpu"])
        ms.set_device("GPU")
    probe = f"{SPEC.name} ({device.upper()})"
    if precision == "bf16" and (why := kernel_support(probe, version(), "bf16", _bf16_conv)):
        raise Unsupported(why)
    images, labels = host_batch(weights, batch_size, image_size)
    net, graph = build_resnet50(weights), mode == "graph"
    notes = [dict(SPEC.mode_notes)[mode], device]
    if precision == "bf16":
        net = ms.amp.auto_mixed_precision(net, "auto", dtype=ms.bfloat16)
        notes.append("mindspore.amp.auto_mixed_precision(level='auto', dtype=bfloat16)")
    applied, extra = None, ()
    if task == "train":  # forward, gradients and nn.Momentum: one jit in graph mode
        run, applied = _train_fn(net, recipe.TRAIN.lr, recipe.TRAIN.momentum, graph=graph)
        extra = (ms.Tensor(labels.astype(np.int32)),)
    else:
        net.set_train(False)

        def forward(x):
            logits = net(x)
            return logits if precision == "fp32" else ops.cast(logits, ms.float32)

        run = ms.jit(forward) if graph else forward

    step = lambda: run(ms.Tensor(images), *extra).asnumpy()  # the logits, or the loss
    return Prepared(step, int(batch_size), "; ".join(notes), recipe=applied)
