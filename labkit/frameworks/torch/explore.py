"""PyTorch's capture paths, asked of a learner's model (the checks behind ``labkit.explore``).

Each check is one row of the report, run in a worker process by :mod:`labkit.explore`:

- ``eager``: the model runs on the example inputs (and which other sizes it takes);
- ``torch.compile``: ``torch._dynamo.explain`` counts the graphs and the graph breaks with their
  reasons and source lines; Dynamo's counters add the functions it skipped entirely (a graph
  break inside a loop); then the model is compiled with Inductor and checked against eager;
- ``torch.compile(fullgraph)``: capture as one graph or fail with Dynamo's first reason
  (backend ``eager``: the capture alone, no code generation);
- ``torch.compile(new shapes)``: how many graphs Dynamo captures as the batch size (and the
  sequence length or image size) changes at each call: its automatic dynamic shapes recompile
  once, then reuse a graph with a symbolic size; the guard failures say why;
- ``torch.export`` (non-strict, the default since 2.7) and ``torch.export(strict)`` (Dynamo's
  bytecode capture): one whole-program graph or the first error, condensed;
- ``torch.jit.trace``: TorchScript's trace (deprecated in 2.x, still common) with its
  TracerWarnings, replayed on other inputs: a frozen branch shows up as a disagreement;
- ``onnx``: ``torch.onnx.export`` (the dynamo exporter), run by ONNX Runtime and compared.

"Agrees with eager" means: the same outputs, within a relative tolerance, on the example and on
two other inputs of the same shapes (new random values, and zeros), which is how a graph that
froze a data-dependent decision gets caught.
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

from .. import explorer as _explorer
from .._kit import explore as ex
from . import SPEC
from .adapter import as_module, export_model, leaves, quiet_torchscript

__all__ = [
    "ACCEPTS",
    "CHECKS",
    "NAME",
    "PLAIN",
    "Session",
    "accepts",
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
# the state the checks share in one process


class Session(ex.EagerSession):
    """The model in eval mode, its example inputs, and eager outputs computed once per input."""

    def __init__(self, model: object, arrays: list[np.ndarray]):
        super().__init__(arrays)
        self.module = self.eager_fn = as_module(model).eval()

    @staticmethod
    def tensors(arrays: Sequence[np.ndarray]) -> list[torch.Tensor]:
        return [torch.from_numpy(np.array(a, copy=True)) for a in arrays]

    def run(self, fn: Callable, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad():
            out = fn(*self.tensors(arrays))
        return [
            t.detach().cpu().float().numpy() if t.is_floating_point() else t.detach().cpu().numpy()
            for t in leaves(out)
        ]


def session(model: object, arrays: list[np.ndarray]) -> Session:
    return Session(model, arrays)


# --------------------------------------------------------------------------------------------
# Dynamo's reasons in plain words

#: (substrings of Dynamo's or export's message, what it means), first match wins
PLAIN: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("Data-dependent branching", "generic_jump", "data-dependent expression"),
        (
            "a Python if/while on a tensor's value (data-dependent control flow): a graph "
            "cannot hold a Python branch; torch.cond (or torch.where) keeps it in the graph"
        ),
    ),
    (
        ("Tensor.item()", "item()", "Tensor.tolist", "Converting a tensor to a Python"),
        (
            "reads a tensor's value into Python (.item(), .tolist(), float(t)): the graph "
            "stops to hand Python the number"
        ),
    ),
    (
        ("Dynamic shape operator", "nonzero", "data dependent output shape"),
        (
            "an operation whose output shape depends on the values (boolean masking, nonzero, "
            "unique): the graph cannot size it ahead of time"
        ),
    ),
    (
        ("`print`", "builtin print"),
        "a Python print(): a side effect, so it runs in Python between two graphs (every call)",
    ),
    (("numpy", "NumPy"), "a NumPy call on a tensor: it runs in Python, outside the graph"),
    (
        ("graph break in loop", "Skipping the frame"),
        "a graph break inside a loop: Dynamo skips the whole function, which runs as Python",
    ),
    (
        ("skip", "Unsupported function call", "Failed to trace builtin", "call_function"),
        (
            "a call Dynamo cannot trace (C code or an unsupported library function): it runs "
            "in Python between graphs"
        ),
    ),
)


def plain(message: str) -> str:
    return ex.plain(message, PLAIN, "the capture stopped here (the framework's message says why)")


def _frame_name(name: str) -> str:
    """Dynamo's resume functions (``torch_dynamo_resume_in_forward_at_10``) as the function."""
    m = re.fullmatch(r"torch_dynamo_resume_in_(\w+?)_at_\d+", name)
    return m.group(1) if m else name


def _from_reason(reason, path: str) -> ex.GraphBreak:
    frame = reason.user_stack[-1] if reason.user_stack else None
    location = (
        f"{Path(frame.filename).name}:{frame.lineno} in {_frame_name(frame.name)}" if frame else ""
    )
    return ex.GraphBreak(
        reason=plain(reason.reason),
        location=location,
        code=(frame.line or "").strip() if frame else "",
        message=ex.first_lines(reason.reason, lines=2, limit=240),
        path=path,
    )


_CODE = re.compile(r"code: (.+)")


def _from_counter(message: str, count: int, path: str, where: str) -> ex.GraphBreak:
    """A graph break that made Dynamo skip a whole function (it sits in a loop); ``where`` is
    an error text that locates it when the message does not (see :func:`_locate`)."""
    first = message.split("*** While handling", 1)[0]
    code = _CODE.search(first)
    located = first if ex.user_location(first) else where
    return ex.GraphBreak(
        reason=plain(first) + "; it sits inside a loop, so Dynamo skipped the whole function, "
        "which runs as plain Python",
        location=ex.user_location(located),
        code=code.group(1).strip() if code else ex.user_code(located),
        message=ex.first_lines(first, lines=1, limit=200)
        + " (then: frame skipped, runs as Python)",
        count=count,
        path=path,
    )


def _locate(s: Session) -> str:
    """The text of the first error a whole-graph capture meets (it names the source line)."""
    torch._dynamo.reset()
    try:
        with _quiet():
            s.run(torch.compile(s.module, fullgraph=True, backend="eager"), s.arrays)
    except Exception as exc:  # noqa: BLE001 - the error is what we want
        return str(exc)
    return ""


def _merge(breaks: list[ex.GraphBreak]) -> list[ex.GraphBreak]:
    """One entry per place and reason, counting repeats (a break in a loop body, say)."""
    seen: dict[tuple[str, str], ex.GraphBreak] = {}
    for b in breaks:
        key = (b.location, b.reason)
        if key in seen:
            seen[key].count += b.count
        else:
            seen[key] = b
    return list(seen.values())


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
        where = ex.user_location(_traceback(exc))
        return ex.result(
            "eager",
            "fails",
            "the model does not run on these inputs in plain PyTorch: give inputs of the shape "
            "it takes (batch first), or fix the model",
            ex.first_lines(exc, lines=2) + (f" (at {where})" if where else ""),
        )
    return s.works(outs)


def _fails(
    path: str, what: str, exc: BaseException, lines: int, cause: BaseException | None = None
) -> dict:
    """A failed capture: what failed, the framework's message in plain words and where in the
    learner's code (read from ``cause``, by default ``exc``), its first ``lines`` lines."""
    cause = exc if cause is None else cause
    where = ex.user_location(str(cause))
    return ex.result(
        path,
        "fails",
        f"{what}: {plain(str(exc))}" + (f" (at {where})" if where else ""),
        ex.first_lines(cause, lines=lines),
    )


def _traceback(exc: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(exc))


def _compile(s: Session) -> dict:
    path = "torch.compile"
    torch._dynamo.reset()
    counters.clear()
    with _quiet():
        explained = torch._dynamo.explain(s.module)(*s.tensors(s.arrays))
    breaks = [_from_reason(r, path) for r in explained.break_reasons]
    skipped = {
        msg: n
        for msg, n in counters["unimplemented"].items()
        if "Skipping the frame" in msg or "frame skipped" in msg
    }
    if skipped:
        where = _locate(s)
        breaks += [_from_counter(msg, n, path, where) for msg, n in skipped.items()]
    breaks = _merge(breaks)
    graphs = max(explained.graph_count, 0)
    torch._dynamo.reset()
    compiled = torch.compile(s.module)
    t0 = time.perf_counter()
    with _quiet(), quiet_torchscript():
        s.run(compiled, s.arrays)
    first = time.perf_counter() - t0
    with _quiet():
        ok, worst, why = s.compare(compiled)
    details = {
        "graphs": graphs,
        "breaks": sum(b.count for b in breaks),
        "first_call_s": first,
    }
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
    if graphs == 0:
        return ex.result(
            path,
            "caveats",
            "Dynamo captured no graph: the whole forward runs as plain Python, so torch.compile "
            f"cannot speed it up (it {ex.agrees(worst)})",
            message,
            breaks,
            **details,
        )
    if breaks:
        return ex.result(
            path,
            "caveats",
            f"{graphs} graphs with {sum(b.count for b in breaks)} graph break(s) between them "
            f"(listed below): Python runs at each break; Inductor's code {ex.agrees(worst)}; "
            f"first call {first:.1f} s (compiling)",
            message,
            breaks,
            **details,
        )
    return ex.result(
        path,
        "works",
        f"one graph, no graph break; Inductor's code {ex.agrees(worst)}; first call {first:.1f} s "
        "(compiling)",
        "",
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
        return _fails(path, "not capturable as one graph", exc, lines=2)
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
        return _fails(path, f"torch.export ({how}) rejects it", exc, lines=1)
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


def _trace(s: Session) -> dict:
    path = "torch.jit.trace"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            traced = torch.jit.trace(s.module, tuple(s.tensors(s.arrays)), check_trace=False)
        except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
            return ex.result(
                path,
                "fails",
                "TorchScript's tracer cannot record it (deprecated in PyTorch 2.x: use "
                "torch.export or torch.compile)",
                ex.first_lines(exc, lines=2),
            )
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
    deprecated = "deprecated in PyTorch 2.x: torch.export or torch.compile for new code"
    if not ok:
        return ex.result(
            path,
            "fails",
            f"the trace computes different numbers than eager {why}: it recorded the Python "
            f"decisions of one run and replays them for every input ({deprecated})",
            message,
            tracer_warnings=len(notes),
        )
    if notes:
        return ex.result(
            path,
            "caveats",
            f"{len(notes)} TracerWarning(s): the trace froze a value or decision of the example "
            f"run; it {ex.agrees(worst)} on the inputs tried, maybe not on others ({deprecated})",
            message,
            tracer_warnings=len(notes),
        )
    return ex.result(
        path,
        "works",
        f"the trace replays correctly on new values and sizes; {ex.agrees(worst)} ({deprecated})",
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
            # the exporter wraps what torch.export raised: the cause says where and what first
            return _fails(path, what, exc, lines=1, cause=exc.__cause__ or exc)
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
