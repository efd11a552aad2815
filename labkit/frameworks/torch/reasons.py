"""What PyTorch's capture paths said, in plain words: a failure's reason from its error classes
and messages (:func:`diagnose`), graph breaks as report rows (:func:`graph_breaks`)."""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from pathlib import Path

from .._kit import explore as ex

__all__ = ["DEPRECATED", "PLAIN", "STOPPED", "diagnose", "dynamo_words", "graph_breaks", "plain"]
__all__ += ["trace_failed", "traceback_text"]

#: what the TorchScript rows say of it
DEPRECATED = "deprecated in PyTorch 2.x: torch.export or torch.compile for new code"

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
    (
        ("RNN, GRU, or LSTM",),
        (
            "an nn.RNN/GRU/LSTM module: Dynamo does not trace them (torch._dynamo.config."
            "allow_rnn=True is its experimental support), so the module runs eagerly"
        ),
    ),
    (
        ("graph break in loop", "Skipping the frame"),
        "a graph break inside a loop: Dynamo skips the whole function, which runs as Python",
    ),
)
#: a failure neither the table nor Dynamo's own explanation says more of
STOPPED = "the capture stopped here (the framework's message says why)"


def plain(message: str) -> str:
    """The table's meaning of ``message``, else Dynamo's own explanation and hint, else ""."""
    found = (meaning for keys, meaning in PLAIN if any(k in message for k in keys))
    return next(found, "") or dynamo_words(message)


def traceback_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


_NO_ONNX = re.compile(r"No ONNX function found for <OpOverload\(op='([\w.]+)', overload='(\w+)'\)")
_UNKNOWN_OUTPUT = re.compile(
    r"(?:Found <class '([\w.]+)'> in output, which is not a known type"
    r"|outputs with type `?<class '([\w.]+)'>`? is not supported"
    r"|unrecognized type UserDefinedObjectVariable\((\w+)\) at output)"
)


def _unknown_type(name: str) -> str:
    short = name.rpartition(".")[2]
    if "Cache" in short:
        return (
            f"the output holds a {short}, the key/value cache of a decoder, which is not a "
            "tensor: pass use_cache=False (in the spec's example keyword arguments), or register "
            f"{short} as a pytree node (torch.utils._pytree.register_pytree_node) so its "
            "tensors can be returned"
        )
    return (
        f"the output holds a {short}, which is neither a tensor nor a container of tensors: "
        "register it as a pytree node (torch.utils._pytree.register_pytree_node), or return "
        "its tensors"
    )


def _by_class(chain: list[BaseException]) -> str:
    """The meaning of the framework's own error classes along the chain, or ""."""
    for e in reversed(chain):  # the innermost error is the most specific
        name, text = type(e).__name__, str(e)
        op = _NO_ONNX.search(text)
        if name == "DispatchError" or op:
            what = f"{op.group(1)}.{op.group(2)}" if op else "an operator"
            return (
                f"{what} has no ONNX translation in torch.onnx's registry: give one "
                "(torch.onnx.export(..., custom_translation_table={op: an onnxscript "
                "function})), or write the step with operators that have one"
            )
        found = _UNKNOWN_OUTPUT.search(text)
        if found:
            return _unknown_type(next(g for g in found.groups() if g))
        if name in ("GuardOnDataDependentSymNode", "DataDependentOutputException"):
            return plain("Data-dependent branching") if "Guard" in name else plain("nonzero")
    return ""


def diagnose(exc: BaseException) -> tuple[str, str, str]:
    """A failed capture as ``(reason in plain words, the framework's innermost message, where in
    the learner's code)``: the reason from the error classes along ``exc``'s causes, else from
    the messages."""
    chain: list[BaseException] = []
    while exc is not None and exc not in chain and len(chain) < 12:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    reason = _by_class(chain) or next(filter(None, (plain(str(e)) for e in chain)), STOPPED)
    where = ""
    for e in reversed(chain):
        where = ex.user_location(str(e)) or ex.user_location(traceback_text(e))
        if where:
            break
    return reason, ex.first_lines(chain[-1], lines=2), where


def dynamo_words(message: str) -> str:
    """Dynamo's own explanation and first hint in a structured graph-break message, or ""."""
    explanation = re.search(r"Explanation: (.+)", message)
    hint = re.search(r"Hint: (.+)", message)
    parts = [explanation.group(1).strip().rstrip(".")] if explanation else []
    return "; ".join(parts + ([f"its hint: {hint.group(1).strip()}"] if hint else []))


def _from_reason(reason, path: str) -> ex.GraphBreak:
    """One of ``explain``'s break reasons as a row, at its innermost frame of the model's code."""
    frames = list(reason.user_stack or [])
    mine = ex.user_location(
        "".join(f'File "{f.filename}", line {f.lineno}, in {f.name}\n' for f in frames)
    )
    frame = next(
        (f for f in reversed(frames) if mine.startswith(f"{Path(f.filename).name}:{f.lineno}")),
        frames[-1] if frames else None,
    )
    location = ""
    if frame:  # Dynamo's resume functions (torch_dynamo_resume_in_forward_at_10) as the function
        name = re.sub(r"^torch_dynamo_resume_in_(\w+?)_at_\d+$", r"\1", frame.name)
        location = f"{Path(frame.filename).name}:{frame.lineno} in {name}"
    return ex.GraphBreak(
        reason=plain(reason.reason) or ex.first_lines(reason.reason, 1, 200),
        location=location,
        code=(frame.line or "").strip() if frame else "",
        message=dynamo_words(reason.reason) or ex.first_lines(reason.reason, 2, 240),
        path=path,
    )


def _from_counter(message: str, count: int, path: str, where: str, skipped: bool):
    """A break Dynamo counted but ``explain`` did not list: one that made it skip a whole
    function (``skipped``: it sits in a loop), or a module it does not trace (an LSTM);
    ``where`` is an error text that locates it when the message does not."""
    first = message.split("*** While handling", 1)[0]
    code = re.search(r"code: (.+)", first)
    located = first if ex.user_location(first) else where
    reason = plain(first) or ex.first_lines(first, lines=1, limit=200)
    message = dynamo_words(first) or ex.first_lines(first, lines=1, limit=200)
    if skipped:
        reason += "; it sits inside a loop, so Dynamo skipped the whole function, which runs "
        reason += "as plain Python"
        message += " (then: frame skipped, runs as Python)"
    return ex.GraphBreak(
        reason=reason,
        location=ex.user_location(located),
        code=code.group(1).strip() if code else ex.user_code(located),
        message=message,
        count=count,
        path=path,
    )


def graph_breaks(explained, counted: dict, locate: Callable[[], str], path: str):
    """``explain``'s break reasons, plus what Dynamo counted (``counters["unimplemented"]``)
    but did not list: functions it skipped whole, and, when it captured nothing, why; one row
    per place and reason. ``locate()``: the error of a whole-graph capture."""
    breaks = [_from_reason(r, path) for r in explained.break_reasons]
    counted = dict(counted)
    skipped = {
        m: n for m, n in counted.items() if "Skipping the frame" in m or "frame skipped" in m
    }
    if skipped:
        where = locate()
        breaks += [_from_counter(m, n, path, where, True) for m, n in skipped.items()]
    if explained.graph_count <= 0 and not breaks and counted:
        where = locate()
        breaks += [_from_counter(m, n, path, where, False) for m, n in counted.items()]
    merged: dict[tuple[str, str], ex.GraphBreak] = {}
    for b in breaks:
        if (b.location, b.reason) in merged:
            merged[b.location, b.reason].count += b.count
        else:
            merged[b.location, b.reason] = b
    return list(merged.values())


def trace_failed(exc: BaseException, uncompared: list[str]) -> dict:
    """The ``torch.jit.trace`` row when tracing raised ``exc``; ``uncompared``: what the output
    holds besides tensors (a cache object the tracer cannot record)."""
    if "cannot infer type" in str(exc) and uncompared:
        reason = (
            f"the output holds {', '.join(uncompared)}, which TorchScript's tracer cannot "
            "record (it takes tensors and containers of them): pass use_cache=False in the "
            "example's keyword arguments, or return tensors only"
        )
    else:
        why, _, where = diagnose(exc)
        reason = f"TorchScript's tracer cannot record it: {why}"
        reason += f" (at {where})" if where else ""
    message = ex.first_lines(exc, lines=2)
    return ex.result("torch.jit.trace", "fails", f"{reason} ({DEPRECATED})", message)
