"""Bring your own model: :func:`check` asks a learner's model the course's questions, capture
path by capture path, and returns a :class:`Report` (per path *works*, *caveats*, *fails* or
*crashed*, why, and the framework's own message); :func:`bench` measures the model, eager
against graph modes, through the benchmark runner (ResNet-50's records, with a ``model`` field).

The checks run in worker processes: the parent pickles a job into a folder and starts a Python
that runs :func:`main` ``FOLDER PARENT_PID``; the worker builds or unpickles the model and
appends JSON lines to ``events.jsonl`` there: ``ready`` (framework, checks, inputs), ``start``
and ``done`` per check, or ``error``. A check past its time limit is stopped; one that kills its
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
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cloudpickle

from .. import frameworks as fw_registry
from .. import profiles, runner
from ..frameworks._kit.explore import GraphBreak, PathResult, Recompile, first_lines, result
from ..frameworks._kit.layout import Call, describe_arrays
from ..runner import inputs
from ..util import proc, tables

__all__ = ["GraphBreak", "PathResult", "Recompile", "Report", "bench", "check"]


@dataclass
class Report:
    """What :func:`check` found: ``.paths``, ``.graph_breaks``, ``.recompiles``, ``.notes``."""

    model: str
    framework: str
    inputs: str
    paths: list[PathResult] = field(default_factory=list)
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    versions: dict = field(default_factory=dict)
    call: str = ""  #: how the model was called: ``model(2x16:int64, attention_mask=...)``

    def path(self, name: str) -> PathResult:
        found = {p.path: p for p in self.paths}
        if name not in found:
            raise KeyError(f"no path {name!r} in this report: it has {', '.join(found)}")
        return found[name]

    def status(self, name: str) -> str:
        return self.path(name).status

    def to_dict(self) -> dict:
        """Plain data (JSON-serialisable): what ``--out report.json`` writes."""
        data = asdict(self)
        data["recompiles"] = [{**asdict(r), "total": r.total} for r in self.recompiles]
        return data

    def to_markdown(self) -> str:
        """The report as Markdown: a table of paths, then graph breaks and recompilations."""
        display = fw_registry.spec(self.framework).display
        version = self.versions.get(self.framework)
        called = f" (called as `{self.call}`)" if self.call and "=" in self.call else ""
        called += "; checked in a worker process (a fresh one after a crash)"
        lines = [
            f"### Graph readiness of `{self.model}` ({display}{' ' + version if version else ''})",
            "",
            f"Inputs {self.inputs}{called}.",
            "",
            *[f"> {tables.escape(n)}\n" for n in self.notes if n.startswith("**")],
        ]
        head = ["path", "status", "what it means", "the framework says"]
        rows = [
            (p.path, p.status if p.status in ("works", "caveats") else f"**{p.status}**", p.reason)
            + (first_lines(p.message, 99, 240),)
            for p in self.paths
        ]
        lines.append(tables.markdown(head, rows))
        if self.graph_breaks:
            n = sum(b.count for b in self.graph_breaks)
            lines += ["", f"**Graph breaks** ({n}): where capture stopped and Python took over", ""]
            head = ["path", "where", "code", "why", "the framework says"]
            rows = [
                (b.path, b.location + (f" (x{b.count})" if b.count > 1 else ""))
                + (f"`{first_lines(b.code, 1, 80)}`", b.reason, first_lines(b.message, 99, 160))
                for b in self.graph_breaks
            ]
            lines.append(tables.markdown(head, rows))
        if self.recompiles:
            lines += ["", "**New input shapes**: graphs compiled (traced) at each call", ""]
            head = ["path", "changing", "shapes called", "compiles per call", "why"]
            rows = [
                (r.path, r.varied, ", ".join(r.shapes), ", ".join(map(str, r.compiles)))
                + (first_lines("; ".join(r.reasons[:2]), 1, 160),)
                for r in self.recompiles
            ]
            lines.append(tables.markdown(head, rows))
        rest = [n for n in self.notes if not n.startswith("**")]
        if rest:
            lines += ["", *[f"- {tables.escape(n)}" for n in rest]]
        return "\n".join(lines)

    _repr_markdown_ = to_markdown

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in Counter(p.status for p in self.paths).items())
        return f"<labkit.explore.Report {self.model} ({self.framework}): {counts}>"


def check(
    model: object,
    example_inputs: object = None,
    framework: str | None = None,
    timeout_s: float = 300.0,
    checks: Sequence[str] | None = None,
    progress: bool = True,
    kwargs: dict | None = None,
    layout: str | None = None,
) -> Report:
    """Check every capture path of ``model`` on ``example_inputs``; see :class:`Report`.

    ``model``: a ``torch.nn.Module`` (or a function of tensors), a Keras model or layer, a
    ``tf.function``, or a spec ``"file.py:build"`` / ``"module:build"`` whose builder returns
    one (or ``(model, example_args, example_kwargs)``). ``example_inputs``: shapes
    (``"8x3x224x224"``, batch first, several separated by commas), the tensors, or None when the
    builder returns them.
    ``kwargs``: keyword arguments of the call (tensors or plain values). ``layout``: ``"NCHW"``
    or ``"NHWC"``. ``checks``: a subset of the paths (the first, eager, always runs; ``[]``:
    only it). ``timeout_s`` bounds each check (a compile on a slow laptop). Bad input raises
    ``ValueError`` with the fix."""
    if not (isinstance(timeout_s, int | float) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")
    channels = {"NCHW": "first", "NHWC": "last"}.get(str(layout).upper())
    if layout is not None and channels is None:
        raise ValueError(f"layout {layout!r} is not one of NCHW, NHWC")
    if framework is not None:
        fw_registry.spec(framework)  # ValueError naming the valid ones
    if isinstance(model, str | os.PathLike):  # a spec: the worker builds the model
        spec = inputs.parse(model)
        model, name = spec.canonical(), spec.text
    else:  # a live object: the worker unpickles it and finds its framework
        name = getattr(model, "__name__", None) or getattr(model, "name", None)
        name = name if isinstance(name, str) else type(model).__name__
    if isinstance(example_inputs, str):  # shapes: seeded random arrays of them
        example_inputs = inputs.example_arrays(inputs.parse_inputs(example_inputs))
    arrays, call = inputs.example_of(example_inputs, kwargs)
    job = {"model": model, "framework": framework, "arrays": arrays, "call": call}
    job |= {"channels": channels, "exact": False}
    job |= {"checks": None if checks is None else [c.strip() for c in checks]}
    report = Report(name, framework or "", describe_arrays(arrays))

    from tqdm.auto import tqdm

    with tqdm(total=0, unit="check", disable=not progress, dynamic_ncols=True) as bar:
        ran = _run_workers(report, job, timeout_s, bar)
    if len(report.paths) == 1 < len(ran):  # the first check stopped the run
        report.notes.append(f"the other paths were not checked: each needs {ran[0]}'s answers")
    report.notes = list(dict.fromkeys(report.notes))
    return report


def bench(
    spec: str | os.PathLike,
    example_input_shapes: str | None = None,
    modes: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    frameworks: Sequence[str] | None = None,
    framework: str | None = None,
    out: str | os.PathLike | None = None,
    profile: str | profiles.Profile | None = None,
    resume: bool = False,
    progress: bool = True,
    threads: int | None = None,
) -> runner.RunResult:
    """Measure the model a spec builds in each cell (framework x mode x task x precision, a
    fresh process each, as ResNet-50's cells); records go to ``out`` (default
    ``results/explore-<profile>.jsonl``). ``example_input_shapes`` None: the inputs the builder
    returns. ``frameworks`` default: the model's own and the runtimes of its exports."""
    s = inputs.parse(spec)
    shapes, own = example_input_shapes, framework
    if shapes is None or own is None:  # the builder's inputs, the model's framework
        found = check(s.canonical(), shapes, own, checks=[], progress=False)
        shapes, own = shapes or found.inputs, own or found.framework
    plan = runner.Plan.for_model(
        s, shapes, own, frameworks=frameworks, modes=modes, tasks=tasks, profile=profile
    )
    out = Path(out or f"results/explore-{plan.profile.name}.jsonl")
    return runner.run(plan, out, resume=resume, progress=progress, threads=threads)


# ---------------------------------------------------------------------------------------------
# the worker processes: the parent's side


def _answer(report: Report, checks: list[str], answer: dict, bar) -> bool:
    """Keep ``answer``; True when it ends the run (the first check did not get through)."""
    row = PathResult(**answer["path"])
    report.paths.append(row)
    report.graph_breaks += [GraphBreak(**b) for b in answer["graph_breaks"]]
    report.recompiles += [Recompile(**x) for x in answer["recompiles"]]
    report.notes += answer["notes"]
    bar.update()
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


def _follow(report: Report, checks: list[str], child, work: Path, timeout_s: float, bar) -> bool:
    """Follow a worker until it ends, its answers into ``report`` (and ``bar``, a progress bar)
    and the first worker's choice of checks into ``checks``; True when nothing else is to be
    tried."""
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
                        bar.reset(total=len(checks))
                    report.framework, report.versions = ev["framework"], ev["versions"]
                    report.inputs, report.call = ev["inputs"], ev["call_text"]
                    report.notes += ev["notes"]
                elif ev["event"] == "start":
                    bar.set_description_str(f"{report.model}: {ev['check']}")
                elif _answer(report, checks, ev["result"], bar):
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
            how = f"took over {timeout_s:g} s" if code is None else f"died ({proc.ended(code)})"
            raise ValueError(f"the check process {how} loading the framework or the model: {tail}")
        left = [c for c in checks if c not in {p.path for p in report.paths}]
        return _answer(report, checks, _stopped(checks, left, code, tail, timeout_s), bar)


def _run_workers(report: Report, job: dict, timeout_s: float, bar) -> list[str]:
    """Run the checks of ``job`` (see :func:`check`) in worker processes, their answers into
    ``report`` and ``bar``. The checks, in order. A model that cannot travel or load raises
    ``ValueError``."""
    checks: list[str] = []
    with tempfile.TemporaryDirectory(prefix="labkit-explore-") as tmp:
        work = Path(tmp)
        (work / "tmp").mkdir()  # AutoGraph's generated code, say
        env = {"PYTHONUNBUFFERED": "1", "TMPDIR": str(work / "tmp")}
        env = proc.child_env(None, path=inputs.child_pythonpath(), extra=env)
        worker = "import sys; from labkit.explore import main; main(*sys.argv[1:])"
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
                    [sys.executable, "-c", worker, tmp, str(os.getpid())],  # see main()
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    cwd=work,
                    start_new_session=True,
                )
            try:
                stop = _follow(report, checks, child, work, timeout_s, bar)
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


def _checks(explorer, model: object, job: dict) -> list[str]:
    """The checks to run in the framework's order: the first (the gate) always, unless the job
    is ``exact`` (a restarted worker runs just what is left)."""
    if not callable(model):
        raise ValueError(
            f"{explorer.SPEC.display}'s checks do not take a {type(model).__name__}: "
            f"{explorer.ACCEPTS}"
        )
    checks = list(explorer.CHECKS)
    requested = checks if job["checks"] is None else job["checks"]
    bad = [c for c in requested if c not in checks]
    if bad:
        raise ValueError(
            f"unknown check {', '.join(map(repr, bad))} for {explorer.SPEC.display}: valid "
            f"checks are {', '.join(checks)}"
        )
    return [c for c in checks if c in requested or (c == checks[0] and not job["exact"])]


def _load(work: Path):
    """The model, its framework's explorer, the checks, the inputs (given to check, else the
    builder's) and notes (``ValueError`` if bad)."""
    try:
        job = pickle.loads((work / "job.pkl").read_bytes())  # a spec always loads: the model
    except Exception as exc:  # noqa: BLE001 - whatever unpickling raised, said
        raise ValueError(
            f"the worker process could not load the pickled model ({first_lines(exc)}): give "
            "it as a spec, 'file.py:build_model', and the worker builds it"
        ) from None
    model, given = job["model"], None
    if isinstance(model, str):  # a spec: the worker builds it
        model, given = inputs.build_example(model)
    fw = job["framework"] or fw_registry.framework_of(model)
    if fw is None:
        offered = ", ".join(s.name for s in fw_registry.specs() if s.explores)
        raise ValueError(
            f"cannot tell which framework a {type(model).__module__}.{type(model).__name__} "
            f"belongs to: pass framework= (one of {offered})"
        )
    explorer = fw_registry.explorer(fw)
    arrays, call, notes = job["arrays"], job["call"], []
    if not arrays and given is None:
        raise ValueError(
            "no example inputs: give their shapes (--input 8x3x224x224, or check(model, "
            "'8x3x224x224')), or let the builder return (model, example_args, example_kwargs)"
        )
    if not arrays:
        arrays, call = given
    elif given is not None:
        notes.append("the builder's example inputs were set aside: the inputs given to check")
    call = Call(call.names, call.constants, job["channels"])
    return model, fw, explorer, _checks(explorer, model, job), arrays, call, notes


def main(folder: str, parent: str) -> None:
    """One worker (see the module), for the parent process ``parent`` and its job in ``folder``."""
    work, events = Path(folder), Path(folder) / "events.jsonl"
    proc.exit_with_parent(int(parent), remove=work)
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
        t0 = time.perf_counter()
        try:
            answer = explorer.CHECKS[name](session)
        except Exception as exc:  # noqa: BLE001 - reported in the report, never a crash of check()
            said = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"
            why = "the check stopped with an error the lab did not expect (the framework's "
            answer = result(name, "fails", why + "message says what)", first_lines(said, 6))
        answer["path"]["details"]["seconds"] = round(time.perf_counter() - t0, 3)
        # after a failed first check the parent stops this process: no other check applies
        _emit(events, event="done", check=name, result=answer)
    os._exit(0)  # skip framework teardown (thread pools can hang at exit); output is unbuffered
