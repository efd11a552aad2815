"""Bring your own model: what happens to it in graph mode, and is graph mode worth it here?

:func:`check` runs each capture path of a learner's model (PyTorch's, TensorFlow's, ONNX
Runtime's: ``labkit/frameworks/<name>/explore.py``) in worker processes with a time limit, and
returns a :class:`Report`: per path *works*, *caveats*, *fails* or *crashed*, why in plain
words, and the framework's own message. :func:`bench` measures the model through the benchmark
runner. The rooms: :mod:`~labkit.explore.readiness` (:func:`check`),
:mod:`~labkit.explore.workers` (the worker protocol), :mod:`~labkit.explore.report`,
:mod:`~labkit.explore.benchmark` (:func:`bench`); specs and input shapes are
:mod:`labkit.runner.inputs`.
"""

from ..frameworks._kit.explore import STATUSES, GraphBreak, PathResult, Recompile
from .benchmark import bench
from .readiness import DEFAULT_TIMEOUT_S, check
from .report import Report

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "STATUSES",
    "GraphBreak",
    "PathResult",
    "Recompile",
    "Report",
    "bench",
    "check",
]
