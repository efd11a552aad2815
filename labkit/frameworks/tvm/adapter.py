"""Apache TVM adapter: ONNX Runtime's ONNX file of ResNet-50, imported into Relax, compiled
(default pipeline, untuned) for ``llvm`` with the host's ``mcpu``, once per input shape, and run
in Relax's virtual machine; inference on the CPU only.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

import numpy as np
import onnx
import tvm
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx

from ... import resnet
from .. import get
from .._kit.cells import check_cell, check_threads, host_batch
from ..contract import Prepared, Unsupported
from . import SPEC

__all__ = [
    "build_resnet50",
    "host_cpu",
    "machine",
    "predict",
    "prepare",
    "set_threads",
    "threads",
    "version",
]


_threads: int | None = None


def version() -> str:
    return tvm.__version__


def set_threads(n: int) -> None:
    """Use ``n`` threads in TVM's runtime pool (the VM runs one kernel at a time)."""
    global _threads
    n = check_threads(n)
    tvm.get_global_func("runtime.config_threadpool")(1, n)  # 1: kBig, every core of a uniform CPU
    _threads = n


def threads() -> dict[str, int | None]:
    """As set (TVM has no getter; None before :func:`set_threads`: TVM's default)."""
    return {"intra": _threads, "inter": None if _threads is None else 1}


def host_cpu() -> str:
    """The processor LLVM detects on this machine (``znver4``, ``sapphirerapids``, ...)."""
    return str(tvm.target.codegen.llvm_get_system_cpu())


@functools.lru_cache(maxsize=8)
def machine(path: Path, shape: tuple[int, ...]) -> relax.VirtualMachine:
    """The ONNX file ``path`` compiled for inputs of ``shape``, once per file and shape."""
    fixed = {"images": list(shape)}  # the file's batch and image size are dynamic
    module = from_onnx(onnx.load(str(path)), fixed, keep_params_in_input=False)
    target = tvm.target.Target({"kind": "llvm", "mcpu": host_cpu()})
    return relax.VirtualMachine(tvm.compile(module, target), tvm.cpu())


def build_resnet50(weights: dict[str, np.ndarray]) -> Path:
    """The exported ResNet-50 holding ``weights`` (ONNX Runtime's file), compiled by
    :func:`predict` on first use per input shape."""
    return get("onnxruntime").model_file(weights)


def predict(model: Path, images: np.ndarray) -> np.ndarray:
    """Logits for a host batch (NCHW float32); the first call of a shape compiles it."""
    images = resnet.check_images(images)
    return machine(model, images.shape)["main"](tvm.runtime.tensor(images, tvm.cpu())).numpy()


def prepare(
    weights: dict[str, np.ndarray],
    mode: str,
    task: str,
    batch_size: int,
    precision: str = "fp32",
    image_size: int = 224,
    device: str = "cpu",
) -> Prepared:
    """One inference batch; the export is timed apart as ``export_s``, the compile is in the
    preparation."""
    check_cell(SPEC, mode, task, batch_size, precision, device)
    images, _ = host_batch(weights, batch_size, image_size)
    if device == "gpu":
        raise Unsupported("the lab compiles for this CPU (llvm); a GPU target needs a CUDA build")
    t0 = time.perf_counter()
    path = build_resnet50(weights)
    export_s = time.perf_counter() - t0
    machine(path, images.shape)  # compiled here, in the preparation
    notes = f"torch.onnx.export -> relax.frontend.onnx -> llvm mcpu={host_cpu()} (untuned)"
    return Prepared(lambda: predict(path, images), int(batch_size), notes, export_s=export_s)
