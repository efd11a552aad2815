"""Inside ``paddle.jit.to_static``'s bytecode capture (notebook 04): :func:`sot_capture` reports
how many pieces of code SOT translated and each graph break's reason, read from Paddle's own
bookkeeping (``SOT_COLLECT_INFO``, ``InfoCollector``, ``OpcodeExecutorCache``)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import paddle
from paddle.jit.sot.opcode_translator.executor.executor_cache import OpcodeExecutorCache
from paddle.jit.sot.utils.envs import ENV_SOT_COLLECT_INFO
from paddle.jit.sot.utils.info_collector import InfoCollector, InfoType
from paddle.utils.environments import EnvironmentVariableGuard

__all__ = ["SotCapture", "sot_capture"]


@dataclass(frozen=True)
class SotCapture:
    """What bytecode capture did over a few calls of one function."""

    outputs: list  #: what each call returned
    translated: int  #: code objects SOT translated: the function and its resume functions
    breaks: list[str]  #: each graph break SOT recorded, with Paddle's reason
    printed: str  #: what the calls wrote to ``sys.stdout`` (their ``print`` calls)

    @property
    def resumes(self) -> int:
        """The resume functions: the pieces SOT cut the function into after a graph break or a
        jump on a tensor's value (0 when it captured the function whole)."""
        return max(self.translated - 1, 0)


_COLLECT = {"breakgraph_reason": [], "compile_count": []}


def sot_capture(fn: Callable, calls: Sequence[tuple]) -> SotCapture:
    """Call ``paddle.jit.to_static(fn, full_graph=False)`` once per argument tuple of ``calls``,
    from a cold cache (a notebook cell run again would translate nothing), and report what SOT
    translated and where it broke the graph. ``sys.stdout`` is a buffer meanwhile: SOT follows
    a ``print`` into the code of ``sys.stdout`` (a notebook kernel's stream adds breaks)."""
    static_fn = paddle.jit.to_static(fn, full_graph=False, backend=None)
    OpcodeExecutorCache().clear()
    collector = InfoCollector()
    collector.clear()
    try:
        with (
            EnvironmentVariableGuard(ENV_SOT_COLLECT_INFO, dict(_COLLECT)),
            contextlib.redirect_stdout(io.StringIO()) as printed,
        ):
            outputs = [static_fn(*args) for args in calls]
        info = collector.get_info_dict(InfoType.E2E_INFO)
        translated = len({i.code for i in info.get("CompileCountInfo", [])})
        breaks = [str(i.reason) for i in info.get("BreakGraphReasonInfo", [])]
    finally:
        collector.clear()
    return SotCapture(outputs, translated, breaks, printed.getvalue())
