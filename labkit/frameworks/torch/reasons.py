"""What PyTorch's capture paths said, in the words a framework engineer would use (for
:mod:`.explore`; it reads exceptions and ``torch._dynamo.explain``'s records without importing
torch): :func:`diagnose` (a failed capture's reason from the framework's error classes along
the exception's causes, then its message: :data:`PLAIN`), :func:`dynamo_words` (the
"Explanation" and "Hint" of Dynamo's graph-break messages), and graph breaks as report rows
(:func:`from_reason`, :func:`from_counter`, :func:`merge`).
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path

from .._kit import explore as ex

__all__ = [
    "DEPRECATED",
    "PLAIN",
    "causes",
    "diagnose",
    "dynamo_words",
    "from_counter",
    "from_reason",
    "merge",
    "plain",
    "trace_failed",
    "traceback_text",
]

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
    (
        ("RNN, GRU, or LSTM",),
        (
            "an nn.RNN/GRU/LSTM module: Dynamo does not trace them (torch._dynamo.config."
            "allow_rnn=True is its experimental support), so the module runs eagerly"
        ),
    ),
    (("numpy", "NumPy"), "a NumPy call on a tensor: it runs in Python, outside the graph"),
    (
        ("graph break in loop", "Skipping the frame"),
        "a graph break inside a loop: Dynamo skips the whole function, which runs as Python",
    ),
    (
        ("skip", "Unsupported function call", "Failed to trace builtin"),
        (
            "a call Dynamo cannot trace (C code or an unsupported library function): it runs "
            "in Python between graphs"
        ),
    ),
)


def plain(message: str) -> str:
    return ex.plain(message, PLAIN, "the capture stopped here (the framework's message says why)")


def causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it was raised from (``__cause__``, else ``__context__``), outermost first."""
    out: list[BaseException] = []
    while exc is not None and exc not in out and len(out) < 12:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


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
    """A failed capture as ``(reason in plain words, the framework's message, where in the
    learner's code)``: the reason from the error classes along ``exc``'s causes, else from the
    messages; the message is the innermost error's, with its class name."""
    chain = causes(exc)
    reason = _by_class(chain)
    if not reason:
        meaningful = next((e for e in chain if plain(str(e)) != plain("")), chain[0])
        reason = plain(str(meaningful))
    first = chain[-1]  # the framework's own words, before any wrapper's
    where = ""
    for e in reversed(chain):
        where = ex.user_location(str(e)) or ex.user_location(traceback_text(e))
        if where:
            break
    return reason, ex.first_lines(first, lines=2), where


def dynamo_words(message: str) -> str:
    """Dynamo's own explanation and first hint in a structured graph-break message, or ""."""
    explanation = re.search(r"Explanation: (.+)", message)
    hint = re.search(r"Hint: (.+)", message)
    parts = [explanation.group(1).strip().rstrip(".")] if explanation else []
    if hint:
        parts.append(f"its hint: {hint.group(1).strip()}")
    return "; ".join(parts)


def _frame_name(name: str) -> str:
    """Dynamo's resume functions (``torch_dynamo_resume_in_forward_at_10``) as the function."""
    m = re.fullmatch(r"torch_dynamo_resume_in_(\w+?)_at_\d+", name)
    return m.group(1) if m else name


def from_reason(reason, path: str) -> ex.GraphBreak:
    """One of ``torch._dynamo.explain``'s break reasons as a report row (its innermost frame of
    the model's code: the learner's, else a model library's)."""
    frames = list(reason.user_stack or [])
    text = "".join(f'File "{f.filename}", line {f.lineno}, in {f.name}\n' for f in frames)
    mine = ex.user_location(text)
    frame = next(
        (f for f in reversed(frames) if mine.startswith(f"{Path(f.filename).name}:{f.lineno}")),
        frames[-1] if frames else None,
    )
    location = (
        f"{Path(frame.filename).name}:{frame.lineno} in {_frame_name(frame.name)}" if frame else ""
    )
    words = dynamo_words(reason.reason)
    return ex.GraphBreak(
        reason=plain(reason.reason),
        location=location,
        code=(frame.line or "").strip() if frame else "",
        message=words or ex.first_lines(reason.reason, lines=2, limit=240),
        path=path,
    )


_CODE = re.compile(r"code: (.+)")


def from_counter(message: str, count: int, path: str, where: str, skipped: bool) -> ex.GraphBreak:
    """A graph break counted by Dynamo but not in ``explain``'s reasons: one that made it skip
    a whole function (``skipped``: it sits in a loop), or a module it does not trace (an
    LSTM); ``where`` is an error text that locates it when the message does not."""
    first = message.split("*** While handling", 1)[0]
    code = _CODE.search(first)
    located = first if ex.user_location(first) else where
    words = dynamo_words(first)
    reason = plain(first)
    if skipped:
        reason += (
            "; it sits inside a loop, so Dynamo skipped the whole function, which runs as "
            "plain Python"
        )
    message = words or ex.first_lines(first, lines=1, limit=200)
    return ex.GraphBreak(
        reason=reason,
        location=ex.user_location(located),
        code=code.group(1).strip() if code else ex.user_code(located),
        message=message + (" (then: frame skipped, runs as Python)" if skipped else ""),
        count=count,
        path=path,
    )


def merge(breaks: list[ex.GraphBreak]) -> list[ex.GraphBreak]:
    """One entry per place and reason, counting repeats (a break in a loop body, say)."""
    seen: dict[tuple[str, str], ex.GraphBreak] = {}
    for b in breaks:
        key = (b.location, b.reason)
        if key in seen:
            seen[key].count += b.count
        else:
            seen[key] = b
    return list(seen.values())


def trace_failed(exc: BaseException, uncompared: list[str]) -> dict:
    """The ``torch.jit.trace`` row when tracing raised ``exc``; ``uncompared``: what the
    model's output holds besides tensors (a cache object the tracer cannot record)."""
    if "cannot infer type" in str(exc) and uncompared:
        reason = (
            f"the output holds {', '.join(uncompared)}, which TorchScript's tracer cannot "
            "record (it takes tensors and containers of them): pass use_cache=False in the "
            "example's keyword arguments, or return tensors only"
        )
    else:
        why, _, where = diagnose(exc)
        reason = f"TorchScript's tracer cannot record it: {why}" + (
            f" (at {where})" if where else ""
        )
    return ex.result(
        "torch.jit.trace", "fails", f"{reason} ({DEPRECATED})", ex.first_lines(exc, lines=2)
    )
