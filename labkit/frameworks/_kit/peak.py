"""The matrix-multiply probes' ``python -m`` entry (:func:`main`) for a framework's ``peak``
module (``KERNELS``, ``kernels``, ``versions``, ``set_threads``): each kernel asked for, a square
GEMM grown from :data:`SMALLEST` until one call takes :data:`CALL_S`, timed for ``--seconds``;
one JSON line (versions, threads, per kernel its size, ``2 n^3`` and every call's seconds, or its
error) that :mod:`labkit.hardware.measured` reads.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable, Sequence

from ..contract import PRECISIONS

__all__ = ["main", "measure"]

#: the smallest GEMM side tried, and the largest (fp32 at 8192: 768 MiB of operands)
SMALLEST = 1024
LARGEST = 8192
#: a timed call lasts at least this long, where the size allows
CALL_S = 0.02
MIN_CALLS = 5
MAX_CALLS = 200


def size(make: Callable[[int], Callable], call_s: float = CALL_S) -> tuple[int, Callable]:
    """``(n, call)``: the first side from :data:`SMALLEST`, doubling, whose second call (the first
    packs weights) takes ``call_s`` (at most :data:`LARGEST`)."""
    n = SMALLEST
    while True:
        call = make(n)
        call()
        t0 = time.perf_counter()
        call()
        if time.perf_counter() - t0 >= call_s or n * 2 > LARGEST:
            return n, call
        del call
        n *= 2


def _time(call: Callable, seconds: float) -> list[float]:
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < MAX_CALLS and (
        len(times) < MIN_CALLS or time.perf_counter() - start < seconds
    ):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return times


def measure(probe, precisions: Sequence[str], seconds: float) -> list[dict]:
    out = []
    for precision in precisions:
        for kernel, prepacked, make in probe.kernels(precision):
            row: dict = {"precision": precision, "kernel": kernel, "prepacked": prepacked}
            try:
                n, call = size(make)
                row.update(n=n, ops=2 * n**3, times_s=_time(call, seconds), error="")
                del call
            except Exception as exc:  # noqa: BLE001 - a kernel this build lacks is a result
                first = next((ln for ln in str(exc).splitlines() if ln.strip()), "")
                row.update(n=0, ops=0, times_s=[], error=f"{type(exc).__name__}: {first[:300]}")
            gc.collect()  # the operands of one kernel go before the next one's are made
            out.append(row)
    return out


def main(probe, argv: Sequence[str] | None = None) -> int:
    """``python -m labkit.frameworks.<name>.peak``: time ``probe``'s kernels, print one line."""
    parser = argparse.ArgumentParser(description="time the framework's matrix-multiply kernels")
    parser.add_argument("--threads", type=int, required=True, help="intra-op threads")
    parser.add_argument(
        "--precisions", default=",".join(PRECISIONS), help="comma-separated: fp32,bf16,int8"
    )
    parser.add_argument("--seconds", type=float, default=0.4, help="timed seconds per kernel")
    args = parser.parse_args(argv)
    asked = [p.strip() for p in args.precisions.split(",") if p.strip()]
    bad = [p for p in asked if p not in PRECISIONS]
    if bad or args.threads < 1 or not args.seconds > 0:
        parser.error(
            f"give --threads >= 1, --seconds > 0 and precisions among {', '.join(PRECISIONS)} "
            f"(got --threads {args.threads}, --seconds {args.seconds}, unknown {bad})"
        )
    probe.set_threads(args.threads)
    kernels = measure(probe, [p for p in asked if p in probe.KERNELS], args.seconds)
    print(json.dumps({"versions": probe.versions(), "threads": args.threads, "kernels": kernels}))
    return 0
