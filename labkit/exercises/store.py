"""The learner's progress: which exercises were answered, and which were got right.

One JSON file, ``~/.graphlab/progress.json`` (outside the course folder, so a ``git pull`` keeps
it); ``LABKIT_PROGRESS`` names another file, ``LABKIT_PROGRESS=off`` records nothing. A file that
cannot be read or written is reported once as a warning; the answer is still checked.
"""

from __future__ import annotations

import datetime
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..util import jsonio, tables

__all__ = ["ENV", "Progress", "Row", "forget_warnings", "path", "read", "record"]

ENV = "LABKIT_PROGRESS"
DEFAULT = Path("~/.graphlab/progress.json")
VERSION = 1
MARKS = {"right": "✓", "tried": "✗", "open": "·"}
_warned: set[str] = set()


def path() -> Path | None:
    """The progress file in use, or None when recording is switched off."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in ("off", "0", "none", "false"):
        return None
    return Path(value).expanduser() if value else DEFAULT.expanduser()


def forget_warnings() -> None:
    """Warn again about problems already reported (each is reported once per process)."""
    _warned.clear()


def _warn(problem: str) -> None:
    if problem not in _warned:
        _warned.add(problem)
        warnings.warn(
            f"exercise progress is not saved: {problem} (set {ENV} to a writable file, "
            f"or {ENV}=off)",
            RuntimeWarning,
            stacklevel=4,
        )


def read(file: Path | None = None) -> dict[str, dict]:
    """Every recorded exercise; an absent file is no progress, a damaged one is reported."""
    file = path() if file is None else file
    if file is None or not file.exists():
        return {}
    try:
        entries = json.loads(file.read_text(encoding="utf-8"))["exercises"]
        if not isinstance(entries, dict):
            raise TypeError("'exercises' is not an object")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _warn(f"{file} is not a progress file ({type(exc).__name__}: {exc})")
        return {}
    return {k: v for k, v in entries.items() if isinstance(v, dict)}


def record(exercise_id: str, right: bool) -> None:
    """Add one checked answer of ``exercise_id`` to the progress file."""
    file = path()
    if file is None:
        return
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with jsonio.locked(file.with_name(file.name + ".lock")):  # two notebooks at once
            entries = read(file)
            entry = entries.setdefault(exercise_id, {"attempts": 0, "right": False})
            entry["attempts"] = int(entry.get("attempts", 0)) + 1
            entry["right"] = bool(entry.get("right")) or right
            entry["last_right"] = right
            entry["updated"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            text = json.dumps({"version": VERSION, "exercises": entries}, indent=1, sort_keys=True)
            jsonio.write_atomic(file, text + "\n")
    except OSError as exc:
        _warn(f"cannot write {file} ({exc.strerror or exc})")


class _Counts:
    def statuses(self) -> list[str]:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def total(self) -> int:
        return len(self.statuses())

    @property
    def answered(self) -> int:
        return sum(s != "open" for s in self.statuses())

    @property
    def right(self) -> int:
        return sum(s == "right" for s in self.statuses())


@dataclass(frozen=True)
class Row(_Counts):
    notebook: str
    title: str
    status: dict[str, str]  # exercise name -> "right" | "tried" | "open", in course order

    def statuses(self) -> list[str]:
        return list(self.status.values())


@dataclass(frozen=True)
class Progress(_Counts):
    rows: tuple[Row, ...]
    source: str  # where the progress was read from

    def statuses(self) -> list[str]:
        return [s for r in self.rows for s in r.statuses()]

    def status(self, exercise_id: str) -> str:
        notebook, name = exercise_id.split(".", 1)
        for row in self.rows:
            if row.notebook == notebook:
                return row.status[name]
        raise KeyError(exercise_id)

    def markdown(self) -> str:
        head = ("notebook", "exercises", "answered", "right", "each exercise")
        body = [
            (f"{r.notebook} {r.title}", r.total, r.answered, r.right, self._marks(r))
            for r in self.rows
        ]
        legend = f"{MARKS['right']} right, {MARKS['tried']} answered but not yet right, "
        legend += f"{MARKS['open']} not answered"
        body.append(("**all**", self.total, self.answered, self.right, legend))
        return tables.markdown(head, body, "lrrrl") + f"\n\nProgress file: `{self.source}`"

    @staticmethod
    def _marks(row: Row) -> str:
        return " ".join(f"{MARKS[s]} `{name}`" for name, s in row.status.items())

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def __str__(self) -> str:
        return "\n".join(
            f"{r.notebook} {r.title}: {r.right}/{r.total} right, {r.answered} answered"
            for r in self.rows
        )
