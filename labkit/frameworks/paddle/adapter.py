"""PaddlePaddle adapter: ResNet-50 v1.5 as a ``paddle.nn.Layer``.

Import it through ``labkit.frameworks.get("paddle")``, which refuses where ``tensorflow`` is
loaded already (importing ``paddle`` after it crashes the process). Weights: convolutions load
unchanged; ``nn.Linear`` keeps ``(in, out)``, the transpose of ``fc.weight``; BatchNorm's
statistics are ``_mean``/``_variance`` and its ``momentum=0.9`` is PyTorch's 0.1.

Modes: ``dygraph`` (eager); ``sot`` (``to_static(full_graph=False)``: bytecode capture with
graph breaks, like ``torch.compile``); ``ast`` (``to_static(full_graph=True)``: source
conversion into one program, or an error); ``inference`` (``paddle.jit.save`` run by Paddle
Inference, the save timed apart in ``Prepared.export_s``). ``to_static`` runs with
``backend=None``: the CPU wheel has no CINN.

Threads: :func:`set_threads` sets the math library's threads (``FLAGS_paddle_num_threads``,
read back by :func:`threads`) and runs a program's operators in the calling thread
(``FLAGS_enable_pir_in_executor_trace_run``): one inter-op thread. Paddle sets
``OMP_NUM_THREADS=1`` as it loads; :func:`labkit.frameworks.get` puts it back.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import paddle
from paddle import nn

from ... import recipe, resnet
from .. import kernel_support
from .._kit.cells import check_cell, check_threads, host_batch
from ..contract import Prepared, Unsupported
from . import SPEC

__all__ = [
    "MODES",
    "Bottleneck",
    "ResNet50",
    "applied_recipe",
    "build_resnet50",
    "export",
    "load_exported",
    "predict",
    "prepare",
    "set_threads",
    "threads",
    "to_canonical",
    "to_static",
    "train_step",
    "version",
]

NAME = SPEC.name
MODES = SPEC.modes
#: why there is no int8 cell: Paddle's int8 inference runs a program quantised beforehand
INT8_WHY = (
    "PaddlePaddle has no int8 path in dygraph or to_static: its int8 inference runs a program "
    "quantised after training (paddle.static.quantization or PaddleSlim) in Paddle Inference, "
    "which the lab does not build; the lab's int8 benchmark path is ONNX Runtime's static "
    "quantisation (--frameworks onnxruntime)"
)

#: canonical (torchvision) BatchNorm tensor name -> Paddle's
BN_NAMES: dict[str, str] = {
    "weight": "weight",
    "bias": "bias",
    "running_mean": "_mean",
    "running_var": "_variance",
}
_BN_MODULES: frozenset[str] = frozenset(c.bn for c in resnet.all_convs())
_BN_MOMENTUM = 0.9  # = torch's 0.1
#: the flags that hold the lab's thread policy (Paddle has no getter for its math threads)
THREAD_FLAGS = ("FLAGS_paddle_num_threads", "FLAGS_enable_pir_in_executor_trace_run")

paddle.set_device("cpu")


def version() -> str:
    return paddle.__version__


_threads: int | None = None


def set_threads(n: int) -> None:
    """Use ``n`` intra-op threads (Paddle's CPU math library) and run a static program's
    operators one after another (one inter-op thread); idempotent."""
    global _threads
    n = check_threads(n)
    paddle.base.core.set_num_threads(n)
    paddle.set_flags({THREAD_FLAGS[0]: n, THREAD_FLAGS[1]: True})
    _threads = n


def threads() -> dict[str, int | None]:
    """``{"intra": N, "inter": M}`` read back from Paddle's flags; ``inter`` is None while a
    static program may run operators side by side (Paddle's default)."""
    flags = paddle.get_flags(list(THREAD_FLAGS))
    intra = int(flags[THREAD_FLAGS[0]])
    return {"intra": intra, "inter": 1 if flags[THREAD_FLAGS[1]] else None}


# --------------------------------------------------------------------------------------------
# The network, built from the spec in labkit.resnet (names follow torchvision)


def _conv(c: resnet.Conv) -> nn.Conv2D:
    return nn.Conv2D(c.cin, c.cout, c.kernel, stride=c.stride, padding=c.padding, bias_attr=False)


def _bn(c: resnet.Conv) -> nn.BatchNorm2D:
    return nn.BatchNorm2D(c.cout, momentum=_BN_MOMENTUM, epsilon=resnet.BN_EPS)


class Bottleneck(nn.Layer):
    """1x1 reduce, 3x3 (carries the stride: v1.5), 1x1 expand; identity or projection shortcut."""

    def __init__(self, spec: resnet.Block):
        super().__init__()
        c1, c2, c3 = spec.convs
        self.conv1, self.bn1 = _conv(c1), _bn(c1)
        self.conv2, self.bn2 = _conv(c2), _bn(c2)
        self.conv3, self.bn3 = _conv(c3), _bn(c3)
        self.relu = nn.ReLU()
        self.downsample = None
        if spec.downsample is not None:
            self.downsample = nn.Sequential(_conv(spec.downsample), _bn(spec.downsample))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet50(nn.Layer):
    """ResNet-50 v1.5: stem (7x7 conv, max pool), four stages of bottlenecks, global pool, fc."""

    def __init__(self, num_classes: int = 1000, width: int = resnet.WIDTH):
        super().__init__()
        stem = resnet.stem(width)
        self.conv1, self.bn1 = _conv(stem), _bn(stem)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        specs = resnet.blocks(width)
        for stage in range(1, len(resnet.STAGES) + 1):
            blocks = [Bottleneck(b) for b in specs if b.name.startswith(f"layer{stage}.")]
            setattr(self, f"layer{stage}", nn.Sequential(*blocks))
        self.avgpool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(resnet.features(width), num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(paddle.flatten(self.avgpool(x), 1))


# --------------------------------------------------------------------------------------------
# Canonical weights in and out


def native_name(canonical: str) -> str:
    """The Paddle state-dict name of a canonical tensor name (BatchNorm statistics differ)."""
    module, leaf = canonical.rsplit(".", 1)
    return f"{module}.{BN_NAMES[leaf]}" if module in _BN_MODULES else canonical


def _native(name: str, arr: np.ndarray) -> np.ndarray:
    """A canonical array in Paddle's layout (the classifier's weight is ``(in, out)``)."""
    arr = np.asarray(arr, dtype=np.float32)
    return np.ascontiguousarray(arr.T) if name == "fc.weight" else arr


def build_resnet50(weights: dict[str, np.ndarray]) -> ResNet50:
    """An eval-mode ``ResNet50`` holding ``weights`` (BatchNorm running statistics included).

    A missing, unexpected or misshaped tensor raises ``ValueError`` naming it.
    """
    num_classes = resnet.validate_weights(weights)
    model = ResNet50(num_classes, resnet.width_of(weights))
    state = model.state_dict()
    for name in resnet.param_shapes(num_classes, resnet.width_of(weights)):
        state[native_name(name)].set_value(_native(name, weights[name]))
    model.eval()
    return model


def to_canonical(model: nn.Layer) -> dict[str, np.ndarray]:
    """The model's weights as canonical float32 numpy arrays (exact copies)."""
    state = model.state_dict()
    num_classes = int(state["fc.bias"].shape[0])
    width = int(state["conv1.weight"].shape[0])
    return {
        name: _native(name, state[native_name(name)].numpy()).copy()
        for name in resnet.param_shapes(num_classes, width)
    }


def predict(model: nn.Layer, images: np.ndarray) -> np.ndarray:
    """Eval-mode logits for a host batch (NCHW float32)."""
    x = paddle.to_tensor(resnet.check_images(images))
    model.eval()
    with paddle.no_grad():
        return model(x).numpy()


# --------------------------------------------------------------------------------------------
# Training: the lab's recipe


def _optimizer(params, lr: float, momentum: float) -> paddle.optimizer.Momentum:
    """The recipe's optimizer (:data:`labkit.recipe.TRAIN`): ``v = momentum * v + g;
    w -= lr * v``, which is ``torch.optim.SGD(momentum=...)``."""
    r = recipe.TRAIN
    return paddle.optimizer.Momentum(
        learning_rate=lr,
        momentum=momentum,
        parameters=params,
        use_nesterov=r.nesterov,
        weight_decay=r.weight_decay or None,
    )


#: the recipe's loss: softmax cross-entropy of logits against integer labels, batch mean
LOSS = nn.CrossEntropyLoss(reduction="mean")


def applied_recipe(opt: paddle.optimizer.Momentum, loss: nn.CrossEntropyLoss = LOSS) -> dict:
    """The hyper-parameters ``opt`` and ``loss`` really use (compare with the recipe). Paddle
    keeps the momentum settings in attributes of its own (no getter), read here."""
    decay = opt.regularization
    return recipe.applied(
        opt.get_lr(),
        opt._momentum,
        opt._use_nesterov,
        0.0 if decay is None else float(decay._coeff),
        loss.reduction == "mean",
        float(loss.label_smoothing or 0.0),
    )


def _labels(labels: np.ndarray) -> paddle.Tensor:
    return paddle.to_tensor(np.asarray(labels, dtype=np.int64))


def _step_fn(net: nn.Layer, params, lr: float, momentum: float) -> tuple[Callable, dict]:
    """One training step of ``net`` (forward, mean cross-entropy, backward, momentum SGD) as
    ``fn(images, labels) -> loss``, and the recipe it applies."""
    opt = _optimizer(params, lr, momentum)

    def step(x: paddle.Tensor, y: paddle.Tensor) -> paddle.Tensor:
        loss = LOSS(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    return step, applied_recipe(opt)


def train_step(
    weights: dict[str, np.ndarray],
    images: np.ndarray,
    labels: np.ndarray,
    lr: float = recipe.TRAIN.lr,
    momentum: float = recipe.TRAIN.momentum,
) -> tuple[float, dict[str, np.ndarray]]:
    """One SGD-with-momentum step on mean cross-entropy, in train mode (batch statistics).

    Returns the loss before the update and the updated canonical weights (running statistics
    updated by Paddle's convention: momentum 0.9 on the old value).
    """
    model = build_resnet50(weights)
    model.train()
    step, _ = _step_fn(model, model.parameters(), lr, momentum)
    loss = step(paddle.to_tensor(resnet.check_images(images)), _labels(labels))
    return float(loss.numpy()), to_canonical(model)


# --------------------------------------------------------------------------------------------
# Benchmark modes


def _check_device(device: str) -> None:
    if device == "gpu" and not paddle.is_compiled_with_cuda():
        raise Unsupported(
            f"PaddlePaddle {paddle.__version__} here is the CPU build (paddlepaddle); a CUDA "
            "GPU needs the paddlepaddle-gpu wheel for your CUDA version"
        )


def to_static(net: nn.Layer, mode: str) -> nn.Layer:
    """``net`` under ``paddle.jit.to_static``: bytecode capture (``sot``, ``full_graph=False``)
    or source conversion (``ast``, ``full_graph=True``); Paddle's own kernels (``backend=None``).
    ``dygraph`` returns ``net`` itself."""
    if mode == "dygraph":
        return net
    return paddle.jit.to_static(net, full_graph=mode == "ast", backend=None)


def _autocast(precision: str) -> Callable[[], contextlib.AbstractContextManager]:
    if precision == "bf16":
        return lambda: paddle.amp.auto_cast(dtype="bfloat16", level="O1")
    return contextlib.nullcontext


def _bf16_failure() -> str | None:
    """Why a bfloat16 convolution fails here (Paddle's CPU build), or None when it runs."""
    conv = nn.Conv2D(3, 4, 3, padding=1, bias_attr=False)
    x = paddle.ones([1, 3, 8, 8])
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            with paddle.no_grad(), paddle.amp.auto_cast(dtype="bfloat16", level="O1"):
                out = conv(x)
    except (RuntimeError, ValueError, TypeError) as exc:
        return " ".join(str(exc).split())[:200]
    if out.dtype == paddle.bfloat16:
        return None
    why = next((str(w.message) for w in said if "amp" in str(w.message)), "")
    return f"paddle.amp.auto_cast(dtype='bfloat16') left a convolution in {out.dtype}" + (
        f" ({why})" if why else ""
    )


MODE_NOTES: dict[str, str] = {
    "dygraph": "dygraph (eager) Layer calls",
    "sot": "paddle.jit.to_static(full_graph=False): bytecode capture (SOT)",
    "ast": "paddle.jit.to_static(full_graph=True): source (AST) conversion",
    "inference": "paddle.jit.save + Paddle Inference predictor (IR optimisation on)",
}


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

    Inference runs the eval-mode Layer under ``paddle.no_grad`` (or the saved program through a
    Paddle Inference predictor); ``train`` runs forward, mean cross-entropy, backward and one
    momentum-SGD update with the lab's recipe. Each step copies the host batch in
    (``paddle.to_tensor``) and returns when the result is back on the host. With ``sot`` and
    ``ast`` the first call captures and builds the program.
    """
    check_cell(NAME, MODES, mode, task, batch_size, precision, device)
    _check_device(device)
    images, labels = host_batch(weights, batch_size, image_size)
    if precision == "int8":
        raise Unsupported(INT8_WHY)
    if precision == "bf16":
        why = kernel_support(NAME, paddle.__version__, "bf16", _bf16_failure)
        if why:
            raise Unsupported(why)
    if mode == "inference":
        if task == "train":
            raise Unsupported("Paddle Inference runs saved programs for inference only")
        return _prepare_inference(weights, batch_size, images, precision)
    model = build_resnet50(weights)
    autocast = _autocast(precision)
    notes = [MODE_NOTES[mode]] + ([] if precision == "fp32" else ["paddle.amp.auto_cast(bf16)"])
    if task == "train":
        model.train()
        net = to_static(model, mode)
        run, applied = _step_fn(net, model.parameters(), recipe.TRAIN.lr, recipe.TRAIN.momentum)
        y = _labels(labels)

        def step() -> float:
            with autocast():
                loss = run(paddle.to_tensor(images), y)
            return float(loss.numpy())

        return Prepared(step, int(batch_size), "; ".join(notes), recipe=applied)
    net = to_static(model, mode)

    def step() -> np.ndarray:
        with paddle.no_grad(), autocast():
            return net(paddle.to_tensor(images)).numpy()

    return Prepared(step, int(batch_size), "; ".join(notes))


def _prepare_inference(
    weights: dict[str, np.ndarray], batch_size: int, images: np.ndarray, precision: str
) -> Prepared:
    if precision == "bf16":
        raise Unsupported(
            "the lab runs the saved program in fp32 (Paddle Inference's bfloat16 path, "
            "Config.enable_onednn_bfloat16, needs oneDNN bf16 kernels for every operator)"
        )
    with tempfile.TemporaryDirectory(prefix="labkit-paddle-") as tmp:
        t0 = time.perf_counter()
        path = export(build_resnet50(weights), tmp)
        export_s = time.perf_counter() - t0
        predictor = _predictor(path)
    feed = predictor.get_input_handle(predictor.get_input_names()[0])
    fetch = predictor.get_output_handle(predictor.get_output_names()[0])

    def step() -> np.ndarray:
        feed.copy_from_cpu(images)
        predictor.run()
        return fetch.copy_to_cpu()

    return Prepared(step, int(batch_size), MODE_NOTES["inference"], export_s=export_s)


# --------------------------------------------------------------------------------------------
# Deployment: the saved inference program (paddle.jit.save) and Paddle Inference


#: the file name (without suffix) of every saved program
PREFIX = "resnet50"


def export(model: nn.Layer, directory: str | Path) -> Path:
    """Write ``directory/resnet50.json`` (the program, Paddle 3's PIR format) and
    ``resnet50.pdiparams`` (the weights) with ``paddle.jit.save``; returns the program file.

    The input is declared as ``[None, 3, None, None]`` float32 (any batch, any valid size).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    spec = paddle.static.InputSpec([None, 3, None, None], "float32", "images")
    was_training = model.training
    model.eval()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # to_static's notes on its capture, not ours
            paddle.jit.save(model, str(directory / PREFIX), input_spec=[spec])
    finally:
        model.train() if was_training else model.eval()
    program = next(
        (p for p in (directory / f"{PREFIX}.json", directory / f"{PREFIX}.pdmodel") if p.exists()),
        None,
    )
    if program is None:
        raise RuntimeError(f"paddle.jit.save wrote no program file in {directory}")
    return program


def _predictor(program: Path) -> paddle.inference.Predictor:
    """A Paddle Inference predictor of a saved program on the CPU, IR optimisation on, with
    the lab's thread count."""
    config = paddle.inference.Config(str(program), str(program.with_suffix(".pdiparams")))
    config.disable_gpu()
    config.switch_ir_optim(True)
    config.disable_glog_info()
    if _threads is not None:
        config.set_cpu_math_library_num_threads(_threads)
    return paddle.inference.create_predictor(config)


def load_exported(path: str | Path) -> Callable[[np.ndarray], np.ndarray]:
    """The program :func:`export` wrote, run by Paddle Inference: ``images -> logits``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no saved program at {path}; write one with export(model, dir)")
    predictor = _predictor(path)
    feed = predictor.get_input_handle(predictor.get_input_names()[0])
    fetch = predictor.get_output_handle(predictor.get_output_names()[0])

    def run(images: np.ndarray) -> np.ndarray:
        feed.copy_from_cpu(resnet.check_images(images))
        predictor.run()
        return fetch.copy_to_cpu()

    return run
