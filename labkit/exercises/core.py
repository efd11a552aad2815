"""The exercises answered with a value: Choice, Number, Text (Code is in :mod:`.code`).

``check`` never raises on a learner's answer: a missing or malformed one gets feedback saying
what is expected; a malformed exercise (an author's mistake) raises ``ValueError``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .store import record

__all__ = ["EMPTY", "RIGHT", "Choice", "Exercise", "Feedback", "Number", "Text"]


@dataclass(frozen=True)
class Feedback:
    correct: bool
    message: str
    #: the property a code exercise failed (its name, e.g. "traces_once"); None otherwise
    failed: str | None = None

    def __str__(self) -> str:
        return self.message

    def _repr_markdown_(self) -> str:
        return self.message

    def __bool__(self) -> bool:
        return self.correct


RIGHT, WRONG, EMPTY = "Correct.", "Not quite.", "No answer yet."


@dataclass
class Exercise:
    prompt: str
    explanation: str  # why the right answer is right, shown with a correct answer
    hint: str = ""
    attempts: int = field(default=0, init=False)
    #: "NN.name" for an exercise of the bank (set by labkit.exercises.load); "" otherwise
    id: str = field(default="", init=False)

    def _judge(self, response) -> Feedback:  # pragma: no cover - overridden
        raise NotImplementedError

    def _empty(self) -> Feedback:
        return Feedback(
            False,
            f"{EMPTY} Replace `None` with your answer and run the cell again."
            + (f" Hint: {self.hint}" if self.hint else ""),
        )

    def check(self, response) -> Feedback:
        """Grade ``response``; a missing answer gets a reminder, never an exception."""
        if response is None or (isinstance(response, str) and not response.strip()):
            return self._empty()
        self.attempts += 1
        feedback = self._judge(response)
        self._record(feedback)
        return feedback

    def _record(self, feedback: Feedback) -> None:
        if self.id:
            record(self.id, feedback.correct)

    def solution(self) -> Feedback:
        """Reveal the answer and its explanation."""
        return Feedback(True, f"Solution: {self._answer_text()}. {self.explanation}")

    def _answer_text(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def _repr_markdown_(self) -> str:
        return f"**Exercise.** {self.prompt}"


@dataclass
class Choice(Exercise):
    """Multiple choice: ``choices`` maps a key ("a", "b", ...) to its text."""

    choices: dict[str, str] = field(default_factory=dict)
    answer: str = ""
    wrong: dict[str, str] = field(default_factory=dict)  # key -> why that choice is wrong

    def __post_init__(self):
        if self.answer not in self.choices:
            raise ValueError(
                f"exercise answer {self.answer!r} is not among the choices {list(self.choices)}"
            )
        unknown = set(self.wrong) - set(self.choices)
        if unknown:
            raise ValueError(f"explanations for unknown choices: {sorted(unknown)}")

    def _judge(self, response) -> Feedback:
        key = str(response).strip().lower()
        if key not in self.choices:
            return Feedback(
                False,
                f"{response!r} is not one of the choices "
                f"({', '.join(self.choices)}): answer with the letter.",
            )
        if key == self.answer:
            return Feedback(True, f"{RIGHT} {self.explanation}")
        why = self.wrong.get(key, "")
        return Feedback(False, f"{WRONG} {why}".strip() + " Try again, or call .solution().")

    def _answer_text(self) -> str:
        return f"({self.answer}) {self.choices[self.answer]}"

    def _repr_markdown_(self) -> str:
        opts = "\n".join(f"- **{k}**: {v}" for k, v in self.choices.items())
        return f"**Exercise.** {self.prompt}\n\n{opts}"


@dataclass
class Number(Exercise):
    """A numeric answer, right within a relative tolerance (or an absolute one)."""

    answer: float = 0.0
    rel_tol: float = 0.05
    abs_tol: float = 0.0
    unit: str = ""

    def _judge(self, response) -> Feedback:
        try:
            value = float(response)
        except (TypeError, ValueError):
            return Feedback(
                False,
                f"{response!r} is not a number: answer with a number"
                + (f" (in {self.unit})" if self.unit else "")
                + ".",
            )
        if math.isclose(value, self.answer, rel_tol=self.rel_tol, abs_tol=self.abs_tol):
            return Feedback(True, f"{RIGHT} {self.explanation}")
        direction = "high" if value > self.answer else "low"
        return Feedback(
            False, f"{WRONG} {value:g} is too {direction}. Try again, or call .solution()."
        )

    def _answer_text(self) -> str:
        return f"{self.answer:g}{(' ' + self.unit) if self.unit else ''}"


@dataclass
class Text(Exercise):
    """A short word or phrase; any of ``accepted`` (case- and space-insensitive) is right."""

    accepted: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.accepted:
            raise ValueError("a Text exercise needs at least one accepted answer")

    @staticmethod
    def _norm(s: str) -> str:
        return " ".join(str(s).lower().replace("`", "").split())

    def _judge(self, response) -> Feedback:
        if self._norm(response) in {self._norm(a) for a in self.accepted}:
            return Feedback(True, f"{RIGHT} {self.explanation}")
        return Feedback(False, f"{WRONG} {response!r} is not it. Try again, or call .solution().")

    def _answer_text(self) -> str:
        return repr(self.accepted[0])
