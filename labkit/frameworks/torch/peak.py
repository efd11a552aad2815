"""PyTorch's matrix-multiply kernels, timed (``python -m labkit.frameworks.torch.peak``): per
precision the plain GEMM and the pre-packed ones Inductor's freezing uses on a CPU (MKL's packed
GEMM, oneDNN's linear, oneDNN's quantised linear). Internal operators: a build that lacks one
reports its error."""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch

from .._kit import peak as kit
from .._kit.cells import check_threads

__all__ = ["KERNELS", "kernels", "set_threads", "versions"]

KERNELS: dict[str, tuple[str, ...]] = {
    "fp32": ("torch.mm", "mkl packed GEMM", "oneDNN linear, pre-packed weight"),
    "bf16": ("torch.mm", "oneDNN linear, pre-packed weight"),
    "int8": ("torch._int_mm", "oneDNN quantised linear, pre-packed weight"),
}


def versions() -> dict[str, str]:
    return {"torch": torch.__version__}


def set_threads(n: int) -> None:
    torch.set_num_threads(check_threads(n))


def _random(n: int, dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(n)
    if dtype in (torch.int8, torch.uint8):
        low, high = (-128, 128) if dtype == torch.int8 else (0, 256)
        return torch.randint(low, high, (n, n), dtype=dtype, generator=g)
    return torch.randn(n, n, generator=g).to(dtype)


def _mm(dtype: torch.dtype) -> Callable[[int], Callable]:
    def make(n: int) -> Callable:
        a, b = _random(n, dtype), _random(n, dtype)
        out = torch.empty(n, n, dtype=torch.int32 if dtype == torch.int8 else dtype)
        mm = torch._int_mm if dtype == torch.int8 else torch.mm
        return lambda: mm(a, b, out=out)

    return make


def _mkl(n: int) -> Callable:
    x, w = _random(n, torch.float32), _random(n, torch.float32)
    packed = torch.ops.mkl._mkl_reorder_linear_weight(w, n)
    return lambda: torch.ops.mkl._mkl_linear(x, packed, w, None, n)


def _onednn(dtype: torch.dtype) -> Callable[[int], Callable]:
    def make(n: int) -> Callable:
        x, w = _random(n, dtype), _random(n, dtype)
        packed = torch.ops.mkldnn._reorder_linear_weight(w, n)
        return lambda: torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")

    return make


def _qlinear(n: int) -> Callable:
    x, w = _random(n, torch.uint8), _random(n, torch.int8)
    packed = torch.ops.onednn.qlinear_prepack(w, [n, n])
    scales, zeros = torch.ones(n), torch.zeros(n, dtype=torch.long)
    return lambda: torch.ops.onednn.qlinear_pointwise(
        x, 0.1, 128, packed, scales, zeros, None, 1.0, 0, None, "none", [], ""
    )


def kernels(precision: str) -> list[tuple[str, bool, Callable[[int], Callable]]]:
    makers = {
        "fp32": (_mm(torch.float32), _mkl, _onednn(torch.float32)),
        "bf16": (_mm(torch.bfloat16), _onednn(torch.bfloat16)),
        "int8": (_mm(torch.int8), _qlinear),
    }[precision]
    return [(name, i > 0, make) for i, (name, make) in enumerate(zip(KERNELS[precision], makers))]


if __name__ == "__main__":
    raise SystemExit(kit.main(sys.modules[__name__]))
