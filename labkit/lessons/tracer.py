"""A tracer small enough to read in one screen: how a framework turns Python into a graph.

:func:`trace` calls a function with :class:`Proxy` stand-ins, recording each operation as a
:class:`Node`; :func:`fold` folds constants and drops dead nodes; :meth:`Graph.run` replays the
graph. A Python ``if`` on a proxy has no value to decide on (:class:`TracingError`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "OPS",
    "Graph",
    "Node",
    "Proxy",
    "TracingError",
    "const",
    "exp",
    "fold",
    "tanh",
    "trace",
]

#: the operations a graph can hold, and the NumPy function that computes each one
OPS: dict[str, Callable] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "neg": np.negative,
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
        self.outputs: list[str] = []

    def add(self, op: str, *args: str, value: object = None) -> Proxy:
        node = Node(f"%{len(self.nodes)}", op, args, value)
        self.nodes.append(node)
        return Proxy(self, node.name)

    def lift(self, x: object) -> str:
        """A proxy's node name, or a new constant node for a plain value."""
        return x.name if isinstance(x, Proxy) else self.add("const", value=x).name

    def run(self, *inputs: object) -> object:
        """Replay the recorded program on real inputs: no Python function is called."""
        values, fed = {}, iter(inputs)
        for n in self.nodes:
            if n.op == "input":
                values[n.name] = next(fed)
            elif n.op == "const":
                values[n.name] = n.value
            else:
                values[n.name] = OPS[n.op](*(values[a] for a in n.args))
        outs = [values[o] for o in self.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def count(self, op: str) -> int:
        return sum(n.op == op for n in self.nodes)

    def __str__(self) -> str:
        return "\n".join([*map(str, self.nodes), f"return {', '.join(self.outputs)}"])


class Proxy:
    """Stands in for a value while tracing: each operation on it adds a node to the graph."""

    def __init__(self, graph: Graph, name: str) -> None:
        self.graph, self.name = graph, name

    def _op(self, op: str, *others: object) -> Proxy:
        return self.graph.add(op, self.name, *(self.graph.lift(o) for o in others))

    def _rop(self, op: str, other: object) -> Proxy:  # `2 * proxy`: the constant comes first
        return self.graph.add(op, self.graph.lift(other), self.name)

    def __neg__(self) -> Proxy:
        return self._op("neg")

    __array_ufunc__ = None  # `numpy_array * proxy` then records too, instead of looping over it

    def __bool__(self) -> bool:
        raise TracingError(
            f"Python needs the value of {self.name} to decide an `if` or `while`, and a traced "
            "value has none yet: record the branch as an operation instead (tf.cond, torch.cond)"
        )

    __float__ = __index__ = __bool__  # any other demand for a value fails the same way

    def __repr__(self) -> str:
        return f"Proxy({self.name})"


# x + y, x - y, x * y, x / y, and 2 * x (the reflected forms), each recorded as one node
for _op, _dunder in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "truediv")):
    setattr(Proxy, f"__{_dunder}__", lambda self, o, op=_op: self._op(op, o))
    setattr(Proxy, f"__r{_dunder}__", lambda self, o, op=_op: self._rop(op, o))


_tracing: list[Graph] = []  # the graph being recorded, if any (TensorFlow's "default graph")


def const(value: object) -> object:
    """A constant: recorded as a node while tracing (as a tensor made inside a traced function
    is), the plain value otherwise."""
    return _tracing[-1].add("const", value=value) if _tracing else value


def _unary(op: str) -> Callable:
    def apply(x):  # on a proxy: record; on a value: compute now (eager)
        return x._op(op) if isinstance(x, Proxy) else OPS[op](x)

    apply.__name__ = op
    return apply


tanh, exp = _unary("tanh"), _unary("exp")


def trace(fn: Callable, n_inputs: int = 1) -> Graph:
    """Call ``fn`` once with proxies and return the graph of what it did to them."""
    graph = Graph()
    _tracing.append(graph)
    try:
        out = fn(*(graph.add("input") for _ in range(n_inputs)))
    finally:
        _tracing.pop()
    graph.outputs = [graph.lift(o) for o in (out if isinstance(out, tuple) else (out,))]
    return graph


def fold(graph: Graph) -> Graph:
    """Constant folding and dead-code elimination: a new, smaller graph computing the same."""
    consts: dict[str, object] = {}
    for n in graph.nodes:  # fold: an operation on constants only is computed now
        if n.op == "const":
            consts[n.name] = n.value
        elif n.op != "input" and all(a in consts for a in n.args):
            consts[n.name] = OPS[n.op](*(consts[a] for a in n.args))
    needed, todo = set(), list(graph.outputs)
    by_name = {n.name: n for n in graph.nodes}
    while todo:  # eliminate: keep only what an output reads
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo.extend(() if name in consts else by_name[name].args)
    out, renamed = Graph(), {}
    for n in graph.nodes:
        if n.name in needed or n.op == "input":  # inputs stay: callers pass them positionally
            op, value = ("const", consts[n.name]) if n.name in consts else (n.op, n.value)
            args = () if op == "const" else tuple(renamed[a] for a in n.args)
            renamed[n.name] = out.add(op, *args, value=value).name
    out.outputs = [renamed[o] for o in graph.outputs]
    return out
