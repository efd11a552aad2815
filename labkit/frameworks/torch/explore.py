"""PyTorch's capture paths asked of a learner's model (``labkit.explore``): eager, torch.compile,
fullgraph, new shapes, torch.export (non-strict, strict), torch.jit.trace, ONNX Runtime; and what
they said, in plain words (``labkit/data/explore_messages.toml``): a failure's reason from its
messages (:func:`diagnose`), graph breaks from Dynamo's own log (:func:`graph_breaks`), a compiled
call timed against eager with the timings' validity."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import logging
import logging.handlers
import re
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
import torch._dynamo
from torch import nn
from torch._dynamo.testing import CompileCounter, CompileCounterWithBackend
from torch._dynamo.utils import guard_failures, reset_graph_break_dup_checker
from torch.utils import _pytree as pytree
from torch.utils.benchmark import Timer

from ...util.stdio import quiet_logs
from .._kit import explore as ex
from .._kit.layout import Call, axes, describe_arrays
from . import SPEC
from .adapter import as_module, quiet_torchscript

__all__ = ["ACCEPTS", "CHECKS", "Bound", "Session", "bind", "flatten", "versions"]

ACCEPTS = "a torch.nn.Module, or a function of tensors (then pass framework='torch')"
SAID = ex.MESSAGES["torch"]


def versions() -> dict[str, str]:
    return {SPEC.name: torch.__version__}


def plain(message: str) -> str:
    """The table's meaning of ``message`` (its named groups filled in), else Dynamo's own
    explanation and hint, else ""."""
    for words, meaning in SAID["plain"].items():
        found = re.search(words, message)
        if found:
            return meaning.format(**found.groupdict())
    return dynamo_words(message)


def dynamo_words(message: str) -> str:
    """Dynamo's own explanation and first hint in a structured graph-break message, or ""."""
    explanation, hint = re.search(r"Explanation: (.+)", message), re.search(r"Hint: (.+)", message)
    parts = [explanation.group(1).strip().rstrip(".")] if explanation else []
    return "; ".join(parts + ([f"its hint: {hint.group(1).strip()}"] if hint else []))


def diagnose(exc: BaseException, stopped: str = SAID["stopped"]) -> tuple[str, str, str]:
    """A failed capture as ``(reason in plain words, the framework's innermost message, where in
    the learner's code: " (at file.py:12 in forward)" or "")``: the reason from the innermost
    message along ``exc``'s causes that says one, else ``stopped``."""
    chain: list[BaseException] = []
    while exc is not None and exc not in chain and len(chain) < 12:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    reason = next(filter(None, (plain(str(e)) for e in reversed(chain))), stopped)
    where = next(filter(None, (ex.at_line(x) for e in reversed(chain) for x in (str(e), e))), "")
    return reason, ex.first_lines(chain[-1], lines=2), where


def graph_breaks(records: list[logging.LogRecord], path: str) -> list[ex.GraphBreak]:
    """The logged breaks as rows: the reason in plain words, the model's line the traceback ends
    in; one row per place and reason (Dynamo repeats a break without its traceback)."""
    rows: dict[tuple[str, str], ex.GraphBreak] = {}
    for text in (r.getMessage() for r in records):
        head, _, trace = text.partition("User code traceback:")
        at, _, reason = head.partition("Graph Break Reason: ")
        key = (at.rpartition(" at ")[2].strip(), reason.strip())
        if key in rows:
            rows[key].count += 1
            continue
        rows[key] = ex.GraphBreak(
            reason=plain(reason) or ex.first_lines(reason, 1, 200),
            location=ex.user_location(trace),
            code=ex.user_location(trace, code=True),
            message=dynamo_words(reason) or ex.first_lines(reason, 2, 240),
            path=path,
        )
        if "graph break in loop" in reason:
            rows[key].reason += SAID["in_loop"]
            rows[key].message += " (then: frame skipped, runs as Python)"
    return list(rows.values())


@contextlib.contextmanager
def _logged_breaks():
    """Dynamo's graph-break log (``TORCH_LOGS="graph_breaks"``) kept while the block runs: one
    message per break, its reason and the user's traceback (loops and skipped frames too)."""
    log = logging.getLogger("torch._dynamo.symbolic_convert.__graph_breaks")
    kept, saved = logging.handlers.BufferingHandler(1 << 20), (log.level, log.propagate)
    reset_graph_break_dup_checker()  # else a break logged before comes without its traceback
    log.addHandler(kept)
    log.setLevel(logging.DEBUG)
    log.propagate = False  # kept here, not printed
    try:
        yield kept.buffer
    finally:
        log.removeHandler(kept)
        log.setLevel(saved[0])
        log.propagate = saved[1]


class Bound(nn.Module):
    """The model called as its example says: ``forward(*xs)`` passes the positional inputs,
    then the keyword tensors by name and the constants (what export and tracing take)."""

    def __init__(self, model: nn.Module, call: Call):
        super().__init__()
        self.model, self.call = model, call

    def forward(self, *xs):
        args, named = self.call.split(xs)
        return self.model(*args, **named, **self.call.constants)


def bind(model: object, call: Call) -> object:
    """``model`` taking every input positionally (:class:`Bound`) when the call needs it."""
    return Bound(as_module(model), call) if call.binds else model


def flatten(out: object, prefix: str = "") -> list[tuple[str, object]]:
    """``(key, leaf)`` of an output as ``torch.utils._pytree`` flattens it, and a plain
    ``@dataclass`` by its fields (as ``torch.export`` does once it is registered)."""
    found = []
    for where, leaf in pytree.tree_flatten_with_path(out)[0]:
        key = prefix + pytree.keystr(where)
        if dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
            found += flatten({f.name: getattr(leaf, f.name) for f in dataclasses.fields(leaf)}, key)
        else:
            found.append((key, leaf))
    return found


class Session(ex.EagerSession):
    """The model in eval mode (bound to its call), its example inputs, eager outputs."""

    def __init__(self, model: object, arrays: list[np.ndarray], call: Call):
        super().__init__(arrays, call, axes(arrays, channels=call.channels))
        self.model = as_module(model).eval()
        self.module = self.eager_fn = bind(self.model, call)

    @staticmethod
    def tensors(arrays: Sequence[np.ndarray]) -> tuple[torch.Tensor, ...]:
        return tuple(torch.tensor(a) for a in arrays)

    def run(self, fn: Callable, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad():
            out = fn(*self.tensors(arrays))
        leaves = flatten(out)
        if fn is self.eager_fn and not self.output_type:  # what the output holds besides tensors
            self.output_type = type(out).__name__
            plain = torch.Tensor | bool | int | float | str | type(None)
            names = ((re.sub(r"\W+", ".", k).strip("."), v) for k, v in leaves)
            found = (
                f"a {type(v).__name__}" + (f" ({k})" if k else "")
                for k, v in names
                if not isinstance(v, plain)
            )
            self.uncompared = list(dict.fromkeys(found))
        tensors = [t.detach().cpu() for _, t in leaves if isinstance(t, torch.Tensor)]
        return [(t.float() if t.is_floating_point() else t).numpy() for t in tensors]


def _fails(path: str, what: str, exc: BaseException, stopped: str = SAID["stopped"]) -> dict:
    """A failed capture: what failed, why in plain words (:func:`diagnose`; ``stopped`` when it
    finds no reason), where in the learner's code."""
    why, message, where = diagnose(exc, stopped)
    return ex.result(path, "fails", f"{what}: {why}{where}", message)


def _timings(s: Session, compiled: Callable) -> dict[str, dict]:
    """Per grad mode a server uses, eager's and the compiled model's median ms a call
    (``Timer.blocked_autorange`` after a first call), its IQR, and why it is not valid (a spread
    past the 10% at which torch.utils.benchmark warns too; fewer than 5 timed blocks)."""
    out: dict[str, dict] = {}
    for mode in (torch.no_grad, torch.inference_mode):
        for which, fn in (("eager", s.module), ("compiled", compiled)):
            with mode(), ex.quiet():
                xs = s.tensors(s.arrays)
                fn(*xs)
                m = Timer("f(*xs)", globals={"f": fn, "xs": xs}).blocked_autorange(min_run_time=0.2)
            spread = f"spread too wide: IQR/median {m.iqr / m.median:.0%} > 10%"
            invalid = [] if m.meets_confidence() else [spread]
            if len(m.times) < 5:
                invalid.append(f"{len(m.times)} timed blocks, fewer than 5")
            calls = m.number_per_run * len(m.times)
            timing = {"ms": 1e3 * m.median, "iqr_ms": 1e3 * m.iqr, "calls": calls}
            out.setdefault(mode.__name__, {})[which] = timing | {"invalid": invalid}
    return out


#: how much slower than eager (and by how many ms) a compiled call must be to be a finding
SLOWDOWN, SLOWDOWN_MS = 3.0, 0.5


def slowdown(ms: dict[str, dict[str, dict]]) -> str:
    """:func:`_timings` in words, with their validity: a ratio is claimed only between valid
    timings, a slowdown only past :data:`SLOWDOWN` and :data:`SLOWDOWN_MS`."""
    if not ms:
        return ""
    said = "; ".join(
        f"under torch.{m}: {t['compiled']['ms']:.3g} ms (IQR {t['compiled']['iqr_ms']:.2g}) "
        f"compiled vs {t['eager']['ms']:.3g} ms (IQR {t['eager']['iqr_ms']:.2g}) eager, medians "
        f"of {t['compiled']['calls']} and {t['eager']['calls']} calls"
        for m, t in ms.items()
    )
    invalid = [x["invalid"] for t in ms.values() for x in t.values() if x["invalid"]]
    if invalid:
        why = f"{len(invalid)} of {2 * len(ms)} timings invalid, e.g. {invalid[0][0]}"
        return f"a call {said}: timing INVALID ({why}), so no ratio is claimed"
    mode, worst = max(ms.items(), key=lambda kv: kv[1]["compiled"]["ms"] / kv[1]["eager"]["ms"])
    compiled, eager = worst["compiled"]["ms"], worst["eager"]["ms"]
    if compiled / eager < SLOWDOWN or compiled - eager < SLOWDOWN_MS:
        return f"a call {said} (valid timings)"
    return SAID["slower"].format(ratio=compiled / eager, mode=mode, said=said)


def _compile(s: Session) -> dict:
    path = "torch.compile"
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")  # counts the graphs Inductor compiles
    compiled = torch.compile(s.module, backend=counter)
    t0 = time.perf_counter()
    with ex.quiet(), quiet_torchscript(), _logged_breaks() as logged:
        s.run(compiled, s.arrays)
    first = time.perf_counter() - t0
    breaks, graphs = graph_breaks(logged, path), counter.frame_count
    n = sum(b.count for b in breaks)
    with ex.quiet():
        ok, worst, why = s.compare(compiled)
    details = {"graphs": graphs, "breaks": n, "first_call_s": first}
    message = "; ".join(dict.fromkeys(b.message for b in breaks))
    if not ok:
        why = f"the compiled model computes different numbers than eager {why}"
        return ex.result(path, "fails", why, message, breaks, **details)
    ms = _timings(s, compiled)
    slower = slowdown(ms)  # the timings with their validity; a slowdown only when valid
    status = "caveats" if breaks or not graphs or "slower than eager" in slower else "works"
    if graphs == 0:
        cause = f" ({breaks[0].reason})" if breaks else ""
        head = SAID["no_graph"].format(cause=cause) + f"; it {ex.agrees(worst)}"
    else:
        where = f"{graphs} graphs with {n} graph break(s) between them (listed below): Python "
        where = where + "runs at each break; " if breaks else "one graph, no graph break; "
        head = f"{where}Inductor's code {ex.agrees(worst)}; first call {first:.1f} s (compiling)"
    return ex.result(path, status, f"{head}; {slower}", message, breaks, ms_per_call=ms, **details)


def _fullgraph(s: Session) -> dict:
    path = "torch.compile(fullgraph)"
    torch._dynamo.reset()
    fn = torch.compile(s.module, fullgraph=True, backend="eager")
    try:
        with ex.quiet():
            s.run(fn, s.arrays)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        return _fails(path, "not capturable as one graph", exc)
    done = "the whole forward is one graph (Dynamo with fullgraph=True; backend 'eager' checks "
    return s.agreed(path, fn, done + "the capture only)")


def recompiles_in_words(r: ex.Recompile) -> str:
    """At which calls a graph was compiled, and whether the later sizes reused one."""
    at = [i + 1 for i, c in enumerate(r.compiles) if c]
    text = f"{r.varied} over {len(r.compiles)} sizes: {r.total} graph(s) compiled, at call(s) "
    text += ", ".join(map(str, at))
    later = ", ".join(str(i) for i in at if i > 2)
    if later:
        return f"{text}: compiled again at call(s) {later}, so later sizes do not all reuse a graph"
    dynamic = "the second size made the dimension dynamic, and every later size reused that graph"
    return f"{text}: {'every size reused the first graph' if at == [1] else dynamic}"


def _new_shapes(s: Session) -> dict:
    """Graphs compiled per call while one dimension changes, with Dynamo's guard failures (the
    model itself is compiled, so they name its arguments: ``input_ids``)."""
    path = "torch.compile(new shapes)"
    usable, none = s.usable(path)
    if none:
        return none
    recs = []
    for v in usable:
        torch._dynamo.reset()
        guard_failures.clear()
        counter, per_call = CompileCounter(), []
        fn = bind(torch.compile(s.model, backend=counter), s.call)
        with ex.quiet():
            for xs in v.inputs:
                before = counter.frame_count
                s.run(fn, xs)
                per_call.append(counter.frame_count - before)
        reasons = [ex.first_lines(r, 1, 160) for rs in guard_failures.values() for r in rs]
        reasons = [re.sub(r"^\d+/\d+: ", "", r) for r in dict.fromkeys(reasons)]
        recs.append(ex.Recompile(path.split("(")[0], v.name, v.shapes, per_call, reasons))
    if not any(r.total for r in recs):
        return ex.result(path, "caveats", SAID["nothing_to_recompile"], recompiles=recs)
    said = "; ".join(map(recompiles_in_words, recs))
    if not any(sum(c > 0 for c in r.compiles[1:]) > 1 for r in recs):
        return ex.result(path, "works", said, recompiles=recs)
    return ex.result(path, "caveats", said + SAID["recompile_cost"], recompiles=recs)


def _export(s: Session, strict: bool) -> dict:
    path = "torch.export(strict)" if strict else "torch.export"
    how = "strict: Dynamo captures the bytecode" if strict else "non-strict: the Python runs"
    try:
        with ex.quiet(), contextlib.redirect_stderr(io.StringIO()):
            program = torch.export.export(s.module, s.tensors(s.arrays), strict=strict)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        return _fails(path, f"torch.export ({how}) rejects it", exc)
    ops = sum(n.op == "call_function" for n in program.graph.nodes)
    done = f"one whole-program graph ({ops} ATen operations; {how}; input shapes fixed to the "
    return s.agreed(path, program.module(), done + "example's)", ops=ops)


def _trace(s: Session) -> dict:
    """``torch.jit.trace`` (with ``strict=False`` only for a dict output, as its own message
    advises), its TracerWarnings, and the trace replayed on new values and sizes."""
    path, xs = "torch.jit.trace", s.tensors(s.arrays)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for strict in (True, False):
            try:
                traced = torch.jit.trace(s.module, xs, check_trace=False, strict=strict)
                break
            except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
                if not (strict and "pass strict=False" in str(exc)):
                    what = f"TorchScript's tracer cannot record it ({SAID['deprecated']})"
                    return _fails(path, what, exc)
    notes = [
        f"{Path(w.filename).name}:{w.lineno}: {ex.first_lines(str(w.message), 1, 120)}"
        for w in caught
        if issubclass(w.category, torch.jit.TracerWarning)
    ]
    notes = list(dict.fromkeys(notes))
    extra = [(f"{v.name} {describe_arrays(v.inputs[1])}", v.inputs[1]) for v in s.usable(path)[0]]
    with ex.quiet():
        ok, worst, why = s.compare(traced, extra)
    how = "" if strict else SAID["trace_relaxed"].format(type=s.output_type)
    warned = f"{len(notes)} TracerWarning(s): the trace froze a value or decision of the "
    warned = warned + "example run; " if notes else ""
    if not ok:
        status, reason = "fails", how + SAID["trace_differs"].format(why=why)
    elif notes or not strict:
        status = "caveats"
        reason = f"{how}{warned}it {ex.agrees(worst)} on the inputs tried, maybe not on others"
    else:
        status = "works"
        reason = f"the trace replays correctly on new values and sizes; {ex.agrees(worst)}"
    reason += f" ({SAID['deprecated']})"
    return ex.result(
        path, status, reason, "; ".join(notes[:3]), tracer_warnings=len(notes), strict=strict
    )


def _onnx(s: Session) -> dict:
    path = "onnx"
    try:  # quiet_logs: the exporter's notes on the torchvision operators it skips
        with quiet_logs(), ex.quiet(), contextlib.redirect_stderr(io.StringIO()):
            program = torch.onnx.export(s.module, s.tensors(s.arrays), dynamo=True, verbose=False)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        return _onnx_failed(exc)
    nodes = len(program.model_proto.graph.node)
    done = "exported by torch.onnx.export (dynamo exporter; shapes fixed to the example's): "
    return s.agreed(path, program, f"{done}{nodes} ONNX nodes, run by ONNX Runtime", nodes=nodes)


def _onnx_failed(exc: BaseException) -> dict:
    """A failed ONNX export, its reason placed in the stage that failed (the stages its error
    names): the capture's reasons only when torch.export (the first stage) failed."""
    text, what = "".join(traceback.format_exception(exc)), "torch.onnx.export (dynamo exporter): "
    stage = next((said for key, said in SAID["onnx_stages"].items() if key in text), "")
    if not stage:
        first = "Failed to export the model with torch.export" in text
        what += "its first stage, torch.export, fails" if first else "it cannot export the model"
        return _fails("onnx", what, exc)
    # the capture's words do not fit a later stage
    return _fails("onnx", f"{what}torch.export succeeded; {stage} failed", exc, SAID["onnx_later"])


#: the capture paths in order, each the function of a session that gives its row
CHECKS: dict[str, Callable[[Session], dict]] = {
    "eager": functools.partial(Session.eager_check, framework="plain PyTorch"),
    "torch.compile": _compile,
    "torch.compile(fullgraph)": _fullgraph,
    "torch.compile(new shapes)": _new_shapes,
    "torch.export": functools.partial(_export, strict=False),
    "torch.export(strict)": functools.partial(_export, strict=True),
    "torch.jit.trace": _trace,
    "onnx": _onnx,
}
