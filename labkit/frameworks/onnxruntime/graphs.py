"""Reading ONNX models: optimisation levels, node counts, int8 quantisation.

Notebooks 05 and 07 call ONNX Runtime themselves; this module reads the files those calls write
and gives a learner's model (:mod:`.explore`) the same levels: :data:`LEVELS` (those this ONNX
Runtime has), :func:`session_options`, :func:`optimize` (the model rewritten at a level, to a
file), :func:`counts` (nodes by operator, ORT's own with their domain)
and :func:`quantize_static` (the int8 model of the adapter's ``int8`` precision: calibrated
static QDQ).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

__all__ = [
    "LEVELS",
    "counts",
    "load",
    "optimize",
    "quantize_static",
    "session_options",
]

#: optimisation level names, lowest first, and ONNX Runtime's enum for each (those it has)
_LEVEL_ENUM = {
    "disabled": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "layout": "ORT_ENABLE_LAYOUT",
    "all": "ORT_ENABLE_ALL",
}
LEVELS: tuple[str, ...] = tuple(
    k for k, v in _LEVEL_ENUM.items() if hasattr(ort.GraphOptimizationLevel, v)
)


def session_options(level: str = "all") -> ort.SessionOptions:
    """Options for one CPU session at ``level``; threads don't spin while idle."""
    if level not in LEVELS:
        raise ValueError(
            f"unknown optimisation level {level!r}: valid levels are {', '.join(LEVELS)}"
        )
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _LEVEL_ENUM[level])
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return so


def optimize(path: str | Path, level: str, out: str | Path) -> Path:
    """Write the model as ONNX Runtime rewrites it at ``level`` to ``out``; returns ``out``."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    so = session_options(level)
    so.optimized_model_filepath = str(out)
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return out


def load(model: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    return model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))


def counts(model: str | Path | onnx.ModelProto) -> collections.Counter[str]:
    """Nodes by operator, most common first; ORT's own operators carry their domain
    (``com.microsoft:FusedConv``)."""
    return collections.Counter(
        f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type
        for n in load(model).graph.node
    )


# --------------------------------------------------------------------------------------------
# int8 quantisation


@contextlib.contextmanager
def _quiet_quantization():
    """The quantization tool logs a reminder to pre-process on the root logger even when the
    model was pre-processed (its check looks for another tool's marks); keep it out of the way."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _preprocessed(src: str | Path, directory: str) -> Path:
    """ORT's ``basic`` rewrite (constant folding, Conv+BatchNorm folding): the pre-processing
    ONNX Runtime recommends before quantising, so that BatchNorm is not quantised on its own."""
    return optimize(src, "basic", Path(directory) / "preprocessed.onnx")


def quantize_static(
    src: str | Path,
    out: str | Path,
    calibration: Iterable[np.ndarray],
    per_channel: bool = False,
) -> Path:
    """int8 *static* quantisation in QDQ format, calibrated on ``calibration`` batches.

    Activation ranges are measured once (min/max over the calibration batches) and fixed, so
    ONNX Runtime can replace each QuantizeLinear/DequantizeLinear pair and the operator between
    them by one integer kernel (``QLinearConv``). Weights int8 (one scale per output channel
    with ``per_channel``, else one per tensor), activations uint8. Returns ``out``.
    """
    from onnxruntime import quantization

    batches = [np.ascontiguousarray(b, dtype=np.float32) for b in calibration]
    if not batches:
        raise ValueError("static quantisation needs at least one calibration batch of images")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    name = load(src).graph.input[0].name

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self._it = iter(batches)

        def get_next(self):
            batch = next(self._it, None)
            return None if batch is None else {name: batch}

    with tempfile.TemporaryDirectory() as tmp, _quiet_quantization():
        quantization.quantize_static(
            str(_preprocessed(src, tmp)),
            str(out),
            Reader(),
            quant_format=quantization.QuantFormat.QDQ,
            weight_type=quantization.QuantType.QInt8,
            activation_type=quantization.QuantType.QUInt8,
            per_channel=per_channel,
        )
    return out
