"""ONNX Runtime's matrix-multiply kernels, timed (``python -m labkit.frameworks.onnxruntime.peak``):
one-node models whose weight is an initializer, so MLAS pre-packs it as it does a model's."""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from .._kit import peak as kit
from .._kit.cells import check_threads

__all__ = ["KERNELS", "kernels", "set_threads", "versions"]

KERNELS: dict[str, tuple[str, ...]] = {
    "fp32": ("MatMul, pre-packed weight",),
    "int8": ("MatMulInteger (u8 x s8), pre-packed weight",),
}
_threads = 1


def versions() -> dict[str, str]:
    return {"onnxruntime": ort.__version__}


def set_threads(n: int) -> None:
    global _threads
    _threads = check_threads(n)


def _session(op: str, a_type: int, weight: np.ndarray, n: int) -> ort.InferenceSession:
    inputs = ["A", "W"] + (["a_zero"] if op == "MatMulInteger" else [])
    inits = [numpy_helper.from_array(weight, "W")]
    if op == "MatMulInteger":
        inits.append(numpy_helper.from_array(np.array(128, np.uint8), "a_zero"))
    out_type = TensorProto.INT32 if op == "MatMulInteger" else TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node(op, inputs, ["Y"])],
        f"{op.lower()}-{n}",
        [helper.make_tensor_value_info("A", a_type, [n, n])],
        [helper.make_tensor_value_info("Y", out_type, [n, n])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    options = ort.SessionOptions()
    options.intra_op_num_threads = _threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _matmul(n: int) -> Callable:
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n), dtype=np.float32)
    session = _session("MatMul", TensorProto.FLOAT, rng.standard_normal((n, n), np.float32), n)
    return lambda: session.run(None, {"A": a})


def _matmul_integer(n: int) -> Callable:
    rng = np.random.default_rng(n)
    a = rng.integers(0, 256, (n, n), dtype=np.uint8)
    weight = rng.integers(-128, 128, (n, n), dtype=np.int8)
    session = _session("MatMulInteger", TensorProto.UINT8, weight, n)
    return lambda: session.run(None, {"A": a})


def kernels(precision: str) -> list[tuple[str, bool, Callable[[int], Callable]]]:
    make = {"fp32": _matmul, "int8": _matmul_integer}[precision]
    return [(KERNELS[precision][0], True, make)]


if __name__ == "__main__":
    raise SystemExit(kit.main(sys.modules[__name__]))
