"""TensorFlow's properties for code exercises: ``traces_once`` (as a ``tf.function``, the
learner's own or a wrapped one, the inputs trace at most one graph) and ``matches_eager``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from .._kit import checks as kit

__all__ = ["PROPERTIES", "namespace", "traces_once", "verify"]


def namespace() -> dict[str, Any]:
    return {"tf": tf, "np": np}


_args, _numpy = kit.converters(tf.constant, lambda o: hasattr(o, "numpy"), lambda t: t.numpy())


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype} tensor of shape {tuple(value.shape)}"
    return f"Python {type(value).__name__} {value!r}"


def _signature(case: tuple, only: list[int] | None = None) -> str:
    positions = range(len(case)) if only is None else only
    return ", ".join(f"argument {i + 1}: {_describe(case[i])}" for i in positions)


def _graph(fn: Callable):
    return fn if hasattr(fn, "experimental_get_tracing_count") else tf.function(fn)


def traces_once(fn: Callable, cases: list[tuple]) -> tuple[bool, str]:
    graph, traced = _graph(fn), []
    for i, case in enumerate(cases):
        count = graph.experimental_get_tracing_count()
        try:
            graph(*_args(case))
        except Exception as exc:  # an error while tracing or running the graph
            return False, f"call {i + 1} ({_signature(case)}) raised {kit.what_broke(exc)}"
        if graph.experimental_get_tracing_count() > count:
            traced.append(i)
    if len(traced) <= 1:
        return True, f"{len(traced)} trace for {len(cases)} calls"
    # name only the arguments whose signature changed between the traces
    first = cases[traced[0]]
    changing = [a for a in range(len(first)) if len({_describe(cases[i][a]) for i in traced}) > 1]
    said = "; ".join(f"call {i + 1}: {_signature(cases[i], changing or None)}" for i in traced)
    return False, (
        f"{len(traced)} traces for {len(cases)} calls: a new graph for each new input signature "
        f"({said})"
    )


PROPERTIES: dict[str, Callable] = {
    "traces_once": traces_once,
    "matches_eager": kit.graph_properties(_graph, _args, _numpy, "runs", "eager")["matches_eager"],
}
verify = functools.partial(kit.verify, "TensorFlow", PROPERTIES)
