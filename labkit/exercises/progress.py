"""A learner's progress through the course's exercises: what was answered, what was got right.

Reads the progress file (:mod:`labkit.exercises.store`) against the exercise bank, so that an
exercise not yet answered shows too. ``exercises.progress()`` in a notebook renders a table per
notebook.
"""

from __future__ import annotations

from dataclasses import dataclass

from .bank import notebook_entries, notebooks, title
from .store import ENV, path, read

__all__ = ["Progress", "Row", "progress"]

MARKS = {"right": "✓", "tried": "✗", "open": "·"}


@dataclass(frozen=True)
class Row:
    notebook: str
    title: str
    status: dict[str, str]  # exercise name -> "right" | "tried" | "open", in course order

    @property
    def total(self) -> int:
        return len(self.status)

    @property
    def answered(self) -> int:
        return sum(s != "open" for s in self.status.values())

    @property
    def right(self) -> int:
        return sum(s == "right" for s in self.status.values())


@dataclass(frozen=True)
class Progress:
    rows: tuple[Row, ...]
    source: str  # where the progress was read from

    @property
    def total(self) -> int:
        return sum(r.total for r in self.rows)

    @property
    def right(self) -> int:
        return sum(r.right for r in self.rows)

    @property
    def answered(self) -> int:
        return sum(r.answered for r in self.rows)

    def status(self, exercise_id: str) -> str:
        notebook, name = exercise_id.split(".", 1)
        for row in self.rows:
            if row.notebook == notebook:
                return row.status[name]
        raise KeyError(exercise_id)

    def markdown(self) -> str:
        lines = [
            "| notebook | exercises | answered | right | each exercise |",
            "|---|---:|---:|---:|---|",
        ]
        for r in self.rows:
            marks = " ".join(f"{MARKS[s]} `{name}`" for name, s in r.status.items())
            lines.append(
                f"| {r.notebook} {r.title} | {r.total} | {r.answered} | {r.right} | {marks} |"
            )
        lines.append(
            f"| **all** | {self.total} | {self.answered} | {self.right} | "
            f"{MARKS['right']} right, {MARKS['tried']} answered but not yet right, "
            f"{MARKS['open']} not answered |"
        )
        return "\n".join(lines) + f"\n\nProgress file: `{self.source}`"

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def __str__(self) -> str:
        return "\n".join(
            f"{r.notebook} {r.title}: {r.right}/{r.total} right, {r.answered} answered"
            for r in self.rows
        )


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
