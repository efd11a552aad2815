"""MindSpore adapter: ResNet-50 v1.5 as a ``mindspore.nn.Cell``, in PyNative and graph mode.

Graph mode is ``mindspore.jit`` (``capture_mode="ast"``: ``construct``'s source parsed and
compiled to one graph) inside a PyNative process, so that one process runs both modes
(``set_context(mode=GRAPH_MODE)`` would be global). Weights load unchanged (NCHW, canonical
kernel layouts); only BatchNorm's names differ (``gamma``, ``beta``, ``moving_mean``,
``moving_variance``), and its ``momentum=0.9`` is PyTorch's 0.1.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from ... import recipe, resnet
from ...util import tempdirs
from .. import kernel_support
from .._kit.cells import check_cell, check_threads, host_batch
from ..contract import Prepared, Unsupported
from . import SPEC

__all__ = [
    "MODES",
    "SPEC",
    "Bottleneck",
    "ResNet50",
    "applied_recipe",
    "build_resnet50",
    "predict",
    "prepare",
    "set_threads",
    "threads",
    "to_canonical",
    "train_step",
    "version",
]

NAME = SPEC.name
MODES = SPEC.modes

#: canonical (torchvision) BatchNorm tensor name -> MindSpore's
BN_NAMES: dict[str, str] = {
    "weight": "gamma",
    "bias": "beta",
    "running_mean": "moving_mean",
    "running_var": "moving_variance",
}
_BN_MODULES: frozenset[str] = frozenset(c.bn for c in resnet.all_convs())
_BN_MOMENTUM = 0.9  # = torch's 0.1


def version() -> str:
    return ms.__version__


#: the environment variable that moves the report MindSpore writes when a graph fails to compile
#: (``rank_0/om/analyze_fail.ir``, under the current folder by default, i.e. beside a notebook)
DEBRIS_ENV = "MS_OM_PATH"


def scratch_folder() -> Path:
    """This user's scratch folder for MindSpore's files, in this user's own folder of the temp
    directory (:func:`labkit.util.tempdirs.private_dir`; ``mindspore`` itself is created by
    MindSpore when it writes)."""
    return tempdirs.private_dir("graphlab") / "mindspore"


def redirect_debris(folder: str | Path | None = None) -> Path:
    """Send MindSpore's compile-failure reports to ``folder`` (default: :func:`scratch_folder`).

    MindSpore reads ``MS_OM_PATH`` when it writes a report, so this works at any time, without
    changing the working directory, and child processes (the runner's cells, msrun's workers)
    inherit it. An explicit ``MS_OM_PATH`` set before is kept unless ``folder`` is given.
    Returns the folder in use.
    """
    if folder is not None:
        os.environ[DEBRIS_ENV] = str(folder)
    else:
        os.environ.setdefault(DEBRIS_ENV, str(scratch_folder()))
    return Path(os.environ[DEBRIS_ENV])


redirect_debris()  # importing the adapter is enough: nothing lands beside a notebook


_threads: int | None = None
_INTER = 1  # the lab's inter-op policy: one dispatch (runtime) thread


def set_threads(n: int) -> None:
    """Use ``n`` threads for MindSpore's CPU kernels (intra-op) and one runtime thread.

    Calls ``mindspore.device_context.cpu.op_tuning.threads_num(n)`` (the MindSpore 2.8 API that
    replaces ``set_context(runtime_num_threads=...)``) and ``mindspore.runtime.
    dispatch_threads_num(1)`` (the runtime's threads that launch kernels side by side: its
    inter-op parallelism, which replaces ``inter_op_parallel_num``). The kernel count is an upper
    bound: MindSpore also sizes its CPU pool by the cores it sees. MindSpore accepts each setting
    once per process and wants it before any work: call this first. Asking again for the same
    number is a no-op; a different one raises ``RuntimeError`` (start a new process, as the
    benchmark runner does).
    """
    global _threads
    n = check_threads(n)
    if _threads == n:
        return
    if _threads is not None:
        raise RuntimeError(
            f"MindSpore's CPU thread count is already {_threads} in this process and "
            f"can be set only once; start a new Python process to use {n}"
        )
    ms.device_context.cpu.op_tuning.threads_num(n)
    from mindspore._c_expression import RuntimeConf

    if not RuntimeConf.get_instance().is_dispatch_threads_num_configured():
        ms.runtime.dispatch_threads_num(_INTER)
    _threads = n


def threads() -> dict[str, int | None]:
    """The thread counts in effect: ``{"intra": N, "inter": M}``.

    ``intra`` is read back from MindSpore (``get_context("runtime_num_threads")``); MindSpore
    2.8 has no getter for the dispatch threads, so ``inter`` is the value it accepted from
    :func:`set_threads` (None when it was never set: MindSpore's default of 5).
    """
    from mindspore._c_expression import RuntimeConf

    inter = _INTER if RuntimeConf.get_instance().is_dispatch_threads_num_configured() else None
    return {"intra": int(ms.get_context("runtime_num_threads")), "inter": inter}


# --- the network -----------------------------------------------------------------------------


def _conv(c: resnet.Conv) -> nn.Conv2d:
    # explicit symmetric padding ("pad"), as PyTorch; "same" would pad asymmetrically at stride 2
    return nn.Conv2d(
        c.cin,
        c.cout,
        c.kernel,
        stride=c.stride,
        pad_mode="pad",
        padding=c.padding,
        has_bias=False,
        weight_init="zeros",
    )


def _bn(c: resnet.Conv) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(c.cout, eps=resnet.BN_EPS, momentum=_BN_MOMENTUM)


def max_pool(x):
    """The stem's 3x3, stride-2 max-pool, padded with -inf as PyTorch's.

    The functional ``ops.max_pool2d`` is used because ``nn.MaxPool2d(pad_mode="pad")`` in the
    network breaks a MindIR export with a dynamic input shape (the reloaded graph fails with
    "Get infer shape function failed, primitive name:raise").
    """
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
        identity = x
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet50(nn.Cell):
    """ResNet-50 v1.5 with the canonical structure, so parameter names follow the spec."""

    def __init__(self, num_classes: int = 1000, width: int = resnet.WIDTH):
        super().__init__()
        s = resnet.stem(width)
        self.conv1, self.bn1 = _conv(s), _bn(s)
        self.relu = nn.ReLU()
        stages: dict[str, list[Bottleneck]] = {}
        for b in resnet.blocks(width):
            stages.setdefault(b.name.split(".")[0], []).append(Bottleneck(b))
        self.layer1 = nn.SequentialCell(stages["layer1"])
        self.layer2 = nn.SequentialCell(stages["layer2"])
        self.layer3 = nn.SequentialCell(stages["layer3"])
        self.layer4 = nn.SequentialCell(stages["layer4"])
        self.fc = nn.Dense(resnet.features(width), num_classes)

    def construct(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = max_pool(x)
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
    width = resnet.width_of(weights)
    net = ResNet50(num_classes, width)
    params = dict(net.parameters_and_names())
    for name in resnet.param_shapes(num_classes, width):
        params[native_name(name)].set_data(ms.Tensor(np.asarray(weights[name], dtype=np.float32)))
    net.set_train(False)
    return net


def to_canonical(net: nn.Cell) -> dict[str, np.ndarray]:
    """The Cell's weights under canonical names, as float32 numpy arrays (copies)."""
    params = dict(net.parameters_and_names())
    num_classes = int(params["fc.bias"].shape[0])
    width = int(params["conv1.weight"].shape[0])
    return {
        name: np.array(params[native_name(name)].asnumpy(), dtype=np.float32, copy=True)
        for name in resnet.param_shapes(num_classes, width)
    }


def predict(net: nn.Cell, images: np.ndarray) -> np.ndarray:
    """Eval-mode logits of an NCHW float32 batch, as numpy (the Cell is set to eval mode)."""
    images = resnet.check_images(images)
    net.set_train(False)
    return net(ms.Tensor(images)).asnumpy()


# --- training --------------------------------------------------------------------------------


def applied_recipe(optimizer: nn.Momentum, loss: nn.CrossEntropyLoss) -> dict:
    """The hyper-parameters ``optimizer`` and ``loss`` really use (compare with the recipe)."""
    return recipe.applied(
        float(optimizer.learning_rate.asnumpy()),
        float(optimizer.momentum.asnumpy()),
        optimizer.use_nesterov,
        float(optimizer.weight_decay),
        loss.reduction == "mean",
        float(loss.label_smoothing),
    )


def _train_fn(net: nn.Cell, lr: float, momentum: float, graph: bool) -> tuple[Callable, dict]:
    """One step (forward, backward, momentum-SGD update) as ``fn(images, labels) -> loss``, and
    the recipe it applies (:func:`applied_recipe`).

    ``nn.Momentum`` keeps ``v = momentum * v + g; w -= lr * v`` with ``v`` starting at zero,
    which is ``torch.optim.SGD(momentum=...)`` (its first step is ``w -= lr * g`` as well).
    """
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

    def forward(images, labels):
        return loss_fn(net(images), labels)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)

    def step(images, labels):
        loss, grads = grad_fn(images, labels)
        optimizer(grads)
        return loss

    return (ms.jit(step) if graph else step), applied_recipe(optimizer, loss_fn)


def _labels(labels: np.ndarray) -> ms.Tensor:
    return ms.Tensor(np.asarray(labels, dtype=np.int32))


def train_step(
    weights: dict[str, np.ndarray],
    images: np.ndarray,
    labels: np.ndarray,
    lr: float = recipe.TRAIN.lr,
    momentum: float = recipe.TRAIN.momentum,
) -> tuple[float, dict[str, np.ndarray]]:
    """One SGD-with-momentum step in train mode (batch statistics) from ``weights``.

    Returns the loss before the update and the new canonical weights (BatchNorm running
    statistics updated too).
    """
    images = resnet.check_images(images)
    net = build_resnet50(weights)
    step, _ = _train_fn(net, lr, momentum, graph=False)
    loss = step(ms.Tensor(images), _labels(labels))
    return float(loss.asnumpy()), to_canonical(net)


# --- benchmark modes -------------------------------------------------------------------------


def _use_device(device: str) -> str:
    """Select the device MindSpore runs on; a GPU only where MindSpore's GPU plugin loads."""
    if device == "cpu":
        return "CPU"
    if not ms.device_context.gpu.is_available():
        raise Unsupported(
            f"MindSpore {ms.__version__} found no usable CUDA GPU. The mindspore wheel carries its "
            "GPU plugin (CUDA 11.1 and 11.6 builds); it loads when an NVIDIA driver, CUDA 11.6 "
            "and cuDNN 8 are installed and on LD_LIBRARY_PATH (see https://www.mindspore.cn/install)"
        )
    ms.set_device("GPU")
    return "GPU"


def _error_summary(exc: Exception) -> str:
    """The informative lines of a MindSpore error (it frames them with rulers and call stacks)."""
    lines = [ln.strip() for ln in str(exc).splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith(("-", "node:"))]
    return " ".join(lines[:2]) or type(exc).__name__


#: why there is no int8 cell: MindSpore's int8 inference is MindSpore Lite's converter
INT8_WHY = (
    "MindSpore 2.8 has no int8 path in PyNative or GRAPH_MODE on a CPU: its post-training "
    "quantisation is MindSpore Lite's converter (a separate package, for MindIR files); the "
    "lab's int8 benchmark path is ONNX Runtime's static quantisation (--frameworks onnxruntime)"
)


def _bf16_failure() -> str | None:
    """Why a bfloat16 convolution fails on the current device, or None if it runs."""
    conv = nn.Conv2d(3, 4, 3, pad_mode="pad", padding=1, has_bias=False).to_float(ms.bfloat16)
    try:
        ops.cast(conv(ms.Tensor(np.ones((1, 3, 8, 8), np.float32))), ms.float32).asnumpy()
    except (TypeError, RuntimeError, ValueError) as exc:
        return _error_summary(exc)
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
    """The benchmark callable for one mode x task x precision x device (see :mod:`labkit.bench`).

    ``pynative`` calls the Cell (or the training step) as plain Python; ``graph`` wraps the same
    function in ``mindspore.jit``, so its first call parses and compiles the whole forward pass
    (or forward, backward and ``nn.Momentum`` update) into one graph. Each step converts the host
    batch to a ``mindspore.Tensor`` and returns only when ``.asnumpy()`` has the result.
    ``bf16`` uses ``mindspore.amp.auto_mixed_precision(level="auto", dtype=bfloat16)`` where a
    bfloat16 convolution runs; MindSpore 2.8's CPU kernels have none, so on the CPU it raises
    :class:`Unsupported` with MindSpore's own reason. ``int8`` raises :class:`Unsupported`
    (:data:`INT8_WHY`).
    """
    check_cell(NAME, MODES, mode, task, batch_size, precision, device)
    if precision == "int8":
        raise Unsupported(INT8_WHY)
    target = _use_device(device)
    if precision == "bf16":
        why = kernel_support(f"{NAME} ({target})", ms.__version__, "bf16", _bf16_failure)
        if why:
            raise Unsupported(why)
    images, labels = host_batch(weights, batch_size, image_size)
    net: nn.Cell = build_resnet50(weights)
    notes = [target]
    if precision == "bf16":
        net = ms.amp.auto_mixed_precision(net, "auto", dtype=ms.bfloat16)
        notes.append("mindspore.amp.auto_mixed_precision(level='auto', dtype=bfloat16)")
    graph = mode == "graph"
    applied = None

    if task == "train":
        run, applied = _train_fn(net, recipe.TRAIN.lr, recipe.TRAIN.momentum, graph=graph)
        y = _labels(labels)
        how = (
            "mindspore.jit of the whole step (forward, value_and_grad, nn.Momentum)"
            if graph
            else "PyNative: forward, value_and_grad, nn.Momentum"
        )

        def step() -> np.ndarray:
            return run(ms.Tensor(images), y).asnumpy()
    else:
        net.set_train(False)

        def forward(x):
            logits = net(x)
            return logits if precision == "fp32" else ops.cast(logits, ms.float32)

        run = ms.jit(forward) if graph else forward
        how = (
            "mindspore.jit(capture_mode='ast') of the forward pass"
            if graph
            else "PyNative: plain Cell calls"
        )

        def step() -> np.ndarray:
            return run(ms.Tensor(images)).asnumpy()

    return Prepared(step, int(batch_size), "; ".join([how, *notes]), recipe=applied)
