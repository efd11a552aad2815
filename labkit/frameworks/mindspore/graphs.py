"""Inside MindSpore's graph mode (notebook 04): what triggers a compile, and one function with a
side effect, a ``print`` and an ``if`` on a tensor compiled in each ``capture_mode``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import mindspore as ms

from ...util.proc import child_env
from ...util.stdio import native_output

__all__ = [
    "CAPTURE_MODES",
    "DEMO_EAGER",
    "DEMO_INPUTS",
    "DEMO_PRINT",
    "capture_mode_demo",
    "compiled_graphs",
    "make_branchy",
]


def compiled_graphs() -> int:
    """Graphs compiled so far in this process by ``jit`` in ``ast`` mode."""
    from mindspore.common import api

    return len(api.ms_compile_cache)


#: ``mindspore.jit``'s ``capture_mode`` values, as MindSpore 2.8.0 documents them
CAPTURE_MODES: tuple[str, ...] = ("ast", "bytecode", "trace")


#: the inputs of the demo, and what eager execution returns for them
DEMO_INPUTS: tuple[float, ...] = (1.0, 2.0, -3.0)
DEMO_EAGER: tuple[float, ...] = tuple(v * 2 if v > 0 else -v for v in DEMO_INPUTS)
DEMO_PRINT = "print inside branchy"
_RESULT = "@@ capture rows: "


def make_branchy(log: list) -> object:
    """The demo function, appending to ``log`` each time its Python runs."""

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
            break  # this process's MindSpore may be broken now: the rest run in a new one
    print(_RESULT + json.dumps(rows), flush=True)


def capture_mode_demo(timeout: float = 300) -> dict[str, dict]:
    """``{mode: {"python_runs", "prints", "outputs", "error"}}`` of each capture mode over the
    calls of :data:`DEMO_INPUTS`, in fresh processes (a failed ``trace`` capture leaves
    MindSpore's tracing state broken in its process)."""
    env = child_env(None, extra={"GLOG_v": os.environ.get("GLOG_v", "4")})
    remaining, rows = list(CAPTURE_MODES), {}
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
