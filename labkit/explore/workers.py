"""The worker processes behind :func:`labkit.explore.check`.

The parent (:func:`run_workers`) writes a job and starts ``python -m labkit.explore JOB PID``;
the worker (:func:`main`) builds or unpickles the model and appends JSON lines to the job's
events file: ``ready`` (framework, checks, inputs), ``start`` and ``done`` per check, or
``error``. A check past its time limit is stopped; one that kills its process is *crashed*; a
fresh worker takes the checks left. After the first check (eager) fails, nothing else runs.
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
from dataclasses import dataclass
from pathlib import Path

import cloudpickle
import numpy as np

from .. import frameworks as fw_registry
from ..frameworks._kit.explore import GraphBreak, PathResult, Recompile, first_lines, result
from ..frameworks._kit.layout import Call, describe_arrays
from ..runner import inputs
from ..util import proc
from .report import Report

__all__ = ["Run", "main", "offered", "run_workers"]


def offered() -> str:
    """The frameworks whose models labkit can check, for a message."""
    return ", ".join(s.name for s in fw_registry.specs() if s.explores)


# ---------------------------------------------------------------------------------------------
# the parent's side


@dataclass
class Run:
    """The report the workers' answers go into, and the checks (the first worker's choice)."""

    report: Report
    #: ``tick(check, done, total)``: a check starts (``done`` False) or ends, of ``total`` checks
    tick: Callable[[str, bool, int], None]
    checks: list[str] | None = None  # None until a worker has chosen them

    @property
    def remaining(self) -> list[str]:
        done = {p.path for p in self.report.paths}
        return [c for c in self.checks or [] if c not in done]

    def ready(self, event: dict) -> None:
        """What a worker found before its first check."""
        r = self.report
        r.framework, r.versions = event["framework"], event["versions"]
        r.inputs, r.call = event["inputs"], event["call_text"]
        r.notes += event["notes"]
        self.checks = self.checks or event["checks"]

    def answer(self, name: str, answer: dict) -> bool:
        """Keep ``answer``; True when it ends the run (the first check did not get through)."""
        r = self.report
        r.paths.append(PathResult(**answer["path"]))
        r.graph_breaks += [GraphBreak(**b) for b in answer["graph_breaks"]]
        r.recompiles += [Recompile(**x) for x in answer["recompiles"]]
        r.notes += answer["notes"]
        self.tick(name, True, len(self.checks))
        return name == self.checks[0] and answer["path"]["status"] in ("fails", "crashed")


def _ended(run: Run, now: dict, code: int | None, tail: str, timeout_s: float) -> bool:
    """The worker died (``code``) or ran past ``timeout_s`` (None): the check it ran crashed or
    timed out; True when nothing else is to be tried."""
    how = "took longer than" if code is None else f"died ({proc.ended(code)}) in"
    if run.checks is None:  # it could not even load the model
        limit = f" ({timeout_s:g} s)" if code is None else ""
        raise ValueError(
            f"the check process {how} loading the framework or building the model{limit}: {tail}"
        )
    if code is not None and now["check"] is None and now["progressed"]:
        return False  # died between checks: a fresh worker takes the rest
    name = now["check"] or run.remaining[0]
    after = "; the checks after it ran in a fresh process" if len(run.remaining) > 1 else ""
    if name == run.checks[0]:
        after = "; no other check ran: every other path needs eager's answers"
    if code is not None:
        why = f"the check's process died ({proc.ended(code)}) while it ran {name}: the framework "
        why += "crashed (or ran out of memory) on this model"
        status, details = "crashed", {"crashed": proc.ended(code)}
    else:
        why = f"did not finish within {timeout_s:g} s, so its process was stopped (if it only "
        why += "needs longer, raise the limit: --timeout on the command line, timeout_s= in "
        why += "check())"
        status, details, tail = "fails", {"timed_out": timeout_s}, ""
    return run.answer(name, result(name, status, why + after, tail, **details))


def _follow(run: Run, child, work: Path, timeout_s: float) -> bool:
    """Follow a worker until it ends; True when nothing else is to be tried."""
    now = {"check": None, "since": time.perf_counter(), "progressed": False}
    seen = 0
    while True:
        code = child.poll()
        with contextlib.suppress(FileNotFoundError):
            lines = (work / "events.jsonl").read_bytes().split(b"\n")[:-1]  # complete lines
            for ev in map(json.loads, lines[seen:]):
                if ev["event"] == "error":
                    raise ValueError(ev["message"])
                if ev["event"] == "ready":
                    run.ready(ev)
                elif ev["event"] == "start":
                    now.update(check=ev["check"], since=time.perf_counter())
                    run.tick(ev["check"], False, len(run.checks))
                else:
                    now.update(check=None, since=time.perf_counter(), progressed=True)
                    if run.answer(ev["check"], ev["result"]):
                        return True
            seen = len(lines)
        if code is None and time.perf_counter() - now["since"] < timeout_s:
            time.sleep(0.05)
            continue
        log = proc.tail(work / "log.txt", 4000)
        tail = first_lines("\n".join(proc.last_lines(log, 12)), lines=12, limit=1200)
        return _ended(run, now, code, tail, timeout_s)


def run_workers(run: Run, job: dict, model: object, arrays: list[np.ndarray], timeout_s: float):
    """Run the checks of ``job`` into ``run`` (see :func:`labkit.explore.readiness.check`) in
    worker processes on ``arrays``, or what the function ``job["example"]`` (a spec) returns, or what
    the builder returns beside the model; ``model``: a live object (``job["model"]`` None). A
    bad spec or a model that cannot travel raises ``ValueError``."""
    with tempfile.TemporaryDirectory(prefix="labkit-explore-") as tmp:
        work = Path(tmp)
        job = {**job, "inputs": None, "exact": False}
        if job["model"] is None:
            try:  # cloudpickle: a notebook's classes travel by value
                (work / "model.pkl").write_bytes(cloudpickle.dumps(model))
            except Exception as exc:  # noqa: BLE001 - whatever pickling raised, said
                raise ValueError(
                    f"the model cannot be handed to a worker process (pickling it failed: "
                    f"{first_lines(exc)}): give it as a spec, 'file.py:build_model' (a function "
                    "that returns it), and the worker builds it"
                ) from None
        if arrays:
            np.savez(work / "inputs.npz", *arrays)
            job["inputs"] = str(work / "inputs.npz")
        (work / "tmp").mkdir()  # AutoGraph's generated code, say
        env = {"PYTHONUNBUFFERED": "1", "TMPDIR": str(work / "tmp")}
        env = proc.child_env(None, path=inputs.child_pythonpath(), extra=env)
        cmd = [sys.executable, "-m", "labkit.explore", str(work / "job.json"), str(os.getpid())]
        while run.checks is None or run.remaining:
            if run.checks is not None:  # a fresh worker takes the checks left
                job |= {"framework": run.report.framework, "checks": run.remaining, "exact": True}
            (work / "job.json").write_text(json.dumps(job))
            (work / "events.jsonl").unlink(missing_ok=True)
            with open(work / "log.txt", "wb") as log:
                child = subprocess.Popen(
                    cmd,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    cwd=work,
                    start_new_session=True,
                )
            try:
                if _follow(run, child, work, timeout_s):
                    break
            finally:
                proc.kill_group(child)


# ---------------------------------------------------------------------------------------------
# the worker's side


def _emit(path: Path, event: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(event, default=str) + "\n")


def _inputs(job: dict, given) -> tuple[list[np.ndarray], Call, list[str]]:
    """The job's example inputs: given to check, else made by its function, else the
    builder's; with a note when the builder's were set aside."""
    declared, notes = Call(**job["call"]), []
    if job["inputs"]:
        with np.load(job["inputs"]) as data:
            arrays, call = [data[f"arr_{i}"] for i in range(len(data.files))], declared
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
    if not getattr(explorer, "accepts", callable)(model):
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


def _load(job: dict):
    """The model, its framework's explorer, the checks, the inputs (``ValueError`` if bad)."""
    if job["model"] is None:
        model, given = pickle.loads(Path("model.pkl").read_bytes()), None
    else:
        model, given = inputs.build_example(job["model"])  # a saved file: its path, None
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
    """``python -m labkit.explore JOB PARENT_PID``: one worker (see the module)."""
    job_file, parent = Path(argv[0]), int(argv[1])
    job = json.loads(job_file.read_text())
    events = job_file.parent / "events.jsonl"
    proc.exit_with_parent(parent, remove=job_file.parent)
    try:
        model, fw, explorer, checks, arrays, call, notes = _load(job)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, whatever it was
        message = str(exc) if isinstance(exc, ValueError) else first_lines(exc, lines=4)
        if job["model"] is None:
            message = (
                f"the worker process could not load the pickled model ({first_lines(exc)}): "
                "give it as a spec, 'file.py:build_model', and the worker builds it"
            )
        _emit(events, {"event": "error", "message": message})
        os._exit(0)
    ready = {"framework": fw, "checks": checks, "versions": explorer.versions(), "notes": notes}
    ready |= {"inputs": describe_arrays(arrays), "call_text": call.text(arrays)}
    _emit(events, {"event": "ready", **ready})
    session = None
    for name in checks:
        _emit(events, {"event": "start", "check": name})
        if session is None:  # a crash here is the first check's
            session = explorer.Session(model, arrays, call)
        answer = _safe_check(explorer, name, session)
        _emit(events, {"event": "done", "check": name, "result": answer})
        if name == explorer.CHECKS[0] and answer["path"]["status"] == "fails":
            break
    os._exit(0)  # skip framework teardown (thread pools can hang at exit); output is unbuffered
