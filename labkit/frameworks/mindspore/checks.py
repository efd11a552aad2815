"""MindSpore's properties for code exercises: ``graph_mode`` (``mindspore.jit(fn,
fullgraph=True)`` compiles and runs on every input: a ``try`` or an ``asnumpy()`` fails with
MindSpore's compile error) and ``matches_eager`` (against the reference run in PyNative)."""

from __future__ import annotations

import functools
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from .._kit import checks as kit
from . import adapter  # noqa: F401  (sends MindSpore's compile-failure reports to a scratch folder)

__all__ = ["PROPERTIES", "namespace", "verify"]


def namespace() -> dict[str, Any]:
    return {"ms": ms, "ops": ops, "nn": nn, "np": np}


PROPERTIES = kit.graph_properties(
    lambda fn: ms.jit(kit.unwrap(fn), fullgraph=True),
    *kit.converters(ms.Tensor, lambda o: isinstance(o, ms.Tensor), lambda t: t.asnumpy()),
    runs="graph_mode",
    baseline="PyNative",
)
verify = functools.partial(kit.verify, "MindSpore", PROPERTIES)
