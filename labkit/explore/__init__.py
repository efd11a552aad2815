"""Bring your own model: :func:`check` runs each capture path of a learner's model in worker
processes and returns a :class:`Report` (per path *works*, *caveats*, *fails* or *crashed*, why,
and the framework's own message); :func:`bench` measures it through the benchmark runner.
"""

from ..frameworks._kit.explore import GraphBreak, PathResult, Recompile
from .readiness import bench, check
from .report import Report

__all__ = ["GraphBreak", "PathResult", "Recompile", "Report", "bench", "check"]
