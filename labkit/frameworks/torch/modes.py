"""How PyTorch realises each benchmark mode and precision: the graphs the adapter times.

``eager``: the ``nn.Module``; ``torchscript``: ``torch.jit.trace`` (``torch.jit.freeze`` for
inference); ``compile``: ``torch.compile`` (Inductor), except bf16 inference on a CPU, compiled
with freezing (BatchNorm folded, weights pre-packed: PyTorch's CPU recipe; in torch 2.13 only
``torch._inductor.config.freezing`` set while Dynamo compiles folds BatchNorm, :func:`frozen`).
``bf16`` is ``torch.autocast(device, bfloat16)`` in every mode; no ``int8`` (:data:`WHY_NOT`).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from .. import kernel_support
from .._kit import accuracy as acc
from .._kit.cells import INT8_PATH
from ..contract import Unsupported

__all__ = [
    "WHY_NOT",
    "accuracy",
    "autocast",
    "frozen",
    "inference_net",
    "quiet_torchscript",
    "refuse",
    "train_net",
]

WHY_NOT = {
    "int8": "PyTorch 2.13's int8 graph path (PT2E quantisation, then torch.compile) is in the "
    f"torchao package, which the lab does not install; {INT8_PATH}",
}


def refuse(precision: str, dev: torch.device) -> None:
    """:class:`Unsupported` where this CPU's kernels do not run bf16 (a tiny probe, cached)."""
    if precision == "bf16" and dev.type == "cpu":
        why = kernel_support("torch", torch.__version__, "bf16", _bf16_conv)
        if why:
            raise Unsupported(why)


def _bf16_conv() -> str | None:
    x, w = torch.ones(1, 3, 8, 8), torch.ones(4, 3, 3, 3)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.nn.functional.conv2d(x, w, padding=1)
    return None if out.dtype == torch.bfloat16 else f"autocast left a convolution in {out.dtype}"


def autocast(precision: str, dev: torch.device) -> Callable[[], contextlib.AbstractContextManager]:
    """A factory of the context the step runs under: bf16 autocast, or nothing."""
    if precision == "bf16":
        return lambda: torch.autocast(dev.type, dtype=torch.bfloat16)
    return contextlib.nullcontext


@contextlib.contextmanager
def quiet_torchscript():
    """Hush TorchScript's deprecation notes (the course uses it on purpose, as the legacy mode)
    and the TracerWarning of train-mode BatchNorm's batch check (it does not change the graph)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=r".*torch\.jit")
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=r".*is deprecated")
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        yield


def compile_model(model: nn.Module) -> Callable:
    """``torch.compile`` of ``model`` (Inductor, default options)."""
    # Inductor imports torch.utils.mkldnn, which is built on TorchScript and warns as it loads
    with quiet_torchscript():
        return torch.compile(model)


def frozen(model: nn.Module) -> Callable:
    """``torch.compile`` of an eval-mode ``model`` with Inductor's freezing (the flag is read
    when Dynamo compiles, inside a call)."""
    compiled, config = compile_model(model), torch._inductor.config

    def run(*args):
        before, config.freezing = config.freezing, True
        try:
            return compiled(*args)
        finally:
            config.freezing = before

    return run


def inference_net(
    model: nn.Module, mode: str, example: torch.Tensor | tuple, precision: str, dev: torch.device
) -> tuple[Callable, str]:
    """The eval-mode graph of ``mode`` at ``precision``, and how it was made, in words."""
    if mode == "eager":
        return model, "eager nn.Module, torch.inference_mode"
    if mode == "torchscript":
        # the network has no data-dependent control flow, so one trace is exact; skip the check
        with quiet_torchscript(), torch.no_grad(), autocast(precision, dev)():
            script = torch.jit.freeze(torch.jit.trace(model, example, check_trace=False))
        return script, "torch.jit.trace + torch.jit.freeze (conv-BN folded), inference_mode"
    if precision == "bf16" and dev.type == "cpu":
        return frozen(model), (
            "torch.compile (Inductor, freezing: weights folded and pre-packed), inference_mode"
        )
    return compile_model(model), "torch.compile (Inductor, default options), inference_mode"


def train_net(
    model: nn.Module, mode: str, example: torch.Tensor | tuple, autocast: Callable
) -> tuple[nn.Module, str]:
    """The train-mode graph of ``mode`` (``autocast``: the step's context factory)."""
    if mode == "eager":
        return model, "eager nn.Module"
    if mode == "torchscript":
        with quiet_torchscript(), autocast():
            traced = torch.jit.trace(model, example, check_trace=False)
        return traced, "torch.jit.trace in train mode (not frozen: weights change)"
    return compile_model(model), "torch.compile (Inductor) of the model; backward via AOTAutograd"


def accuracy(
    reference: nn.Module,
    net: Callable,
    context: Callable,
    dev: torch.device,
    image_size: int,
    batch: int,
) -> Callable[[], dict]:
    """The accuracy cost of ``net`` (under ``context()``) against the fp32 eager ``reference``,
    to call after timing."""

    def run(model: Callable, ctx: Callable) -> Callable[[np.ndarray], np.ndarray]:
        def logits(x: np.ndarray) -> np.ndarray:
            with torch.inference_mode(), ctx():
                return model(torch.from_numpy(x).to(dev)).float().cpu().numpy()

        return logits

    return lambda: acc.cost(
        run(reference.eval(), contextlib.nullcontext),
        run(net, context),
        image_size,
        batch,
        f"PyTorch {torch.__version__} fp32 eager nn.Module",
    )
