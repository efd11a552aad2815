"""Inside ONNX Runtime's graph optimiser: the model ORT actually runs, at each optimisation level.

ONNX Runtime rewrites a model when it creates a session; with
``SessionOptions.optimized_model_filepath`` set it writes the rewritten model to disk, so the
node counts before and after each level can be compared and the result run on its own:

- ``disabled``: the graph as exported;
- ``basic``: graph-independent rewrites: constant folding, removing redundant nodes,
  Conv+BatchNorm / Conv+Mul / Conv+Add folding;
- ``extended``: fusions with ORT's own operators (``com.microsoft`` domain), e.g. Conv+Relu
  into ``FusedConv``;
- ``layout`` (ONNX Runtime >= 1.22) and ``all``: layout optimisation, e.g. the NCHWc blocked
  layout for convolutions on x86 (``com.microsoft.nchwc`` ops, specific to this CPU).

Also here: :func:`memory_steps`, the model's execution order and tensor sizes for
:func:`labkit.lessons.graphs.plan_memory`, and int8 quantisation (:func:`quantize_dynamic`,
:func:`quantize_static`) with ONNX Runtime's quantization tool.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from .._kit.graphs import OpCounts, Step

__all__ = [
    "BOOKKEEPING",
    "LEVELS",
    "counts",
    "load",
    "memory_steps",
    "optimize",
    "optimize_levels",
    "quantize_dynamic",
    "quantize_static",
    "run",
    "session",
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
#: node kinds that do no arithmetic on tensors
BOOKKEEPING: frozenset[str] = frozenset({"Constant", "Identity", "Shape"})


def _level(level: str) -> ort.GraphOptimizationLevel:
    if level not in LEVELS:
        raise ValueError(
            f"unknown optimisation level {level!r}: valid levels are {', '.join(LEVELS)}"
        )
    return getattr(ort.GraphOptimizationLevel, _LEVEL_ENUM[level])


def session_options(
    level: str = "all", threads: int | None = None, optimized_path: str | Path | None = None
) -> ort.SessionOptions:
    """Options for one CPU session; threads don't spin while idle (they would slow other work)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = _level(level)
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads is not None:
        so.intra_op_num_threads = threads
    if optimized_path is not None:
        so.optimized_model_filepath = str(optimized_path)
    return so


def session(
    model: str | Path | bytes,
    level: str = "all",
    threads: int | None = None,
    optimized_path: str | Path | None = None,
) -> ort.InferenceSession:
    """A CPU session on a model file (or a serialized model's bytes), optimised at ``level``."""
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(
        source, session_options(level, threads, optimized_path), providers=["CPUExecutionProvider"]
    )


def optimize(path: str | Path, level: str, out: str | Path) -> Path:
    """Write the model as ONNX Runtime rewrites it at ``level`` to ``out``; returns ``out``."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    session(path, level, optimized_path=out)
    return out


def optimize_levels(
    path: str | Path, directory: str | Path, levels: tuple[str, ...] = LEVELS
) -> dict[str, Path]:
    """The model rewritten at each level, as files ``<directory>/<level>.onnx``."""
    return {lv: optimize(path, lv, Path(directory) / f"{lv}.onnx") for lv in levels}


def load(model: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    return model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))


def counts(model: str | Path | onnx.ModelProto) -> OpCounts:
    """Node counts by operator; ORT's own operators carry their domain (``com.microsoft:FusedConv``)."""
    m = load(model)
    kinds = [
        f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type
        for n in m.graph.node
    ]
    return OpCounts.of(kinds, lambda k: k in BOOKKEEPING)


def run(model: str | Path | ort.InferenceSession, images: np.ndarray) -> np.ndarray:
    """The first output for a host batch. A path is run exactly as stored (optimisation off)."""
    sess = model if isinstance(model, ort.InferenceSession) else session(model, "disabled")
    name = sess.get_inputs()[0].name
    return sess.run(None, {name: np.ascontiguousarray(images, dtype=np.float32)})[0]


def memory_steps(
    model: str | Path | onnx.ModelProto, images: np.ndarray
) -> tuple[list[Step], dict[str, int], list[str]]:
    """Execution order, bytes of every intermediate tensor, and the graph outputs.

    The sizes are measured, not inferred: the model runs once on ``images`` with every node's
    output exposed as a graph output (so keep the batch small: all intermediates are held at
    once). Weights (initializers) and graph inputs are not intermediate tensors: left out.
    """
    m = onnx.ModelProto()
    m.CopyFrom(load(model))
    outputs = [o.name for o in m.graph.output]
    outside = {i.name for i in m.graph.initializer} | {i.name for i in m.graph.input}
    steps = [
        Step(
            n.name or n.op_type,
            tuple(t for t in n.input if t and t not in outside),
            tuple(t for t in n.output if t),
        )
        for n in m.graph.node
    ]
    inner = [t for s in steps for t in s.writes if t not in outputs]
    m.graph.output.extend(onnx.helper.make_empty_tensor_value_info(t) for t in inner)
    sess = session(m.SerializeToString(), "disabled")
    values = sess.run(
        outputs + inner, {sess.get_inputs()[0].name: np.ascontiguousarray(images, dtype=np.float32)}
    )
    sizes = {name: int(np.asarray(v).nbytes) for name, v in zip(outputs + inner, values)}
    return steps, sizes, outputs


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


def quantize_dynamic(src: str | Path, out: str | Path) -> Path:
    """int8 *dynamic* quantisation: weights stored as int8, activations quantised on the fly.

    ``onnxruntime.quantization.quantize_dynamic`` with int8 weights and its default operator
    list, after BatchNorm folding. Needs no calibration data. Returns ``out``.
    """
    from onnxruntime import quantization

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, _quiet_quantization():
        quantization.quantize_dynamic(
            str(_preprocessed(src, tmp)), str(out), weight_type=quantization.QuantType.QInt8
        )
    return out


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
