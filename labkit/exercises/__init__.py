"""Self-check exercises: a notebook loads a question by id (``exercises.load("02.one_graph")``),
the learner's answer is checked and explained, ``.solution()`` shows the answer only when asked.

Four kinds: :class:`Choice`, :class:`Number`, :class:`Text` and :class:`Code` (a function run
through the framework's own checker). The answers live in the bank (``bank/NN.toml``), not in
the notebooks; :func:`progress` shows what was answered and got right, per notebook.
"""

from __future__ import annotations

from .bank import load, progress
from .code import Code
from .core import Choice, Exercise, Number, Text

__all__ = ["Choice", "Code", "Exercise", "Number", "Text", "load", "progress"]
