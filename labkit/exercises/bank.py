"""The course's exercises, kept out of the notebooks: ``bank/NN.toml``, one TOML table per
exercise (``type`` choice | number | text | code, ``prompt``, and the fields of its class).
"""

from __future__ import annotations

import functools
import re
import tomllib
from pathlib import Path
from typing import Any

from .code import Code
from .core import Choice, Exercise, Number, Text
from .store import ENV, Progress, Row, path, read

__all__ = ["KINDS", "build", "entry", "ids", "notebook_entries", "notebooks", "progress", "title"]

FOLDER = Path(__file__).resolve().parent / "bank"
_ID = re.compile(r"^(\d\d[a-z]?)\.([a-z][a-z0-9_]*)$")  # "04b.name": a notebook 04b
_COMMON = {"type", "prompt", "explanation", "hint"}
_FIELDS = {
    "choice": _COMMON | {"choices", "answer", "wrong"},
    "number": _COMMON | {"answer", "measured", "rel_tol", "abs_tol", "unit"},
    "text": _COMMON | {"accepted"},
    "code": {"type", "prompt", "explanation", "check", "starter", "solution", "hints"},
}
#: the class of each ``type``; an entry's other fields are its arguments
KINDS: dict[str, type[Exercise]] = {"choice": Choice, "number": Number, "text": Text, "code": Code}


@functools.cache
def _file(notebook: str) -> dict[str, Any]:
    path = FOLDER / f"{notebook}.toml"
    if not path.exists():
        have = ", ".join(notebooks()) or "none"
        raise ValueError(f"no exercises for notebook {notebook!r} (files here: {have})")
    with path.open("rb") as f:
        try:
            return tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path.name}: {exc}") from exc


def notebook_entries(notebook: str) -> dict[str, dict[str, Any]]:
    """The raw entries of one notebook's file ("02"), in the order they are asked."""
    return {k: v for k, v in _file(notebook).items() if isinstance(v, dict)}


def title(notebook: str) -> str:
    """The notebook's title, as its file states it (``title = "..."`` at the top)."""
    return str(_file(notebook).get("title", notebook))


def notebooks() -> list[str]:
    """The notebooks that have exercises ("00", "01", ...)."""
    return sorted(p.stem for p in FOLDER.glob("*.toml"))


def ids(notebook: str | None = None) -> list[str]:
    """Every exercise id, or one notebook's, in course order."""
    books = notebooks() if notebook is None else [notebook]
    return [f"{nb}.{name}" for nb in books for name in notebook_entries(nb)]


def entry(exercise_id: str) -> dict[str, Any]:
    m = _ID.match(exercise_id)
    if not m:
        raise ValueError(
            f"{exercise_id!r} is not an exercise id: write the notebook's number, a dot and the "
            "exercise's name, e.g. '02.one_graph'"
        )
    notebook, name = m.groups()
    entries = notebook_entries(notebook)
    if name not in entries:
        raise ValueError(
            f"notebook {notebook} has no exercise {name!r}; it has: {', '.join(entries)}"
        )
    return entries[name]


def build(exercise_id: str, measured: float | None = None) -> Exercise:
    """The exercise ``exercise_id`` (raises ``ValueError`` naming an author's mistake)."""
    raw = dict(entry(exercise_id))
    kind = raw.get("type")
    if kind not in _FIELDS:
        raise ValueError(f"{exercise_id}: type must be one of {sorted(_FIELDS)}, not {kind!r}")
    unknown = set(raw) - _FIELDS[kind]
    if unknown:
        raise ValueError(f"{exercise_id}: unknown fields for a {kind}: {sorted(unknown)}")
    if measured is not None and not raw.get("measured"):
        raise ValueError(f"{exercise_id} has a fixed answer: load it without measured=")
    fields = {k: v for k, v in raw.items() if k not in ("type", "measured")}
    if kind == "number" and raw.get("measured"):
        if measured is None:
            raise ValueError(
                f"{exercise_id} is answered from your own run: load it with "
                f"exercises.load({exercise_id!r}, measured=<the value this run measured>)"
            )
        fields["answer"] = float(measured)
    elif kind == "number" and "answer" not in raw:
        raise ValueError(f"{exercise_id}: a number needs an answer (or measured = true)")
    ex = KINDS[kind](**fields)
    ex.id = exercise_id
    return ex


def progress() -> Progress:
    """Which exercises of which notebook this learner has answered, and got right."""
    recorded = read()
    rows = []
    for notebook in notebooks():
        status = {}
        for name in notebook_entries(notebook):
            entry = recorded.get(f"{notebook}.{name}", {})
            status[name] = (
                "right" if entry.get("right") else "tried" if entry.get("attempts") else "open"
            )
        rows.append(Row(notebook, title(notebook), status))
    where = path()
    return Progress(tuple(rows), str(where) if where else f"not recorded ({ENV}=off)")
