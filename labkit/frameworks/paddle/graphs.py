"""Inside ``paddle.jit.to_static``'s bytecode capture (notebook 04): :func:`sot_capture` calls a
function under SOT (``full_graph=False``) and reports how many pieces of code it translated (the
function and the "resume" functions it splits it into at graph breaks) and each break's reason,
read from Paddle's own bookkeeping (``SOT_COLLECT_INFO``, ``InfoCollector``,
``OpcodeExecutorCache``; the tests check them against the pinned PaddlePaddle).
"""

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
    """Call ``paddle.jit.to_static(fn, full_graph=False)`` once per argument tuple of ``calls``
    and report what SOT translated and where it broke the graph (:class:`SotCapture`).

    Capture starts from a cold cache: Paddle's ``OpcodeExecutorCache`` is cleared first (what
    SOT translated before in this process is translated again on its next call). Paddle
    collects the report only while its ``SOT_COLLECT_INFO`` setting asks for it; it is set for
    these calls alone and Paddle's record is cleared afterwards (Paddle would print it at exit).
    ``sys.stdout`` is a string buffer during the calls: SOT follows a ``print`` into the Python
    code of whatever ``sys.stdout`` is (in a notebook, the kernel's stream, whose locks and
    process checks add graph breaks of their own), so a buffer keeps the report about ``fn``.
    """
    static_fn = paddle.jit.to_static(fn, full_graph=False, backend=None)
    # SOT keeps what it translated, keyed by the code (the same source run again, as a notebook
    # cell on a second run, is a cache hit and translates nothing): start from a cold cache
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
