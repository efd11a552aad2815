"""PyTorch adapter: a hand-written ResNet-50 v1.5 whose ``state_dict`` has the canonical names of
:func:`labkit.resnet.param_shapes`, its training step, the benchmark modes and the ONNX export.

Modes: ``eager``; ``compile`` (``torch.compile``, Inductor; bf16 inference on a CPU compiles with
Inductor's freezing, :func:`frozen`); ``torchscript`` (``torch.jit.trace``, frozen for inference:
the deprecated legacy mode). ``bf16`` is ``torch.autocast`` in every mode; no ``int8``.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils import _pytree as pytree

from ... import recipe, resnet
from ...util.stdio import quiet_logs
from .. import kernel_support
from .._kit import accuracy as acc
from .._kit.cells import batch_of, canonical_weights, check_cell, check_threads, host_batch
from ..contract import Prepared, Unsupported
from . import SPEC

__all__ = [
    "ResNet50",
    "as_module",
    "build_resnet50",
    "export",
    "export_model",
    "frozen",
    "predict",
    "predict_float64",
    "prepare",
    "prepare_model",
    "quiet_torchscript",
    "set_threads",
    "threads",
    "to_canonical",
    "train_step",
    "train_step_float64",
    "version",
]


def version() -> str:
    return torch.__version__


def set_threads(n: int) -> None:
    """``n`` intra-op threads and one inter-op thread (PyTorch fixes its inter-op pool at its
    first parallel work: later, a ``RuntimeWarning`` says it kept its pool)."""
    torch.set_num_threads(check_threads(n))
    if torch.get_num_interop_threads() != 1:
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            warnings.warn(
                f"PyTorch's inter-op pool already runs {torch.get_num_interop_threads()} threads: "
                "call set_threads first thing in a fresh process to get one",
                RuntimeWarning,
                stacklevel=2,
            )


def threads() -> dict[str, int]:
    return {"intra": torch.get_num_threads(), "inter": torch.get_num_interop_threads()}


# --------------------------------------------------------------------------------------------
# The network (names follow torchvision)


def _conv_bn(c: resnet.Conv) -> tuple[nn.Conv2d, nn.BatchNorm2d]:
    conv = nn.Conv2d(c.cin, c.cout, c.kernel, stride=c.stride, padding=c.padding, bias=False)
    return conv, nn.BatchNorm2d(c.cout, eps=resnet.BN_EPS)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (carries the stride: v1.5), 1x1 expand; identity or projection shortcut."""

    def __init__(self, spec: resnet.Block):
        super().__init__()
        c1, c2, c3 = spec.convs
        self.conv1, self.bn1 = _conv_bn(c1)
        self.conv2, self.bn2 = _conv_bn(c2)
        self.conv3, self.bn3 = _conv_bn(c3)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if spec.downsample is not None:
            self.downsample = nn.Sequential(*_conv_bn(spec.downsample))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet50(nn.Module):
    """ResNet-50 v1.5: stem (7x7 conv, max pool), four stages of bottlenecks, global mean, fc."""

    def __init__(self, num_classes: int = 1000, width: int = resnet.WIDTH):
        super().__init__()
        self.conv1, self.bn1 = _conv_bn(resnet.stem(width))
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        specs = resnet.blocks(width)
        for i in range(1, len(resnet.STAGES) + 1):
            stage = [Bottleneck(b) for b in specs if b.name.startswith(f"layer{i}.")]
            setattr(self, f"layer{i}", nn.Sequential(*stage))
        self.fc = nn.Linear(resnet.features(width), num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        # a mean over the pixels: the ONNX export then has no shape arithmetic (TVM imports it)
        return self.fc(x.mean((2, 3)))


def build_resnet50(weights: dict[str, np.ndarray]) -> ResNet50:
    """An eval-mode ``ResNet50`` holding ``weights`` (``ValueError`` names a bad tensor)."""
    num_classes = resnet.validate_weights(weights)
    model = ResNet50(num_classes, resnet.width_of(weights))
    # canonical names map 1:1 to the state; num_batches_tracked keeps its zero
    state = {name: torch.from_numpy(np.asarray(a, dtype=np.float32)) for name, a in weights.items()}
    model.load_state_dict(state, strict=False)
    return model.eval()


def to_canonical(model: nn.Module) -> dict[str, np.ndarray]:
    """The model's weights as canonical float32 numpy arrays (exact copies)."""
    state = {name: t.detach().cpu().float() for name, t in model.state_dict().items()}
    return canonical_weights(state, str)


def predict(model: nn.Module, images: np.ndarray) -> np.ndarray:
    """Eval-mode logits for a host batch (NCHW float32), in the model's dtype and device."""
    param = next(model.parameters())
    x = torch.from_numpy(resnet.check_images(images)).to(param.device, param.dtype)
    with torch.inference_mode():
        return model(x).cpu().numpy()


#: the recipe's loss: softmax cross-entropy of logits against integer labels, batch mean
LOSS = nn.CrossEntropyLoss()


def _optimizer(params, lr: float = recipe.TRAIN.lr, momentum: float = recipe.TRAIN.momentum):
    r = recipe.TRAIN
    return torch.optim.SGD(
        params, lr=lr, momentum=momentum, nesterov=r.nesterov, weight_decay=r.weight_decay
    )


def train_step(
    weights: dict[str, np.ndarray],
    images: np.ndarray,
    labels: np.ndarray,
    lr: float = recipe.TRAIN.lr,
    momentum: float = recipe.TRAIN.momentum,
    dtype: torch.dtype = torch.float32,
) -> tuple[float, dict[str, np.ndarray]]:
    """One SGD-with-momentum step in train mode, computed in ``dtype``: the loss before it and
    the new weights (canonical arrays of ``dtype``)."""
    model = build_resnet50(weights).to(dtype).train()
    x = torch.from_numpy(resnet.check_images(images)).to(dtype)
    y = torch.from_numpy(np.asarray(labels, dtype=np.int64))
    opt = _optimizer(model.parameters(), lr, momentum)
    loss = LOSS(model(x), y)
    loss.backward()
    opt.step()
    state = model.state_dict()
    return float(loss.item()), {name: state[name].detach().numpy().copy() for name in weights}


def predict_float64(weights: dict[str, np.ndarray], images: np.ndarray) -> np.ndarray:
    """The float64 reference every float32 implementation's error is measured against: eval-mode
    logits of ``weights`` computed in float64."""
    return predict(build_resnet50(weights).double(), images)


#: :func:`train_step` in float64, with the recipe's hyper-parameters (the reference)
train_step_float64 = partial(train_step, dtype=torch.float64)


# --------------------------------------------------------------------------------------------
# Benchmark modes


@contextlib.contextmanager
def quiet_torchscript():
    """Hush TorchScript's deprecation notes (the course uses it on purpose, as the legacy mode)
    and the TracerWarning of train-mode BatchNorm's batch check (it does not change the graph)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        yield


def _compile(model: nn.Module) -> Callable:
    # Inductor imports torch.utils.mkldnn, which is built on TorchScript and warns as it loads
    with quiet_torchscript():
        return torch.compile(model)


def frozen(model: nn.Module) -> Callable:
    """``torch.compile`` of an eval-mode ``model`` with Inductor's freezing (BatchNorm folded,
    weights pre-packed). In torch 2.13 only the config flag, set while Dynamo compiles (inside a
    call), folds BatchNorm; ``options={"freezing": True}`` does not."""
    return torch._inductor.config.patch(freezing=True)(_compile(model))


def _bf16_conv() -> str | None:
    x, w = torch.ones(1, 3, 8, 8), torch.ones(4, 3, 3, 3)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.nn.functional.conv2d(x, w, padding=1)
    return None if out.dtype == torch.bfloat16 else f"autocast left a convolution in {out.dtype}"


def _graph(model: nn.Module, mode: str, example: tuple, autocast: Callable) -> tuple[Callable, str]:
    """``model``'s graph of ``mode`` for its train or eval mode, and how it was made, in words."""
    training = model.training
    if mode == "eager":
        return model, "eager nn.Module"
    if mode == "torchscript":
        # the network has no data-dependent control flow, so one trace is exact; skip the check
        with quiet_torchscript(), torch.set_grad_enabled(training), autocast():
            traced = torch.jit.trace(model, example, check_trace=False)
            if training:
                return traced, "torch.jit.trace in train mode (not frozen: weights change)"
            return torch.jit.freeze(traced), "torch.jit.trace + torch.jit.freeze (conv-BN folded)"
    if training:
        return _compile(model), "torch.compile (Inductor) of the model; backward via AOTAutograd"
    if autocast is not contextlib.nullcontext and example[0].device.type == "cpu":  # bf16, CPU
        return frozen(model), "torch.compile (Inductor, freezing: weights folded and pre-packed)"
    return _compile(model), "torch.compile (Inductor, default options)"


def _prepared(
    module: nn.Module, hosts: list, cell: tuple[str, str, str, str], loss_of: Callable, labels=None
) -> Prepared:
    """The benchmark step of ``module`` on the host arrays ``hosts`` for the ``cell`` (mode, task,
    precision, device): an inference batch under ``torch.inference_mode``, or a training step
    (``loss_of(outputs, labels)``, the recipe's SGD update); each step copies the host arrays in
    and returns when the work is done (the loss, for training). With :data:`LOSS` (ResNet-50),
    training reads its recipe back and bf16 inference carries its accuracy cost against fp32."""
    mode, task, precision, device = cell
    train, resnet50 = task == "train", loss_of is LOSS
    if device == "gpu" and not torch.cuda.is_available():
        raise Unsupported(f"no CUDA GPU visible to PyTorch {version()} (or a CPU-only build)")
    dev = torch.device("cuda" if device == "gpu" else "cpu")
    autocast, notes = contextlib.nullcontext, []
    if precision == "bf16":
        why = dev.type == "cpu" and kernel_support("torch", version(), "bf16", _bf16_conv)
        if why:  # a tiny probe of this CPU's kernels (cached) finds no bf16 convolution
            raise Unsupported(why)
        autocast = partial(torch.autocast, dev.type, dtype=torch.bfloat16)
        notes = [f"torch.autocast({dev.type}, bfloat16)"]
    module = module.to(dev).train(train)
    params = [p for p in module.parameters() if p.requires_grad]
    if train and not params:
        raise Unsupported("the model has no trainable parameters, so there is nothing to train")
    net, how = _graph(module, mode, tuple(torch.from_numpy(a).to(dev) for a in hosts), autocast)
    opt = _optimizer(params) if train else None
    y = None if labels is None else torch.from_numpy(labels).to(dev)

    def step(arrays: list = hosts) -> object:
        xs = [torch.from_numpy(a).to(dev) for a in arrays]
        with torch.inference_mode(not train), autocast():
            out = net(*xs)
            loss = loss_of(out, y) if train else None
        if train:
            loss.backward()
            opt.step()
            opt.zero_grad()  # the next step's gradients start from none
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return float(loss.detach()) if train else out

    done = Prepared(step, batch_of(hosts), "; ".join([how, *notes]))
    if train and resnet50:
        hyper = [opt.param_groups[0][k] for k in ("lr", "momentum", "nesterov", "weight_decay")]
        done.recipe = recipe.applied(*hyper, LOSS.reduction == "mean", LOSS.label_smoothing)
    elif precision != "fp32" and resnet50:
        lowp = lambda x: step([x]).float().cpu().numpy()
        ref, size = f"PyTorch {version()} fp32 eager nn.Module", hosts[0].shape[-1]
        done.accuracy = lambda: acc.cost(partial(predict, module), lowp, size, done.batch_size, ref)
    return done


def prepare(
    weights: dict[str, np.ndarray],
    mode: str,
    task: str,
    batch_size: int,
    precision: str = "fp32",
    image_size: int = 224,
    device: str = "cpu",
) -> Prepared:
    """One benchmark step of the ResNet-50 holding ``weights`` on the seeded host batch:
    inference, or a training step with the lab's recipe (:func:`_prepared`)."""
    check_cell(SPEC, mode, task, batch_size, precision, device)
    images, labels = host_batch(weights, batch_size, image_size)
    cell = (mode, task, precision, device)
    return _prepared(build_resnet50(weights), [images], cell, LOSS, labels)


# --------------------------------------------------------------------------------------------
# Deployment: ONNX


def export(model: nn.Module, directory: str | Path) -> Path:
    """Write ``directory/model.onnx``: the eval-mode ResNet-50, weights inside, dynamic batch and
    image size. The exporter's optimiser is off and only constants are folded, so the file keeps
    the canonical names and leaves fusing to ONNX Runtime (which checks the file as it loads)."""
    Dim, least = torch.export.Dim, resnet.MIN_IMAGE_SIZE
    dims = {"x": {0: Dim("batch", min=1), 2: Dim("height", min=least), 3: Dim("width", min=least)}}
    return export_model(
        model,
        [resnet.random_batch(2, 64)[0]],
        directory,
        input_names=["images"],
        output_names=["logits"],
        dynamic_shapes=dims,
        optimize=False,
    )


# --------------------------------------------------------------------------------------------
# A learner's own model (labkit.explore): any nn.Module or function of tensors


def as_module(model: nn.Module | Callable) -> nn.Module:
    """``model`` itself when it is an ``nn.Module``, else the function as one (what
    ``torch.export`` and tracing take)."""
    if isinstance(model, nn.Module):
        return model
    if not callable(model):
        raise ValueError(
            f"expected a torch.nn.Module or a function of tensors, got {type(model).__name__}"
        )
    module = nn.Module()
    module.forward = model  # an instance attribute: called as model(*args), without self
    return module


def export_model(
    model: nn.Module | Callable, inputs: list[np.ndarray], directory: str | Path, **options
) -> Path:
    """Write ``directory/model.onnx``: ``model`` in eval mode (its mode put back after) exported
    for ``inputs``' shapes by ``torch.onnx.export``'s dynamo exporter with ``options`` (none: its
    defaults, as a learner would call it), constants folded; the exporter's notes on skipped
    torchvision ops and pytree's FutureWarning hushed."""
    import onnxscript.optimizer

    path = Path(directory) / "model.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    module, was_training = as_module(model), getattr(model, "training", False)
    args = tuple(torch.from_numpy(np.array(a, copy=True)) for a in inputs)
    try:
        with quiet_logs(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning)
            program = torch.onnx.export(module.eval(), args, dynamo=True, verbose=False, **options)
    finally:
        module.train(was_training)
    # without the exporter's optimiser, the zero biases it gives each Conv are computed: fold them
    onnxscript.optimizer.fold_constants(program.model)
    onnxscript.optimizer.remove_unused_nodes(program.model)
    program.save(path)
    return path


def _squares(out: object, _: object) -> torch.Tensor:
    """A learner's model's synthetic loss: the mean of its squared floating-point outputs."""
    outs = [t for t in pytree.tree_leaves(out) if torch.is_tensor(t) and t.is_floating_point()]
    if not outs:
        raise ValueError("the model returns no floating-point tensor to train on")
    return sum(t.float().pow(2).mean() for t in outs)


def prepare_model(
    model: nn.Module | Callable,
    inputs: list[np.ndarray],
    mode: str,
    task: str,
    precision: str = "fp32",
    device: str = "cpu",
) -> Prepared:
    """The benchmark step of a learner's model: inference, or a synthetic loss (the mean of the
    squared floating-point outputs) and one SGD-with-momentum update."""
    check_cell(SPEC, mode, task, batch_of(inputs), precision, device)
    done = _prepared(as_module(model), inputs, (mode, task, precision, device), _squares)
    if task == "train":
        done.notes += "; synthetic loss: mean of the squared outputs"
    return done
