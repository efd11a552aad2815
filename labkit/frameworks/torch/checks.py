"""PyTorch's properties for code exercises (the meanings: the spec's ``code_checks``); operations
are counted with a ``TorchFunctionMode``."""

from __future__ import annotations

import collections
import contextlib
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch._dynamo
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ...util.stdio import quiet_logs
from .._kit import checks as kit
from .._kit.checks import compare, same_outputs, signature, unwrap, what_broke
from .adapter import as_module

__all__ = ["PROPERTIES", "namespace", "verify"]


def namespace() -> dict[str, Any]:
    return {"torch": torch, "F": F, "np": np}


_args, _numpy = kit.converters(
    lambda v: torch.from_numpy(v.copy()),
    lambda o: isinstance(o, torch.Tensor),
    lambda t: t.detach().numpy(),
)


@contextlib.contextmanager
def _quiet():
    """Dynamo and export log warnings and print graphs while failing: the feedback says it."""
    try:
        with quiet_logs():
            yield
    finally:
        torch._dynamo.reset()  # no compiled code or recompile count carries over to the next check


@_quiet()
def no_graph_breaks(fn: Callable, cases: list[tuple]) -> tuple[bool, str]:
    for i, case in enumerate(cases):
        try:
            explained = torch._dynamo.explain(unwrap(fn))(*_args(case))
        except Exception as exc:
            return False, f"call {i + 1} raised {what_broke(exc)}"
        if explained.graph_break_count:
            reason = explained.break_reasons[0]
            line = reason.user_stack[-1].lineno if reason.user_stack else "?"
            first = str(reason.reason).strip().splitlines()[0]
            return False, (
                f"{explained.graph_break_count} graph break(s) on input {i + 1} "
                f"({signature(case)}), the first at line {line} of the function: {first}"
            )
    return True, f"one graph, no breaks, on all {len(cases)} inputs"


@_quiet()
def exports(
    fn: Callable, cases: list[tuple], reference: Callable, rtol: float, atol: float
) -> tuple[bool, str]:
    try:
        run = torch.export.export(as_module(unwrap(fn)), _args(cases[0])).module()
    except Exception as exc:
        return False, f"torch.export failed: {what_broke(exc)}"
    return same_outputs(
        lambda case: _numpy(run(*_args(case))),
        lambda case: _numpy(unwrap(reference)(*_args(case))),
        cases,
        rtol,
        atol,
        passed=f"one exported graph, eager outputs on all {len(cases)} inputs",
    )


def _operations(fn: Callable, case: tuple) -> collections.Counter[str]:
    """The PyTorch operations one call of ``fn`` makes, by name."""
    calls: collections.Counter[str] = collections.Counter()

    class Count(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            calls[getattr(func, "__name__", str(func))] += 1
            return func(*args, **(kwargs or {}))

    args = _args(case)
    with Count():
        unwrap(fn)(*args)
    return calls


def operations(
    fn: Callable, cases: list[tuple], limit: int | None = None, avoid: list[str] | tuple = ()
) -> tuple[bool, str]:
    """``max_ops``: at most ``limit`` PyTorch operations in any call; ``avoids_ops``: none of
    those whose names contain a word of ``avoid``."""
    calls = [_operations(fn, case) for case in cases]
    found = sorted({name for c in calls for name in c if any(a in name for a in avoid)})
    if found:
        return False, "it still calls " + ", ".join(f"`{name}`" for name in found)
    if avoid:
        return True, f"no {', '.join(avoid)} among the operations it calls"
    worst = max(calls, key=collections.Counter.total)
    total, top = worst.total(), ", ".join(f"`{n}` x{k}" for n, k in worst.most_common(4))
    if limit is not None and total > limit:
        return False, f"{total} operations in one call ({top}); at most {limit} allowed"
    return True, f"{total} operation(s) per call ({top})"


def _gradient(fn: Callable, weights: np.ndarray, batch: tuple) -> np.ndarray:
    w = torch.from_numpy(weights.copy()).requires_grad_(True)
    loss = unwrap(fn)(w, *_args(batch))
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise TypeError(f"the loss must be one number (a 0-d tensor), got {loss!r}"[:200])
    return torch.autograd.grad(loss, w)[0].numpy()


def data_parallel(
    fn: Callable, cases: list[tuple], rtol: float, atol: float, workers: int = 4
) -> tuple[bool, str]:
    for i, (weights, *batch) in enumerate(cases):
        n = len(batch[0])
        if n % workers:
            raise ValueError(f"a batch of {n} does not split into {workers} equal shards")
        one_process = _gradient(fn, weights, tuple(batch))
        shards = zip(*(np.split(b, workers) for b in batch))
        averaged = np.mean([_gradient(fn, weights, s) for s in shards], axis=0)
        if problem := compare(averaged, one_process, rtol, atol):
            ratio = np.linalg.norm(averaged) / max(np.linalg.norm(one_process), 1e-30)
            return False, (
                f"batch {i + 1}: {workers} workers' averaged gradient is {ratio:.3g}x the "
                f"gradient of one process on all {n} examples ({problem.replace('eager', 'one process')})"
            )
    return True, f"{workers} workers' averaged gradient equals one process's on every batch"


def _compiled(**options) -> dict[str, Callable]:
    """The properties of ``torch.compile(**options)`` with the ``eager`` backend (no codegen)."""
    graph = lambda fn: torch.compile(unwrap(fn), backend="eager", **options)
    found = kit.graph_properties(graph, _args, _numpy, "runs", "eager")
    return {name: _quiet()(check) for name, check in found.items()}  # keeps the signature


#: run eagerly (no capture), the function gives the original's outputs
_ORIGINAL = kit.graph_properties(unwrap, _args, _numpy, "runs", "the original")

PROPERTIES: dict[str, Callable] = {
    "no_graph_breaks": no_graph_breaks,
    "fullgraph": _compiled(fullgraph=True)["runs"],
    "exports": exports,
    "matches_eager": _compiled()["matches_eager"],
    "equals_reference": _ORIGINAL["matches_eager"],
    "max_ops": operations,
    "avoids_ops": operations,
    "data_parallel": data_parallel,
}
verify = functools.partial(kit.verify, "PyTorch", PROPERTIES)
