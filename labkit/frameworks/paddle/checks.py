"""PaddlePaddle's properties for code exercises (labkit.exercises.Code).

- ``full_graph``: ``paddle.jit.to_static(fn, full_graph=True)`` converts the function's source
  into one static program and runs it on every input. Source conversion rewrites ``if`` and
  ``while`` on tensors into graph control flow, but Python that needs a tensor's *value* while
  converting (indexing a list with it, a dictionary lookup) fails here with Paddle's error.
- ``matches_eager``: that program's outputs equal the reference's, run in dygraph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import paddle

from .._kit import checks as kit
from .._kit.checks import runs_on_all, same_outputs, unwrap

__all__ = ["PROPERTIES", "eager", "full_graph", "matches_eager", "namespace", "verify"]


def namespace() -> dict[str, Any]:
    return {"paddle": paddle, "nn": paddle.nn, "np": np}


_args, _numpy = kit.converters(
    paddle.to_tensor, lambda o: isinstance(o, paddle.Tensor), lambda t: t.numpy()
)


def eager(fn: Callable, case: tuple):
    return _numpy(unwrap(fn)(*_args(case)))


def _static(fn: Callable) -> Callable:
    return paddle.jit.to_static(unwrap(fn), full_graph=True, backend=None)


def full_graph(fn: Callable, cases: list[tuple]) -> tuple[bool, str]:
    converted = _static(fn)
    return runs_on_all(
        lambda case: _numpy(converted(*_args(case))),
        cases,
        f"converted whole (full_graph=True) and ran on all {len(cases)} inputs",
    )


def matches_eager(
    fn: Callable, cases: list[tuple], reference: Callable, rtol: float, atol: float
) -> tuple[bool, str]:
    converted = _static(fn)
    return same_outputs(
        lambda case: _numpy(converted(*_args(case))),
        lambda case: eager(reference, case),
        cases,
        rtol,
        atol,
        passed=f"same outputs as dygraph on all {len(cases)} inputs",
        baseline="dygraph",
    )


#: the properties these checks verify, by the name an exercise gives them
PROPERTIES: dict[str, Callable] = {
    "full_graph": full_graph,
    "matches_eager": matches_eager,
}


def verify(prop: str, fn: Callable, cases: list[tuple], **given: Any) -> tuple[bool, str]:
    return kit.verify("PaddlePaddle", PROPERTIES, prop, fn, cases, **given)
