"""Run a benchmark plan: build a :class:`Plan`, then :func:`run` measures each :class:`Cell` in a
fresh process (one thread policy, cold compile caches, a timeout), appends each record to the
results file as it exists, records a failure and goes on, and with ``resume=True`` measures only
what the file lacks. Rooms: plan (the cells, and one measured in its child), inputs (a learner's
model), loop (the run).
"""

from . import inputs
from .loop import RunResult, cell_env, run, run_cell
from .plan import Cell, Plan, ceiling_fields

__all__ = ["Cell", "Plan", "RunResult", "ceiling_fields", "cell_env", "inputs", "run", "run_cell"]
