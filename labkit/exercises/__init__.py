"""Self-check exercises: the learner's answer is checked and explained; the solution waits.

In a notebook::

    from labkit import exercises

    q1 = exercises.load("02.python_branch")   # the question, from labkit/exercises/bank/02.toml
    q1                                   # shows the prompt (and the choices)
    q1.check(None)                       # the learner replaces None with the answer
    q1.solution()                        # only when asked

Four kinds: :class:`Choice`, :class:`Number`, :class:`Text` (a value) and :class:`Code` (a
function, run and checked for properties such as "traces once" or "no graph breaks", by the
framework's own checker). The answers live in the bank (:mod:`labkit.exercises.bank`), not in
the notebooks, so that a learner reads the question, not its answer key. Every checked answer
is recorded in a small file in the learner's home; :func:`progress` shows what was answered
and got right, per notebook.

``check`` never raises on a learner's answer: a missing or malformed answer gets feedback that
says what is expected. Malformed *exercises* (an author's mistake) raise ``ValueError``.
"""

from __future__ import annotations

from .code import Code
from .core import Choice, Exercise, Number, Text
from .progress import progress

__all__ = ["Choice", "Code", "Exercise", "Number", "Text", "load", "progress"]


def load(exercise_id: str, measured: float | None = None) -> Exercise:
    """The exercise ``exercise_id`` ("02.one_graph") from the bank.

    ``measured``: for an exercise answered from the learner's own run (a figure this notebook
    measured), that figure.
    """
    from .bank import build

    return build(exercise_id, measured=measured)
