"""Inside MindSpore's and Paddle's graph modes (notebook 04 imports it from beside itself): what
triggers a MindSpore compile, one function with a side effect, a ``print`` and an ``if`` on a
tensor compiled in each of MindSpore's ``capture_mode``s, and what Paddle's bytecode capture
(SOT) translated and where it broke the graph, read from Paddle's own bookkeeping.

Run as a script (``python capture_modes.py ast trace``), it prints the rows of the MindSpore
capture modes it is given, as JSON after :data:`RESULT`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from labkit.util.proc import child_env
from labkit.util.stdio import native_output

import mindspore as ms

#: ``mindspore.jit``'s ``capture_mode`` values, as MindSpore 2.8.0 documents them
CAPTURE_MODES: tuple[str, ...] = ("ast", "bytecode", "trace")
#: the inputs of the demo, and what eager execution returns for them
DEMO_INPUTS: tuple[float, ...] = (1.0, 2.0, -3.0)
DEMO_EAGER: tuple[float, ...] = tuple(v * 2 if v > 0 else -v for v in DEMO_INPUTS)
DEMO_PRINT = "print inside branchy"
RESULT = "@@ capture rows: "


def compiled_graphs() -> int:
    """Graphs compiled so far in this process by ``mindspore.jit`` in ``ast`` mode."""
    from mindspore.common import api

    return len(api.ms_compile_cache)


def make_branchy(log: list) -> Callable:
    """The demo function, appending to ``log`` each time its Python runs."""

    def branchy(x):
        log.append("ran")  # a Python side effect
        print(DEMO_PRINT)
        if x.sum() > 0:  # an `if` on a tensor's value
            return x * 2
        return -x

    return branchy


def capture_rows(modes: Sequence[str]) -> dict[str, dict]:
    """Each mode's row over :data:`DEMO_INPUTS`, in this process; stops after the first mode
    that raises (this process's MindSpore may be broken then)."""
    rows = {}
    for mode in modes:
        log: list = []
        fn = ms.jit(make_branchy(log), capture_mode=mode)
        row = rows[mode] = {"python_runs": 0, "prints": None, "outputs": None, "error": ""}
        try:
            row["outputs"], printed = native_output(
                lambda fn=fn: [
                    float(fn(ms.Tensor([v], ms.float32)).asnumpy()[0]) for v in DEMO_INPUTS
                ]
            )
            row["prints"] = printed.count(DEMO_PRINT)
        except Exception as err:  # noqa: BLE001 - an experimental mode failing is a result
            row["error"] = f"{type(err).__name__}: {str(err).strip().splitlines()[0][:200]}"
        row["python_runs"] = len(log)
        if row["error"]:
            break
    return rows


def capture_mode_demo(timeout: float = 300) -> dict[str, dict]:
    """``{mode: {"python_runs", "prints", "outputs", "error"}}`` of each capture mode, in fresh
    processes running this file (a failed ``trace`` capture leaves MindSpore's tracing state
    broken in its process; and trace capture reads the source line of every frame on the
    stack, which ``python -c`` and ``-m`` do not have)."""
    env = child_env(None, extra={"GLOG_v": os.environ.get("GLOG_v", "4")})
    remaining, rows = list(CAPTURE_MODES), {}
    with tempfile.TemporaryDirectory(prefix="graphlab-capture-") as work:
        while remaining:
            proc = subprocess.run(
                [sys.executable, os.path.abspath(__file__), *remaining],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                cwd=work,  # whatever MindSpore writes there goes with the folder
                check=False,
            )
            found = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)]
            if proc.returncode != 0 or not found:
                raise RuntimeError(
                    f"the capture-mode demo process failed (exit {proc.returncode}):\n"
                    f"{(proc.stderr or proc.stdout)[-2000:]}"
                )
            done = json.loads(found[-1][len(RESULT) :])
            rows.update(done)
            remaining = remaining[len(done) :]
    return rows


@dataclass(frozen=True)
class SotCapture:
    """What Paddle's bytecode capture did over a few calls of one function."""

    outputs: list  #: what each call returned
    translated: int  #: code objects SOT translated: the function and its resume functions
    breaks: list[str]  #: each graph break SOT recorded, with Paddle's reason
    printed: str  #: what the calls wrote to ``sys.stdout`` (their ``print`` calls)

    @property
    def resumes(self) -> int:
        """The pieces SOT cut the function into after a graph break or a jump on a tensor's
        value (0 when it captured the function whole)."""
        return max(self.translated - 1, 0)


def sot_capture(fn: Callable, calls: Sequence[tuple]) -> SotCapture:
    """Call ``paddle.jit.to_static(fn, full_graph=False)`` once per argument tuple of ``calls``,
    from a cold cache (a cell run again would translate nothing), and report what SOT
    translated and where it broke the graph (``SOT_COLLECT_INFO``). ``sys.stdout`` is a buffer
    meanwhile: SOT follows a ``print`` into the code of a notebook's stream (more breaks)."""
    import paddle
    from paddle.jit.sot.opcode_translator.executor.executor_cache import OpcodeExecutorCache
    from paddle.jit.sot.utils.envs import ENV_SOT_COLLECT_INFO
    from paddle.jit.sot.utils.info_collector import InfoCollector, InfoType
    from paddle.utils.environments import EnvironmentVariableGuard

    static_fn = paddle.jit.to_static(fn, full_graph=False, backend=None)
    OpcodeExecutorCache().clear()
    collector = InfoCollector()
    collector.clear()
    collect = {"breakgraph_reason": [], "compile_count": []}
    try:
        with (
            EnvironmentVariableGuard(ENV_SOT_COLLECT_INFO, collect),
            contextlib.redirect_stdout(io.StringIO()) as printed,
        ):
            outputs = [static_fn(*args) for args in calls]
        info = collector.get_info_dict(InfoType.E2E_INFO)
        translated = len({i.code for i in info.get("CompileCountInfo", [])})
        breaks = [str(i.reason) for i in info.get("BreakGraphReasonInfo", [])]
    finally:
        collector.clear()
    return SotCapture(outputs, translated, breaks, printed.getvalue())


if __name__ == "__main__":
    print(RESULT + json.dumps(capture_rows(sys.argv[1:])), flush=True)
