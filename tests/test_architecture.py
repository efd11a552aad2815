"""labkit's house rules (ARCHITECTURE.md), read from the code itself with ``ast``.

Imports only go down the floors of :data:`FLOORS`; ``util`` imports nothing of labkit; a framework
package imports only the ground it stands on (:data:`FRAMEWORK_GROUND`); no module over 600
lines, no function over 80; no private name used outside its module; ``__all__`` in every
public module. Each rule is a function of the import graph or the parsed modules, so the tests
below also plant a violation and see the rule catch it.
"""

from __future__ import annotations

import ast
import re
from fnmatch import fnmatch
from pathlib import Path

import pytest
from conftest import ROOT

LABKIT = ROOT / "labkit"

#: the rooms, bottom floor first; a room may import its own modules and any room on a lower floor
FLOORS: list[set[str]] = [
    {"util"},
    {"labkit", "profiles", "recipe", "resnet", "bench"},
    {"hardware"},
    {"frameworks.contract"},
    {"frameworks._kit"},
    {"frameworks"},  # the registry builds a spec's code-exercise checks with the kit
    {"frameworks.<framework>"},
    {"frameworks.crosscheck"},
    {"results"},
    {"runner", "plots"},
    {"explore", "sources", "classroom", "lessons", "exercises", "distributed", "serve"},
    {"doctor", "guide"},
    {"cli"},
    {"__main__"},
]
FLOOR = {room: n for n, rooms in enumerate(FLOORS) for room in rooms}
#: what a framework package (labkit/frameworks/<name>/) may import besides its own package: the
#: registry face (a runtime of exported graphs reaches the framework that exports them through
#: it), the contract and the adapters' kit, and the framework-free ground
FRAMEWORK_GROUND = {"util", "labkit", "resnet", "recipe", "profiles"}
FRAMEWORK_ALLOWED = FRAMEWORK_GROUND | {"frameworks", "frameworks._kit", "frameworks.contract"}
KIT_ALLOWED = FRAMEWORK_GROUND | {"frameworks.contract"}
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def parsed() -> dict[str, tuple[Path, ast.Module]]:
    return {module_name(p): (p, ast.parse(p.read_text())) for p in sorted(LABKIT.rglob("*.py"))}


def room(module: str) -> str:
    """``labkit.results.store`` -> ``results``; a framework package -> ``frameworks.<framework>``."""
    parts = module.split(".")[1:]
    if not parts:
        return "labkit"
    if parts[0] != "frameworks":
        return parts[0]
    if len(parts) == 1:
        return "frameworks"
    if parts[1] in ("_kit", "contract", "crosscheck"):
        return f"frameworks.{parts[1]}"
    return "frameworks.<framework>"


def framework_package(module: str) -> str | None:
    parts = module.split(".")
    return ".".join(parts[:3]) if room(module) == "frameworks.<framework>" else None


def imports(name: str, tree: ast.Module, package: bool, known: set[str]) -> set[str]:
    """The labkit modules ``name`` imports (function-level imports included); ``from . import
    sub`` counts as the submodule only."""
    base = name.split(".") if package else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            root = base[: len(base) - node.level + 1] if node.level else []
            module = ".".join([*root, *(node.module.split(".") if node.module else [])])
            subs = {f"{module}.{a.name}" for a in node.names}
            out.update(subs & known)
            if not subs <= known:
                out.add(module)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    mods = parsed()
    known = set(mods)
    return {
        name: imports(name, tree, path.name == "__init__.py", known)
        for name, (path, tree) in mods.items()
    }


def violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import that breaks a rule of the house, as ``a imports b: why``."""
    found = []
    for a, targets in sorted(edges.items()):
        ra = room(a)
        for b in sorted(targets):
            rb = room(b)
            if ra == rb and (
                ra != "frameworks.<framework>" or framework_package(a) == framework_package(b)
            ):
                continue
            if ra == "util":
                found.append(f"{a} imports {b}: util imports nothing of labkit")
            elif ra == "frameworks.<framework>" and rb not in FRAMEWORK_ALLOWED:
                found.append(
                    f"{a} imports {b}: a framework package imports only its own package, "
                    f"{', '.join(sorted(FRAMEWORK_ALLOWED))}"
                )
            elif ra == "frameworks._kit" and rb not in KIT_ALLOWED:
                found.append(f"{a} imports {b}: the adapters' kit stands on {sorted(KIT_ALLOWED)}")
            elif rb not in FLOOR or ra not in FLOOR:
                found.append(f"{a} imports {b}: {ra if ra not in FLOOR else rb} is on no floor")
            elif FLOOR[rb] >= FLOOR[ra]:
                found.append(
                    f"{a} imports {b}: {ra} (floor {FLOOR[ra]}) may import only lower floors, "
                    f"and {rb} is on floor {FLOOR[rb]}"
                )
    return found


# --------------------------------------------------------------------------------------------
# imports go down


def test_every_room_is_on_a_floor():
    assert {room(m) for m in parsed()} - set(FLOOR) == set()


def test_imports_only_go_down():
    assert violations(graph()) == []


@pytest.mark.parametrize(
    "planted",
    [
        ("labkit.util.stats", "labkit.results"),  # util imports nothing of labkit
        ("labkit.results.store", "labkit.runner"),  # upward
        ("labkit.frameworks.torch.adapter", "labkit.bench"),  # beside a framework's ground
        ("labkit.frameworks.torch.adapter", "labkit.frameworks.onnxruntime.adapter"),  # a peer
        ("labkit.sources", "labkit.explore"),  # sideways on one floor
    ],
)
def test_a_planted_import_is_caught(planted):
    edges = graph()
    a, b = planted
    assert a in edges and b in edges, planted
    assert not any(v.startswith(f"{a} imports {b}:") for v in violations(edges))
    edges[a] = edges[a] | {b}
    assert any(v.startswith(f"{a} imports {b}:") for v in violations(edges)), planted


# --------------------------------------------------------------------------------------------
# one room, one job


def budget_table() -> list[tuple[str, list[str], int, int]]:
    """ARCHITECTURE.md's line budget: (room, its path patterns, budget, lines at most today), in
    table order."""
    text = (ROOT / "ARCHITECTURE.md").read_text().split("## Line budget", 1)[1]
    rows = []
    for line in text.splitlines():
        cells = [c.strip().replace(",", "") for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[2].isdigit() and cells[3].isdigit():
            rest = cells[1].startswith("everything else")
            patterns = [] if rest else re.findall(r"`([^`]+)`", cells[1])
            rows.append((cells[0], patterns, int(cells[2]), int(cells[3])))
    return rows


def lines_per_room(table: list[tuple[str, list[str], int, int]]) -> dict[str, int]:
    """Each module's lines (blank and comment lines included) in the first room that matches it;
    the room without patterns takes the rest, and a row whose only pattern is ``*`` the total."""
    rest = next(row[0] for row in table if not row[1])
    rooms = [(row[0], row[1]) for row in table if row[1] and row[1] != ["*"]]
    counts = {row[0]: 0 for row in table}
    for path in LABKIT.rglob("*.py"):
        rel, n = path.relative_to(LABKIT).as_posix(), len(path.read_text().splitlines())
        home = next((r for r, pats in rooms if any(fnmatch(rel, p) for p in pats)), rest)
        counts[home] += n
        for row in table:
            if row[1] == ["*"]:
                counts[row[0]] += n
    return counts


def test_the_budget_table_is_read():
    table = budget_table()
    names = [row[0] for row in table]
    assert {"benchmark core", "serving", "explorer", "the whole package"} <= set(names), names
    counts = lines_per_room(table)
    whole = next(row[0] for row in table if row[1] == ["*"])
    assert counts[whole] == sum(n for name, n in counts.items() if name != whole) > 0
    assert next(row[2] for row in table if row[0] == whole) == 12_500


def test_no_room_grows_past_its_line_count_today_nor_its_budget_once_met():
    """A room under its budget stays under it; a room over it may shrink but never grow (its
    'at most today' column is lowered as it shrinks, and equals the budget once met)."""
    table = budget_table()
    counts = lines_per_room(table)
    over = {
        name: f"{counts[name]} > {today} (budget {budget})"
        for name, _, budget, today in table
        if counts[name] > min(today, max(budget, today))
    }
    assert over == {}, f"rooms grew past ARCHITECTURE.md's line counts: {over}; all: {counts}"
    loose = {
        name: today for name, _, budget, today in table if today > budget and counts[name] <= budget
    }
    assert loose == {}, f"rooms now under their budget: set their 'at most today' to it: {loose}"


def test_no_module_over_600_lines():
    long = {
        name: n
        for name, (path, _) in parsed().items()
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def long_functions(tree: ast.Module) -> list[tuple[str, int]]:
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_no_function_over_80_lines():
    long = {name: fns for name, (_, tree) in parsed().items() if (fns := long_functions(tree))}
    assert long == {}


def test_every_public_module_declares_all():
    missing = [
        name
        for name, (_, tree) in parsed().items()
        if not any(part.startswith("_") for part in name.split(".")[1:])
        and not any(
            isinstance(node, ast.Assign | ast.AnnAssign)
            and any(getattr(t, "id", None) == "__all__" for t in _targets(node))
            for node in tree.body
        )
    ]
    assert missing == []


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def private_uses(name: str, tree: ast.Module, known: set[str]) -> list[str]:
    """Private names (``_x``) that ``name`` takes from another labkit module."""
    base = name.split(".")
    aliases: dict[str, str] = {}  # local name -> labkit module it stands for
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").startswith("labkit")
        ):
            root = (
                base[: len(base) - node.level + (1 if _is_package(name, known) else 0)]
                if node.level
                else []
            )
            module = ".".join([*root, *(node.module.split(".") if node.module else [])])
            for a in node.names:
                full = f"{module}.{a.name}"
                if full in known:
                    aliases[a.asname or a.name] = full
                elif a.name.startswith("_") and not a.name.startswith("__") and module != name:
                    found.append(f"{name}: from {module} import {a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and aliases[node.value.id] != name
        ):
            found.append(f"{name}: {aliases[node.value.id]}.{node.attr}")
    return found


def _is_package(name: str, known: set[str]) -> bool:
    return any(m.startswith(name + ".") for m in known)


def test_no_private_name_is_used_outside_its_module():
    mods = parsed()
    known = set(mods)
    found = [use for name, (_, tree) in mods.items() for use in private_uses(name, tree, known)]
    assert found == []


def test_the_private_name_rule_has_teeth():
    tree = ast.parse("from ..util import stats\nfrom .store import _secret\nx = stats._quantile\n")
    known = {"labkit.results.cards", "labkit.results.store", "labkit.util.stats", "labkit.results"}
    uses = private_uses("labkit.results.cards", tree, known)
    assert sorted(uses) == [
        "labkit.results.cards: from labkit.results.store import _secret",
        "labkit.results.cards: labkit.util.stats._quantile",
    ]
