"""How much of each notebook is the framework's own code: code cells counted by what they call.

Each code cell is parsed (``ast``; IPython lines starting with ``%`` or ``!`` are left out) and
every call in it, decorators included, is traced to its *root name*: ``tf.function(f)(x)`` and
``torch.export.export(m, args)`` to ``tf`` and ``torch``, ``lessons.timed(...)`` to ``lessons``.
The notebook's own imports say what a root name is (``import tensorflow as tf``, ``from mindspore
import nn``, ``from labkit.frameworks.onnxruntime import graphs as og``):

- a **framework** call: the root is a framework module (:data:`FRAMEWORKS`: torch, tensorflow,
  keras, mindspore, onnxruntime, onnx, paddle, ...);
- a **measure** call: the root is one of labkit's measuring and sharing modules
  (:data:`MEASURING`: the benchmark runner, results, plots, the hardware readout, the serving
  load generator, the claim checks, the classroom, the selection guide, and the shared plumbing:
  profiles, the canonical weights and data, tables), the part of labkit a lesson is meant to
  call;
- a **helper** call: the root is any other part of labkit (``labkit.lessons``, an adapter's
  ``graphs``, ...), except ``labkit.exercises`` and the exercises it loads (``q1 =
  exercises.load(...)``, then ``q1.check(...)``), whose calls are the notebook's **exercise**
  calls.

Calls on the notebook's own objects (``model.fit``, ``q1.check``, ``np.ones``, ``plt.plot``)
count for none. A cell is *direct* when it makes more framework calls than helper calls,
*helper* when it makes more helper calls, *mixed* on a tie, *measure* when its counted calls are
measure calls only (a benchmark plan, its table and figure), *exercise* when its only counted
calls are exercise calls, and *other* when it calls none (imports, plain Python, NumPy, plots).
The target of issue 21: more direct cells than helper cells in notebooks 05-11, with the
benchmark-plan cells (measure) set apart; a notebook with neither (no framework work at all, such
as the selection guide's) reads ``n/a``.

    python benchmarks/notebook_cells.py                    # every notebook under notebooks/
    python benchmarks/notebook_cells.py notebooks/05_*.ipynb --cells   # and each cell's counts
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
#: the top-level modules whose calls are the framework's own code
FRAMEWORKS = frozenset(
    {
        "torch",
        "torchvision",
        "tensorflow",
        "keras",
        "tf_keras",
        "mindspore",
        "onnx",
        "onnxruntime",
        "onnxscript",
        "ai_edge_litert",
        "tflite_runtime",
        "paddle",
        "tvm",
        "jax",
        # the serving frameworks of the serving lesson (07b): the seeds' "Flask/FastAPI" service
        "fastapi",
        "starlette",
        "uvicorn",
        "flask",
    }
)
#: labkit's measuring and sharing modules: what a lesson calls labkit for (issue 21: "labkit keeps
#: what measures, what two notebooks share, and plumbing no learner needs to read"), counted
#: apart from the helpers that do framework work for the lesson (the adapters, labkit.lessons,
#: labkit.explore). The selection guide is shared by notebook 09 and the app (app/), and calls no
#: framework
MEASURING = frozenset(
    f"labkit.{m}"
    for m in (
        "bench",
        "classroom",
        "doctor",
        "guide",
        "hardware",
        "plots",
        "profiles",
        "resnet",
        "results",
        "runner",
        "serve",
        "sources",
        "util",
    )
)
KINDS = ("direct", "helper", "mixed", "measure", "exercise", "other")


@dataclass
class Cell:
    index: int  # position among the notebook's cells
    cell_id: str
    framework: int = 0
    helper: int = 0
    measure: int = 0
    exercise: int = 0

    @property
    def kind(self) -> str:
        if self.framework > self.helper:
            return "direct"
        if self.helper > self.framework:
            return "helper"
        if self.framework:
            return "mixed"
        if self.measure:
            return "measure"
        return "exercise" if self.exercise else "other"


@dataclass
class Notebook:
    name: str
    cells: list[Cell] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(c.kind == kind for c in self.cells)

    def counts(self) -> dict[str, int]:
        return {k: self.count(k) for k in KINDS}


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    text = "".join(src) if isinstance(src, list) else src
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith(("%", "!")))


def _bind_imports(tree: ast.AST, names: dict[str, str]) -> None:
    """Add what each import of ``tree`` binds to ``names``: local name -> dotted module path."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    root = a.name.split(".")[0]
                    names[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"


def _bind_exercises(tree: ast.AST, names: dict[str, str]) -> None:
    """``q1 = exercises.load(...)``: ``q1`` is an exercise too (``q1.check(...)`` is its call)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            root = _root(node.value)
            if root in names and kind_of(names[root]) == "exercise":
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        names[target.id] = "labkit.exercises"


def _root(node: ast.AST) -> str | None:
    """The name a call (or a decorator) starts from: ``a`` in ``a.b.c(...)(...)[0].d(...)``."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def kind_of(module: str) -> str | None:
    """The kind of a dotted module path: "framework", "exercise", "measure", "helper", or None."""
    top = module.split(".")[0]
    if top in FRAMEWORKS:
        return "framework"
    if module == "labkit.exercises" or module.startswith("labkit.exercises."):
        return "exercise"
    if any(module == m or module.startswith(m + ".") for m in MEASURING):
        return "measure"
    if top == "labkit":
        return "helper"
    return None


def _calls(tree: ast.AST) -> list[ast.AST]:
    """Every call of ``tree``, and every decorator that is not itself a call (``@tf.function``)."""
    out: list[ast.AST] = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out += [d for d in n.decorator_list if not isinstance(d, ast.Call)]
    return out


def count(path: Path) -> Notebook:
    """The notebook's code cells with their framework, helper and exercise calls, in order.

    Imports count from the cell that makes them on (a notebook runs top to bottom)."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a notebook ({exc})") from None
    names: dict[str, str] = {}
    out = Notebook(path.name)
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        cell_id = str(cell.get("id", ""))
        try:
            tree = ast.parse(_source(cell))
        except SyntaxError as exc:
            raise ValueError(
                f"{path.name} cell {index} (id {cell_id!r}) is not Python: {exc.msg}, line "
                f"{exc.lineno}"
            ) from None
        _bind_imports(tree, names)
        _bind_exercises(tree, names)
        counted = Cell(index, cell_id)
        for call in _calls(tree):
            root = _root(call)
            kind = kind_of(names[root]) if root in names else None
            if kind:
                setattr(counted, kind, getattr(counted, kind) + 1)
        out.cells.append(counted)
    return out


def table(notebooks: list[Notebook]) -> str:
    head = f"{'notebook':<42}" + "".join(f"{k:>9}" for k in KINDS) + "  direct > helper"
    lines = [head, "-" * len(head)]
    for nb in notebooks:
        c = nb.counts()
        mark = "yes" if c["direct"] > c["helper"] else "no" if c["direct"] + c["helper"] else "n/a"
        lines.append(f"{nb.name:<42}" + "".join(f"{c[k]:>9}" for k in KINDS) + f"  {mark:>15}")
    return "\n".join(lines)


def cell_lines(nb: Notebook) -> str:
    return "\n".join(
        f"  cell {c.index:>3} {c.cell_id:<24} {c.kind:<9} framework {c.framework}, "
        f"helper {c.helper}, measure {c.measure}, exercise {c.exercise}"
        for c in nb.cells
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="default: every notebooks/*.ipynb")
    parser.add_argument("--cells", action="store_true", help="also list every code cell")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    paths = [Path(p) for p in args.notebooks] or sorted(NOTEBOOKS.glob("*.ipynb"))
    try:
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise ValueError(f"no such notebook: {', '.join(missing)}")
        counted = [count(p) for p in paths]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({nb.name: nb.counts() for nb in counted}, indent=1))
        return 0
    print(table(counted))
    if args.cells:
        for nb in counted:
            print(f"\n{nb.name}\n{cell_lines(nb)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
