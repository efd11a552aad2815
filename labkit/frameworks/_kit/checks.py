"""The toolkit of the code-exercise checks (``labkit/frameworks/<name>/checks.py``, or a spec's
``exercise`` table: :func:`from_spec`), numpy only: a framework's ``verify(prop, fn, cases, ...)``
answers ``(passed, detail)``."""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from ...util.numeric import difference
from ..contract import FrameworkSpec

__all__ = [
    "compare",
    "converters",
    "from_spec",
    "graph_properties",
    "same_outputs",
    "signature",
    "unwrap",
    "verify",
    "what_broke",
]


#: the plain Python function under a framework's decorator: tf.function, torch.compile,
#: mindspore.jit and paddle.jit.to_static each name it ``__wrapped__``
unwrap = inspect.unwrap


def what_broke(exc: BaseException, limit: int = 300) -> str:
    """A framework's exception in a line: its type and the line that says what broke (after
    TensorFlow's "in user code:" and Paddle's "In transformed code:", the last "SomeError:
    message" line; elsewhere the first)."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    if lines and lines[0].endswith(("in user code:", "In transformed code:")):
        found = [m for ln in lines if (m := re.match(r"^(\w+(?:Error|Exception|Warning)): ", ln))]
        if found:
            return found[-1].string[:limit]
    message = f"{type(exc).__name__}: {lines[0] if lines else '(no message)'}"
    message += next((f" ({x})" for x in lines[1:3] if x.startswith("Explanation:")), "")
    return message if len(message) <= limit else message[: limit - 3] + "..."


def compare(got, want, rtol: float, atol: float) -> str | None:
    """None when ``got`` equals ``want`` (nested tuples of arrays/numbers), else what differs."""
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return f"returns {_kind(got)} where eager returns {_kind(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            if problem := compare(g, w, rtol, atol):
                return f"output {i}: {problem}"
        return None
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        return f"shape {g.shape} where eager gives {w.shape}"
    if np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
        return None
    worst = difference(g, w, skip_nan=True).largest
    return f"differs from eager by up to {worst:.3g} (eager: {_short(w)}, got: {_short(g)})"


def _kind(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"{len(value)} outputs"
    return f"one array of shape {np.asarray(value).shape}"


def _short(a: np.ndarray) -> str:
    return np.array2string(np.ravel(a), precision=4, separator=", ", threshold=4, edgeitems=2)


def signature(case: tuple) -> str:
    """One call's arguments in words: ``tensor (2, 3), 4``."""
    return ", ".join(
        f"tensor {tuple(v.shape)}" if isinstance(v, np.ndarray) else repr(v) for v in case
    )


def converters(
    tensor: Callable[[np.ndarray], Any], is_tensor: Callable[[Any], bool], array: Callable
) -> tuple[Callable[[tuple], tuple], Callable[[Any], Any]]:
    """``(args, numpy)``: a case's arrays made tensors, and an output (nested tuples of tensors
    or plain values) made NumPy."""

    def args(case: tuple) -> tuple:
        return tuple(tensor(v) if isinstance(v, np.ndarray) else v for v in case)

    def numpy(out: Any) -> Any:
        if isinstance(out, (tuple, list)):
            return tuple(numpy(o) for o in out)
        return array(out) if is_tensor(out) else np.asarray(out)

    return args, numpy


def same_outputs(
    run: Callable[[tuple], Any],
    want: Callable[[tuple], Any] | None,
    cases: list[tuple],
    rtol: float = 0.0,
    atol: float = 0.0,
    *,
    passed: str,
    baseline: str = "eager",
) -> tuple[bool, str]:
    """``(True, passed)`` when ``run(case)`` returns on every case and gives ``want(case)``
    (``want=None``: whatever it gives), else the first case that raised or differed."""
    for i, case in enumerate(cases, 1):
        try:
            got = run(case)
        except Exception as exc:  # the learner's code may raise anything
            return False, f"input {i} ({signature(case)}) raised {what_broke(exc)}"
        if want is not None and (problem := compare(got, want(case), rtol, atol)):
            return False, f"input {i} ({signature(case)}): {problem.replace('eager', baseline)}"
    return True, passed


def verify(
    display: str,
    properties: dict[str, Callable],
    prop: str,
    fn: Callable,
    cases: list[tuple],
    **given,
) -> tuple[bool, str]:
    """Run the check of ``prop``, giving it by name what it takes of ``given`` (``reference``,
    ``rtol``, ``atol``, the exercise's options); ``ValueError`` for an unknown property or
    option."""
    if prop not in properties:
        raise ValueError(f"unknown {display} property {prop!r}")
    known = {p for check in properties.values() for p in inspect.signature(check).parameters}
    unknown = sorted(set(given) - known - {"reference", "rtol", "atol"})
    if unknown:
        raise ValueError(f"{display} checks take no options {unknown}")
    wanted = inspect.signature(properties[prop]).parameters
    return properties[prop](fn, cases, **{k: v for k, v in given.items() if k in wanted})


def graph_properties(
    graph: Callable[[Callable], Callable],
    args: Callable[[tuple], tuple],
    numpy: Callable[[Any], Any],
    runs: str,
    baseline: str,
) -> dict[str, Callable]:
    """``{runs: ..., "matches_eager": ...}``: whether ``graph(fn)`` (the framework's whole-graph
    capture) runs on every input, and gives the reference's outputs run eagerly (``baseline``)."""

    def ran(fn: Callable, cases: list[tuple]) -> tuple[bool, str]:
        passed = f"captured whole and ran on all {len(cases)} inputs"
        return same_outputs(runner(fn), None, cases, passed=passed)

    def matches_eager(
        fn: Callable, cases: list[tuple], reference: Callable, rtol: float, atol: float
    ) -> tuple[bool, str]:
        passed = f"same outputs as {baseline} on all {len(cases)} inputs"
        want = runner(reference, capture=unwrap)
        return same_outputs(runner(fn), want, cases, rtol, atol, passed=passed, baseline=baseline)

    def runner(fn: Callable, capture: Callable = graph) -> Callable[[tuple], Any]:
        compiled = capture(fn)
        return lambda case: numpy(compiled(*args(case)))

    return {runs: ran, "matches_eager": matches_eager}


def from_spec(spec: FrameworkSpec) -> SimpleNamespace:
    """The checks ``spec``'s ``exercise`` table describes, as a ``checks`` module offers them
    (``namespace()``, ``PROPERTIES``, ``verify``): its first ``code_checks`` property runs
    ``call(fn, **options)`` on every input, ``matches_eager`` compares that with the ``eager``
    run, the inputs' arrays made ``tensor``; exercise code sees ``namespace``."""
    table = dict(spec.exercise)
    capture, tensor = (pkgutil.resolve_name(table[k]) for k in ("call", "tensor"))
    properties = graph_properties(
        lambda fn: capture(unwrap(fn), **dict(table["options"])),
        *converters(tensor, lambda out: isinstance(out, tensor), np.asarray),
        runs=spec.code_checks[0][0],
        baseline=table["eager"],
    )
    names = {name: importlib.import_module(m) for name, m in table["namespace"]}
    verifies = functools.partial(verify, spec.display, properties)
    return SimpleNamespace(namespace=names.copy, PROPERTIES=properties, verify=verifies)
