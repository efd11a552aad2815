"""A learner's time per notebook, estimated from the notebooks themselves and the costs table.

The estimate: prose at 130 words a minute, code at 15 lines a minute, 1.5 minutes an exercise,
plus the notebook's measured run time under ``standard`` (README's generated costs table,
``benchmarks/notebook_costs.py``). Rounded up to 5 minutes. Each notebook's header names its
path (``**Path:** core`` or ``**Path:** deep dive``); the core path must fit in 5 hours, the
whole course in 9, and no notebook has more than 6 exercises.

    python tools/learner_time.py            # the table
    python tools/learner_time.py --check    # README's map and the headers agree; budgets hold
    python tools/learner_time.py --write    # rewrite README's map times and the headers
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
README = ROOT / "README.md"
WORDS_PER_MIN, LINES_PER_MIN, MIN_PER_EXERCISE = 130, 15, 1.5
CORE_BUDGET_MIN, WHOLE_BUDGET_MIN, MAX_EXERCISES = 300, 540, 6
COSTS_SCRIPT = ROOT / "benchmarks" / "notebook_costs.py"
HEADER = re.compile(r"\*\*Estimated time:\*\*[^\n]*")
PATH = re.compile(r"\*\*Path:\*\*\s*(core|deep dive)")
EXERCISE = re.compile(r"exercises\.load\(\s*[\"']([^\"']+)[\"']")
MAP_ROW = re.compile(r"^\| `(\d\d\w*_[\w]+\.ipynb)` \|(.*)\| (\d+) min \|$", re.MULTILINE)


@dataclass
class Estimate:
    notebook: str
    path: str
    words: int
    code_lines: int
    exercises: int
    run_min: float | None

    @property
    def minutes(self) -> int:
        raw = (
            self.words / WORDS_PER_MIN
            + self.code_lines / LINES_PER_MIN
            + self.exercises * MIN_PER_EXERCISE
            + (self.run_min or 0.0)
        )
        return 5 * math.ceil(raw / 5)


def _minutes(text: str) -> float | None:
    """'20 s' / '1.9 min' as minutes; None for 'not measured' or 'failed'."""
    m = re.fullmatch(r"([\d.]+) (s|min)", text.strip())
    if not m:
        return None
    return float(m.group(1)) / (60 if m.group(2) == "s" else 1)


def standard_run_minutes(readme: str) -> dict[str, float | None]:
    """The standard profile's run time per notebook, from README's generated costs table (read
    by ``benchmarks/notebook_costs.py``, which writes it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("notebook_costs", COSTS_SCRIPT)
    costs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(costs)
    table = costs.read_table(readme)
    return {name: _minutes(row["standard"][0]) for name, row in table.items() if "standard" in row}


def estimate(path: Path, run_min: float | None) -> Estimate:
    nb = json.loads(path.read_text(encoding="utf-8"))
    words = code = 0
    ids: set[str] = set()
    header = ""
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            words += len(re.findall(r"[A-Za-z0-9][\w'’.-]*", src))
            header = header or src
        elif cell["cell_type"] == "code":
            code += sum(1 for line in src.splitlines() if line.strip())
            ids.update(EXERCISE.findall(src))
    m = PATH.search(header)
    return Estimate(path.name, m.group(1) if m else "?", words, code, len(ids), run_min)


def estimates(root: Path = ROOT) -> list[Estimate]:
    runs = standard_run_minutes((root / "README.md").read_text(encoding="utf-8"))
    return [estimate(p, runs.get(p.name)) for p in sorted((root / "notebooks").glob("*.ipynb"))]


def header_line(e: Estimate) -> str:
    return (
        f"**Estimated time:** {e.minutes} minutes (reading, exercises and the `standard` run; "
        "`tools/learner_time.py`)."
    )


def problems(rows: list[Estimate], root: Path = ROOT, budgets: bool = True) -> list[str]:
    """Every way README's map or the headers disagree with the estimate, and (``budgets``) the
    core path and the whole course over their budgets."""
    out = []
    readme = (root / "README.md").read_text(encoding="utf-8")
    mapped = {m.group(1): int(m.group(3)) for m in MAP_ROW.finditer(readme)}
    for e in rows:
        if e.path == "?":
            out.append(f"{e.notebook}: its header has no '**Path:** core' or 'deep dive' line")
        if e.exercises > MAX_EXERCISES:
            out.append(f"{e.notebook}: {e.exercises} exercises (at most {MAX_EXERCISES})")
        if e.run_min is None:
            out.append(f"{e.notebook}: no standard run time in README's costs table")
        if mapped.get(e.notebook) != e.minutes:
            out.append(
                f"{e.notebook}: README's map says {mapped.get(e.notebook)} min, the "
                f"estimate {e.minutes} (python tools/learner_time.py --write)"
            )
        nb = (root / "notebooks" / e.notebook).read_text(encoding="utf-8")
        if json.dumps(header_line(e))[1:-1] not in nb:
            out.append(f"{e.notebook}: its header's time is not {e.minutes} minutes (--write)")
    core = sum(e.minutes for e in rows if e.path == "core")
    whole = sum(e.minutes for e in rows)
    if budgets and core > CORE_BUDGET_MIN:
        out.append(f"the core path takes {core} min (at most {CORE_BUDGET_MIN})")
    if budgets and whole > WHOLE_BUDGET_MIN:
        out.append(f"the whole course takes {whole} min (at most {WHOLE_BUDGET_MIN})")
    return out


def write(rows: list[Estimate], root: Path = ROOT) -> None:
    """README's map times and each header's time, from the estimate."""
    readme_path = root / "README.md"
    text = readme_path.read_text(encoding="utf-8")
    by_name = {e.notebook: e for e in rows}

    def row(m: re.Match) -> str:
        e = by_name.get(m.group(1))
        return m.group(0) if e is None else f"| `{m.group(1)}` |{m.group(2)}| {e.minutes} min |"

    text = MAP_ROW.sub(row, text)
    core = sum(e.minutes for e in rows if e.path == "core")
    whole = sum(e.minutes for e in rows)
    text = re.sub(
        r"<!-- core-time -->[^<]*<!-- /core-time -->",
        f"<!-- core-time -->{core / 60:.1f} hours<!-- /core-time -->",
        text,
    )
    text = re.sub(
        r"<!-- whole-time -->[^<]*<!-- /whole-time -->",
        f"<!-- whole-time -->{whole / 60:.1f} hours<!-- /whole-time -->",
        text,
    )
    readme_path.write_text(text, encoding="utf-8")
    import nbformat  # written as Jupyter and nbstripout write them (tests/test_working_copy.py)

    for e in rows:
        path = root / "notebooks" / e.notebook
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown" and HEADER.search(cell.source):
                cell.source = HEADER.sub(header_line(e), cell.source, count=1)
                break
        nbformat.write(nb, path)


def render(rows: list[Estimate]) -> str:
    lines = [
        "| notebook | path | words | code lines | exercises | standard run | estimate |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in rows:
        run = "not measured" if e.run_min is None else f"{e.run_min:.1f} min"
        lines.append(
            f"| {e.notebook} | {e.path} | {e.words} | {e.code_lines} | {e.exercises} "
            f"| {run} | {e.minutes} min |"
        )
    core = sum(e.minutes for e in rows if e.path == "core")
    lines.append(
        f"\ncore path: {core} min ({core / 60:.1f} h); "
        f"whole course: {sum(e.minutes for e in rows)} min"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when a document disagrees")
    parser.add_argument("--write", action="store_true", help="rewrite README's map and headers")
    args = parser.parse_args(argv)
    rows = estimates()
    if args.write:
        write(rows)
    print(render(rows))
    if args.check:
        found = problems(rows)
        for p in found:
            print("error:", p, file=sys.stderr)
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
