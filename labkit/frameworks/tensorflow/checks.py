"""TensorFlow's properties for code exercises: ``traces_once`` (as a ``tf.function``, the learner's
own or a wrapped one, every input traces at most one new graph, ``experimental_get_tracing_count``)
and ``matches_eager`` (the graph's outputs equal the reference's, run eagerly)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from .._kit import checks as kit
from .._kit.checks import what_broke

__all__ = ["PROPERTIES", "graph_function", "namespace", "traces_once", "verify"]


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


def _changing(cases: list[tuple]) -> list[int]:
    """The argument positions whose description differs between ``cases``."""
    return [i for i in range(len(cases[0])) if len({_describe(c[i]) for c in cases}) > 1] or list(
        range(len(cases[0]))
    )


def graph_function(fn: Callable):
    """The learner's tf.function as they wrote it, or a plain function wrapped in one."""
    return fn if hasattr(fn, "experimental_get_tracing_count") else tf.function(fn)


def traces_once(fn: Callable, cases: list[tuple]) -> tuple[bool, str]:
    graph = graph_function(fn)
    before = graph.experimental_get_tracing_count()
    traced_at = []
    for i, case in enumerate(cases):
        count = graph.experimental_get_tracing_count()
        try:
            graph(*_args(case))
        except Exception as exc:  # an error while tracing or running the graph
            return False, f"call {i + 1} ({_signature(case)}) raised {what_broke(exc)}"
        if graph.experimental_get_tracing_count() > count:
            traced_at.append(i)
    new = graph.experimental_get_tracing_count() - before
    if new <= 1:
        return True, f"{new} trace for {len(cases)} calls"
    changing = _changing([cases[i] for i in traced_at])
    retraced = "; ".join(f"call {i + 1}: {_signature(cases[i], changing)}" for i in traced_at)
    return False, (
        f"{new} traces for {len(cases)} calls: a new graph for each new input signature "
        f"({retraced})"
    )


#: the properties these checks verify, by the name an exercise gives them
PROPERTIES: dict[str, Callable] = {
    "traces_once": traces_once,
    "matches_eager": kit.graph_properties(
        graph_function, _args, _numpy, "runs", "eager", call="call", describe=_signature
    )["matches_eager"],
}


def verify(prop: str, fn: Callable, cases: list[tuple], **given: Any) -> tuple[bool, str]:
    return kit.verify("TensorFlow", PROPERTIES, prop, fn, cases, **given)
