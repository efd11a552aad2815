"""``python -m labkit.runner --cell JSON --result FILE --threads N``: measure one benchmark cell
in this process (what :func:`labkit.runner.run` starts for each cell)."""

import argparse
import json
import os
import sys
from pathlib import Path

from labkit.runner.plan import Cell, measure_cell
from labkit.util import jsonio, proc

parser = argparse.ArgumentParser(
    prog="python -m labkit.runner", description="measure one benchmark cell (used by run())"
)
parser.add_argument("--cell", required=True, help="the Cell as JSON")
parser.add_argument("--result", required=True, help="write the record's fields here (JSON)")
parser.add_argument("--threads", type=int, required=True)
parser.add_argument("--parent", type=int, default=0, help="exit when this process is gone")
args = parser.parse_args()
if args.parent:  # the runner died: this cell, what it started and its folder go too
    proc.exit_with_parent(args.parent, remove=Path(args.result).parent)
fields = measure_cell(Cell(**json.loads(args.cell)), args.threads)
jsonio.write_atomic(args.result, json.dumps(fields))
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)  # skip framework teardown (MindSpore and thread pools can hang or abort at exit)
