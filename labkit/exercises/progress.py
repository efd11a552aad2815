"""A learner's progress through the course's exercises: what was answered, what was got right.

Reads the progress file (:mod:`labkit.exercises.store`) against the exercise bank, so that an
exercise not yet answered shows too. ``exercises.progress()`` in a notebook renders a table per
notebook; ``.figure()`` draws it.
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

    def figure(self):
        """A bar per notebook: exercises right, answered but not yet right, not answered."""
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 0.35 * len(self.rows) + 1.2), layout="constrained")
        labels = [f"{r.notebook} {r.title}" for r in self.rows]
        right = [r.right for r in self.rows]
        tried = [r.answered - r.right for r in self.rows]
        open_ = [r.total - r.answered for r in self.rows]
        ax.barh(labels, right, color="#2ca02c", label="right")
        ax.barh(labels, tried, left=right, color="#ff7f0e", label="answered, not yet right")
        ax.barh(
            labels,
            open_,
            left=[a + b for a, b in zip(right, tried)],
            color="#dddddd",
            label="not answered",
        )
        ax.invert_yaxis()
        ax.set_xlabel("exercises")
        ax.set_title(f"Your exercises: {self.right} of {self.total} right")
        ax.legend(loc="lower right", fontsize="small")
        return fig


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
