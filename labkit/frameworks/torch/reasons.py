"""What PyTorch's capture paths said, in plain words: a failure's reason from its error classes
and messages (:func:`diagnose`), graph breaks as report rows (:func:`graph_breaks`)."""

from __future__ import annotations

import logging
import re
import traceback

from .._kit import explore as ex

__all__ = ["DEPRECATED", "PLAIN", "STOPPED", "diagnose", "dynamo_words", "graph_breaks", "plain"]
__all__ += ["traceback_text"]

#: what the TorchScript rows say of it
DEPRECATED = "deprecated in PyTorch 2.x: torch.export or torch.compile for new code"

#: Dynamo's or export's words (a regular expression) and what they mean, first match wins;
#: other messages are said in Dynamo's own words (:func:`dynamo_words`)
PLAIN: dict[str, str] = {
    "Data-dependent branching|generic_jump|data-dependent expression": (
        "a Python if/while on a tensor's value (data-dependent control flow): a graph cannot "
        "hold a Python branch; torch.cond (or torch.where) keeps it in the graph"
    ),
    "Dynamic shape operator|nonzero|data dependent output shape": (
        "an operation whose output shape depends on the values (boolean masking, nonzero, "
        "unique): the graph cannot size it ahead of time"
    ),
    "`print`|builtin print": (
        "a Python print(): a side effect, so it runs in Python between two graphs (every call)"
    ),
    "RNN, GRU, or LSTM": (
        "an nn.RNN/GRU/LSTM module: Dynamo does not trace them (torch._dynamo.config.allow_rnn="
        "True is its experimental support), so the module runs eagerly"
    ),
}
#: a failure neither the table nor Dynamo's own explanation says more of
STOPPED = "the capture stopped here (the framework's message says why)"


def plain(message: str) -> str:
    """The table's meaning of ``message``, else Dynamo's own explanation and hint, else ""."""
    found = (meaning for words, meaning in PLAIN.items() if re.search(words, message))
    return next(found, "") or dynamo_words(message)


def dynamo_words(message: str) -> str:
    """Dynamo's own explanation and first hint in a structured graph-break message, or ""."""
    explanation = re.search(r"Explanation: (.+)", message)
    hint = re.search(r"Hint: (.+)", message)
    parts = [explanation.group(1).strip().rstrip(".")] if explanation else []
    return "; ".join(parts + ([f"its hint: {hint.group(1).strip()}"] if hint else []))


def traceback_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


_NO_ONNX = re.compile(r"No ONNX function found for <OpOverload\(op='([\w.]+)', overload='(\w+)'\)")
_UNKNOWN_OUTPUT = re.compile(
    r"(?:Found <class '([\w.]+)'> in output, which is not a known type"
    r"|outputs with type `?<class '([\w.]+)'>`? is not supported"
    r"|unrecognized type UserDefinedObjectVariable\((\w+)\) at output)"
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
            short = next(g for g in found.groups() if g).rpartition(".")[2]
            what = (
                "the key/value cache of a decoder, which is not a tensor: pass use_cache=False "
                "(in the spec's example keyword arguments), or"
                if "Cache" in short
                else "which is neither a tensor nor a container of tensors:"
            )
            return (
                f"the output holds a {short}, {what} register {short} as a pytree node "
                "(torch.utils._pytree.register_pytree_node) so its tensors can be returned"
            )
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
    texts = (t for e in reversed(chain) for t in (str(e), traceback_text(e)))
    where = next(filter(None, map(ex.user_location, texts)), "")
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
            code=ex.user_code(trace),
            message=dynamo_words(reason) or ex.first_lines(reason, 2, 240),
            path=path,
        )
        if "graph break in loop" in reason:
            rows[key].reason += "; it sits inside a loop, so Dynamo skipped the whole function, "
            rows[key].reason += "which runs as plain Python"
            rows[key].message += " (then: frame skipped, runs as Python)"
    return list(rows.values())
