"""MindSpore's properties for code exercises (labkit.exercises.Code).

- ``graph_mode``: ``mindspore.jit(fn, fullgraph=True)`` compiles and runs on every input. With
  ``fullgraph=True`` the whole function must be graph syntax: nothing may fall back to the
  Python interpreter (JIT Fallback), so a ``try`` statement or an ``asnumpy()`` call fails
  here with MindSpore's compile error.
- ``matches_eager``: that graph's outputs equal the reference's, run in PyNative mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from .._kit import checks as kit
from .._kit.checks import runs_on_all, same_outputs, unwrap
from . import adapter  # noqa: F401  (sends MindSpore's compile-failure reports to a scratch folder)

__all__ = ["PROPERTIES", "eager", "graph_mode", "matches_eager", "namespace", "verify"]


def namespace() -> dict[str, Any]:
    return {"ms": ms, "ops": ops, "nn": nn, "np": np}


_args, _numpy = kit.converters(ms.Tensor, lambda o: isinstance(o, ms.Tensor), lambda t: t.asnumpy())


def eager(fn: Callable, case: tuple):
    if ms.get_context("mode") != ms.PYNATIVE_MODE:
        raise RuntimeError("MindSpore is in GRAPH_MODE: set_context(mode=PYNATIVE_MODE) first")
    return _numpy(unwrap(fn)(*_args(case)))


def _graph(fn: Callable) -> Callable:
    return ms.jit(unwrap(fn), fullgraph=True)


def graph_mode(fn: Callable, cases: list[tuple]) -> tuple[bool, str]:
    compiled = _graph(fn)
    return runs_on_all(
        lambda case: _numpy(compiled(*_args(case))),
        cases,
        f"compiled whole (strict syntax) and ran on all {len(cases)} inputs",
    )


def matches_eager(
    fn: Callable, cases: list[tuple], reference: Callable, rtol: float, atol: float
) -> tuple[bool, str]:
    compiled = _graph(fn)
    return same_outputs(
        lambda case: _numpy(compiled(*_args(case))),
        lambda case: eager(reference, case),
        cases,
        rtol,
        atol,
        passed=f"same outputs as PyNative on all {len(cases)} inputs",
        baseline="PyNative",
    )


#: the properties these checks verify, by the name an exercise gives them
PROPERTIES: dict[str, Callable] = {
    "graph_mode": graph_mode,
    "matches_eager": matches_eager,
}


def verify(prop: str, fn: Callable, cases: list[tuple], **given: Any) -> tuple[bool, str]:
    return kit.verify("MindSpore", PROPERTIES, prop, fn, cases, **given)
