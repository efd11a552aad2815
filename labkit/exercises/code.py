"""Code exercises: the learner edits a function; the framework's own checker (its ``checks.py``,
through the registry) verifies the properties in order and names the first that fails. The
unchanged starting code is explained, not counted.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import io
import itertools
import linecache
import sys
import textwrap
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import frameworks
from ..frameworks._kit.checks import unwrap, what_broke
from ..util.stdio import native_output
from .core import Exercise, Feedback

__all__ = ["Check", "Code", "function_from_source"]

_counter = itertools.count()


@dataclass
class Check:
    """What a :class:`Code` exercise verifies, and on which inputs: ``inputs`` is a Python
    expression over ``np`` and ``rng`` (seeded) giving a list of argument tuples; ``reference``
    (run eagerly, for "outputs match eager") is ``starter``, ``solution`` or a function's source;
    ``options`` go to the framework's checker."""

    framework: str
    properties: tuple[str, ...]
    inputs: str
    reference: str = "starter"
    rtol: float = 1e-5
    atol: float = 1e-6
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.properties = tuple(self.properties)
        declared = dict(frameworks.spec(self.framework).code_checks)  # ValueError if unknown
        unknown = [p for p in self.properties if p not in declared]
        if not self.properties or unknown:
            raise ValueError(
                f"code check for {self.framework}: unknown properties {unknown or '(none given)'}; "
                f"{self.framework} declares {sorted(declared)}"
            )
        if self.reference not in ("starter", "solution") and "def " not in self.reference:
            raise ValueError(
                "reference must be 'starter', 'solution' or the source of a function, "
                f"not {self.reference!r}"
            )

    def describe(self, prop: str) -> str:
        if prop == "available":
            return f"{self.framework} is available"
        return dict(frameworks.spec(self.framework).code_checks)[prop]

    def cases(self) -> list[tuple]:
        """The argument tuples, evaluated afresh (each check gets its own arrays)."""
        value = eval(self.inputs, {"np": np, "rng": np.random.default_rng(0)})
        cases = [tuple(c) if isinstance(c, (tuple, list)) else (c,) for c in value]
        if not cases:
            raise ValueError("a code check needs at least one input")
        return cases


def function_from_source(source: str, name: str, namespace: dict, label: str) -> Callable:
    """Define the function ``name`` from ``source`` as a notebook cell would (its source in
    :mod:`linecache`, so AutoGraph, MindSpore's parser and ``inspect`` find it)."""
    number = next(_counter)
    filename = f"<labkit exercise {label} #{number}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    # a module of its own, importable by name: MindSpore resolves a function's globals that way
    module = types.ModuleType(f"_labkit_exercise_{number}")
    module.__dict__.update(namespace)
    sys.modules[module.__name__] = module
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102  (the bank's own code)
    fn = module.__dict__.get(name)
    if not callable(fn):
        raise ValueError(f"the {label} source defines no function {name!r}")
    return fn


def _functions(source: str) -> dict[str, str]:
    """Each top-level function of ``source``: its name and its syntax tree, as text."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return {}
    return {n.name: ast.dump(n) for n in tree.body if isinstance(n, ast.FunctionDef)}


def _silently(fn: Callable[[], Any]) -> Any:
    """``fn()`` with its prints (Python's and native ones, such as ``tf.print``) swallowed."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return native_output(lambda: native_output(fn, fd=2)[0], fd=1)[0]


class Code(Exercise):
    """A function to write (or repair) from ``starter``; ``solution`` defines the same function;
    one more of ``hints`` is shown with each failed attempt."""

    def __init__(
        self,
        prompt: str,
        check: Check | dict,
        starter: str,
        solution: str,
        hints: Sequence[str] = (),
        explanation: str = "",
    ):
        super().__init__(prompt, explanation)
        self.check_spec = check if isinstance(check, Check) else Check(**check)
        self.starter = textwrap.dedent(starter).strip() + "\n"
        self.solution_code = textwrap.dedent(solution).strip() + "\n"
        self.hints = tuple(hints)
        defined = list(_functions(self.starter))
        if len(defined) != 1:
            raise ValueError(f"starter code must define exactly one function, found {defined}")
        self.entry = defined[0]
        if list(_functions(self.solution_code)) != defined:
            raise ValueError(f"the solution must define {self.entry!r}, like the starter")
        self._failures = 0

    def _repr_markdown_(self) -> str:
        spec = self.check_spec
        props = "\n".join(f"- {spec.describe(p)}" for p in spec.properties)
        return (
            f"**Exercise (code, {frameworks.spec(spec.framework).display}).** {self.prompt}\n\n"
            f"`check` runs your `{self.entry}` and verifies, in this order:\n{props}"
        )

    def answer_text(self) -> str:
        return f"\n\n```python\n{self.solution_code}```"

    def check(self, response) -> Feedback:
        """Run ``response`` (the learner's function) through every property, in order."""
        if not callable(response):
            said = "No answer yet." if response is None else f"{response!r} is not a function."
            how = f"Define `{self.entry}` and pass the function itself: `.check({self.entry})`."
            return Feedback(False, f"{said} {how}")
        feedback = self._judge(response)
        if not feedback.correct and self.is_starter(response):
            message = "This is the starting code, unchanged: it fails as the exercise says. "
            return Feedback(False, message + feedback.message, feedback.failed)
        return self._counted(feedback)

    def is_starter(self, fn: Callable) -> bool:
        """Whether ``fn``'s source is the starting code (formatting and comments aside)."""
        try:
            source = inspect.getsource(unwrap(fn))
        except (OSError, TypeError):
            return False
        return _functions(source).get(self.entry, 0) == _functions(self.starter)[self.entry]

    def _judge(self, fn: Callable) -> Feedback:
        """Run ``fn`` through each property, up to and including the first that fails."""
        spec, rows = self.check_spec, []
        try:
            checks = frameworks.checks(spec.framework)
        except frameworks.FrameworkUnavailable as exc:
            rows.append(("available", False, str(exc)))
        else:
            source = {"starter": self.starter, "solution": self.solution_code}
            source = source.get(spec.reference, spec.reference)
            label = f"{self.id} reference"
            reference = function_from_source(source, self.entry, checks.namespace(), label)
            options = {"reference": reference, "rtol": spec.rtol, "atol": spec.atol, **spec.options}
            for prop in spec.properties:
                run = functools.partial(checks.verify, prop, fn, spec.cases(), **options)
                try:
                    ok, detail = _silently(run)
                except Exception as exc:  # noqa: BLE001  (the learner's code may raise anything)
                    ok, detail = False, f"it raised {what_broke(exc)}"
                rows.append((prop, ok, detail))
                if not ok:
                    break
        lines = "\n".join(
            f"- {'✓' if ok else '✗'} {spec.describe(p)}: {why}" for p, ok, why in rows
        )
        failed = next((p for p, ok, _ in rows if not ok), None)
        if failed is None:
            self._failures = 0
            return Feedback(
                True, f"Correct. Every property holds:\n{lines}\n\n{self.explanation}".strip()
            )
        self._failures += 1
        hint = self.hints[min(self._failures, len(self.hints)) - 1] if self.hints else ""
        return Feedback(
            False,
            f"Not yet: *{spec.describe(failed)}* failed.\n{lines}"
            + (f"\n\nHint: {hint}" if hint else "")
            + "\n\nEdit the function and run the cell again, or call .solution().",
            failed,
        )
