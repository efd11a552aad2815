"""Inside TensorFlow's graphs: a tf.function's traced graph before and after Grappler.

Grappler, TensorFlow's graph optimiser, rewrites a ``tf.function``'s traced graph once, when the
runtime first instantiates it (inside the first call for each traced signature); later calls
run the optimised graph, which is never shown. This module makes it visible:

- :func:`trace`: the concrete function of a model or function for one input signature, whose
  ``GraphDef`` is the graph as traced (variables read with ``ReadVariableOp``);
- :func:`freeze`: the same graph with variables turned into constants, which is what lets
  constant folding reach the weights (Keras' BatchNorm becomes a multiply and an add that fold
  into the convolution weights);
- :func:`grappler`: Grappler's meta-optimizer run on a ``GraphDef``, with its default optimisers or
  a chosen list (``"constfold"``, ``"arithmetic"``, ``"pruning"``, ``"remapper"``, ...);
- :func:`run`: executes any ``GraphDef`` (optimised ones included) as it is, in a session with
  Grappler and the classic graph optimiser switched off, to check that it still computes the same
  outputs;
- :func:`tflite_callable`: a converted TF Lite (LiteRT) flatbuffer, the graph as a phone runs it,
  kept loaded in one interpreter so that calls can be timed;
- :func:`grappler_runs`: when Grappler runs, read from its own log in a child process (tracing
  alone, the first call, later calls, a call that traces a new shape).

The entry points used here (``tf_optimizer.OptimizeGraph`` and the variable-freezing internals of
``convert_to_constants``) are what TensorFlow's own converters (TF Lite) call; they are internal
APIs, checked by the tests against the pinned TensorFlow.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import config_pb2, meta_graph_pb2
from tensorflow.python.framework import convert_to_constants
from tensorflow.python.grappler import tf_optimizer

from ...util.proc import child_env
from .._kit.graphs import OpCounts

__all__ = [
    "BOOKKEEPING",
    "GRAPPLER_STARTS",
    "OPTIMIZERS",
    "counts",
    "freeze",
    "graph_def",
    "grappler",
    "grappler_runs",
    "io_names",
    "run",
    "stages",
    "tflite_callable",
    "trace",
]

#: node kinds that do no arithmetic on tensors
BOOKKEEPING: frozenset[str] = frozenset(
    {"Const", "Identity", "Placeholder", "ReadVariableOp", "NoOp", "VarHandleOp"}
)
#: a few of Grappler's optimisers, by the names ``RewriterConfig.optimizers`` accepts
OPTIMIZERS: tuple[str, ...] = (
    "pruning",
    "function",
    "constfold",
    "shape",
    "arithmetic",
    "layout",
    "remapper",
    "memory",
    "loop",
    "dependency",
    "debug_stripper",
)


def trace(fn: Callable, images: np.ndarray) -> tf.types.experimental.ConcreteFunction:
    """The concrete function of ``fn`` (a Keras model is called with ``training=False``) traced
    for ``images``' shape and dtype."""
    if isinstance(fn, tf.keras.Model):
        model = fn
        fn = lambda x: model(x, training=False)
    if not hasattr(fn, "get_concrete_function"):
        fn = tf.function(fn)
    spec = tf.TensorSpec(np.shape(images), tf.as_dtype(np.asarray(images).dtype))
    return fn.get_concrete_function(spec)


def io_names(cf) -> tuple[list[str], list[str]]:
    """Tensor names of the concrete function's data inputs (not captured variables) and outputs."""
    inputs = [t.name for t in cf.inputs if t.dtype != tf.resource]
    return inputs, [t.name for t in cf.outputs]


def graph_def(cf) -> tf.compat.v1.GraphDef:
    """The graph as traced."""
    return cf.graph.as_graph_def()


def freeze(cf) -> tf.compat.v1.GraphDef:
    """The traced graph with every variable read replaced by a constant holding its value."""
    data = convert_to_constants._FunctionConverterDataInEager(
        func=cf, lower_control_flow=True, aggressive_inlining=False
    )
    frozen, _ = convert_to_constants._replace_variables_by_constants(converter_data=data)
    return frozen


def grappler(
    gd: tf.compat.v1.GraphDef,
    inputs: Sequence[str],
    outputs: Sequence[str],
    optimizers: Sequence[str] | None = None,
) -> tf.compat.v1.GraphDef:
    """Run Grappler on ``gd``, keeping ``inputs`` and ``outputs`` (tensor names like ``"x:0"``).

    ``optimizers=None`` runs the default meta-optimizer pipeline (what a tf.function call runs);
    a list runs only those optimisers, in that order.
    """
    unknown = [o for o in optimizers or () if o not in OPTIMIZERS]
    if unknown:
        raise ValueError(
            f"unknown Grappler optimizer(s) {unknown}: valid names include {', '.join(OPTIMIZERS)}"
        )
    with tf.Graph().as_default() as graph:
        tf.compat.v1.import_graph_def(gd, name="")
        meta = tf.compat.v1.train.export_meta_graph(graph_def=gd, graph=graph)
    fetch = meta_graph_pb2.CollectionDef()
    fetch.node_list.value.extend(list(inputs) + list(outputs))
    meta.collection_def["train_op"].CopyFrom(fetch)  # Grappler keeps what this collection names
    config = config_pb2.ConfigProto()
    if optimizers is not None:
        config.graph_options.rewrite_options.optimizers.extend(optimizers)
    return tf_optimizer.OptimizeGraph(config, meta)


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


def stages(
    model: tf.keras.Model, images_nhwc: np.ndarray
) -> tuple[dict[str, tf.compat.v1.GraphDef], list[str], list[str]]:
    """ResNet-50's inference graph ``{"traced", "frozen", "grappler"}`` and its input/output names."""
    cf = trace(model, images_nhwc)
    inputs, outputs = io_names(cf)
    frozen = freeze(cf)
    return (
        {"traced": graph_def(cf), "frozen": frozen, "grappler": grappler(frozen, inputs, outputs)},
        inputs,
        outputs,
    )


def tflite_callable(
    tflite_model: bytes, threads: int | None = None
) -> Callable[[np.ndarray], np.ndarray]:
    """A loaded TF Lite interpreter as a callable: NCHW float32 images -> logits (numpy).

    The interpreter is created once and resized only when the batch shape changes, as an app
    would hold it. ``tf.lite.Interpreter`` is deprecated in TensorFlow 2.21 in favour of the same
    interpreter in the ``ai-edge-litert`` package (LiteRT); its warning is silenced here.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        interpreter = tf.lite.Interpreter(model_content=tflite_model, num_threads=threads)
    (inp,) = interpreter.get_input_details()
    (out,) = interpreter.get_output_details()
    shape: list[tuple[int, ...]] = [()]

    def run(images: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(np.transpose(np.asarray(images, np.float32), (0, 2, 3, 1)))
        if x.shape != shape[0]:
            interpreter.resize_tensor_input(inp["index"], x.shape)
            interpreter.allocate_tensors()
            shape[0] = x.shape
        interpreter.set_tensor(inp["index"], x)
        interpreter.invoke()
        return interpreter.get_tensor(out["index"]).copy()

    return run


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
