"""PyTorch's capture paths, asked of a learner's model (the checks behind ``labkit.explore``).

Each check is one row of the report, run in a worker process by :mod:`labkit.explore`:

- ``eager``: the model runs on the example inputs (and which other sizes it takes, and what
  its output holds that is not a tensor: a cache object);
- ``torch.compile``: ``torch._dynamo.explain`` counts the graphs and the graph breaks with their
  reasons and source lines; Dynamo's counters add the functions it skipped entirely (a graph
  break inside a loop) and the modules it does not trace (an LSTM); then the model is compiled
  with Inductor, checked against eager, and timed against eager under ``torch.no_grad`` and
  ``torch.inference_mode`` (the modes a learner serves in): a slowdown is a finding;
- ``torch.compile(fullgraph)``: capture as one graph or fail with Dynamo's first reason
  (backend ``eager``: the capture alone, no code generation);
- ``torch.compile(new shapes)``: how many graphs Dynamo captures as the batch size (and the
  sequence length or image size) changes at each call: its automatic dynamic shapes recompile
  once, then reuse a graph with a symbolic size; the guard failures say why;
- ``torch.export`` (non-strict, the default since 2.7) and ``torch.export(strict)`` (Dynamo's
  bytecode capture): one whole-program graph or the first error, condensed;
- ``torch.jit.trace``: TorchScript's trace (deprecated in 2.x, still common) with its
  TracerWarnings, replayed on other inputs: a frozen branch shows up as a disagreement; a
  dict-like output (a ``ModelOutput``) is traced again with ``strict=False``, as its error says;
- ``onnx``: ``torch.onnx.export`` (the dynamo exporter), run by ONNX Runtime and compared.

"Agrees with eager" means: the same outputs, within a relative tolerance, on the example and on
two other inputs of the same shapes (new random values, and zeros; a 0/1 mask stays a valid
mask), which is how a graph that froze a data-dependent decision gets caught. The model is
called as the example says (:class:`~labkit.frameworks._kit.layout.Call`: keyword tensors such
as ``attention_mask=`` and constants such as ``use_cache=False``), through :class:`Bound`, a
module every path takes. The reasons of a failure come from :mod:`.reasons`.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import re
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
import torch._dynamo
from torch import nn
from torch._dynamo.utils import counters, guard_failures
from torch.utils import _pytree as pytree

from .. import explorer as _explorer
from .._kit import explore as ex
from . import SPEC
from .adapter import as_module, export_model, leaves, quiet_torchscript
from .reasons import (
    DEPRECATED,
    diagnose,
    from_counter,
    from_reason,
    merge,
    trace_failed,
    traceback_text,
)

__all__ = [
    "ACCEPTS",
    "CHECKS",
    "NAME",
    "Bound",
    "Session",
    "accepts",
    "bind",
    "describe",
    "pack",
    "run_check",
    "session",
    "unpack",
    "versions",
]

NAME = SPEC.name
CHECKS: tuple[str, ...] = (
    "eager",
    "torch.compile",
    "torch.compile(fullgraph)",
    "torch.compile(new shapes)",
    "torch.export",
    "torch.export(strict)",
    "torch.jit.trace",
    "onnx",
)
ACCEPTS = "a torch.nn.Module, or a function of tensors (then pass framework='torch')"


def versions() -> dict[str, str]:
    return {NAME: torch.__version__}


def accepts(model: object) -> bool:
    return isinstance(model, nn.Module) or callable(model)


def describe(model: object) -> str:
    if isinstance(model, nn.Module):
        return type(model).__name__
    return getattr(model, "__name__", type(model).__name__)


def pack(model: object, path: Path) -> None:
    """Pickle the model with cloudpickle (:func:`labkit.frameworks._kit.explore.write_pickle`)."""
    ex.write_pickle(model, path)


def unpack(path: Path) -> object:
    return pickle.loads(Path(path).read_bytes())


# --------------------------------------------------------------------------------------------
# the model as every path takes it, and the state the checks share in one process


class Bound(nn.Module):
    """The model called as its example says: ``forward(*arrays)`` passes the positional ones
    first, then the keyword tensors by name and the constants (``use_cache=False``), which is
    what ``torch.export``, tracing and ONNX export take (positional tensors only)."""

    def __init__(self, model: nn.Module, call: ex.Call):
        super().__init__()
        self.model = model
        self.call = call

    def forward(self, *xs):
        args, named = self.call.split(xs)
        return self.model(*args, **named, **self.call.constants)


def bind(model: object, call: ex.Call) -> object:
    """``model`` taking every input positionally (:class:`Bound`), or itself when the call has
    no keyword inputs or constants."""
    return Bound(as_module(model), call) if call.binds else model


def _others(out: object) -> list[str]:
    """What the output holds besides tensors and plain values: ``a DynamicCache
    (past_key_values)``."""
    found = []
    for where, leaf in pytree.tree_flatten_with_path(out)[0]:
        if isinstance(leaf, torch.Tensor | bool | int | float | str | type(None)):
            continue
        key = re.sub(r"\W+", ".", pytree.keystr(where)).strip(".")
        found.append(f"a {type(leaf).__name__}" + (f" ({key})" if key else ""))
    return list(dict.fromkeys(found))


class Session(ex.EagerSession):
    """The model in eval mode (bound to its call), its example inputs, and eager outputs
    computed once per input."""

    def __init__(self, model: object, arrays: list[np.ndarray], call: ex.Call | None = None):
        call = call or ex.Call()
        layout = ex.axes(
            arrays, channels=call.channels, channels_from="the layout given (layout=, --layout)"
        )
        super().__init__(arrays, call, layout)
        self.model = as_module(model).eval()
        self.module = self.eager_fn = bind(self.model, call)
        self.output_type = ""

    @staticmethod
    def tensors(arrays: Sequence[np.ndarray]) -> list[torch.Tensor]:
        return [torch.from_numpy(np.array(a, copy=True)) for a in arrays]

    def run(self, fn: Callable, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad():
            out = fn(*self.tensors(arrays))
        if fn is self.eager_fn and not self.output_type:
            self.output_type = type(out).__name__
            self.uncompared = _others(out)
        return [
            t.detach().cpu().float().numpy() if t.is_floating_point() else t.detach().cpu().numpy()
            for t in leaves(out)
        ]


def session(model: object, arrays: list[np.ndarray], call: ex.Call | None = None) -> Session:
    return Session(model, arrays, call)


def _locate(s: Session) -> str:
    """The text of the first error a whole-graph capture meets (it names the source line)."""
    torch._dynamo.reset()
    try:
        with _quiet():
            s.run(torch.compile(s.module, fullgraph=True, backend="eager"), s.arrays)
    except Exception as exc:  # noqa: BLE001 - the error is what we want
        return str(exc)
    return ""


@contextlib.contextmanager
def _quiet():
    """Dynamo logs each graph break as a warning and models print: keep the report readable."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


# --------------------------------------------------------------------------------------------
# the checks


def _eager(s: Session) -> dict:
    try:
        outs = s.eager("example", s.arrays)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        where = ex.user_location(traceback_text(exc))
        return ex.result(
            "eager",
            "fails",
            "the model does not run on these inputs in plain PyTorch: give inputs of the shape "
            "it takes (batch first), or fix the model",
            ex.first_lines(exc, lines=2) + (f" (at {where})" if where else ""),
        )
    return s.works(outs)


def _fails(path: str, what: str, exc: BaseException, **details) -> dict:
    """A failed capture: what failed, why in plain words (:func:`.reasons.diagnose`: the
    framework's error classes, then its message) and where in the learner's code."""
    reason, message, where = diagnose(exc)
    return ex.result(
        path,
        "fails",
        f"{what}: {reason}" + (f" (at {where})" if where else ""),
        message,
        **details,
    )


def _graph_breaks(s: Session, explained, path: str) -> list[ex.GraphBreak]:
    """``explain``'s break reasons, plus what Dynamo counted but did not list: functions it
    skipped whole (a break inside a loop), and, when it captured nothing, why (an LSTM)."""
    breaks = [from_reason(r, path) for r in explained.break_reasons]
    found = dict(counters["unimplemented"])
    skipped = {m: n for m, n in found.items() if "Skipping the frame" in m or "frame skipped" in m}
    if skipped:
        where = _locate(s)
        breaks += [from_counter(m, n, path, where, skipped=True) for m, n in skipped.items()]
    if explained.graph_count <= 0 and not breaks and found:
        where = _locate(s)
        breaks += [from_counter(m, n, path, where, skipped=False) for m, n in found.items()]
    return merge(breaks)


#: the grad modes a learner serves a model in (they can differ by orders of magnitude compiled)
_SERVING = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode}


def _per_call(s: Session, fn: Callable, mode: Callable, calls: int = 5) -> float:
    """Milliseconds of one call of ``fn`` under ``mode`` (the fastest of ``calls``: a busy
    machine only adds time; after one call that may compile for this mode), inputs made in
    that mode as a server makes them."""
    with mode(), _quiet():
        fn(*s.tensors(s.arrays))
        times = []
        for _ in range(calls):
            xs = s.tensors(s.arrays)
            t0 = time.perf_counter()
            fn(*xs)
            times.append(time.perf_counter() - t0)
    return 1e3 * min(times)


def _timings(s: Session, compiled: Callable) -> dict[str, dict[str, float]]:
    return {
        name: {"eager": _per_call(s, s.module, mode), "compiled": _per_call(s, compiled, mode)}
        for name, mode in _SERVING.items()
    }


def _compile(s: Session) -> dict:
    path = "torch.compile"
    torch._dynamo.reset()
    counters.clear()
    with _quiet():
        explained = torch._dynamo.explain(s.module)(*s.tensors(s.arrays))
    breaks = _graph_breaks(s, explained, path)
    graphs = max(explained.graph_count, 0)
    torch._dynamo.reset()
    compiled = torch.compile(s.module)
    t0 = time.perf_counter()
    with _quiet(), quiet_torchscript():
        s.run(compiled, s.arrays)
    first = time.perf_counter() - t0
    with _quiet():
        ok, worst, why = s.compare(compiled)
    ms = _timings(s, compiled) if ok else {}
    details = {"graphs": graphs, "breaks": sum(b.count for b in breaks), "first_call_s": first}
    message = "; ".join(dict.fromkeys(b.message for b in breaks))
    if not ok:
        return ex.result(
            path,
            "fails",
            f"the compiled model computes different numbers than eager {why}",
            message,
            breaks,
            **details,
        )
    slower = ex.slowdown(ms)
    calls = ", ".join(f"{m} {t['compiled']:.3g} vs {t['eager']:.3g} ms" for m, t in ms.items())
    tail = f"; {slower}" if slower else f"; a call compiled vs eager: {calls}"
    if graphs == 0:
        cause = f" ({breaks[0].reason})" if breaks else ""
        return ex.result(
            path,
            "caveats",
            f"Dynamo captured no graph{cause}: the whole forward runs as plain Python, so "
            f"torch.compile cannot speed it up; it {ex.agrees(worst)}{tail}",
            message,
            breaks,
            ms_per_call=ms,
            **details,
        )
    if breaks or slower:
        where = (
            f"{graphs} graphs with {sum(b.count for b in breaks)} graph break(s) between them "
            "(listed below): Python runs at each break; "
            if breaks
            else "one graph, no graph break; "
        )
        return ex.result(
            path,
            "caveats",
            f"{where}Inductor's code {ex.agrees(worst)}; first call {first:.1f} s (compiling)"
            + tail,
            message,
            breaks,
            ms_per_call=ms,
            **details,
        )
    return ex.result(
        path,
        "works",
        f"one graph, no graph break; Inductor's code {ex.agrees(worst)}; first call {first:.1f} s "
        f"(compiling){tail}",
        "",
        ms_per_call=ms,
        **details,
    )


def _fullgraph(s: Session) -> dict:
    path = "torch.compile(fullgraph)"
    torch._dynamo.reset()
    fn = torch.compile(s.module, fullgraph=True, backend="eager")
    try:
        with _quiet():
            s.run(fn, s.arrays)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        return _fails(path, "not capturable as one graph", exc)
    with _quiet():
        ok, worst, why = s.compare(fn)
    if not ok:
        return ex.result(path, "fails", f"one graph, but it differs from eager {why}")
    return ex.result(
        path,
        "works",
        f"the whole forward is one graph (Dynamo with fullgraph=True; backend 'eager' checks the "
        f"capture only); {ex.agrees(worst)}",
    )


def _new_shapes(s: Session) -> dict:
    path = "torch.compile(new shapes)"
    tried = [(v, why) for v, why in s.accepted()]
    usable = [v for v, why in tried if not why]
    if not usable:
        why = "; ".join(f"{v.name}: {w}" for v, w in tried) or "the inputs have no batch dimension"
        return ex.result(
            path, "works", f"eager takes no other input sizes, so none was tried ({why})"
        )
    recs = []
    for v in usable:
        torch._dynamo.reset()
        guard_failures.clear()
        captured = [0]

        def counting(gm, example_inputs, captured=captured):
            captured[0] += 1
            return gm.forward

        fn = torch.compile(s.module, backend=counting)
        per_call = []
        with _quiet():
            for xs in v.inputs:
                before = captured[0]
                s.run(fn, xs)
                per_call.append(captured[0] - before)
        reasons = [
            re.sub(r"^\d+/\d+: ", "", ex.first_lines(r, lines=1, limit=160))
            for rs in guard_failures.values()
            for r in rs
        ]
        recs.append(
            ex.Recompile("torch.compile", v.name, v.shapes, per_call, list(dict.fromkeys(reasons)))
        )
    keeps = [r for r in recs if r.every_call]
    if not any(r.total for r in recs):
        return ex.result(
            path,
            "caveats",
            "Dynamo captured nothing at any size (see torch.compile), so there is nothing to "
            "recompile: the forward runs as plain Python every time",
            recompiles=recs,
        )
    if keeps:
        return ex.result(
            path,
            "caveats",
            "compiles again at every new "
            + " and ".join(r.varied for r in keeps)
            + ": each new size costs a compile (after 8, Dynamo's recompile limit, it gives up "
            "and runs eager); torch.compile(dynamic=True) or torch._dynamo.mark_dynamic helps "
            "when the sizes are not used in Python",
            recompiles=recs,
        )
    return ex.result(
        path,
        "works",
        "compiles again once when the "
        + " or ".join(r.varied for r in recs)
        + " first changes, then treats it as dynamic: later sizes reuse that graph",
        recompiles=recs,
    )


def _export(s: Session, strict: bool) -> dict:
    path = "torch.export(strict)" if strict else "torch.export"
    how = "strict: Dynamo captures the bytecode" if strict else "non-strict: the Python runs"
    try:
        with _quiet(), contextlib.redirect_stderr(io.StringIO()):
            program = torch.export.export(s.module, tuple(s.tensors(s.arrays)), strict=strict)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        return _fails(path, f"torch.export ({how}) rejects it", exc)
    ops = sum(n.op == "call_function" for n in program.graph.nodes)
    with _quiet():
        ok, worst, why = s.compare(program.module())
    if not ok:
        return ex.result(
            path, "fails", f"exported, but the program differs from eager {why}", ops=ops
        )
    return ex.result(
        path,
        "works",
        f"one whole-program graph ({ops} ATen operations; {how}; input shapes fixed to the "
        f"example's); {ex.agrees(worst)}",
        ops=ops,
    )


#: what strict tracing says of a dict or list output, and that strict=False takes it
_CONTAINER = ("Encountering a dict at the output", "Encountering a list at the output")


def _trace(s: Session) -> dict:
    path = "torch.jit.trace"
    s.eager("example", s.arrays)  # what the output holds, for the reasons below
    relaxed = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            try:
                traced = torch.jit.trace(s.module, tuple(s.tensors(s.arrays)), check_trace=False)
            except RuntimeError as exc:
                if not any(k in str(exc) for k in _CONTAINER):
                    raise
                relaxed = True  # what its message advises: strict=False takes a dict output
                traced = torch.jit.trace(
                    s.module, tuple(s.tensors(s.arrays)), check_trace=False, strict=False
                )
        except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
            return trace_failed(exc, s.uncompared)
    tracer = [w for w in caught if issubclass(w.category, torch.jit.TracerWarning)]
    notes = list(
        dict.fromkeys(
            f"{Path(w.filename).name}:{w.lineno}: {ex.first_lines(str(w.message), lines=1, limit=120)}"
            for w in tracer
        )
    )
    extra = [
        (f"{v.name} {ex.describe_arrays(v.inputs[1])}", v.inputs[1])
        for v, why in s.accepted()
        if not why
    ]
    with _quiet():
        try:
            ok, worst, why = s.compare(traced, extra)
        except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
            ok, worst, why = False, float("inf"), f"on another input size: {ex.first_lines(exc, 1)}"
    message = "; ".join(notes[:3])
    how = (
        f"traced only with torch.jit.trace(..., strict=False): the model returns a "
        f"{s.output_type} (a dict-like output), which strict tracing refuses because a "
        "container's structure could change with the inputs; "
        if relaxed
        else ""
    )
    if not ok:
        return ex.result(
            path,
            "fails",
            f"{how}the trace computes different numbers than eager {why}: it recorded the "
            f"Python decisions of one run and replays them for every input ({DEPRECATED})",
            message,
            tracer_warnings=len(notes),
            strict=not relaxed,
        )
    if notes or relaxed:
        warned = (
            f"{len(notes)} TracerWarning(s): the trace froze a value or decision of the example "
            "run; "
            if notes
            else ""
        )
        return ex.result(
            path,
            "caveats",
            f"{how}{warned}it {ex.agrees(worst)} on the inputs tried, maybe not on others "
            f"({DEPRECATED})",
            message,
            tracer_warnings=len(notes),
            strict=not relaxed,
        )
    return ex.result(
        path,
        "works",
        f"the trace replays correctly on new values and sizes; {ex.agrees(worst)} ({DEPRECATED})",
    )


def _onnx(s: Session) -> dict:
    path = "onnx"
    try:
        runtime = _explorer("onnxruntime")
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        return ex.result(path, "fails", "ONNX Runtime is not available here", ex.first_lines(exc))
    with tempfile.TemporaryDirectory(prefix="labkit-onnx-") as tmp:
        try:
            with _quiet(), contextlib.redirect_stderr(io.StringIO()):
                file = export_model(s.module, s.arrays, tmp)
        except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
            what = "torch.onnx.export (the dynamo exporter) cannot export it"
            return _fails(path, what, exc)
        nodes = runtime.node_count(file)
        session = runtime.session_for(file)
        worst, why = 0.0, ""
        for label, arrays in s.cases():
            ok, diff, why = ex.agreement(runtime.run(session, arrays), s.eager(label, arrays))
            worst = max(worst, diff)
            if not ok:
                return ex.result(
                    path,
                    "fails",
                    f"exported ({nodes} ONNX nodes), but ONNX Runtime computes different "
                    f"numbers than eager on the {label} input: {why}",
                    nodes=nodes,
                )
    return ex.result(
        path,
        "works",
        f"exported by torch.onnx.export (dynamo exporter; shapes fixed to the example's): "
        f"{nodes} ONNX nodes; ONNX Runtime {ex.agrees(worst)}",
        nodes=nodes,
    )


_RUN: dict[str, Callable[[Session], dict]] = {
    "eager": _eager,
    "torch.compile": _compile,
    "torch.compile(fullgraph)": _fullgraph,
    "torch.compile(new shapes)": _new_shapes,
    "torch.export": lambda s: _export(s, strict=False),
    "torch.export(strict)": lambda s: _export(s, strict=True),
    "torch.jit.trace": _trace,
    "onnx": _onnx,
}
assert tuple(_RUN) == CHECKS


def run_check(name: str, s: Session) -> dict:
    return _RUN[name](s)
