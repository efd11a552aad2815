"""Both sides of the worker protocol behind :func:`labkit.explore.check`.

The parent (:func:`run_workers`) writes a job (a :class:`Source`, the example inputs or the
function that makes them, the checks) and starts ``python -m labkit.explore --job FILE``. The
worker (:func:`main`) builds or unpacks the model and reports JSON lines in the job's events
file: ``ready`` (framework, checks, versions, inputs), ``start`` and ``done`` per check, or
``error`` / ``unpack_failed`` when it cannot begin. The parent stops a check past its time
limit and, after a crash or a timeout, starts a fresh worker for the checks left; a check that
killed its worker is *crashed*. When that check is the first (eager), nothing else is tried.
:func:`run_here` runs the checks in this process instead (a model that cannot travel).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import frameworks as fw_registry
from ..frameworks._kit.explore import Call, describe_arrays, first_lines, result
from ..runner import inputs
from ..util import jsonio, proc

__all__ = [
    "Run",
    "Source",
    "Tick",
    "choose",
    "main",
    "offered",
    "run_here",
    "run_workers",
]

_TAIL = 12  #: lines of a worker's output kept when it died
#: the line a worker writes to its output as each check starts (its log is cut there)
_MARK = "=== labkit.explore check: "
#: ``tick(check, done, total)``: a check starts (``done`` False) or ends, of ``total`` checks
Tick = Callable[[str, bool, int], None]


class _WorkerError(Exception):
    """The worker found the input bad (a spec it cannot build, a model no framework takes)."""


@dataclass
class Source:
    """Where the worker gets the model: a spec it builds, a saved file, or a packed object."""

    kind: str  # "spec" | "file" | "object"
    value: str | None
    framework: str | None  # None: the worker finds it from what the spec builds
    name: str
    obj: object = None


def offered() -> str:
    """The frameworks whose models labkit can check, for a message."""
    return ", ".join(s.name for s in fw_registry.specs() if s.explores)


def choose(
    explorer, model: object, requested: Sequence[str] | None, exact: bool = False
) -> list[str]:
    """The checks to run, in the framework's order, the first one (the gate) always, unless
    ``exact`` (a restarted worker runs just what is left)."""
    if not explorer.accepts(model):
        raise ValueError(
            f"{explorer.SPEC.display}'s checks do not take a {type(model).__name__}: "
            f"{explorer.ACCEPTS}"
        )
    gate = explorer.CHECKS[0]
    if requested is None:
        return list(explorer.CHECKS)
    bad = [c for c in requested if c not in explorer.CHECKS]
    if bad:
        raise ValueError(
            f"unknown check {', '.join(map(repr, bad))} for {explorer.SPEC.display}: valid "
            f"checks are {', '.join(explorer.CHECKS)}"
        )
    if exact:
        return [c for c in explorer.CHECKS if c in requested]
    return [gate] + [c for c in explorer.CHECKS if c in requested and c != gate]


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
    answer["path"].setdefault("details", {})["seconds"] = round(time.perf_counter() - t0, 3)
    return answer


def run_here(explorer, model, arrays, call: Call, checks: list[str], tick: Tick) -> dict[str, dict]:
    """The answers of ``checks`` run in this process, in order (none after a failed gate)."""
    session = explorer.session(model, arrays, call)
    answers = {}
    for name in checks:
        tick(name, False, len(checks))
        answers[name] = _safe_check(explorer, name, session)
        tick(name, True, len(checks))
        if name == checks[0] and answers[name]["path"]["status"] == "fails":
            break
    return answers


# ---------------------------------------------------------------------------------------------
# the parent's side


@dataclass
class Run:
    """What the workers found: the framework and checks (from the first worker), the answers."""

    framework: str | None
    checks: list[str] | None  # None until a worker has chosen them (a spec's framework)
    answers: dict[str, dict] = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    unpack_failed: bool = False
    remaining: list[str] = field(default_factory=list)  #: the checks without an answer yet

    def answer(self, name: str, answer: dict, tick: Tick) -> bool:
        """Keep ``answer``; True when it ends the run (the first check did not get through)."""
        self.answers[name] = answer
        self.remaining.remove(name)
        tick(name, True, len(self.checks))
        return name == self.checks[0] and answer["path"]["status"] in ("fails", "crashed")


@dataclass
class _Worker:
    """One worker process, and what it is doing."""

    child: subprocess.Popen
    events: Path
    log: Path
    current: str | None = None  #: the check it runs now
    started: float = field(default_factory=time.perf_counter)  #: since when it is busy
    seen: int = 0  #: bytes of the events file already read
    progressed: bool = False  #: it finished a check

    def read(self) -> list[dict]:
        """The complete JSON lines of the events file not read yet."""
        with contextlib.suppress(FileNotFoundError), open(self.events, "rb") as f:
            f.seek(self.seen)
            data = f.read()
            end = data.rfind(b"\n") + 1
            self.seen += end
            return [json.loads(line) for line in data[:end].splitlines() if line.strip()]
        return []

    def tail(self, limit: int = 1200) -> str:
        """The worker's output since the last check started, last lines only."""
        with contextlib.suppress(OSError):
            text = self.log.read_text(encoding="utf-8", errors="replace")
            text = text.rsplit(_MARK, 1)[-1].split("\n", 1)[-1] if _MARK in text else text
            return first_lines("\n".join(proc.last_lines(text, _TAIL)), lines=_TAIL, limit=limit)
        return ""


def _start(work: Path, attempt: int, job: dict) -> _Worker:
    """A worker on ``job``: learner's modules importable as here, unbuffered output, temporary
    files (AutoGraph's generated code, say) in ``work``, which goes with the run."""
    events, log = work / f"events-{attempt}.jsonl", work / f"log-{attempt}.txt"
    (work / "job.json").write_text(json.dumps({**job, "events": str(events)}))
    (work / "tmp").mkdir(exist_ok=True)
    extra = {"PYTHONUNBUFFERED": "1", "TMPDIR": str(work / "tmp")}
    cmd = [sys.executable, "-m", "labkit.explore", "--job", str(work / "job.json")]
    with open(log, "wb") as logf:
        child = subprocess.Popen(
            [*cmd, "--parent", str(os.getpid())],
            stdout=logf,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=proc.child_env(None, path=inputs.child_pythonpath(), extra=extra),
            cwd=work,
            start_new_session=True,
        )
    return _Worker(child, events, log)


def _on_event(run: Run, w: _Worker, ev: dict, tick: Tick, probe: bool) -> bool:
    """Take in one event of the worker ``w``; True when the run has its answer."""
    kind = ev["event"]
    if kind == "error":
        raise _WorkerError(ev["message"])
    if kind == "unpack_failed":
        run.unpack_failed, run.info = True, ev
        return True
    if kind == "ready":
        run.info, run.framework = {**run.info, **ev}, ev["framework"]
        if run.checks is None:
            run.checks, run.remaining = list(ev["checks"]), list(ev["checks"])
            tick("", False, len(run.checks))
        return probe
    if kind == "start":
        w.current, w.started = ev["check"], time.perf_counter()
        tick(w.current, False, len(run.checks))
        return False
    w.current, w.started, w.progressed = None, time.perf_counter(), True
    return run.answer(ev["check"], ev["result"], tick)


def _ended(run: Run, w: _Worker, code: int | None, timeout_s: float, tick: Tick) -> bool:
    """The worker died (``code``) or ran past ``timeout_s`` (None) with checks left: the check
    it ran crashed or timed out; died before its first check, every check left crashed (a fresh
    one would die the same way). True when nothing else is to be tried."""
    how = "took longer than" if code is None else f"died ({proc.ended(code)}) in"
    if run.checks is None:  # it could not even load the model
        raise _WorkerError(
            f"the check process {how} loading the framework or building the model"
            f"{f' ({timeout_s:g} s)' if code is None else ''}: {w.tail(800)}"
        )
    if code is not None and w.current is None:
        if w.progressed or not run.remaining:
            return False  # died between checks: a fresh worker takes the rest
        for name in list(run.remaining):
            run.answer(name, _crashed(name, code, w.tail(), ""), tick)
            run.answers[name]["path"]["reason"] = (
                f"the check process died ({proc.ended(code)}) before its first check, "
                "while it loaded the framework or the model"
            )
        return True
    name = w.current or run.remaining[0]
    left = [c for c in run.remaining if c != name]
    after = "the checks after it ran in a fresh process" if left else ""
    after = _NOTHING_ELSE if name == run.checks[0] else after
    if code is None:
        answer = result(
            name,
            "fails",
            f"did not finish within {timeout_s:g} s, so its process was stopped (if it only "
            "needs longer, raise the limit: --timeout on the command line, timeout_s= in "
            "check())" + (f"; {after}" if after else ""),
            timed_out=timeout_s,
        )
    else:
        answer = _crashed(name, code, w.tail(), after)
    return run.answer(name, answer, tick)


#: what a run that stopped at its first check says about the others
_NOTHING_ELSE = "no other check ran: every other path needs eager's answers"


def _crashed(name: str, code: int, log: str, after: str) -> dict:
    """A check that killed its process; ``after``: what became of the checks after it."""
    return result(
        name,
        "crashed",
        f"the check's process died ({proc.ended(code)}) while it ran {name}: the framework crashed "
        f"(or ran out of memory) on this model{'; ' + after if after else ''}",
        log,
        crashed=proc.ended(code),
    )


def _follow(run: Run, w: _Worker, timeout_s: float, tick: Tick, probe: bool) -> bool:
    """Follow the worker ``w`` until it ends; True when nothing else is to be tried (the run
    has its answer, or the first check did not get through)."""
    while True:
        code = w.child.poll()
        if any(_on_event(run, w, ev, tick, probe) for ev in w.read()):
            return True
        if code is not None:
            return _ended(run, w, code, timeout_s, tick)
        if time.perf_counter() - w.started > timeout_s:
            proc.kill_group(w.child)
            return _ended(run, w, None, timeout_s, tick)
        time.sleep(0.05)


def run_workers(
    source: Source,
    packed: Path | None,
    arrays: list[np.ndarray],
    call: Call,
    example: str | None,
    requested: list[str] | None,
    timeout_s: float,
    tick: Tick,
    probe: bool = False,
) -> Run:
    """Run the checks in worker processes; restart after a crash or a timeout, except in the
    first check (eager): then nothing else is tried.

    The inputs are ``arrays`` (taken as ``call`` says), or what the function ``example`` (a
    spec) returns, or, with neither, what the model's builder returns beside the model. A bad
    spec raises ``ValueError`` here. ``probe``: stop once the worker has found the framework
    and the inputs.
    """
    run = Run(source.framework, None)
    with tempfile.TemporaryDirectory(prefix="labkit-explore-") as tmp:
        work = Path(tmp)
        if arrays:
            np.savez(work / "inputs.npz", *arrays)
        base = {
            "kind": "packed" if packed else source.kind,
            "value": str(packed) if packed else source.value,
            "probe": probe,
            "inputs": str(work / "inputs.npz") if arrays else None,
            "count": len(arrays),
            "call": call.to_dict(),
            "example": example,
        }
        attempt = 0
        try:
            while attempt == 0 or run.remaining:
                checks = requested if run.checks is None else run.remaining
                job = {**base, "framework": run.framework, "checks": checks}
                w = _start(work, attempt, {**job, "exact": run.checks is not None})
                attempt += 1
                try:
                    if _follow(run, w, timeout_s, tick, probe):
                        break
                finally:
                    proc.kill_group(w.child)
                if run.info.get("saved"):  # the workers after it take the same inputs
                    base.update(inputs=run.info["saved"], count=run.info["count"], example=None)
                    base.update(saved=True, call=run.info["call"])
        except _WorkerError as exc:
            raise ValueError(str(exc)) from None
    return run


# ---------------------------------------------------------------------------------------------
# the worker's side


def _emit(path: Path, event: dict) -> None:
    with jsonio.locked(path) as f:
        jsonio.write_all(f, (json.dumps(event, default=str) + "\n").encode())


def _inputs(job: dict, given) -> tuple[list[np.ndarray], Call, list[str]]:
    """The example inputs of the job: given here, else made by its function, else the
    builder's; with the notes the report keeps about where they came from."""
    declared = Call.from_dict(job["call"])
    notes = []
    if job["inputs"]:
        with np.load(job["inputs"]) as data:
            arrays = [data[f"arr_{i}"] for i in range(job["count"])]
        call = declared
        if given is not None and not job.get("saved"):
            notes.append("the builder's example inputs were set aside: the inputs given to check")
    elif job["example"]:
        arrays, call = inputs.load_example(job["example"])
    elif given is not None:
        arrays, call = given
    elif job["probe"]:  # asked only what the spec builds
        arrays, call = [], declared
    else:
        raise ValueError(
            "no example inputs: give their shapes (--input 8x3x224x224, or check(model, "
            "'8x3x224x224')), a function that returns them (--input file.py:example_inputs), "
            "or let the builder return (model, example_args, example_kwargs)"
        )
    call = Call(call.names, call.constants, declared.layout)
    return [np.ascontiguousarray(a) for a in arrays], call, notes


def _load(job: dict):
    """Build or unpack the model and its inputs; its framework, explorer and checks
    (``ValueError`` if bad)."""
    if job["kind"] == "packed":
        model, given = fw_registry.explorer(job["framework"]).unpack(Path(job["value"])), None
    else:
        model, given = inputs.build_example(job["value"])  # a saved file: its path, None
    fw = job["framework"]
    if fw is None:
        fw = fw_registry.framework_of(model)
        if fw is None:
            raise ValueError(
                f"model {job['value']!r}: its builder returned a {type(model).__name__}, which "
                f"no registered framework takes; pass framework= (one of {offered()})"
            )
    explorer = fw_registry.explorer(fw)
    checks = choose(explorer, model, job["checks"], job["exact"])
    arrays, call, notes = _inputs(job, given)
    return model, fw, explorer, checks, arrays, call, notes


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m labkit.explore --job FILE [--parent PID]``: one worker (see the module)."""
    parser = argparse.ArgumentParser(
        prog="python -m labkit.explore", description="run explore checks (used by check())"
    )
    parser.add_argument("--job", required=True)
    parser.add_argument("--parent", type=int, default=0)
    args = parser.parse_args(argv)
    job = json.loads(Path(args.job).read_text())
    events = Path(job["events"])
    if args.parent:
        proc.exit_with_parent(args.parent, remove=Path(args.job).parent)
    try:
        model, fw, explorer, checks, arrays, call, notes = _load(job)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, whatever it was
        if job["kind"] == "packed":  # the parent checks it in its own process instead
            _emit(events, {"event": "unpack_failed", "error": first_lines(exc)})
        else:
            message = str(exc) if isinstance(exc, ValueError) else first_lines(exc, lines=4)
            _emit(events, {"event": "error", "message": message})
        os._exit(0)
    saved = Path(job["events"]).parent / "example.npz"  # for the workers after this one
    np.savez(saved, *arrays)
    ready = {"framework": fw, "checks": checks, "versions": explorer.versions(), "notes": notes}
    ready |= {"inputs": describe_arrays(arrays), "count": len(arrays), "saved": str(saved)}
    _emit(
        events, {"event": "ready", **ready, "call": call.to_dict(), "call_text": call.text(arrays)}
    )
    if job["probe"]:
        os._exit(0)
    session = explorer.session(model, arrays, call)
    for name in checks:
        print(f"{_MARK}{name} ===", file=sys.stderr, flush=True)
        _emit(events, {"event": "start", "check": name})
        answer = _safe_check(explorer, name, session)
        _emit(events, {"event": "done", "check": name, "result": answer})
        if name == explorer.CHECKS[0] and answer["path"]["status"] == "fails":
            break
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip framework teardown (thread pools can hang at exit)
