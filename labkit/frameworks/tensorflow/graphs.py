"""Inside TensorFlow's graphs: the plumbing notebook 05 needs beside TensorFlow's own calls.

The notebook traces with ``tf.function(...).get_concrete_function``, reads the ``GraphDef``
(``concrete.graph.as_graph_def()``), chooses Grappler's passes with a ``ConfigProto``'s
``graph_options.rewrite_options`` and runs Grappler itself (``tf_optimizer.OptimizeGraph``).
What is left here:

- :func:`freeze`: the traced graph with variables turned into constants, which is what lets
  constant folding reach the weights (Keras' BatchNorm becomes a multiply and an add that fold
  into the convolution weights);
- :func:`run`: executes any ``GraphDef`` (optimised ones included) as it is, in a session with
  Grappler and the classic graph optimiser switched off, to check that it still computes the same
  outputs;
- :func:`counts`: nodes by op type, the graph's function library included;
- :func:`grappler_runs`: when Grappler runs, read from its own log in a child process (tracing
  alone, the first call, later calls, a call that traces a new shape).

The variable-freezing internals of ``convert_to_constants`` used by :func:`freeze` are what
TensorFlow's own converters (TF Lite) call; they are internal APIs, checked by the tests against
the pinned TensorFlow.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import config_pb2
from tensorflow.python.framework import convert_to_constants

from ...util.proc import child_env
from .._kit.graphs import OpCounts

__all__ = [
    "BOOKKEEPING",
    "GRAPPLER_STARTS",
    "counts",
    "freeze",
    "grappler_runs",
    "run",
]

#: node kinds that do no arithmetic on tensors
BOOKKEEPING: frozenset[str] = frozenset(
    {"Const", "Identity", "Placeholder", "ReadVariableOp", "NoOp", "VarHandleOp"}
)


def freeze(cf) -> tf.compat.v1.GraphDef:
    """The traced graph with every variable read replaced by a constant holding its value."""
    data = convert_to_constants._FunctionConverterDataInEager(
        func=cf, lower_control_flow=True, aggressive_inlining=False
    )
    frozen, _ = convert_to_constants._replace_variables_by_constants(converter_data=data)
    return frozen


def counts(gd: tf.compat.v1.GraphDef) -> OpCounts:
    """Node counts by op type, including the nodes of functions in the graph's library."""
    kinds = [n.op for n in gd.node] + [n.op for f in gd.library.function for n in f.node_def]
    return OpCounts.of(kinds, lambda k: k in BOOKKEEPING)


def run(
    gd: tf.compat.v1.GraphDef, inputs: Sequence[str], outputs: Sequence[str], *values: np.ndarray
) -> list[np.ndarray]:
    """Execute a ``GraphDef`` as it is, in a fresh graph and session: ``outputs`` for the inputs.

    A ``Session`` would otherwise run Grappler on the graph before executing it, so the "traced"
    or "frozen" graph checked would really be an optimised one (and optimising a frozen
    ResNet-50 holds many copies of its weights at once): here the meta-optimizer is disabled and
    the classic optimiser set to ``L0`` (no constant folding, no common-subexpression elimination).
    """
    if len(values) != len(inputs):
        raise ValueError(
            f"the graph takes {len(inputs)} input(s) {list(inputs)}, got {len(values)}"
        )
    with tf.Graph().as_default() as graph:
        tf.compat.v1.import_graph_def(gd, name="")
        with tf.compat.v1.Session(graph=graph, config=_as_is()) as sess:
            return sess.run(list(outputs), dict(zip(inputs, values)))


def _as_is() -> config_pb2.ConfigProto:
    """A session configuration that runs a graph as given (no Grappler, no constant folding)."""
    config = config_pb2.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = config_pb2.OptimizerOptions.L0
    return config


# --------------------------------------------------------------------------------------------
# When does Grappler run? Its own log says.

#: what Grappler's meta-optimizer logs (C++ verbosity 1 of meta_optimizer.cc) as it starts a graph
GRAPPLER_STARTS = "Starting optimization for grappler item"
_MARK = "@@ step: "


def _grappler_demo() -> None:
    """Run in a child process by :func:`grappler_runs`: each step is marked on standard error."""

    def mark(label: str) -> None:
        print(_MARK + label, file=sys.stderr, flush=True)

    @tf.function
    def f(x):
        return x * (tf.constant(2.0) * tf.constant(3.0))

    mark("trace only (get_concrete_function)")
    f.get_concrete_function(tf.TensorSpec([2], tf.float32))
    for i in (1, 2, 3):
        mark(f"call {i}, shape (2,)")
        f(tf.constant([1.0, 2.0]))
    mark("call 4, new shape (3,): traced again")
    f(tf.constant([1.0, 2.0, 3.0]))
    mark("call 5, shape (3,)")
    f(tf.constant([4.0, 5.0, 6.0]))
    mark("end")


def grappler_runs(timeout: float = 300) -> list[tuple[str, int]]:
    """How many graphs Grappler optimised during each step of a small ``tf.function`` demo.

    The count comes from Grappler's own log line (:data:`GRAPPLER_STARTS`), which TensorFlow only
    writes when ``TF_CPP_VMODULE=meta_optimizer=1`` is set before it is imported, hence the child
    process (a TensorFlow import: a few seconds).
    """
    env = child_env(None, extra={"TF_CPP_VMODULE": "meta_optimizer=1", "TF_CPP_MIN_LOG_LEVEL": "0"})
    code = f"from {__name__} import _grappler_demo; _grappler_demo()"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"the Grappler demo process failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
        )
    steps: list[tuple[str, int]] = []
    for line in proc.stderr.splitlines():
        if line.startswith(_MARK):
            steps.append((line[len(_MARK) :], 0))
        elif GRAPPLER_STARTS in line and steps:
            steps[-1] = (steps[-1][0], steps[-1][1] + 1)
    if not steps or steps[-1][0] != "end":
        raise RuntimeError(f"the Grappler demo did not finish:\n{proc.stderr[-2000:]}")
    if not any(n for _, n in steps):
        raise RuntimeError(
            f"no {GRAPPLER_STARTS!r} line in the demo's log: TensorFlow's logging changed?"
        )
    return steps[:-1]
