"""The exercises answered with a value (Choice, Number, Text; Code is in :mod:`.code`), and the
progress file each checked answer of the bank goes to.

``check`` never raises on a learner's answer; an author's mistake raises ``ValueError``. The
progress file is ``~/.graphlab/progress.json`` (a ``git pull`` keeps it), or ``LABKIT_PROGRESS``
(``off``: none); one that cannot be read or written is a warning, and the answer still checked.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..util import jsonio

__all__ = ["ENV", "Choice", "Exercise", "Feedback", "Number", "Text", "path", "read", "record"]

ENV = "LABKIT_PROGRESS"


def path() -> Path | None:
    """The progress file in use, or None when recording is switched off."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in ("off", "0", "none", "false"):
        return None
    return Path(value or "~/.graphlab/progress.json").expanduser()


def _warn(problem: str) -> None:
    # issued here, not at the caller: Python's registry then shows each problem once
    fix = f"set {ENV} to a writable file, or {ENV}=off"
    warnings.warn(f"exercise progress is not saved: {problem} ({fix})", RuntimeWarning)


def read(file: Path | None = None) -> dict[str, dict]:
    """Every recorded exercise; an absent file is no progress, a damaged one is reported."""
    file = file or path()
    if file is None or not file.exists():
        return {}
    try:
        entries = json.loads(file.read_text(encoding="utf-8"))["exercises"]
        if not isinstance(entries, dict):
            raise TypeError("'exercises' is not an object")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
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
            old = entries.get(exercise_id, {})
            attempts = old.get("attempts")
            entries[exercise_id] = {  # rebuilt: what else the file held there is dropped
                "attempts": (attempts if isinstance(attempts, int) else 0) + 1,
                "right": old.get("right") is True or right,
            }
            text = json.dumps({"version": 1, "exercises": entries}, indent=1, sort_keys=True)
            jsonio.write_atomic(file, text + "\n")
    except OSError as exc:
        _warn(f"cannot write {file} ({exc.strerror or exc})")


@dataclass(frozen=True)
class Feedback:
    correct: bool
    message: str
    failed: str | None = None  # the property a code exercise failed ("traces_once"), else None

    def __str__(self) -> str:
        return self.message

    _repr_markdown_ = __str__

    def __bool__(self) -> bool:
        return self.correct


@dataclass
class Exercise:
    """A question; a subclass judges an answer (``_judge``) and states it (``answer_text``)."""

    prompt: str
    explanation: str  # why the right answer is right, shown with a correct answer
    hint: str = ""
    attempts: int = field(default=0, init=False)
    id: str = field(default="", init=False)  # "NN.name" for an exercise of the bank, else ""

    def check(self, response) -> Feedback:
        """Grade ``response``; a missing answer gets a reminder, never an exception."""
        if response is None or (isinstance(response, str) and not response.strip()):
            said = "No answer yet. Replace `None` with your answer and run the cell again."
            return Feedback(False, said + (f" Hint: {self.hint}" if self.hint else ""))
        return self._counted(self._judge(response))

    def _counted(self, feedback: Feedback) -> Feedback:
        self.attempts += 1
        if self.id:
            record(self.id, feedback.correct)
        return feedback

    def _verdict(self, right: bool, why: str = "") -> Feedback:
        if right:
            return Feedback(True, f"Correct. {self.explanation}")
        return Feedback(False, f"Not quite. {why}".strip() + " Try again, or call .solution().")

    def solution(self) -> Feedback:
        """Reveal the answer and its explanation."""
        return Feedback(True, f"Solution: {self.answer_text()}\n\n{self.explanation}".strip())

    def _repr_markdown_(self) -> str:
        return f"**Exercise.** {self.prompt}"


@dataclass
class Choice(Exercise):
    """Multiple choice: ``choices`` maps a key ("a", "b", ...) to its text, ``wrong`` a wrong
    key to why it is wrong."""

    choices: dict[str, str] = field(default_factory=dict)
    answer: str = ""
    wrong: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        unknown = {self.answer, *self.wrong} - set(self.choices)
        if unknown:
            raise ValueError(f"{sorted(unknown)} not among the choices {list(self.choices)}")

    def _judge(self, response) -> Feedback:
        key = str(response).strip().lower()
        if key not in self.choices:
            said = f"{response!r} is not one of the choices ({', '.join(self.choices)})"
            return Feedback(False, f"{said}: answer with the letter.")
        return self._verdict(key == self.answer, self.wrong.get(key, ""))

    def answer_text(self) -> str:
        return f"({self.answer}) {self.choices[self.answer]}"

    def _repr_markdown_(self) -> str:
        opts = "\n".join(f"- **{k}**: {v}" for k, v in self.choices.items())
        return f"**Exercise.** {self.prompt}\n\n{opts}"


@dataclass(kw_only=True)
class Number(Exercise):
    """A numeric answer, right within a relative tolerance (or an absolute one)."""

    answer: float
    rel_tol: float = 0.05
    abs_tol: float = 0.0
    unit: str = ""

    def _judge(self, response) -> Feedback:
        try:
            value = float(response)
        except (TypeError, ValueError):
            unit = f" (in {self.unit})" if self.unit else ""
            return Feedback(False, f"{response!r} is not a number: answer with a number{unit}.")
        close = math.isclose(value, self.answer, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
        return self._verdict(close, f"{value:g} is too {'high' if value > self.answer else 'low'}.")

    def answer_text(self) -> str:
        return f"{self.answer:g} {self.unit}".strip()


@dataclass
class Text(Exercise):
    """A short word or phrase; any of ``accepted`` (case- and space-insensitive) is right."""

    accepted: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.accepted:
            raise ValueError("a Text exercise needs at least one accepted answer")

    def _judge(self, response) -> Feedback:
        def norm(s) -> str:
            return " ".join(str(s).lower().replace("`", "").split())

        return self._verdict(norm(response) in map(norm, self.accepted), f"{response!r} is not it.")

    def answer_text(self) -> str:
        return repr(self.accepted[0])
