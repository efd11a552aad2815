"""ONNX Runtime's graph optimisation levels (:data:`LEVELS`) and a CPU session's options at one."""

from __future__ import annotations

import onnxruntime as ort

__all__ = ["LEVELS", "session_options"]

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
