"""PyTorch's matrix-multiply kernels, timed: ``python -m labkit.frameworks.torch.peak --threads N
--precisions fp32,int8 --seconds S`` prints one JSON line that :mod:`labkit.hardware.measured`
reads. Per precision: the plain GEMM and the pre-packed ones Inductor's freezing uses on a CPU
(internal operators: a build that lacks one reports its error).
"""

from __future__ import annotations

import argparse
import json
import math
import timeit
from collections.abc import Callable, Sequence
from functools import partial

import torch

from .._kit.checks import what_broke

__all__ = ["KERNELS", "main"]


def _random(n: int, dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.randn(n, n).to(dtype)
    return torch.randint(0, 100, (n, n), dtype=dtype)  # int8 and uint8 alike


def _mm(dtype: torch.dtype, n: int) -> Callable:
    a, b = _random(n, dtype), _random(n, dtype)
    out = torch.empty(n, n, dtype=torch.int32 if dtype == torch.int8 else dtype)
    mm = torch._int_mm if dtype == torch.int8 else torch.mm
    return lambda: mm(a, b, out=out)


def _mkl(n: int) -> Callable:
    x, w = _random(n, torch.float32), _random(n, torch.float32)
    packed = torch.ops.mkl._mkl_reorder_linear_weight(w, n)
    return lambda: torch.ops.mkl._mkl_linear(x, packed, w, None, n)


def _onednn(dtype: torch.dtype, n: int) -> Callable:
    x, w = _random(n, dtype), _random(n, dtype)
    packed = torch.ops.mkldnn._reorder_linear_weight(w, n)
    return lambda: torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")


def _qlinear(n: int) -> Callable:
    x, w = _random(n, torch.uint8), _random(n, torch.int8)
    packed = torch.ops.onednn.qlinear_prepack(w, [n, n])
    scales, zeros = torch.ones(n), torch.zeros(n, dtype=torch.long)
    return lambda: torch.ops.onednn.qlinear_pointwise(
        x, 0.1, 128, packed, scales, zeros, None, 1.0, 0, None, "none", [], ""
    )


#: per precision, each kernel's ``make(n)`` -> the call of an n^3 GEMM
KERNELS: dict[str, dict[str, Callable[[int], Callable]]] = {
    "fp32": {
        "torch.mm": partial(_mm, torch.float32),
        "mkl packed GEMM": _mkl,
        "oneDNN linear, pre-packed weight": partial(_onednn, torch.float32),
    },
    "bf16": {
        "torch.mm": partial(_mm, torch.bfloat16),
        "oneDNN linear, pre-packed weight": partial(_onednn, torch.bfloat16),
    },
    "int8": {
        "torch._int_mm": partial(_mm, torch.int8),
        "oneDNN quantised linear, pre-packed weight": _qlinear,
    },
}


#: the smallest GEMM side tried, and the largest (fp32 at 8192: 768 MiB of operands)
SMALLEST = 1024
LARGEST = 8192
#: a timed call lasts at least this long, where the size allows
CALL_S = 0.02
MIN_CALLS = 5
MAX_CALLS = 200


def _timed(make: Callable[[int], Callable], seconds: float) -> dict:
    """The first GEMM side n, doubling, whose second call (the first packs weights) takes
    :data:`CALL_S` (at most :data:`LARGEST`), and its calls' times over about ``seconds``."""
    n = SMALLEST
    while True:
        call = make(n)
        call()
        call_s = timeit.timeit(call, number=1)
        if call_s >= CALL_S or n * 2 > LARGEST:
            calls = min(MAX_CALLS, max(MIN_CALLS, math.ceil(seconds / call_s)))
            times = timeit.repeat(call, repeat=calls, number=1)
            return {"n": n, "ops": 2 * n**3, "times_s": times, "error": ""}
        del call  # its operands go before the next size's are made
        n *= 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="time PyTorch's matrix-multiply kernels")
    parser.add_argument("--threads", type=int, required=True, help="intra-op threads")
    parser.add_argument("--precisions", default=",".join(KERNELS), help="e.g. fp32,int8")
    parser.add_argument("--seconds", type=float, default=0.4, help="timed seconds per kernel")
    args = parser.parse_args(argv)
    asked = args.precisions.split(",")
    if args.threads < 1 or not args.seconds > 0 or not set(asked) <= set(KERNELS):
        parser.error(
            f"give --threads >= 1, --seconds > 0 and --precisions among {','.join(KERNELS)} "
            f"(got --threads {args.threads} --seconds {args.seconds} --precisions {args.precisions})"
        )
    torch.set_num_threads(args.threads)
    kernels = []
    for precision in asked:
        for kernel, make in KERNELS[precision].items():
            try:
                row = _timed(make, args.seconds)
            except Exception as exc:  # noqa: BLE001 - a kernel this build lacks is a result
                row = {"n": 0, "ops": 0, "times_s": [], "error": what_broke(exc)}
            kernels.append({"precision": precision, "kernel": kernel, **row})
    versions = {"torch": torch.__version__}
    print(json.dumps({"versions": versions, "threads": args.threads, "kernels": kernels}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
