"""A tracer small enough to read in one screen: how a framework turns Python into a graph
(notebook 01 imports it from beside itself).

:func:`trace` calls a function with a :class:`Proxy` stand-in, recording each operation as a
:class:`Node`; :func:`fold` folds constants and drops dead nodes; :meth:`Graph.run` replays the
graph. A Python ``if`` on a proxy has no value to decide on (:class:`TracingError`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["OPS", "Graph", "Node", "Proxy", "TracingError", "const", "exp", "fold", "tanh", "trace"]

#: the operations a graph can hold, and the NumPy function that computes each one
OPS: dict[str, Callable] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "tanh": np.tanh,
    "exp": np.exp,
}


class TracingError(TypeError):
    """Python asked a proxy for a value (``if``, ``while``, ``float()``) while tracing."""


@dataclass(frozen=True)
class Node:
    name: str  # "%3"
    op: str  # "input", "const" or a key of OPS
    args: tuple[str, ...] = ()  # names of the nodes it reads
    value: object = None  # the constant, for op == "const"

    def __str__(self) -> str:
        what = repr(self.value) if self.op == "const" else ", ".join(self.args)
        return f"{self.name} = {self.op}({what})"


class Graph:
    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.output = ""  # the name of the node the function returned

    def add(self, op: str, *args: str, value: object = None) -> Proxy:
        node = Node(f"%{len(self.nodes)}", op, args, value)
        self.nodes.append(node)
        return Proxy(self, node.name)

    def lift(self, x: object) -> str:
        """A proxy's node name, or a new constant node for a plain value."""
        return x.name if isinstance(x, Proxy) else self.add("const", value=x).name

    def run(self, x: object) -> object:
        """Replay the recorded program on a real input: no Python function is called."""
        values = {}
        for n in self.nodes:
            if n.op == "input":
                values[n.name] = x
            elif n.op == "const":
                values[n.name] = n.value
            else:
                values[n.name] = OPS[n.op](*(values[a] for a in n.args))
        return values[self.output]

    def __str__(self) -> str:
        return "\n".join([*map(str, self.nodes), f"return {self.output}"])


class Proxy:
    """Stands in for a value while tracing: each operation on it adds a node to the graph."""

    def __init__(self, graph: Graph, name: str) -> None:
        self.graph, self.name = graph, name

    def _op(self, op: str, *operands: object) -> Proxy:  # operands: proxies or plain values
        return self.graph.add(op, *map(self.graph.lift, operands))

    __array_ufunc__ = None  # `numpy_array * proxy` then records too, instead of looping over it

    def __bool__(self) -> bool:
        raise TracingError(
            f"Python needs the value of {self.name} to decide an `if` or `while`, and a traced "
            "value has none yet: record the branch as an operation instead (tf.cond, torch.cond)"
        )

    __float__ = __index__ = __bool__  # any other demand for a value fails the same way


# x + y, x - y, x * y, x / y, and 2 * x (the reflected forms), each recorded as one node
for _op, _dunder in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "truediv")):
    setattr(Proxy, f"__{_dunder}__", lambda self, o, op=_op: self._op(op, self, o))
    setattr(Proxy, f"__r{_dunder}__", lambda self, o, op=_op: self._op(op, o, self))

_tracing: list[Graph] = []  # the graph being recorded, if any (TensorFlow's "default graph")


def const(value: object) -> object:
    """A constant: recorded as a node while tracing (as a tensor made inside a traced function
    is), the plain value otherwise."""
    return _tracing[-1].add("const", value=value) if _tracing else value


def tanh(x: object) -> object:  # on a proxy: record; on a value: compute now (eager)
    return x._op("tanh", x) if isinstance(x, Proxy) else np.tanh(x)


def exp(x: object) -> object:
    return x._op("exp", x) if isinstance(x, Proxy) else np.exp(x)


def trace(fn: Callable) -> Graph:
    """Call ``fn`` once with a proxy and return the graph of what it did to it."""
    graph = Graph()
    _tracing.append(graph)
    try:
        graph.output = graph.lift(fn(graph.add("input")))
    finally:
        _tracing.pop()
    return graph


def fold(graph: Graph) -> Graph:
    """Constant folding and dead-code elimination: a new, smaller graph computing the same."""
    consts: dict[str, object] = {}
    for n in graph.nodes:  # fold: an operation on constants only is computed now
        if n.op == "const":
            consts[n.name] = n.value
        elif n.op != "input" and all(a in consts for a in n.args):
            consts[n.name] = OPS[n.op](*(consts[a] for a in n.args))
    needed = {graph.output}
    for n in reversed(graph.nodes):  # eliminate: keep only what the output reads
        if n.name in needed and n.name not in consts:
            needed.update(n.args)
    out, renamed = Graph(), {}
    for n in graph.nodes:
        if n.name in needed:
            op, value = ("const", consts[n.name]) if n.name in consts else (n.op, n.value)
            args = () if op == "const" else tuple(renamed[a] for a in n.args)
            renamed[n.name] = out.add(op, *args, value=value).name
    out.output = renamed[graph.output]
    return out
