"""Run a benchmark plan: every cell in a fresh subprocess, every result appended as it exists.

For: measuring. A :class:`Plan` lists the cells (:meth:`Plan.build`: the lab's ResNet-50 over
frameworks x modes x tasks x batch sizes x precisions; :meth:`Plan.for_model`: a learner's model
from its spec and input shapes, the same cells otherwise); :func:`run` measures each
:class:`Cell` in its own Python process (``python -m labkit.runner --cell ...``, the path every
figure of the lab takes; ``benchmarks/overhead.py`` checks it against a bare loop) with one
thread policy (``threads`` intra-op, one inter-op, read back into the record), cold compile
caches unless ``cache="warm"``, and a timeout after which the cell's whole process group is
killed; a cell that fails, hangs or runs out of memory is a recorded failure and the plan goes
on, each record is appended to the results file the moment it exists (an interrupted run keeps
everything measured; ``resume=True`` measures only what is missing), and the run shows its
progress and a line per record. The rooms: :mod:`~labkit.runner.plan` (cells, plans, the two
workloads), :mod:`~labkit.runner.inputs` (a learner's model spec and its inputs),
:mod:`~labkit.runner.cell` (the child: measuring one cell against the measured peaks, the test
faults), :mod:`~labkit.runner.process` (the child's process, environment, caches and signals),
:mod:`~labkit.runner.loop` (the run). Not for: the timing itself (:mod:`labkit.bench`), the
record format and reading results (:mod:`labkit.results`), or asking a learner's model whether its graphs
capture (:mod:`labkit.explore`).
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
