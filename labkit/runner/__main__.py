"""``python -m labkit.runner CELL RESULT THREADS PARENT``: measure one benchmark cell (the
:class:`~labkit.runner.Cell` as JSON) in this process with THREADS threads, write its record's
fields to the file RESULT as JSON, and end when the process PARENT does (what
:func:`labkit.runner.run_cell` starts for each cell)."""

import json
import os
import sys
from pathlib import Path

from labkit.runner.plan import Cell, measure_cell
from labkit.util import jsonio, proc

cell, result, threads, parent = sys.argv[1:]
# the runner died: this cell, what it started and its folder go too
proc.exit_with_parent(int(parent), remove=Path(result).parent)
fields = measure_cell(Cell(**json.loads(cell)), int(threads))
jsonio.write_atomic(result, json.dumps(fields))
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)  # skip framework teardown (MindSpore and thread pools can hang or abort at exit)
