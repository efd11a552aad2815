"""The run: each cell of a plan in its own process, each record appended the moment it exists,
progress through ``tqdm.auto`` (a bar in a notebook, a line elsewhere), a line per record and a
static last line; an interrupted run keeps everything measured."""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .. import bench, hardware, results
from ..util import jsonio
from .cell import cached_peaks, measured_peaks, record_of
from .plan import Cell, Plan
from .process import check_cache, run_cell, signals_held, sigterm_as_interrupt

__all__ = ["RunResult", "check_out", "run"]


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

    @property
    def failed(self) -> list[results.Record]:
        return [r for r in self.records if not r.ok]

    def summary(self) -> str:
        n, bad = len(self.records), len(self.failed)
        invalid = sum(r.ok and not r.valid for r in self.records)
        end = "interrupted: rerun with resume=True for the rest" if self.interrupted else "done"
        skipped = f", {len(self.skipped)} already in {self.out}" if self.skipped else ""
        return (
            f"{n} of {self.planned - len(self.skipped)} cells in {self.wall_s:.0f} s ({bad} failed "
            f"or unsupported, {invalid} invalid{skipped}); {end}"
        )

    def __repr__(self) -> str:
        unsaved = f"; {len(self.unsaved)} NOT written ({self.write_error})" if self.unsaved else ""
        return f"<RunResult: {self.summary()}; appended to {self.out}{unsaved}>"


_BUSY_WARNED: list[bool] = []


def _warn_if_busy(threads: int) -> None:
    load, cpus = bench.load_1min(), os.cpu_count() or 1
    if load is not None and load >= cpus and not _BUSY_WARNED:
        _BUSY_WARNED.append(True)
        passive = "" if "OMP_WAIT_POLICY" in os.environ else " or OMP_WAIT_POLICY=PASSIVE"
        warnings.warn(  # once per process: a notebook's later runs' records still say so
            f"this machine is busy (1-minute load {load:.1f} on {cpus} CPUs): timings "
            f"will be slower and noisier than on an idle machine (records will say so: "
            f"valid=False), and runtimes whose {threads} threads spin-wait (OpenMP in PyTorch) "
            f"can slow down many-fold; close other work, or try fewer threads "
            f"(--threads 1){passive}. Said once per process.",
            UserWarning,
            stacklevel=3,
        )


def _ensure_peaks(todo: list[Cell], threads: int, progress: bool) -> None:
    """Measure the peaks (unless cached) before the first cell, so that none is measured while
    a cell is timed."""
    if not any(c.device == "cpu" and not c.custom for c in todo):
        return
    if cached_peaks(threads) is None and progress:
        print(
            f"labkit: measuring this machine's matrix-multiply peaks with {threads} threads "
            "(once per machine; a few seconds per framework)",
            file=sys.stderr,
            flush=True,
        )
    found = measured_peaks(threads)
    for problem in found.problems:
        warnings.warn(f"measured peak: {problem}", UserWarning, stacklevel=3)


def done_keys(records: Iterable[results.Record]) -> set[tuple]:
    return {r.key() for r in records if r.ok or r.unsupported}


def check_out(out: str | os.PathLike) -> None:
    """``ValueError`` naming ``out`` and the fix when it cannot be written."""
    why = jsonio.unwritable(out)
    if why:
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
                f"cell; free space, then rerun with --resume (resume=True) to measure what is "
                f"missing",
                file=sys.stderr,
            )
            return
        res.unsaved.pop(0)


def line(r: results.Record) -> str:
    if not r.ok:
        return f"{r.label()}: {'' if r.unsupported else 'failed: '}{r.error[:200]}"
    verdict = "valid" if r.valid else "invalid: " + "; ".join(r.invalid_reasons)
    share = r.measured_peak_share
    peak = "" if share is None else f", {share:.0%} of the measured peak"
    flag = " (!)" if r.above_measured_peak or r.above_ceiling else ""
    return (
        f"{r.label()}: {r.images_per_s:.2f} images/s, median {r.median_s * 1e3:.1f} "
        f"± {r.iqr_s * 1e3:.1f} ms{peak}{flag}, {verdict}"
    )


def _measure(res: RunResult, todo: list[Cell], machine: dict, bar, on_record, **how) -> None:
    live = sys.stderr.isatty() or "notebook" in type(bar).__module__  # else no redraws
    for cell in todo:
        bar.set_description_str(cell.label())
        fields = run_cell(cell, tick=bar.refresh if live and not bar.disable else None, **how)
        with signals_held():  # a Ctrl-C now waits until the line is whole
            record = record_of(cell, fields, machine)
            res.records.append(record)
            _save(res, record)
        if not bar.disable:
            bar.write(line(record))
        bar.update(1)
        if on_record is not None:
            on_record(record)


def run(
    plan: Plan,
    out: str | os.PathLike,
    resume: bool = False,
    progress: bool = True,
    threads: int | None = None,
    timeout_s: float | None = None,
    memory_limit_mb: float | None = None,
    cache: str = "cold",
    on_record=None,
) -> RunResult:
    """Measure every cell of ``plan``, appending each record to ``out`` as it exists.

    ``resume=True`` skips the cells ``out`` holds (measured, or unsupported); ``threads``,
    ``timeout_s`` default to the lab's and the profile's; ``cache`` is ``"cold"`` or ``"warm"``;
    ``on_record(record)`` follows each write. Ctrl-C or SIGTERM stops the run (``interrupted``)
    after the record being written; a bad ``out`` is a ``ValueError`` before anything runs."""
    out = Path(out)
    threads = threads or hardware.default_threads()
    timeout_s = timeout_s or plan.profile.cell_timeout_s
    check_cache(cache)  # a bad cache value, or an unsafe shared cache, fails before anything runs
    existing = results.load(out) if out.exists() else []  # a corrupt file: ValueError, the fix
    check_out(out)
    _warn_if_busy(threads)
    done = done_keys(existing) if resume else set()
    todo = [c for c in plan if c.key() not in done]
    res = RunResult(out, skipped=[c for c in plan if c.key() in done], planned=len(plan))
    _ensure_peaks(todo, threads, progress)
    machine = hardware.fingerprint()
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    bar = tqdm(total=len(todo), unit="cell", disable=not progress, dynamic_ncols=True)
    how = {
        "threads": threads,
        "timeout_s": timeout_s,
        "memory_limit_mb": memory_limit_mb,
        "cache": cache,
    }
    try:
        with sigterm_as_interrupt():
            _measure(res, todo, machine, bar, on_record, **how)
    except KeyboardInterrupt:
        res.interrupted = True
    finally:
        bar.close()
        res.wall_s = time.perf_counter() - t_start
    if progress:
        print(res.summary(), flush=True)
    return res
