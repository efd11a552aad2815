"""The run: each cell of a plan in its own process (its own process group, environment and
timeout; a crash, timeout or out-of-memory is a result, in words), each record appended the
moment it exists, progress through ``tqdm.auto``; an interrupted run keeps everything measured."""

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
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import bench, hardware, results
from .. import frameworks as fw_registry
from ..util import jsonio, proc, tempdirs
from . import inputs
from .plan import LOG_TAIL_CHARS, Cell, Plan, record_of

__all__ = ["RunResult", "cell_env", "check_out", "run", "run_cell"]

#: the thread-related variables a cell records: these name prefixes and ``*_THREADS``
RECORDED_ENV = ("OMP_", "GOMP_", "KMP_", "TF_NUM_")
#: TensorFlow's XLA flag that keeps compiled executables on disk between processes
XLA_CACHE_FLAG = "--tf_xla_persistent_cache_directory"


def shared_cache_dir() -> Path:
    """Where ``cache="warm"`` cells share their compile caches (private: Inductor loads
    compiled libraries from it)."""
    return tempdirs.private_dir("labkit-compile-cache")


def cache_env(cache: str, cell_dir: Path) -> dict[str, str]:
    """The variables that put a cell's compile caches (and, cold, its temporary folder) in
    ``cell_dir``, empty (``cold``; MindSpore's and XLA's off), or share them with earlier runs
    (``warm``, under :func:`shared_cache_dir`)."""
    warm = cache == "warm"
    root = shared_cache_dir() if warm else cell_dir / "cache"
    flags = os.environ.get("TF_XLA_FLAGS", "").split()
    flags = [f for f in flags if not f.startswith(XLA_CACHE_FLAG)]  # the user's cache: not here
    env = {
        "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
        "TRITON_CACHE_DIR": str(root / "triton"),
        "CUDA_CACHE_PATH": str(root / "cuda"),
        "MS_COMPILER_CACHE_PATH": str(root / "ms-compile"),
        "MS_COMPILER_CACHE_ENABLE": "1" if warm else "0",
    }
    if warm:
        flags.append(f"{XLA_CACHE_FLAG}={root / 'xla'}")
    else:
        env["TMPDIR"] = str(root / "tmp")
    env["TF_XLA_FLAGS"] = " ".join(flags)
    for key in env.keys() & {"TMPDIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"}:
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


def cell_env(cell: Cell, threads: int, cell_dir: Path, cache: str = "cold") -> dict[str, str]:
    """A cell's whole environment: the thread policy, its caches, its imports (also what
    ``benchmarks/overhead.py`` runs its bare loop in)."""
    extra = {"LABKIT_PROFILE": cell.profile, "TF_CPP_MIN_LOG_LEVEL": "2"}
    path = inputs.child_pythonpath() if cell.custom else []  # a learner's modules
    return proc.child_env(threads, path=path, extra=extra | cache_env(cache, cell_dir))


def run_cell(
    cell: Cell,
    threads: int,
    timeout_s: float,
    tick=None,
    cache: str = "cold",
) -> dict:
    """Measure ``cell`` in a fresh process (``tick()`` about once a second while it runs); its
    record's fields (a failure is a result)."""
    with tempfile.TemporaryDirectory(prefix="labkit-cell-") as tmp:
        result, log = Path(tmp) / "result.json", Path(tmp) / "log.txt"
        env = cell_env(cell, threads, Path(tmp), cache)
        recorded = [k for k in env if k.startswith(RECORDED_ENV) or k.endswith("_THREADS")]
        base = {"thread_env": {k: env[k] for k in recorded}, "cache": cache}
        cmd = [sys.executable, "-m", "labkit.runner", json.dumps(asdict(cell)), str(result)]
        cmd += [str(threads), str(os.getpid())]
        t0, code = time.perf_counter(), None
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
            while code is None and (left := t0 + timeout_s - time.perf_counter()) > 0:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = child.wait(timeout=max(0.01, min(1.0, left)))
                if code is None and tick is not None:
                    tick()
        finally:
            proc.kill_group(child)  # also reaps stragglers (compile workers) of a finished cell
        base["wall_s"] = time.perf_counter() - t0
        text = proc.tail(log, LOG_TAIL_CHARS)
        if code is None:
            fields = {
                "error": f"timed out after {timeout_s:g} s (the cell's process group was killed); "
                "raise the profile's cell_timeout_s or use a smaller profile"
            }
        else:
            try:  # written whole or not at all: none when the process died first
                fields = json.loads(result.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                fix = "try a smaller batch size or the smoke profile"
                fields = {"error": proc.crash_reason(code, text, "the cell's process", fix)}
        if fields.get("status") != "ok" and not fields.get("log"):
            fields["log"] = text
        return {"status": "failed", **fields, **base}


@dataclass
class RunResult:
    """What :func:`run` did: its records, the cells it skipped, whether it finished."""

    out: Path
    records: list[results.Record] = field(default_factory=list)
    skipped: list[Cell] = field(default_factory=list)
    interrupted: bool = False
    wall_s: float = 0.0
    #: records measured but not (yet) written to ``out``: a write failed
    unsaved: list[results.Record] = field(default_factory=list)
    write_error: str = ""  #: why the last write that failed did
    planned: int = 0  #: the cells of the plan

    def summary(self) -> str:
        n, bad = len(self.records), sum(not r.ok for r in self.records)
        invalid = sum(r.ok and not r.valid for r in self.records)
        skipped = f", {len(self.skipped)} already in {self.out}" if self.skipped else ""
        end = "interrupted: " if self.interrupted else ""
        if self.unsaved:
            end += f"{len(self.unsaved)} NOT written ({self.write_error}): free space, then "
        end += "rerun with resume=True (--resume) for the rest" if end else "done"
        return (
            f"{n} of {self.planned - len(self.skipped)} cells in {self.wall_s:.0f} s ({bad} failed "
            f"or unsupported, {invalid} invalid{skipped}); {end}"
        )

    def __repr__(self) -> str:
        return f"<RunResult: {self.summary()}; appended to {self.out}>"


_BUSY_WARNED: list[bool] = []


def _warn_if_busy(threads: int) -> None:
    load, cpus = bench.load_1min(), os.cpu_count() or 1
    if load is not None and load >= cpus and not _BUSY_WARNED:
        _BUSY_WARNED.append(True)
        passive = "" if "OMP_WAIT_POLICY" in os.environ else " or OMP_WAIT_POLICY=PASSIVE"
        warnings.warn(  # once per process: a notebook's later runs' records still say so
            f"this machine is busy (1-minute load {load:.1f} on {cpus} CPUs): timings will be "
            f"slower, noisier (records: valid=False), and many-fold slower where {threads} "
            f"threads spin-wait (OpenMP in PyTorch); close other work, or try fewer threads "
            f"(--threads 1){passive}. Said once per process.",
            UserWarning,
            stacklevel=3,
        )


def _ensure_peaks(todo: list[Cell], threads: int, progress: bool) -> None:
    """Measure the peaks (unless cached) before the first cell, so that none is measured while
    a cell is timed."""
    if not any(c.device == "cpu" and not c.custom for c in todo):
        return
    probes = fw_registry.peak_probes()
    if hardware.cached(probes, threads) is None and progress:
        print(
            f"labkit: measuring this machine's matrix-multiply peaks with {threads} threads "
            "(once per machine; a few seconds per framework)",
            file=sys.stderr,
            flush=True,
        )
    found = hardware.measure(probes, threads)
    for problem in found.problems:
        warnings.warn(f"measured peak: {problem}", UserWarning, stacklevel=3)


def check_out(out: str | os.PathLike) -> None:
    """``ValueError`` naming ``out`` and the fix when it cannot be written."""
    if why := jsonio.unwritable(out):
        raise ValueError(
            f"cannot write results to {out}: {why}; fix: choose a results file in a folder you "
            f"can write to (--out FILE.jsonl, out= in Python) or free space on its disk; nothing "
            f"was measured"
        )


def _save(res: RunResult, record: results.Record) -> None:
    """Append ``record`` after any an earlier write could not; a failed write keeps them in
    ``res.unsaved``, says so, and the run goes on (a full disk may have room later)."""
    res.unsaved.append(record)
    while res.unsaved:
        try:
            results.append(res.out, res.unsaved[0])
        except OSError as exc:
            from tqdm.auto import tqdm

            res.write_error = f"{type(exc).__name__}: {exc.strerror or exc}"
            tqdm.write(
                f"labkit: could not write to {res.out} ({res.write_error}); {len(res.unsaved)} "
                f"result(s) kept in memory only (RunResult.unsaved), tried again after the next "
                f"cell; free space, then rerun with --resume (resume=True) for what is missing",
                file=sys.stderr,
            )
            return
        res.unsaved.pop(0)


def run(
    plan: Plan,
    out: str | os.PathLike,
    resume: bool = False,
    progress: bool = True,
    threads: int | None = None,
    cache: str = "cold",
    on_record=None,
) -> RunResult:
    """Measure every cell of ``plan``, appending each record to ``out`` as it exists.

    ``resume=True`` skips the cells ``out`` holds (measured, or unsupported); ``threads`` defaults
    to the lab's, each cell's time limit is the profile's; ``cache`` is ``"cold"`` or ``"warm"``;
    ``on_record(record)`` follows each write. Ctrl-C or SIGTERM stops the run (``interrupted``)
    after the record being written; a bad ``out`` is a ``ValueError`` before anything runs."""
    out, limit_s = Path(out), plan.profile.cell_timeout_s
    threads = threads or hardware.default_threads()
    if cache not in ("cold", "warm"):
        raise ValueError(f"cache must be 'cold' or 'warm', got {cache!r}")
    if cache == "warm":
        shared_cache_dir()  # an unsafe shared folder: refused before anything runs
    existing = results.load(out) if out.exists() else []  # a corrupt file: ValueError, the fix
    check_out(out)
    _warn_if_busy(threads)
    done = {r.key() for r in existing if (r.ok or r.unsupported) and resume}
    todo = [c for c in plan if c.key() not in done]
    res = RunResult(out, skipped=[c for c in plan if c.key() in done], planned=len(plan))
    _ensure_peaks(todo, threads, progress)
    machine = hardware.fingerprint()
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    bar = tqdm(total=len(todo), unit="cell", disable=not progress, dynamic_ncols=True)
    live = progress and (sys.stderr.isatty() or "notebook" in type(bar).__module__)
    # SIGINT and SIGTERM are noted (by the main thread: only it may set handlers) and acted on
    # where tick() looks, never halfway through writing a record
    caught: list[int] = []
    main = threading.current_thread() is threading.main_thread()
    signals = (signal.SIGINT, signal.SIGTERM) if main else ()
    old = {s: signal.signal(s, lambda signum, frame: caught.append(signum)) for s in signals}

    def tick() -> None:  # between cells and about once a second in one: Ctrl-C stops here
        if caught:
            raise KeyboardInterrupt(f"signal {caught[0]}")
        if live:  # else no redraws
            bar.refresh()

    try:
        for cell in todo:
            tick()
            bar.set_description_str(cell.label())
            fields = run_cell(cell, threads=threads, timeout_s=limit_s, tick=tick, cache=cache)
            record = record_of(cell, fields, machine)
            res.records.append(record)
            _save(res, record)
            if progress:
                bar.write(str(record))
            bar.update(1)
            if on_record is not None:
                on_record(record)
        tick()
    except KeyboardInterrupt:
        res.interrupted = True
    finally:
        bar.close()
        res.wall_s = time.perf_counter() - t_start
        for s, handler in old.items():
            signal.signal(s, handler)
    if progress:
        print(res.summary(), flush=True)
    return res
