"""Run a benchmark plan: build a :class:`Plan`, then :func:`run` measures each :class:`Cell` in a
fresh process (one thread policy, cold compile caches, a timeout), appends each record to the
results file as it exists, records a failure and goes on, and with ``resume=True`` measures only
what the file lacks. Rooms: plan, inputs (a learner's model), cell (the child), process (the
child seen from the runner), loop (the run).
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
