"""Bring your own model: what happens to it in graph mode, and is graph mode worth it here?

For: asking a learner's model the questions the course asks of its ResNet-50. :func:`check`
runs each capture path in turn (eager, ``torch.compile`` with its graph breaks and
recompilations, ``fullgraph``, ``torch.export`` strict and non-strict, the TorchScript trace,
ONNX export; ``tf.function`` and its retracing, XLA, SavedModel, TF Lite; ONNX Runtime at each
optimisation level) in worker processes, each check with a time limit (a check that kills its
process is reported as *crashed* and the others go on in a fresh worker; the calling process, a
notebook kernel, is never at risk), and returns a :class:`Report`: per path *works*, *caveats*,
*fails* or *crashed*, the reason in plain words and the framework's own message.
:func:`bench` measures the same model through the benchmark runner (a learner's model is a kind
of plan: :meth:`labkit.runner.Plan.for_model`). Framework-free: the checks themselves live in
each framework's package (``labkit/frameworks/<name>/explore.py``, with the toolkit they share
in :mod:`labkit.frameworks._kit.explore`). The rooms: :mod:`~labkit.explore.report`,
:mod:`~labkit.explore.readiness` (:func:`check`), :mod:`~labkit.explore.workers` (both sides of
the worker protocol, ``python -m labkit.explore``), :mod:`~labkit.explore.benchmark`
(:func:`bench`); a model's spec and input shapes are :mod:`labkit.runner.inputs`. Not for: the
lab's own ResNet-50 benchmark (:mod:`labkit.runner`) or the record format (:mod:`labkit.results`).
"""

from ..frameworks._kit.explore import STATUSES, GraphBreak, PathResult, Recompile
from .benchmark import bench
from .readiness import DEFAULT_TIMEOUT_S, check, framework_of_spec
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
    "framework_of_spec",
]
