"""A cell's process seen from the runner: :func:`run_cell` starts it in its own process group
with :func:`cell_env`, waits, kills it at its timeout and reads its fields (a crash, timeout or
out-of-memory is a result, in words); the run's signal handling."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path

from ..util import proc, tempdirs
from .cell import LOG_TAIL_CHARS
from .plan import Cell

__all__ = [
    "XLA_CACHE_FLAG",
    "cache_env",
    "cell_command",
    "cell_env",
    "check_cache",
    "crash_reason",
    "run_cell",
    "shared_cache_dir",
    "signals_held",
    "sigterm_as_interrupt",
]

#: thread-related variables a cell records (the user's own settings pass through unchanged)
RECORDED_ENV = (
    *proc.THREAD_ENV,
    "TF_NUM_INTEROP_THREADS",
    "OMP_WAIT_POLICY",
    "GOMP_SPINCOUNT",
    "KMP_BLOCKTIME",
    "KMP_AFFINITY",
    "OMP_PROC_BIND",
)
#: TensorFlow's XLA flag that keeps compiled executables on disk between processes
XLA_CACHE_FLAG = "--tf_xla_persistent_cache_directory"


def shared_cache_dir() -> Path:
    """Where ``cache="warm"`` cells share their compile caches: this user's private folder
    (Inductor loads compiled libraries from it)."""
    return tempdirs.private_dir("labkit-compile-cache")


def check_cache(cache: str) -> str:
    """``cache`` if it is ``"cold"`` or ``"warm"`` (a safe shared folder), else ``ValueError``."""
    if cache not in ("cold", "warm"):
        raise ValueError(f"cache must be 'cold' or 'warm', got {cache!r}")
    if cache == "warm":
        shared_cache_dir()
    return cache


def cache_env(cache: str, cell_dir: Path) -> dict[str, str]:
    """The variables that put a cell's compile caches (and, cold, its temporary folder) in
    ``cell_dir``, empty (``cold``; MindSpore's and XLA's off), or share them with earlier runs
    (``warm``, under :func:`shared_cache_dir`)."""
    check_cache(cache)
    flags = [
        f for f in os.environ.get("TF_XLA_FLAGS", "").split() if not f.startswith(XLA_CACHE_FLAG)
    ]
    if cache == "cold":
        root = cell_dir / "cache"
        env = {"TMPDIR": str(root / "tmp"), "MS_COMPILER_CACHE_ENABLE": "0"}
    else:
        root = shared_cache_dir()
        env = {"MS_COMPILER_CACHE_ENABLE": "1"}
        flags.append(f"{XLA_CACHE_FLAG}={root / 'xla'}")
    env.update(
        TORCHINDUCTOR_CACHE_DIR=str(root / "inductor"),
        TRITON_CACHE_DIR=str(root / "triton"),
        CUDA_CACHE_PATH=str(root / "cuda"),
        MS_COMPILER_CACHE_PATH=str(root / "ms-compile"),
        TF_XLA_FLAGS=" ".join(flags),
    )
    for key in ("TMPDIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        if key in env:
            Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


def cell_env(cell: Cell, threads: int, cell_dir: Path, cache: str = "cold") -> dict[str, str]:
    """A cell's whole environment: the thread policy, its caches, its imports (also what
    ``benchmarks/overhead.py`` runs its bare loop in)."""
    extra = {
        **cache_env(cache, cell_dir),
        "LABKIT_PROFILE": cell.profile,
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    return proc.child_env(threads, path=cell.child_path(), extra=extra)


def crash_reason(code: int, log: str) -> str:
    return proc.crash_reason(
        code, log, "the cell's process", "try a smaller batch size or the smoke profile"
    )


def cell_command(
    cell: Cell, result: Path, threads: int, memory_limit_mb: float | None = None
) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "labkit.runner",
        "--cell",
        json.dumps(asdict(cell)),
        "--result",
        str(result),
        "--threads",
        str(threads),
        "--parent",
        str(os.getpid()),
    ]
    if memory_limit_mb:
        cmd += ["--memory-limit-mb", str(memory_limit_mb)]
    return cmd


def _wait(child: subprocess.Popen, deadline: float, tick) -> int | None:
    """``child``'s exit status, or None past ``deadline``; ``tick()`` about once a second."""
    while True:
        try:
            return child.wait(timeout=max(0.01, min(1.0, deadline - time.perf_counter())))
        except subprocess.TimeoutExpired:
            if time.perf_counter() >= deadline:
                return None
            if tick is not None:
                tick()


def _result(result: Path, log: Path, code: int) -> dict:
    if not result.exists():
        text = proc.tail(log, LOG_TAIL_CHARS)
        return {"status": "failed", "error": crash_reason(code, text), "log": text}
    try:
        fields = json.loads(result.read_text(encoding="utf-8"))
        if not isinstance(fields, dict):
            raise ValueError(f"expected a JSON object, got {type(fields).__name__}")
    except (ValueError, OSError) as exc:
        return {
            "status": "failed",
            "error": f"the cell's result could not be read: {exc}",
            "log": proc.tail(log, LOG_TAIL_CHARS),
        }
    if fields.get("status") != "ok" and not fields.get("log"):
        fields["log"] = proc.tail(log, LOG_TAIL_CHARS)
    return fields


def run_cell(
    cell: Cell,
    threads: int,
    timeout_s: float,
    memory_limit_mb: float | None = None,
    tick=None,
    cache: str = "cold",
) -> dict:
    """Measure ``cell`` in a fresh process; its record's fields (a failure is a result)."""
    with tempfile.TemporaryDirectory(prefix="labkit-cell-") as tmp:
        result, log = Path(tmp) / "result.json", Path(tmp) / "log.txt"
        cmd = cell_command(cell, result, threads, memory_limit_mb)
        env = cell_env(cell, threads, Path(tmp), cache)
        recorded = {k: env[k] for k in RECORDED_ENV if k in env}
        t0 = time.perf_counter()
        with open(log, "wb") as logf:
            # cwd: the temporary folder, so that what a framework drops there goes with it
            child = subprocess.Popen(
                cmd,
                stdout=logf,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=tmp,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            code = _wait(child, t0 + timeout_s, tick)
        finally:
            proc.kill_group(child)  # also reaps stragglers (compile workers) of a finished cell
        base = {"wall_s": time.perf_counter() - t0, "thread_env": recorded, "cache": cache}
        if code is None:
            return {
                "status": "failed",
                **base,
                "error": (
                    f"timed out after {timeout_s:g} s (the cell's process group was killed); "
                    "raise the profile's cell_timeout_s or use a smaller profile"
                ),
                "log": proc.tail(log, LOG_TAIL_CHARS),
            }
        fields = _result(result, log, code)
        return {**fields, **base}


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Let SIGTERM stop a run like Ctrl-C does (main thread only), restoring the old handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def signals_held():
    """Let SIGINT and SIGTERM wait while a record is written, then act on the first (main
    thread: handlers that take note defer a Ctrl-C even in a kernel full of threads)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def note(signum, frame):
        caught.append(signum)

    old = {s: signal.signal(s, note) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    if caught:
        handler = old[caught[0]]
        if callable(handler):
            handler(caught[0], None)
        elif handler == signal.SIG_DFL:
            os.kill(os.getpid(), caught[0])
