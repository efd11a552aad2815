"""Inside MindSpore's graph mode (notebooks 04 and 04b).

- :func:`compiled_graphs`: the size of ``jit``'s compile cache (one entry per function and input
  signature; ``mindspore.common.api.ms_compile_cache``, checked by the tests): counted before and
  after a few calls, it shows what triggers a compile;
- :func:`capture_modes`: the ways this MindSpore's ``jit`` can capture Python (2.8: ``ast``,
  ``bytecode``, ``trace``), read from its own validation;
- :func:`capture_mode_demo`: one function with a side effect, a ``print`` and an ``if`` on a
  tensor, compiled in each mode in a fresh process (a failed ``trace`` capture leaves MindSpore's
  tracing state broken in its process).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import mindspore as ms
import numpy as np

from ...util.proc import child_env
from ...util.stdio import native_output

__all__ = [
    "DEMO_EAGER",
    "DEMO_INPUTS",
    "DEMO_PRINT",
    "capture_mode_demo",
    "capture_modes",
    "compiled_graphs",
    "make_branchy",
]


def compiled_graphs() -> int:
    """Graphs compiled so far in this process by ``jit`` in ``ast`` mode (and ``GRAPH_MODE``)."""
    from mindspore.common import api

    return len(api.ms_compile_cache)


def capture_modes() -> tuple[str, ...]:
    """The ``capture_mode`` values the installed ``mindspore.jit`` accepts, in its own order."""
    try:
        ms.jit(lambda x: x, capture_mode="?")
    except ValueError as err:
        found = re.search(r"must be in '\[(.*?)\]'", str(err))
        if found:
            return tuple(m.strip(" '\"") for m in found.group(1).split(","))
        raise RuntimeError(f"unexpected message from mindspore.jit: {err}") from err
    raise RuntimeError("mindspore.jit accepted capture_mode='?': cannot list its modes")


# --------------------------------------------------------------------------------------------
# The capture modes side by side, each in a fresh process

#: the inputs of the demo, and what eager execution returns for them
DEMO_INPUTS: tuple[float, ...] = (1.0, 2.0, -3.0)
DEMO_EAGER: tuple[float, ...] = tuple(v * 2 if v > 0 else -v for v in DEMO_INPUTS)
DEMO_PRINT = "print inside branchy"
_RESULT = "@@ capture rows: "


def make_branchy(log: list) -> object:
    """The demo function of :func:`capture_mode_demo`: a Python side effect (appending to
    ``log``), a ``print`` and an ``if`` on a tensor's value."""

    def branchy(x):
        log.append("ran")  # a Python side effect
        print(DEMO_PRINT)
        if x.sum() > 0:  # an `if` on a tensor's value
            return x * 2
        return -x

    return branchy


def _capture_demo(modes: list[str]) -> None:
    """Run in a child by :func:`capture_mode_demo`; stops at the first mode that raises."""
    rows = {}
    for mode in modes:
        log: list = []
        fn = ms.jit(make_branchy(log), capture_mode=mode)

        def calls(fn=fn):
            return [
                float(fn(ms.Tensor(np.array([v], np.float32))).asnumpy()[0]) for v in DEMO_INPUTS
            ]

        try:
            outs, printed = native_output(calls)
            rows[mode] = {
                "python_runs": len(log),
                "prints": printed.count(DEMO_PRINT),
                "outputs": outs,
                "error": "",
            }
        except Exception as err:  # noqa: BLE001 - an experimental mode failing is a result
            rows[mode] = {
                "python_runs": len(log),
                "prints": None,
                "outputs": None,
                "error": f"{type(err).__name__}: {str(err).strip().splitlines()[0][:200]}",
            }
            break  # this process's MindSpore may be broken now: the rest run in a new one
    print(_RESULT + json.dumps(rows), flush=True)


def capture_mode_demo(timeout: float = 300) -> dict[str, dict]:
    """Each capture mode of :func:`capture_modes` on the demo function, in a fresh process.

    Returns ``{mode: {"python_runs", "prints", "outputs", "error"}}``: how many times the Python
    body ran over the three calls of :data:`DEMO_INPUTS`, how many lines its ``print`` wrote,
    the results (compare :data:`DEMO_EAGER`) and the error if the mode failed.
    """
    env = child_env(None, extra={"GLOG_v": os.environ.get("GLOG_v", "4")})
    remaining, rows = list(capture_modes()), {}
    with tempfile.TemporaryDirectory(prefix="graphlab-capture-") as work:
        # a script file, not `python -c` or `-m`: trace capture reads the source line of every
        # frame on the stack, and in MindSpore 2.8 fails (TypeError) when one has none (the
        # `<string>` of -c, the frozen runpy of -m)
        script = Path(work) / "capture_demo.py"
        script.write_text(
            f"import sys\nfrom {__name__} import _capture_demo\n_capture_demo(sys.argv[1:])\n"
        )
        while remaining:
            proc = subprocess.run(
                [sys.executable, str(script), *remaining],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                cwd=work,  # whatever MindSpore writes next to the script goes with the folder
                check=False,
            )
            found = [ln for ln in proc.stdout.splitlines() if ln.startswith(_RESULT)]
            if proc.returncode != 0 or not found:
                raise RuntimeError(
                    f"the capture-mode demo process failed (exit {proc.returncode}):\n"
                    f"{(proc.stderr or proc.stdout)[-2000:]}"
                )
            done = json.loads(found[-1][len(_RESULT) :])
            rows.update(done)
            remaining = remaining[len(done) :]
    return rows
