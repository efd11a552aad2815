"""TensorFlow's capture paths, asked of a learner's Keras model or TensorFlow function (the
checks behind ``labkit.explore``): ``eager`` (a Keras model in inference mode, a
``tf.function``'s own Python function); ``tf.function`` (one trace, AutoGraph's control flow,
compared with eager; a ``tf.function`` given keeps its options); ``tf.function(new shapes)``
(traces per call as a dimension changes, ``experimental_get_tracing_count``, with
``reduce_retracing=True`` and an ``input_signature`` tried over the same calls); ``xla``
(``jit_compile=True``); ``savedmodel`` (a ``serve`` signature with an open batch, loaded back);
``tflite`` (that SavedModel converted, builtin ops, run by LiteRT's interpreter).
"""

from __future__ import annotations

import contextlib
import io
import pickle
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter  # LiteRT: tf.lite.Interpreter's successor

from .._kit import explore as ex
from .._kit.layout import Call, Variation, axes
from . import SPEC
from .adapter import is_tf_function, model_caller

__all__ = [
    "ACCEPTS",
    "CHECKS",
    "NAME",
    "PLAIN",
    "Session",
    "accepts",
    "bind",
    "describe",
    "pack",
    "plain",
    "run_check",
    "session",
    "unpack",
    "versions",
]

NAME = SPEC.name
CHECKS: tuple[str, ...] = (
    "eager",
    "tf.function",
    "tf.function(new shapes)",
    "xla",
    "savedmodel",
    "tflite",
)
ACCEPTS = (
    "a Keras model or layer, a tf.function, or a Python function of tensors (then pass "
    "framework='tensorflow')"
)


def versions() -> dict[str, str]:
    return {NAME: tf.__version__, "keras": keras.__version__}


def accepts(model: object) -> bool:
    return isinstance(model, keras.layers.Layer) or is_tf_function(model) or callable(model)


def describe(model: object) -> str:
    if isinstance(model, keras.layers.Layer):
        return model.name or type(model).__name__
    fn = model.python_function if is_tf_function(model) else model
    return getattr(fn, "__name__", type(model).__name__)


def _options(fn: object) -> dict:
    """The options a ``tf.function`` was made with (what its checks keep)."""
    if not is_tf_function(fn):
        return {}
    out = {}
    if fn.input_signature is not None:
        out["input_signature"] = fn.input_signature
    if getattr(fn, "_reduce_retracing", False):
        out["reduce_retracing"] = True
    return out


def pack(model: object, path: Path) -> None:
    """Keras objects pickle through Keras' own saving (their classes must be importable where
    they are loaded); a ``tf.function`` as its Python function and options (cloudpickle)."""
    payload = (
        ("function", model.python_function, _options(model))
        if is_tf_function(model)
        else ("object", model, {})
    )
    ex.write_pickle(payload, path)


def unpack(path: Path) -> object:
    kind, obj, options = pickle.loads(Path(path).read_bytes())
    return tf.function(obj, **options) if kind == "function" else obj


# --------------------------------------------------------------------------------------------
# the state the checks share in one process


def _declared(model: object, count: int) -> tuple[list[tuple] | None, str]:
    """The input shapes the model declares (``None`` where open), and where they come from."""
    found, source = None, ""
    if isinstance(model, keras.Model):
        with contextlib.suppress(Exception):
            found, source = [tuple(i.shape) for i in model.inputs], "Keras model.inputs"
    elif is_tf_function(model) and model.input_signature is not None:
        found = [tuple(spec.shape) for spec in tf.nest.flatten(model.input_signature)]
        source = "the tf.function's input_signature"
    if found is None or len(found) != count:
        return None, ""
    return found, source


def bind(model: object, call: Call) -> Callable:
    """The model's eager callable taking every input positionally: a Keras model gets its
    keyword tensors as a dict of named inputs when it has no positional one (else as keyword
    arguments), and ``training=False`` with the constants; a function gets them as keyword
    arguments."""
    caller = model_caller(model)
    if not call.binds:
        return caller
    if not isinstance(model, keras.layers.Layer):
        fn = model.python_function if is_tf_function(model) else model
        return lambda *xs: fn(*call.split(xs)[0], **call.split(xs)[1], **call.constants)

    def bound(*xs):
        args, named = call.split(xs)
        if not args:
            return model(named, training=False, **call.constants)
        first = args[0] if len(args) == 1 else list(args)
        return model(first, training=False, **named, **call.constants)

    return bound


class Session(ex.EagerSession):
    """The model's eager callable (bound to its call), its example inputs (with the axes its
    input signature declares), and eager outputs per input."""

    def __init__(self, model: object, arrays: list[np.ndarray], call: Call | None = None):
        call = call or Call()
        declared, source = _declared(model, len(arrays))
        keras_layout = keras.config.image_data_format() == "channels_last"
        if call.channels:
            channels, told = call.channels, "the layout given (layout=, --layout)"
        elif isinstance(model, keras.layers.Layer):
            channels = "last" if keras_layout else "first"
            told = f"Keras' image_data_format() is {keras.config.image_data_format()}"
        else:
            channels, told = "last", "TensorFlow's default layout (NHWC)"
        layout = axes(arrays, declared, channels, source, told)
        super().__init__(arrays, call, layout)
        self.model = model
        self.fn = self.eager_fn = bind(model, call)
        self.options = _options(model)

    @staticmethod
    def tensors(arrays: Sequence[np.ndarray]) -> list[tf.Tensor]:
        return [tf.constant(a) for a in arrays]

    def run(self, fn: Callable, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(t) for t in tf.nest.flatten(fn(*self.tensors(arrays)))]

    def signature(self, varied: Variation | None = None) -> list[tf.TensorSpec]:
        """Input specs of the example's shapes with ``None`` for the batch and for the
        dimensions ``varied`` changes."""
        return [
            tf.TensorSpec(
                [
                    None if d == 0 or (varied and d in varied.changing(i)) else n
                    for d, n in enumerate(a.shape)
                ],
                tf.as_dtype(a.dtype),
                name=f"input_{i}",
            )
            for i, a in enumerate(self.arrays)
        ]


def session(model: object, arrays: list[np.ndarray], call: Call | None = None) -> Session:
    return Session(model, arrays, call)


#: (substrings of TensorFlow's message, what it means), first match wins
PLAIN: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("Detected unsupported operations", "No registered", "XLA_CPU_JIT"),
        (
            "uses an operation that XLA cannot compile (often one whose output size depends on "
            "the values)"
        ),
    ),
    (
        ("must be a compile-time constant", "compile-time constant"),
        (
            "an argument or shape that depends on the values: XLA needs every shape known when it "
            "compiles"
        ),
    ),
    (
        ("not supported by the native TFLite runtime", "failed to legalize", "Select TF"),
        (
            "uses operations outside TF Lite's builtin set: enable tf.lite.OpsSet.SELECT_TF_OPS (a "
            "larger runtime) or replace them"
        ),
    ),
    (
        ("untracked", "Tried to export a function which references"),
        (
            "the function uses variables that nothing the SavedModel saves owns: attach them to "
            "a tf.Module or a Keras layer"
        ),
    ),
    (
        ("AutoGraph", "autograph", "OperatorNotAllowedInGraphError", "iterating over"),
        (
            "Python that AutoGraph cannot turn into graph operations (a Python value taken from a "
            "tensor, or a loop over a symbolic tensor)"
        ),
    ),
    (
        ("must be defined before the loop", "must also be initialized", "has type"),
        (
            "a variable AutoGraph cannot carry through a loop or branch (defined on one path "
            "only, or changing type)"
        ),
    ),
)


def plain(message: str) -> str:
    return ex.plain(message, PLAIN, "TensorFlow stopped here (its message says why)")


def _fails(path: str, what: str, exc: BaseException) -> dict:
    text = str(exc)
    where = ex.user_location(text)
    return ex.result(
        path,
        "fails",
        f"{what}: {plain(text)}" + (f" (at {where})" if where else ""),
        ex.first_lines(_first_meaningful(text) or exc, lines=2),
    )


def _first_meaningful(text: str) -> str:
    """TensorFlow's messages start with node names and stacks; keep the lines that explain."""
    keep = [
        ln
        for ln in text.splitlines()
        if ln.strip()
        and not ln.strip().startswith(("File ", "Traceback", "Node:", "Stack trace", "["))
    ]
    return "\n".join(keep)


# --------------------------------------------------------------------------------------------
# the checks


def _eager(s: Session) -> dict:
    def message(exc: BaseException) -> str:
        text = ex.first_lines(_first_meaningful(str(exc)) or exc, lines=4, limit=700)
        return f"{type(exc).__name__}: {text}"

    return s.eager_check("eager TensorFlow", message)


def _traced(s: Session, path: str, fn, failed: str) -> tuple[dict | None, float, str]:
    """``fn``'s first call (tracing, compiling) and its agreement with eager: a failed row,
    else None, the first call's seconds, and how it agrees."""
    t0 = time.perf_counter()
    try:
        with ex.quiet():
            s.run(fn, s.arrays)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        return _fails(path, failed, exc), 0.0, ""
    first = time.perf_counter() - t0
    with ex.quiet():
        ok, worst, why = s.compare(fn)
    if not ok:
        return ex.result(path, "fails", f"it computes different numbers than eager {why}"), 0, ""
    return None, first, ex.agrees(worst)


def _function(s: Session) -> dict:
    path = "tf.function"
    fn = tf.function(s.fn, **s.options)
    failed, first, agrees = _traced(s, path, fn, "tracing it into a graph failed")
    traces = fn.experimental_get_tracing_count()
    if failed:
        if "different numbers" in failed["path"]["reason"]:
            failed["path"]["reason"] += (
                ": Python that runs only while tracing (a Python value read once) is frozen "
                "into the graph"
            )
        failed["path"]["details"]["traces"] = traces
        return failed
    given = f" (with its own options: {', '.join(s.options)})" if s.options else ""
    if traces > 1:
        why = f"traced {traces} times for inputs of one shape{given}: something other than "
        why += f"shapes and dtypes (a Python value) keys the trace; {agrees}"
        return ex.result(path, "caveats", why, traces=traces, first_call_s=first)
    why = f"one trace serves inputs of this shape{given}; {agrees}; first call {first:.2f} s"
    return ex.result(path, "works", why + " (tracing)", traces=traces, first_call_s=first)


def cause(exc: BaseException) -> str:
    """TensorFlow's error reduced to its cause: its class and the last line that explains (a
    traced function's message starts with "in user code:" and a stack, and ends with the
    cause: ``TypeError: 'NoneType' object cannot be interpreted as an integer``)."""
    lines = [ln.strip() for ln in _first_meaningful(str(exc)).splitlines()]
    lines = [ln for ln in lines if ln and ln != "in user code:"]
    last = lines[-1] if lines else ""
    text = last if re.match(r"^\w+(Error|Exception):", last) else f"{type(exc).__name__}: {last}"
    return ex.first_lines(text, lines=1, limit=200)


def _count_traces(fn, inputs: list[list[np.ndarray]], run: Callable) -> tuple[list[int], str]:
    """Traces at each call (``tf.function``'s own tracing count), and the cause of the error
    that stopped the calls, if one did."""
    counts, error = [], ""
    for xs in inputs:
        before = fn.experimental_get_tracing_count()
        try:
            run(fn, xs)
        except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
            error = cause(exc)
            break
        counts.append(fn.experimental_get_tracing_count() - before)
    return counts, error


def _new_shapes(s: Session) -> dict:
    path = "tf.function(new shapes)"
    usable, none = s.usable(path)
    if none:
        return none
    own = "tf.function" + (f"({', '.join(s.options)})" if s.options else "")
    groups: list[list[ex.Recompile]] = []
    for v in usable:
        variants = {
            own: s.options,
            "tf.function(reduce_retracing=True)": {"reduce_retracing": True},
            "tf.function(input_signature)": {"input_signature": s.signature(v)},
        }
        group = []
        for label, options in variants.items():
            fn = tf.function(s.fn, **options)
            with ex.quiet():
                per_call, error = _count_traces(fn, v.inputs, s.run)
            reasons = [f"failed at call {len(per_call) + 1}: {error}"] if error else []
            group.append(ex.Recompile(label, v.name, v.shapes, per_call, reasons))
        groups.append(group)
    recs = [r for g in groups for r in g]
    retracing = [g for g in groups if g[0].every_call and len(g[0].compiles) == len(g[0].shapes)]
    if not retracing:
        return ex.result(
            path,
            "works",
            f"{own} does not trace again at every new size: its options already generalise "
            "the shapes",
            recompiles=recs,
        )
    tried = "; ".join(_tried(r) for g in retracing for r in g[1:])
    return ex.result(
        path,
        "caveats",
        f"{own} traces again at every new "
        + " and ".join(g[0].varied for g in retracing)
        + " (each trace runs the Python again and builds a new graph); tried over the same "
        + f"calls: {tried}",
        recompiles=recs,
    )


def _tried(r: ex.Recompile) -> str:
    """What an option that should trace less did over the calls, as the counts show."""
    option = r.path.removeprefix("tf.function(").removesuffix(")")
    if r.reasons:  # it stopped the calls: not a fix here
        return f"{option} fails here ({r.reasons[0]})"
    done = f"{option} traced {r.total} time(s) over {len(r.compiles)} sizes"
    return done + (" (no retracing after the first size)" if r.total == 1 else "")


def _xla(s: Session) -> dict:
    path = "xla"
    fn = tf.function(s.fn, jit_compile=True)
    failed, first, agrees = _traced(s, path, fn, "XLA cannot compile it")
    if failed:
        return failed
    why = f"compiled by XLA (jit_compile=True); {agrees}; first call {first:.2f} s (tracing and "
    return ex.result(path, "works", why + "compiling)", first_call_s=first)


def _save(s: Session, directory: Path) -> Path:
    """A SavedModel with a ``serve`` signature taking any batch size."""
    specs = s.signature()
    out = directory / "savedmodel"
    if isinstance(s.model, keras.layers.Layer):
        archive = keras.export.ExportArchive()
        archive.track(s.model)
        archive.add_endpoint("serve", s.fn, input_signature=specs)
        archive.write_out(str(out), verbose=False)
    else:
        module = tf.Module()
        module.serve = tf.function(s.fn, input_signature=specs)
        tf.saved_model.save(module, str(out), signatures={"serving_default": module.serve})
    return out


def _savedmodel(s: Session) -> dict:
    path = "savedmodel"
    with tempfile.TemporaryDirectory(prefix="labkit-sm-") as tmp:
        try:
            with ex.quiet():
                saved = _save(s, Path(tmp))
                loaded = tf.saved_model.load(str(saved))
        except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
            return _fails(path, "writing or loading a SavedModel failed", exc)
        size = sum(f.stat().st_size for f in saved.rglob("*") if f.is_file())
        done = "saved with a serve signature (any batch size), loaded back without the Python "
        done += f"code: {size / 1e6:.2g} MB"
        return s.agreed(path, loaded.serve, done, bytes=size)


def _tflite_run(runner) -> Callable:
    names = sorted(runner.get_output_details(), key=lambda n: int(re.sub(r"\D", "", n) or 0))

    def run(_fn, arrays):
        out = runner(**{f"input_{i}": np.ascontiguousarray(a) for i, a in enumerate(arrays)})
        return [np.asarray(out[n]) for n in names]

    return run


def _tflite(s: Session) -> dict:
    path = "tflite"
    with tempfile.TemporaryDirectory(prefix="labkit-tflite-") as tmp:
        try:
            with ex.quiet(), contextlib.redirect_stderr(io.StringIO()):
                saved = _save(s, Path(tmp))
                flat = tf.lite.TFLiteConverter.from_saved_model(str(saved)).convert()
        except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
            return _fails(path, "the TF Lite converter rejects it", exc)
    with ex.quiet():
        interpreter = Interpreter(model_content=flat)
        runner = interpreter.get_signature_runner()
        try:
            ok, worst, why = s.compare(None, run=_tflite_run(runner))
        except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
            return _fails(path, "converted, but the TF Lite interpreter cannot run it", exc)
    if not ok:
        return ex.result(path, "fails", f"converted, but TF Lite computes different numbers {why}")
    return ex.result(
        path,
        "works",
        f"converted to TF Lite (builtin ops, float32: {len(flat) / 1e6:.2g} MB) and run by its "
        f"interpreter; {ex.agrees(worst)}",
        bytes=len(flat),
    )


_RUN: dict[str, Callable[[Session], dict]] = {
    "eager": _eager,
    "tf.function": _function,
    "tf.function(new shapes)": _new_shapes,
    "xla": _xla,
    "savedmodel": _savedmodel,
    "tflite": _tflite,
}
assert tuple(_RUN) == CHECKS


def run_check(name: str, s: Session) -> dict:
    return _RUN[name](s)
