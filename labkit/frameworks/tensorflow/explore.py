"""TensorFlow's capture paths asked of a Keras model or a TensorFlow function
(``labkit.explore``): eager, ``tf.function`` (a given one keeps its options), its retracing as
shapes change (with ``reduce_retracing`` and an ``input_signature`` tried), XLA."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Sequence

import keras
import numpy as np
import tensorflow as tf

from .._kit import explore as ex
from .._kit.layout import Call, Variation, axes
from . import SPEC
from .adapter import is_tf_function, model_caller

__all__ = ["ACCEPTS", "CHECKS", "Session", "bind", "cause", "versions"]

SAID = ex.MESSAGES["tensorflow"]
ACCEPTS = SAID["accepts"]


def versions() -> dict[str, str]:
    return {SPEC.name: tf.__version__, "keras": keras.__version__}


def _declared(model: object, count: int) -> tuple[list[tuple] | None, str]:
    """The input shapes the model declares (``None`` where open), and where they come from."""
    found, source = None, ""
    if isinstance(model, keras.Model):
        with contextlib.suppress(Exception):
            found, source = [tuple(i.shape) for i in model.inputs], "Keras model.inputs"
    elif is_tf_function(model) and model.input_signature is not None:
        found = [tuple(spec.shape) for spec in tf.nest.flatten(model.input_signature)]
        source = "the tf.function's input_signature"
    return (found, source) if found is not None and len(found) == count else (None, "")


def bind(model: object, call: Call) -> Callable:
    """The model's eager callable taking every input positionally: a Keras model gets its
    keyword tensors as a dict of named inputs when it has no positional one, and
    ``training=False``; a function gets them as keyword arguments."""
    if not call.binds:
        return model_caller(model)

    def bound(*xs):
        args, named = call.split(xs)
        if not isinstance(model, keras.layers.Layer):
            return model_caller(model)(*args, **named, **call.constants)
        if not args:
            return model(named, training=False, **call.constants)
        first = args[0] if len(args) == 1 else list(args)
        return model(first, training=False, **named, **call.constants)

    return bound


class Session(ex.EagerSession):
    """The model's eager callable, its example inputs (with the axes its signature declares),
    and eager outputs per input."""

    def __init__(self, model: object, arrays: list[np.ndarray], call: Call):
        declared, source = _declared(model, len(arrays))
        fmt = keras.config.image_data_format()  # channels_last: TensorFlow's NHWC too
        channels = call.channels or fmt.removeprefix("channels_")
        told = "" if call.channels else f"Keras' {fmt}"  # "": the layout given
        super().__init__(arrays, call, axes(arrays, declared, channels, source, told))
        self.fn = self.eager_fn = bind(model, call)
        self.options = {}  # the options of a given tf.function, which its checks keep
        if is_tf_function(model):
            retracing = getattr(model, "_reduce_retracing", False)  # not public API
            found = {"input_signature": model.input_signature, "reduce_retracing": retracing}
            self.options = {k: v for k, v in found.items() if v}

    def run(self, fn: Callable, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(t) for t in tf.nest.flatten(fn(*map(tf.constant, arrays)))]

    def signature(self, varied: Variation) -> list[tf.TensorSpec]:
        """Input specs of the example's shapes, ``None`` for the batch and what ``varied``
        changes."""
        return [
            tf.TensorSpec(
                [None if d == 0 or (i, d) in varied.dims else n for d, n in enumerate(a.shape)],
                tf.as_dtype(a.dtype),
            )
            for i, a in enumerate(self.arrays)
        ]


def _meaningful(text: str) -> list[str]:
    """The lines of TensorFlow's message that explain: no stack, node names or colour codes, no
    arguments' values (Keras lists them after its message, a failed binding after its cause)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text).split(" Received args:")[0]
    skip = ("File ", "Traceback", "Node:", "Stack trace", "[", "in user code:", "•", "Arguments ")
    return [
        ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(skip)
    ]


def _said(exc: BaseException, lines: int = 2) -> str:
    return ex.first_lines("\n".join(_meaningful(str(exc))) or exc, lines=lines, limit=700)


def cause(exc: BaseException) -> str:
    """TensorFlow's error reduced to its cause: a traced function's message ends with it
    (``TypeError: ...``), on the line after "Exception encountered when calling" from Keras."""
    lines = _meaningful(str(exc)) or [""]
    at = max(
        (i for i, ln in enumerate(lines) if re.match(r"^\w+(Error|Exception): ", ln)), default=-1
    )
    text = lines[at] if at >= 0 else f"{type(exc).__name__}: {lines[-1]}"
    if "encountered when calling" in text and at + 1 < len(lines):
        text = f"{text.split(':')[0]}: {lines[at + 1]}"
    return ex.first_lines(text, lines=1, limit=200)


def _eager(s: Session) -> dict:
    return s.eager_check("eager TensorFlow", lambda exc: f"{type(exc).__name__}: {_said(exc, 4)}")


def _compiled(s: Session, path: str, fn, failed: str, done: str) -> dict:
    """``fn``'s first call (tracing, compiling) timed, then its agreement with eager: the row,
    ``done`` said with the seconds of that call (``{first}``), or why it ``failed``."""
    t0 = time.perf_counter()
    try:
        with ex.quiet():
            s.run(fn, s.arrays)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        # TensorFlow's message names the learner's line
        why = f"{failed}: {cause(exc)}{ex.at_line(str(exc))}"
        return ex.result(path, "fails", why, _said(exc))
    first = time.perf_counter() - t0
    return s.agreed(path, fn, done.format(first=first), first_call_s=first)


def _function(s: Session) -> dict:
    path, fn = "tf.function", tf.function(s.fn, **s.options)
    given = f" (with its own options: {', '.join(s.options)})" if s.options else ""
    done = f"traced into a graph{given}, first call {{first:.2f}} s (tracing)"
    row = _compiled(s, path, fn, "tracing it into a graph failed", done)
    traces = row["path"]["details"]["traces"] = fn.experimental_get_tracing_count()
    if "different numbers" in row["path"]["reason"]:
        row["path"]["reason"] += SAID["frozen"]
    elif row["path"]["status"] == "works" and traces > 1:
        why = SAID["retraced"].format(traces=traces) + row["path"]["reason"]
        row["path"].update(status="caveats", reason=why)
    return row


def _recompile(s: Session, label: str, options: dict, v: Variation) -> ex.Recompile:
    """Traces at each call of ``v`` (``tf.function``'s own tracing count), and the cause of the
    error that stopped the calls, if one did."""
    fn, per_call, reasons = tf.function(s.fn, **options), [], []
    with ex.quiet():
        for xs in v.inputs:
            before = fn.experimental_get_tracing_count()
            try:
                s.run(fn, xs)
            except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
                reasons = [f"failed at call {len(per_call) + 1}: {cause(exc)}"]
                break
            per_call.append(fn.experimental_get_tracing_count() - before)
    return ex.Recompile(label, v.name, v.shapes, per_call, reasons)


def _new_shapes(s: Session) -> dict:
    path = "tf.function(new shapes)"
    usable, none = s.usable(path)
    if none:
        return none
    own = "tf.function" + (f"({', '.join(s.options)})" if s.options else "")
    groups = [
        [
            _recompile(s, own, s.options, v),
            _recompile(s, "tf.function(reduce_retracing=True)", {"reduce_retracing": True}, v),
            _recompile(s, "tf.function(input_signature)", {"input_signature": s.signature(v)}, v),
        ]
        for v in usable
    ]
    recs = [r for g in groups for r in g]
    broken = "; ".join(f"{g[0].varied}: {g[0].reasons[0]}" for g in groups if g[0].reasons)
    if broken:
        why = f"{own} fails at sizes that eager takes ({broken})"
        return ex.result(path, "fails", why, recompiles=recs)
    retracing = [g for g in groups if g[0].every_call]
    if not retracing:
        return ex.result(path, "works", SAID["generalises"].format(own=own), recompiles=recs)
    tried = "; ".join(f"{g[0].varied}: {', '.join(map(_tried, g[1:]))}" for g in retracing)
    varied = " and ".join(g[0].varied for g in retracing)
    why = SAID["retraces"].format(own=own, varied=varied, tried=tried)
    return ex.result(path, "caveats", why, recompiles=recs)


def _tried(r: ex.Recompile) -> str:
    """What an option that should trace less did over the calls, as the counts show."""
    option = r.path.removeprefix("tf.function(").removesuffix(")")
    if r.reasons:  # it stopped the calls: not a fix here
        return f"{option} fails here ({r.reasons[0]})"
    done = f"{option} traced {r.total} time(s) over {len(r.compiles)} sizes"
    return done + (" (no retracing after the first size)" if r.total == 1 else "")


def _xla(s: Session) -> dict:
    fn = tf.function(s.fn, jit_compile=True)
    done = "compiled by XLA (jit_compile=True), first call {first:.2f} s (tracing and compiling)"
    return _compiled(s, "xla", fn, "XLA cannot compile it", done)


#: the capture paths in order, each the function of a session that gives its row
CHECKS: dict[str, Callable[[Session], dict]] = {
    "eager": _eager,
    "tf.function": _function,
    "tf.function(new shapes)": _new_shapes,
    "xla": _xla,
}
