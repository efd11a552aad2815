"""Run a benchmark plan: every cell in a fresh subprocess, every result appended as it exists.

A :class:`Plan` lists the cells (:meth:`Plan.build`: the lab's ResNet-50; :meth:`Plan.for_model`:
a learner's model); :func:`run` measures each :class:`Cell` in its own process with one thread
policy, cold compile caches unless ``cache="warm"`` and a timeout; a failure is a record and the
plan goes on, and ``resume=True`` measures only what the results file lacks. The rooms:
:mod:`~labkit.runner.plan` (cells, plans), :mod:`~labkit.runner.inputs` (a learner's model spec
and its inputs), :mod:`~labkit.runner.cell` (the child: one cell, the measured peaks, the test
faults), :mod:`~labkit.runner.process` (the child's process, environment, caches and signals),
:mod:`~labkit.runner.loop` (the run). Not for: the timing itself (:mod:`labkit.bench`) or the
record format (:mod:`labkit.results`).
"""

from . import inputs
from .cell import cached_peaks, ceiling_fields, measured_peaks
from .loop import RunResult, check_out, run
from .plan import Cell, Plan
from .process import cell_env, run_cell

__all__ = [
    "Cell",
    "Plan",
    "RunResult",
    "cached_peaks",
    "ceiling_fields",
    "cell_env",
    "check_out",
    "inputs",
    "measured_peaks",
    "run",
    "run_cell",
]
