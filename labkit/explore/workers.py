"""The worker processes behind :func:`labkit.explore.check`.

The parent (:func:`run_workers`) pickles a job into a folder and starts ``python -m
labkit.explore FOLDER PID``; the worker (:func:`main`) builds or unpickles the model and appends
JSON lines to ``events.jsonl`` there: ``ready`` (framework, checks, inputs), ``start`` and
``done`` per check, or ``error``. A check past its time limit is stopped; one that kills its
process is *crashed*; a fresh worker takes the checks left. After the first check (eager) fails,
nothing else runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

import cloudpickle

from .. import frameworks as fw_registry
from ..frameworks._kit.explore import GraphBreak, PathResult, Recompile, first_lines, result
from ..frameworks._kit.layout import Call, describe_arrays
from ..runner import inputs
from ..util import proc
from .report import Report

__all__ = ["main", "offered", "run_workers"]


def offered() -> str:
    """The frameworks whose models labkit can check, for a message."""
    return ", ".join(s.name for s in fw_registry.specs() if s.explores)


# ---------------------------------------------------------------------------------------------
# the parent's side


def _answer(report: Report, checks: list[str], answer: dict, tick: Callable) -> bool:
    """Keep ``answer``; True when it ends the run (the first check did not get through)."""
    row = PathResult(**answer["path"])
    report.paths.append(row)
    report.graph_breaks += [GraphBreak(**b) for b in answer["graph_breaks"]]
    report.recompiles += [Recompile(**x) for x in answer["recompiles"]]
    report.notes += answer["notes"]
    tick(row.path, True, len(checks))
    return row.path == checks[0] and row.status in ("fails", "crashed")


def _stopped(checks: list[str], left: list[str], code: int | None, tail: str, timeout_s: float):
    """The answer of the check ``left[0]`` whose process died (``code``) or ran past
    ``timeout_s`` (None)."""
    name = left[0]
    after = "; the checks after it ran in a fresh process" if len(left) > 1 else ""
    if name == checks[0]:
        after = "; no other check ran: every other path needs eager's answers"
    if code is None:
        why = f"did not finish within {timeout_s:g} s, so its process was stopped (if it only "
        why += "needs longer, raise the limit: --timeout on the command line, timeout_s= in "
        return result(name, "fails", why + "check())" + after, timed_out=timeout_s)
    why = f"the check's process died ({proc.ended(code)}) while it ran {name}: the framework "
    why += "crashed (or ran out of memory) on this model"
    return result(name, "crashed", why + after, tail, crashed=proc.ended(code))


def _follow(report: Report, checks: list[str], child, work: Path, timeout_s: float, tick) -> bool:
    """Follow a worker until it ends, its answers into ``report`` and the first worker's choice
    of checks into ``checks``; True when nothing else is to be tried."""
    since, seen, running = time.perf_counter(), 0, None
    while True:
        code = child.poll()
        with contextlib.suppress(FileNotFoundError):
            lines = (work / "events.jsonl").read_bytes().split(b"\n")[:-1]  # complete lines
            for ev in map(json.loads, lines[seen:]):
                since = time.perf_counter()
                running = ev["check"] if ev["event"] == "start" else None
                if ev["event"] == "error":
                    raise ValueError(ev["message"])
                if ev["event"] == "ready":
                    if not checks:
                        checks += ev["checks"]
                    report.framework, report.versions = ev["framework"], ev["versions"]
                    report.inputs, report.call = ev["inputs"], ev["call_text"]
                    report.notes += ev["notes"]
                elif ev["event"] == "start":
                    tick(ev["check"], False, len(checks))
                elif _answer(report, checks, ev["result"], tick):
                    return True
            seen = len(lines)
        if code is None and time.perf_counter() - since < timeout_s:
            time.sleep(0.05)
            continue
        if code is not None and checks and not running:
            return False  # ended between checks: a fresh worker takes any left
        log = proc.tail(work / "log.txt", 4000)
        tail = first_lines("\n".join(proc.last_lines(log, 12)), lines=12, limit=1200)
        if not checks:  # it could not even load the model
            how = "took longer than" if code is None else f"died ({proc.ended(code)}) in"
            limit = f" ({timeout_s:g} s)" if code is None else ""
            raise ValueError(
                f"the check process {how} loading the framework or building the model{limit}: {tail}"
            )
        left = [c for c in checks if c not in {p.path for p in report.paths}]
        return _answer(report, checks, _stopped(checks, left, code, tail, timeout_s), tick)


def run_workers(report: Report, job: dict, timeout_s: float, tick: Callable) -> list[str]:
    """Run the checks of ``job`` (see :func:`labkit.explore.readiness.check`) in worker
    processes, their answers into ``report``; ``tick(check, done, total)`` as a check starts or
    ends. The checks, in order. A model that cannot travel or load raises ``ValueError``."""
    checks: list[str] = []
    with tempfile.TemporaryDirectory(prefix="labkit-explore-") as tmp:
        work = Path(tmp)
        (work / "tmp").mkdir()  # AutoGraph's generated code, say
        env = {"PYTHONUNBUFFERED": "1", "TMPDIR": str(work / "tmp")}
        env = proc.child_env(None, path=inputs.child_pythonpath(), extra=env)
        while True:
            try:  # cloudpickle: a notebook's classes travel by value
                (work / "job.pkl").write_bytes(cloudpickle.dumps(job))
            except Exception as exc:  # noqa: BLE001 - whatever pickling raised, said
                raise ValueError(
                    f"the model cannot be handed to a worker process (pickling it failed: "
                    f"{first_lines(exc)}): give it as a spec, 'file.py:build_model' (a function "
                    "that returns it), and the worker builds it"
                ) from None
            (work / "events.jsonl").unlink(missing_ok=True)
            with open(work / "log.txt", "wb") as log:
                child = subprocess.Popen(
                    [sys.executable, "-m", "labkit.explore", tmp, str(os.getpid())],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    cwd=work,
                    start_new_session=True,
                )
            try:
                stop = _follow(report, checks, child, work, timeout_s, tick)
            finally:
                proc.kill_group(child)
            left = [c for c in checks if c not in {p.path for p in report.paths}]
            if stop or not left:
                return checks
            # a fresh worker takes the checks left
            job |= {"framework": report.framework, "checks": left, "exact": True}


# ---------------------------------------------------------------------------------------------
# the worker's side


def _emit(events: Path, **event) -> None:
    with open(events, "a", encoding="utf-8") as f:
        f.write(json.dumps(event, default=str) + "\n")


def _inputs(job: dict, given) -> tuple[list, Call, list[str]]:
    """The job's example inputs: given to check, else made by its function, else the
    builder's; with a note when the builder's were set aside."""
    declared, notes = job["call"], []
    if job["arrays"]:
        arrays, call = job["arrays"], declared
        if given is not None:
            notes.append("the builder's example inputs were set aside: the inputs given to check")
    elif job["example"]:
        arrays, call = inputs.load_example(job["example"])
    elif given is not None:
        arrays, call = given
    else:
        raise ValueError(
            "no example inputs: give their shapes (--input 8x3x224x224, or check(model, "
            "'8x3x224x224')), a function that returns them (--input file.py:example_inputs), "
            "or let the builder return (model, example_args, example_kwargs)"
        )
    return arrays, Call(call.names, call.constants, declared.layout), notes


def _checks(explorer, model: object, job: dict) -> list[str]:
    """The checks to run in the framework's order: the first (the gate) always, unless the job
    is ``exact`` (a restarted worker runs just what is left)."""
    if not callable(model):
        raise ValueError(
            f"{explorer.SPEC.display}'s checks do not take a {type(model).__name__}: "
            f"{explorer.ACCEPTS}"
        )
    requested = explorer.CHECKS if job["checks"] is None else job["checks"]
    bad = [c for c in requested if c not in explorer.CHECKS]
    if bad:
        raise ValueError(
            f"unknown check {', '.join(map(repr, bad))} for {explorer.SPEC.display}: valid "
            f"checks are {', '.join(explorer.CHECKS)}"
        )
    gate = explorer.CHECKS[0]
    return [c for c in explorer.CHECKS if c in requested or (c == gate and not job["exact"])]


def _load(work: Path):
    """The model, its framework's explorer, the checks, the inputs (``ValueError`` if bad)."""
    try:
        job = pickle.loads((work / "job.pkl").read_bytes())  # a spec always loads: the model
    except Exception as exc:  # noqa: BLE001 - whatever unpickling raised, said
        raise ValueError(
            f"the worker process could not load the pickled model ({first_lines(exc)}): give "
            "it as a spec, 'file.py:build_model', and the worker builds it"
        ) from None
    model, given = job["model"], None
    if isinstance(model, str):  # a spec, or a saved file (its path, no inputs)
        model, given = inputs.build_example(model)
    fw = job["framework"] or fw_registry.framework_of(model)
    if fw is None:
        raise ValueError(
            f"model {job['model']!r}: its builder returned a {type(model).__name__}, which "
            f"no registered framework takes; pass framework= (one of {offered()})"
        )
    explorer = fw_registry.explorer(fw)
    return model, fw, explorer, _checks(explorer, model, job), *_inputs(job, given)


def _safe_check(explorer, name: str, session) -> dict:
    t0 = time.perf_counter()
    try:
        answer = explorer.run_check(name, session)
    except Exception as exc:  # noqa: BLE001 - reported in the report, never a crash of check()
        answer = result(
            name,
            "fails",
            "the check stopped with an error the lab did not expect (the framework's message "
            "says what)",
            first_lines(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}", lines=6),
        )
    answer["path"]["details"]["seconds"] = round(time.perf_counter() - t0, 3)
    return answer


def main(argv: Sequence[str]) -> int:
    """``python -m labkit.explore FOLDER PARENT_PID``: one worker (see the module)."""
    work, events = Path(argv[0]), Path(argv[0]) / "events.jsonl"
    proc.exit_with_parent(int(argv[1]), remove=work)
    try:
        model, fw, explorer, checks, arrays, call, notes = _load(work)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, whatever it was
        message = str(exc) if isinstance(exc, ValueError) else first_lines(exc, lines=4)
        _emit(events, event="error", message=message)
        os._exit(0)
    ready = {"framework": fw, "checks": checks, "versions": explorer.versions(), "notes": notes}
    ready |= {"inputs": describe_arrays(arrays), "call_text": call.text(arrays)}
    _emit(events, event="ready", **ready)
    session = None
    for name in checks:
        _emit(events, event="start", check=name)
        if session is None:  # a crash here is the first check's
            session = explorer.Session(model, arrays, call)
        # after a failed first check the parent stops this process: no other check applies
        _emit(events, event="done", check=name, result=_safe_check(explorer, name, session))
    os._exit(0)  # skip framework teardown (thread pools can hang at exit); output is unbuffered
