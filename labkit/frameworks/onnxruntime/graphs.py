"""ONNX Runtime's optimisation levels (:data:`LEVELS`, :func:`optimize`) and node counts."""

from __future__ import annotations

import collections
from pathlib import Path

import onnx
import onnxruntime as ort

__all__ = ["LEVELS", "counts", "optimize", "session_options"]

#: optimisation level names, lowest first (ONNX Runtime's ``ORT_DISABLE_ALL``, ``ORT_ENABLE_<LEVEL>``)
LEVELS: tuple[str, ...] = ("disabled", "basic", "extended", "layout", "all")


def session_options(level: str = "all") -> ort.SessionOptions:
    """Options for one CPU session at ``level``; threads don't spin while idle."""
    if level not in LEVELS:
        raise ValueError(
            f"unknown optimisation level {level!r}: valid levels are {', '.join(LEVELS)}"
        )
    so = ort.SessionOptions()
    name = "ORT_DISABLE_ALL" if level == "disabled" else f"ORT_ENABLE_{level.upper()}"
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, name)
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


def counts(model: str | Path | onnx.ModelProto) -> collections.Counter[str]:
    """Nodes by operator, most common first; ORT's own operators carry their domain
    (``com.microsoft:FusedConv``)."""
    return collections.Counter(
        f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type
        for n in (model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))).graph.node
    )
