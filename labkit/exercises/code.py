"""Code exercises: the learner edits a function; the framework's own checker (its ``checks.py``,
through the registry) verifies the properties in order and names the first that fails. The
unchanged starting code is explained, not counted.
"""

from __future__ import annotations

import ast
import contextlib
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
from .core import EMPTY, RIGHT, Exercise, Feedback

__all__ = ["Check", "Code", "function_from_source"]

_REFERENCES = ("starter", "solution", "self")
_counter = itertools.count()


@dataclass(frozen=True)
class Check:
    """What a :class:`Code` exercise verifies, and on which inputs.

    ``inputs``: a Python expression over ``np`` and ``rng`` (seeded) giving a list of argument
    tuples. ``reference`` (run eagerly, for "outputs match eager"): ``starter``, ``solution``,
    ``self`` or a function's source. ``options`` go to the framework's checker.
    """

    framework: str
    properties: tuple[str, ...]
    inputs: str
    reference: str = "starter"
    rtol: float = 1e-5
    atol: float = 1e-6
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, spec: dict[str, Any]) -> Check:
        """A check from a mapping (a bank entry's ``check`` table): keys that are not fields of
        :class:`Check` are the framework checker's options."""
        known = {"framework", "properties", "inputs", "reference", "rtol", "atol"}
        missing = {"framework", "properties", "inputs"} - set(spec)
        if missing:
            raise ValueError(f"a code check needs {sorted(missing)}")
        options = {k: v for k, v in spec.items() if k not in known}
        return cls(**{k: v for k, v in spec.items() if k in known}, options=options)

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", tuple(self.properties))
        declared = dict(frameworks.spec(self.framework).code_checks)  # ValueError if unknown
        unknown = [p for p in self.properties if p not in declared]
        if not self.properties or unknown:
            raise ValueError(
                f"code check for {self.framework}: unknown properties {unknown or '(none given)'}; "
                f"{self.framework} declares {sorted(declared)}"
            )
        if self.reference not in _REFERENCES and "def " not in self.reference:
            raise ValueError(
                f"reference must be one of {_REFERENCES} or the source of a function, "
                f"not {self.reference!r}"
            )

    def describe(self, prop: str) -> str:
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


def function_name(source: str) -> str:
    """The one function a starter defines at top level."""
    defs = [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
    if len(defs) != 1:
        raise ValueError(f"starter code must define exactly one function, found {defs}")
    return defs[0]


def _function_ast(source: str, name: str) -> str | None:
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.dump(node, annotate_fields=False, include_attributes=False)
    return None


def _silently(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` with its prints (Python's and native ones, such as ``tf.print``) swallowed."""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        result, _ = native_output(lambda: native_output(fn, fd=2)[0], fd=1)
    return result


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
        self.check_spec = check if isinstance(check, Check) else Check.from_dict(check)
        self.starter = textwrap.dedent(starter).strip() + "\n"
        self.solution_code = textwrap.dedent(solution).strip() + "\n"
        self.hints = tuple(hints)
        self.entry = function_name(self.starter)
        if function_name(self.solution_code) != self.entry:
            raise ValueError(f"the solution must define {self.entry!r}, like the starter")
        self.hint = self.hints[0] if self.hints else ""
        self._failures = 0

    # -- what the learner sees --------------------------------------------------------------
    def _repr_markdown_(self) -> str:
        spec = frameworks.spec(self.check_spec.framework)
        props = "\n".join(f"- {self.check_spec.describe(p)}" for p in self.check_spec.properties)
        return (
            f"**Exercise (code, {spec.display}).** {self.prompt}\n\n"
            f"`check` runs your `{self.entry}` and verifies, in this order:\n{props}"
        )

    def solution(self) -> Feedback:
        """The reference solution's code and why it works."""
        return Feedback(
            True, f"Solution:\n\n```python\n{self.solution_code}```\n\n{self.explanation}".strip()
        )

    # -- checking ---------------------------------------------------------------------------
    def check(self, response) -> Feedback:
        """Run ``response`` (the learner's function) through every property, in order."""
        if response is None:
            return Feedback(
                False,
                f"{EMPTY} Define `{self.entry}` in the cell, then call "
                f"`.check({self.entry})` with the function itself.",
            )
        if not callable(response):
            return Feedback(
                False,
                f"{response!r} is not a function: pass the function itself, "
                f"`.check({self.entry})`, not its result or its name.",
            )
        unchanged = self.is_starter(response)
        feedback = self._judge(response)
        if unchanged and not feedback.correct:
            return Feedback(
                False,
                "This is the starting code, unchanged: it fails as the exercise says. "
                + feedback.message,
                feedback.failed,
            )
        self.attempts += 1
        self._record(feedback)
        return feedback

    def is_starter(self, fn: Callable) -> bool:
        """Whether ``fn``'s source is the starting code (formatting and comments aside)."""
        try:
            source = inspect.getsource(unwrap(fn))
        except (OSError, TypeError):
            return False
        mine = _function_ast(source, self.entry)
        return mine is not None and mine == _function_ast(self.starter, self.entry)

    def run_checks(self, fn: Callable) -> list[tuple[str, bool, str]]:
        """(property, passed, detail) for each property, up to and including the first failure."""
        spec = self.check_spec
        try:
            checks = frameworks.checks(spec.framework)
        except frameworks.FrameworkUnavailable as exc:
            return [("available", False, str(exc))]
        namespace = checks.namespace()
        reference = fn
        if spec.reference != "self":
            source = {"starter": self.starter, "solution": self.solution_code}.get(
                spec.reference, spec.reference
            )
            reference = function_from_source(source, self.entry, namespace, f"{self.id} reference")
        rows = []
        for prop in spec.properties:
            cases = spec.cases()
            try:
                ok, detail = _silently(
                    lambda prop=prop, cases=cases: checks.verify(
                        prop,
                        fn,
                        cases,
                        reference=reference,
                        rtol=spec.rtol,
                        atol=spec.atol,
                        **spec.options,
                    )
                )
            except Exception as exc:  # noqa: BLE001  (the learner's code may raise anything)
                ok, detail = False, f"it raised {what_broke(exc)}"
            rows.append((prop, ok, detail))
            if not ok:
                break
        return rows

    def _judge(self, fn: Callable) -> Feedback:
        rows = self.run_checks(fn)
        lines = [
            f"- {'✓' if ok else '✗'} {self._describe(prop)}: {detail}" for prop, ok, detail in rows
        ]
        failed = next((prop for prop, ok, _ in rows if not ok), None)
        if failed is None:
            self._failures = 0
            return Feedback(
                True,
                f"{RIGHT} Every property holds:\n"
                + "\n".join(lines)
                + (f"\n\n{self.explanation}" if self.explanation else ""),
            )
        self._failures += 1
        hint = self.hints[min(self._failures, len(self.hints)) - 1] if self.hints else ""
        return Feedback(
            False,
            f"Not yet: *{self._describe(failed)}* failed.\n"
            + "\n".join(lines)
            + (f"\n\nHint: {hint}" if hint else "")
            + "\n\nEdit the function and run the cell again, or call .solution().",
            failed,
        )

    def _describe(self, prop: str) -> str:
        if prop == "available":
            return f"{self.check_spec.framework} is available"
        return self.check_spec.describe(prop)
