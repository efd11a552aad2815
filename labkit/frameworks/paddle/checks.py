"""PaddlePaddle's properties for code exercises: ``full_graph`` (``paddle.jit.to_static(fn,
full_graph=True)`` converts the source into one program and runs it on every input) and
``matches_eager`` (against the reference run in dygraph)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import paddle

from .._kit import checks as kit

__all__ = ["PROPERTIES", "namespace", "verify"]


def namespace() -> dict[str, Any]:
    return {"paddle": paddle, "nn": paddle.nn, "np": np}


PROPERTIES = kit.graph_properties(
    lambda fn: paddle.jit.to_static(kit.unwrap(fn), full_graph=True, backend=None),
    *kit.converters(paddle.to_tensor, lambda o: isinstance(o, paddle.Tensor), lambda t: t.numpy()),
    runs="full_graph",
    baseline="dygraph",
)
verify = functools.partial(kit.verify, "PaddlePaddle", PROPERTIES)
