"""Self-check exercises: a notebook loads a question by id (``exercises.load("02.one_graph")``),
the learner's answer is checked and explained, ``.solution()`` shows the answer only when asked.

Four kinds: :class:`Choice`, :class:`Number`, :class:`Text` and :class:`Code` (a function run
through the framework's own checker). The answers live in the bank, ``bank/NN.toml``: one TOML
table per exercise (``type`` choice | number | text | code, ``prompt``, and the fields of its
class), not in the notebooks; :func:`progress` shows what was answered and got right, per notebook.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..util import tables
from .code import Code
from .core import ENV, Choice, Exercise, Number, Text, path, read

__all__ = ["Choice", "Code", "Exercise", "Number", "Text", "load", "progress"]

FOLDER = Path(__file__).resolve().parent / "bank"
_ID = re.compile(r"^(\d\d[a-z]?)\.([a-z][a-z0-9_]*)$")  # "04b.name": a notebook 04b
#: the class of each ``type``; an entry's other fields are its arguments
KINDS: dict[str, type[Exercise]] = {"choice": Choice, "number": Number, "text": Text, "code": Code}
MARKS = {"right": "✓", "tried": "✗", "open": "·"}


@functools.cache
def _file(notebook: str) -> dict[str, Any]:
    file = FOLDER / f"{notebook}.toml"
    if not file.exists():
        raise ValueError(f"no exercises for notebook {notebook!r} (files here: {notebooks()})")
    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{file.name}: {exc}") from exc


def notebooks() -> list[str]:
    """The notebooks that have exercises ("00", "01", ...)."""
    return sorted(p.stem for p in FOLDER.glob("*.toml"))


def ids(notebook: str | None = None) -> list[str]:
    """Every exercise id (a table of a bank file), or one notebook's, in course order."""
    chosen = [notebook] if notebook else notebooks()
    return [f"{nb}.{k}" for nb in chosen for k, v in _file(nb).items() if isinstance(v, dict)]


def entry(exercise_id: str) -> dict[str, Any]:
    """The raw bank entry of ``exercise_id`` ("02.one_graph")."""
    m = _ID.match(exercise_id)
    if not m:
        raise ValueError(
            f"{exercise_id!r} is not an exercise id: write the notebook's number, a dot and the "
            "exercise's name, e.g. '02.one_graph'"
        )
    notebook, name = m.groups()
    found = _file(notebook).get(name)
    if not isinstance(found, dict):
        raise ValueError(
            f"notebook {notebook} has no exercise {name!r}; it has: {', '.join(ids(notebook))}"
        )
    return found


def load(exercise_id: str, measured: float | None = None) -> Exercise:
    """The exercise ``exercise_id`` from the bank; ``measured``: the figure this run measured,
    for an exercise answered from the learner's own run (``measured = true`` in the bank)."""
    fields = dict(entry(exercise_id))
    kind = fields.pop("type", None)
    if kind not in KINDS:
        raise ValueError(f"{exercise_id}: type must be one of {sorted(KINDS)}, not {kind!r}")
    if fields.pop("measured", False):
        if measured is None:
            raise ValueError(
                f"{exercise_id} is answered from your own run: load it with "
                f"exercises.load({exercise_id!r}, measured=<the value this run measured>)"
            )
        fields["answer"] = float(measured)
    elif measured is not None:
        raise ValueError(f"{exercise_id} has a fixed answer: load it without measured=")
    try:
        exercise = KINDS[kind](**fields)
    except TypeError as exc:  # a field its class does not take, or one missing
        raise ValueError(f"{exercise_id}: {exc}") from exc
    exercise.id = exercise_id
    return exercise


@dataclass(frozen=True)
class Progress:
    """Each exercise's status ("right", "tried" or "open"), by id in course order."""

    status: dict[str, str]
    source: str  # where the progress was read from

    def counts(self, notebook: str | None = None) -> tuple[int, int, int]:
        """(exercises, answered, right): one notebook's, or the whole course's."""
        mine = [s for i, s in self.status.items() if notebook in (None, i.split(".")[0])]
        return len(mine), sum(s != "open" for s in mine), mine.count("right")

    def markdown(self) -> str:
        rows = []
        for nb in notebooks():
            marks = [f"{MARKS[self.status[i]]} `{i.split('.')[1]}`" for i in ids(nb)]
            rows.append((f"{nb} {_file(nb).get('title', nb)}", *self.counts(nb), " ".join(marks)))
        legend = "✓ right, ✗ answered but not yet right, · not answered"
        rows.append(("**all**", *self.counts(), legend))
        head = ("notebook", "exercises", "answered", "right", "each exercise")
        return tables.markdown(head, rows, "lrrrl") + f"\n\nProgress file: `{self.source}`"

    _repr_markdown_ = markdown


def progress() -> Progress:
    """Which exercises of which notebook this learner has answered, and got right."""
    recorded = read()
    right = {i for i, got in recorded.items() if got.get("right") is True}
    tried = {i for i, got in recorded.items() if got.get("attempts")}
    status = {i: "right" if i in right else "tried" if i in tried else "open" for i in ids()}
    where = path()
    return Progress(status, str(where) if where else f"not recorded ({ENV}=off)")
