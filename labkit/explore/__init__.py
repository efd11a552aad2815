"""Bring your own model: what happens to it in graph mode, and is graph mode worth it here?

Framework-free. :func:`check` asks a learner's model the questions the course asks of its
ResNet-50, each capture path in turn (eager, ``torch.compile`` with its graph breaks and
recompilations, ``fullgraph``, ``torch.export`` strict and non-strict, the TorchScript trace, ONNX
export; ``tf.function`` and its retracing, XLA, SavedModel, TF Lite; ONNX Runtime at each
optimisation level) and returns a :class:`Report`: per path *works*, *caveats*, *fails* or
*crashed*, the reason in plain words and the framework's own message. The checks themselves live
in each framework's package (``labkit/frameworks/<name>/explore.py``, reached through the
registry, with the toolkit they share in :mod:`labkit.frameworks._kit.explore`, which also
defines a report's rows: :class:`PathResult`, :class:`GraphBreak`, :class:`Recompile`); this
module picks the framework from the model's type, runs the checks and joins the answers.

Isolation: the checks run in a worker process (``python -m labkit.explore``), one after the
other, each with a time limit. A check that kills its process (a framework's native crash) is
reported as *crashed*, naming the check, and the remaining checks go on in a fresh worker; the
calling process (a notebook kernel) is never at risk. The worker gets the model from its spec
(``"file.py:build"``, rebuilt there) or, for a live object, pickled by the framework's
``pack`` (cloudpickle for PyTorch). A model that cannot be pickled is checked in this process
instead, and the report says so.

:func:`bench` measures the same model through the benchmark runner (:mod:`labkit.runner`): a
fresh process per cell, the same JSONL records as the ResNet-50 with a ``model`` field naming
the spec, so ``python -m labkit report``, the speedups and the break-even read them unchanged.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .. import frameworks as fw_registry
from .. import profiles, runner
from ..frameworks._kit.explore import (
    STATUSES,
    GraphBreak,
    PathResult,
    Recompile,
    describe_arrays,
    first_lines,
    result,
)
from ..frameworks.contract import DEVICES, PRECISIONS, TASKS
from ..runner import inputs as models
from ..util import proc, tables

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "STATUSES",
    "GraphBreak",
    "PathResult",
    "Recompile",
    "Report",
    "bench",
    "check",
    "framework_of_spec",
]

#: seconds one check may take before its process is stopped (a compile on a slow laptop)
DEFAULT_TIMEOUT_S = 300.0
LOG_TAIL_LINES = 12


# ---------------------------------------------------------------------------------------------
# the report


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
    isolated: bool = True  #: the checks ran in worker processes (a crash could not hurt us)

    def path(self, name: str) -> PathResult:
        for p in self.paths:
            if p.path == name:
                return p
        raise KeyError(
            f"no path {name!r} in this report: it has {', '.join(p.path for p in self.paths)}"
        )

    def status(self, name: str) -> str:
        return self.path(name).status

    def counts(self) -> dict[str, int]:
        return {s: sum(p.status == s for p in self.paths) for s in STATUSES}

    def to_dict(self) -> dict:
        """Plain data (JSON-serialisable): what ``--out report.json`` writes."""
        return {
            "model": self.model,
            "framework": self.framework,
            "inputs": self.inputs,
            "versions": dict(self.versions),
            "isolated": self.isolated,
            "paths": [asdict(p) for p in self.paths],
            "graph_breaks": [asdict(b) for b in self.graph_breaks],
            "recompiles": [{**asdict(r), "total": r.total} for r in self.recompiles],
            "notes": list(self.notes),
        }

    def to_markdown(self) -> str:
        """The report as Markdown: a table of paths, then graph breaks and recompilations."""
        display = fw_registry.spec(self.framework).display
        version = self.versions.get(self.framework)
        where = (
            "checked in a worker process (a fresh one after a crash)"
            if self.isolated
            else "**in this process** (the model could not be handed to a separate one)"
        )
        lines = [
            f"### Graph readiness of `{self.model}` ({display}{' ' + version if version else ''})",
            "",
            f"Inputs {self.inputs}; {where}.",
            "",
            "| path | status | what it means | the framework says |",
            "|---|---|---|---|",
        ]
        for p in self.paths:
            status = p.status if p.status in ("works", "caveats") else f"**{p.status}**"
            lines.append(
                f"| {p.path} | {status} | {tables.escape(p.reason)} | {tables.escape(p.message, 240)} |"
            )
        if self.graph_breaks:
            lines += [
                "",
                (
                    f"**Graph breaks** ({sum(b.count for b in self.graph_breaks)}): where "
                    "capture stopped and Python took over"
                ),
                "",
                "| path | where | code | why | the framework says |",
                "|---|---|---|---|---|",
            ]
            for b in self.graph_breaks:
                times = f" (x{b.count})" if b.count > 1 else ""
                lines.append(
                    f"| {b.path} | {tables.escape(b.location)}{times} | `{tables.escape(b.code, 80)}` | "
                    f"{tables.escape(b.reason)} | {tables.escape(b.message, 160)} |"
                )
        if self.recompiles:
            lines += [
                "",
                "**New input shapes**: graphs compiled (traced) at each call",
                "",
                "| path | changing | shapes called | compiles per call | why |",
                "|---|---|---|---|---|",
            ]
            for r in self.recompiles:
                lines.append(
                    f"| {r.path} | {r.varied} | {', '.join(r.shapes)} | "
                    f"{', '.join(map(str, r.compiles))} | {tables.escape('; '.join(r.reasons[:2]), 160)} |"
                )
        if self.notes:
            lines += ["", *[f"- {tables.escape(n)}" for n in self.notes]]
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items() if n)
        return f"<labkit.explore.Report {self.model} ({self.framework}): {counts}>"


# ---------------------------------------------------------------------------------------------
# running the checks: worker processes, crash and timeout handling


class _WorkerError(Exception):
    """The worker found the input bad (a spec it cannot build, a model no framework takes)."""


@dataclass
class _Source:
    """Where the worker gets the model: a spec it builds, a saved file, or a packed object."""

    kind: str  # "spec" | "file" | "object"
    value: str | None
    framework: str | None  # None: the worker finds it from what the spec builds
    name: str
    obj: object = None


def _offered() -> str:
    return ", ".join(s.name for s in fw_registry.specs() if s.explores)


def _resolve(model: object, framework: str | None) -> _Source:
    """Where the model comes from, without building it here: a spec is built by the worker (so
    this process never imports the learner's framework, nor runs the builder)."""
    if framework is not None:
        fw_registry.spec(framework)  # ValueError naming the valid ones
    if isinstance(model, str | os.PathLike):
        spec = models.parse(model)
        if spec.saved_model:
            fw = framework or fw_registry.framework_of(spec.file)
            return _Source("file", str(spec.file), fw, spec.name, spec.file)
        return _Source("spec", spec.canonical(), framework, spec.name)
    fw = framework or fw_registry.framework_of(model)
    if fw is None:
        raise ValueError(
            f"cannot tell which framework a {type(model).__module__}.{type(model).__name__} "
            f"belongs to: pass framework= (one of {_offered()}), or give the model as "
            "'file.py:build_model'"
        )
    return _Source("object", None, fw, "", model)


def _choose(
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


def _is_shape_like(x: object) -> bool:
    if isinstance(x, str | models.Input):
        return True
    return (
        isinstance(x, tuple | list)
        and bool(x)
        and all(isinstance(d, int | np.integer) and not isinstance(d, bool) for d in x)
    )


def _to_numpy(x: object) -> np.ndarray:
    """A tensor of any framework (or an array) as a host array: ``.detach()``, ``.cpu()`` and
    ``.numpy()`` where the object has them."""
    for step in ("detach", "cpu"):
        if callable(getattr(x, step, None)) and not isinstance(x, np.ndarray):
            x = getattr(x, step)()
    if callable(getattr(x, "numpy", None)) and not isinstance(x, np.ndarray):
        x = x.numpy()
    return np.ascontiguousarray(np.asarray(x))


def _example(example_inputs: object) -> list[np.ndarray]:
    if example_inputs is None:
        raise ValueError(
            "give example inputs: a shape such as '8x3x224x224' (batch first; several inputs "
            "separated by commas), or the tensors/arrays the model takes"
        )
    if _is_shape_like(example_inputs):
        return models.example_arrays(models.parse_inputs(example_inputs))
    items = list(example_inputs) if isinstance(example_inputs, tuple | list) else [example_inputs]
    if items and all(_is_shape_like(x) for x in items):
        return models.example_arrays(models.parse_inputs(items))
    return [_to_numpy(x) for x in items]


def _child_env() -> dict[str, str]:
    """A worker's environment: each framework's own thread defaults (the checks time nothing),
    the learner's modules importable as here, unbuffered output."""
    return proc.child_env(
        None,
        path=models.child_pythonpath(),
        extra={
            "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
            "PYTHONUNBUFFERED": "1",
        },
    )


def _read_events(path: Path, seen: int) -> tuple[list[dict], int]:
    """Complete JSON lines of ``path`` after the first ``seen`` bytes."""
    try:
        with open(path, "rb") as f:
            f.seek(seen)
            data = f.read()
    except FileNotFoundError:
        return [], seen
    end = data.rfind(b"\n") + 1
    events = [json.loads(line) for line in data[:end].splitlines() if line.strip()]
    return events, seen + end


MARK = "=== labkit.explore check: "


def _log_tail(path: Path) -> str:
    """The worker's output since the last check started, last lines only."""
    with contextlib.suppress(OSError):
        text = path.read_text(encoding="utf-8", errors="replace")
        text = text.rsplit(MARK, 1)[-1].split("\n", 1)[-1] if MARK in text else text
        return "\n".join(proc.last_lines(text, LOG_TAIL_LINES))
    return ""


def _crashed(name: str, code: int, log: str) -> dict:
    return result(
        name,
        "crashed",
        f"the check's process died ({proc.ended(code)}) while it ran {name}: the framework crashed "
        "(or ran out of memory) on this model; the other checks ran in a fresh process",
        first_lines(log, lines=LOG_TAIL_LINES, limit=1200),
    )


def _timed_out(name: str, timeout_s: float) -> dict:
    return result(
        name,
        "fails",
        f"did not finish within {timeout_s:g} s, so its process was stopped; give check() a "
        "larger timeout_s if it only needs longer",
    )


@dataclass
class _Run:
    """What the workers found: the framework and checks (from the first worker), the answers."""

    framework: str | None
    checks: list[str] | None  # None until a worker has chosen them (a spec's framework)
    answers: dict[str, dict] = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    unpack_failed: bool = False


def _start(work: Path, attempt: int, job: dict) -> tuple[subprocess.Popen, Path, Path]:
    events, log = work / f"events-{attempt}.jsonl", work / f"log-{attempt}.txt"
    job = {**job, "events": str(events)}
    (work / "job.json").write_text(json.dumps(job))
    cmd = [sys.executable, "-m", "labkit.explore", "--job", str(work / "job.json")]
    cmd += ["--parent", str(os.getpid())]
    with open(log, "wb") as logf:
        child = subprocess.Popen(
            cmd,
            stdout=logf,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_child_env(),
            cwd=work,
            start_new_session=True,
        )
    return child, events, log


def _run_workers(
    source: _Source,
    packed: Path | None,
    arrays: list[np.ndarray],
    requested: list[str] | None,
    timeout_s: float,
    tick: Callable[[str, bool], None],
    probe: bool = False,
) -> _Run:
    """Run the checks in worker processes; restart after a crash or a timeout.

    The first worker builds (or unpacks) the model, finds its framework and the checks to run,
    and reports them (``ready``); a bad spec comes back as an ``error`` and raises
    ``ValueError`` here. ``probe``: stop after ``ready`` (what :func:`bench` needs to know).
    """
    run = _Run(source.framework, None)
    with tempfile.TemporaryDirectory(prefix="labkit-explore-") as tmp:
        work = Path(tmp)
        np.savez(work / "inputs.npz", *arrays)
        base = {
            "kind": "packed" if packed else source.kind,
            "value": str(packed) if packed else source.value,
            "inputs": str(work / "inputs.npz"),
            "count": len(arrays),
            "probe": probe,
        }
        remaining: list[str] = []
        attempt = 0
        while attempt == 0 or remaining:
            job = {
                **base,
                "framework": run.framework,
                "checks": requested if run.checks is None else remaining,
                "exact": run.checks is not None,
            }
            child, events, log = _start(work, attempt, job)
            attempt += 1
            current, started, seen, code = None, time.perf_counter(), 0, None
            stop, progressed = False, False
            try:
                while True:
                    code = child.poll()
                    new, seen = _read_events(events, seen)
                    for ev in new:
                        kind = ev["event"]
                        if kind == "error":
                            raise _WorkerError(ev["message"])
                        if kind == "unpack_failed":
                            run.unpack_failed, run.info = True, ev
                            return run
                        if kind == "ready":
                            run.info, run.framework = ev, ev["framework"]
                            if run.checks is None:
                                run.checks = list(ev["checks"])
                                remaining = list(run.checks)
                                tick("", False)
                            if probe:
                                return run
                        elif kind == "start":
                            current, started = ev["check"], time.perf_counter()
                            tick(current, False)
                        elif kind == "done":
                            name, answer = ev["check"], ev["result"]
                            run.answers[name] = answer
                            remaining.remove(name)
                            tick(name, True)
                            current, started, progressed = None, time.perf_counter(), True
                            if name == run.checks[0] and answer["path"]["status"] == "fails":
                                stop = True
                    if code is not None or stop:
                        break
                    if time.perf_counter() - started > timeout_s and run.checks is not None:
                        proc.kill_group(child)
                        name = current or remaining[0]
                        run.answers[name] = _timed_out(name, timeout_s)
                        remaining.remove(name)
                        tick(name, True)
                        current = None
                        break
                    if time.perf_counter() - started > timeout_s:  # could not even start
                        proc.kill_group(child)
                        raise _WorkerError(
                            f"loading the model took longer than {timeout_s:g} s: "
                            f"{first_lines(_log_tail(log), lines=LOG_TAIL_LINES, limit=800)}"
                        )
                    time.sleep(0.05)
            finally:
                proc.kill_group(child)
            if stop:
                break
            if run.checks is None:  # died before it chose the checks: it cannot load the model
                raise _WorkerError(
                    f"the check process died ({proc.ended(code)}) while it loaded the framework or "
                    f"built the model: {first_lines(_log_tail(log), lines=LOG_TAIL_LINES, limit=800)}"
                )
            if current is not None:  # died in the middle of a check
                run.answers[current] = _crashed(current, code, _log_tail(log))
                remaining.remove(current)
                tick(current, True)
            elif remaining and code is not None and not progressed:
                # died before its first check: a fresh process would die the same way
                for name in list(remaining):
                    run.answers[name] = _crashed(name, code, _log_tail(log))
                    run.answers[name]["path"]["reason"] = (
                        f"the check process died ({proc.ended(code)}) before its first check, "
                        "while it loaded the framework or the model"
                    )
                    remaining.remove(name)
                    tick(name, True)
    return run


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


def _run_here(explorer, model, arrays, checks, tick) -> dict[str, dict]:
    session = explorer.session(model, arrays)
    answers = {}
    for name in checks:
        tick(name, False)
        answers[name] = _safe_check(explorer, name, session)
        tick(name, True)
        if name == checks[0] and answers[name]["path"]["status"] == "fails":
            break
    return answers


def check(
    model: object,
    example_inputs: object,
    framework: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    checks: Sequence[str] | None = None,
    progress: bool = True,
) -> Report:
    """Check every capture path of ``model`` on ``example_inputs``; see :class:`Report`.

    ``model``: a ``torch.nn.Module`` (or a function of tensors), a Keras model or layer, a
    ``tf.function``, an ONNX file (path or ``onnx.ModelProto``), or a spec ``"file.py:build"`` /
    ``"module:build"`` whose builder returns one of these (it is built in the worker process
    only). ``example_inputs``: a shape text such as ``"8x3x224x224"`` (several inputs separated
    by commas), a tuple of ints, or the tensors (arrays) themselves; the first dimension is the
    batch. ``framework`` overrides the framework found from the model's type. ``timeout_s``
    bounds each check. ``checks`` picks a subset of the framework's paths (in their order); the
    first path (eager, or for a saved model its loading) always runs, because nothing else can
    work when it does not.

    Bad input (an unknown spec or function, a builder that raises, a model no framework
    claims, unknown checks) raises ``ValueError`` with the fix. The model not running on the
    inputs is not an error: the report says so on its first path and checks nothing else.
    """
    if not (isinstance(timeout_s, int | float) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")
    source = _resolve(model, framework)
    arrays = _example(example_inputs)
    requested = None if checks is None else [c.strip() for c in checks]
    explorer, chosen = None, None
    if source.kind == "object":  # the framework is loaded here already: choose here
        explorer = fw_registry.explorer(source.framework)
        chosen = _choose(explorer, source.obj, requested)
        source.name = explorer.describe(source.obj)
    name = source.name
    report = Report(name, source.framework or "", describe_arrays(arrays))

    from tqdm.auto import tqdm

    bar = tqdm(total=len(chosen or []), unit="check", disable=not progress, dynamic_ncols=True)
    run = _Run(source.framework, chosen)

    def tick(check_name: str, done: bool) -> None:
        if bar.total != len(run.checks or []):
            bar.reset(total=len(run.checks or []))
        bar.set_description_str(f"{name}: {check_name}")
        if done:
            bar.update(1)

    try:
        with tempfile.TemporaryDirectory(prefix="labkit-pack-") as tmp:
            packed = None
            if source.kind == "object":
                try:
                    packed = Path(tmp) / "model.pkl"
                    explorer.pack(source.obj, packed)
                except ValueError as exc:
                    report.notes.append(
                        f"the model could not be handed to a separate process ({exc}), so the "
                        "checks ran in this one: a check that crashes would end it. Give "
                        "check() a spec ('file.py:build_model') to isolate them."
                    )
                    packed = None
            if source.kind != "object" or packed is not None:
                try:
                    ran = _run_workers(source, packed, arrays, chosen or requested, timeout_s, tick)
                except _WorkerError as exc:
                    raise ValueError(str(exc)) from None
                if ran.unpack_failed:
                    report.notes.append(
                        "the separate process could not load the pickled model "
                        f"({ran.info.get('error', '')}), so the checks ran in this one: a check "
                        "that crashes would end it. Give check() a spec ('file.py:build_model') "
                        "to isolate them."
                    )
                else:
                    run = ran
            if source.kind == "object" and not run.answers:
                report.isolated = False
                run.checks = chosen
                run.answers = _run_here(explorer, source.obj, arrays, chosen, tick)
                run.info = {"versions": explorer.versions(), "framework": source.framework}
    finally:
        bar.close()
    report.framework = run.info.get("framework", report.framework)
    report.versions = run.info.get("versions", {})
    for check_name in run.checks or []:
        if check_name not in run.answers:
            continue
        answer = run.answers[check_name]
        report.paths.append(PathResult(**answer["path"]))
        report.graph_breaks += [GraphBreak(**b) for b in answer["graph_breaks"]]
        report.recompiles += [Recompile(**r) for r in answer["recompiles"]]
    first = report.paths[0] if report.paths else None
    if first is not None and first.status == "fails" and len(run.checks) > 1:
        report.notes.append(
            f"the other paths were not checked: the model does not get through {first.path} "
            "with these inputs"
        )
    return report


def framework_of_spec(spec: str | os.PathLike, timeout_s: float = DEFAULT_TIMEOUT_S) -> str:
    """The framework of the model a spec builds, found in a worker process (this one imports
    nothing); ``ValueError`` when the spec cannot be built or no framework takes the model."""
    source = _resolve(spec, None)
    if source.framework is not None:
        return source.framework
    try:
        ran = _run_workers(source, None, [], None, timeout_s, lambda *_: None, probe=True)
    except _WorkerError as exc:
        raise ValueError(str(exc)) from None
    return ran.framework


# ---------------------------------------------------------------------------------------------
# the worker process


def _emit(path: Path, event: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(event, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _load(job: dict) -> tuple[object, str, object, list[str]]:
    """Build or unpack the model; its framework, explorer and checks (``ValueError`` if bad)."""
    fw = job["framework"]
    if job["kind"] == "packed":
        model = fw_registry.explorer(fw).unpack(Path(job["value"]))
    elif job["kind"] == "file":
        model = Path(job["value"])
    else:
        model = models.build(job["value"])
    if fw is None:
        fw = fw_registry.framework_of(model)
        if fw is None:
            raise ValueError(
                f"model {job['value']!r}: its builder returned a {type(model).__name__}, which "
                f"no registered framework takes; pass framework= (one of {_offered()})"
            )
    explorer = fw_registry.explorer(fw)
    return model, fw, explorer, _choose(explorer, model, job["checks"], job["exact"])


def _worker_main(argv: Sequence[str] | None = None) -> int:
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
        model, fw, explorer, checks = _load(job)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, whatever it was
        if job["kind"] == "packed":  # the parent checks it in its own process instead
            _emit(events, {"event": "unpack_failed", "error": first_lines(exc)})
        else:
            message = str(exc) if isinstance(exc, ValueError) else first_lines(exc, lines=4)
            _emit(events, {"event": "error", "message": message})
        os._exit(0)
    with np.load(job["inputs"]) as data:
        arrays = [data[f"arr_{i}"] for i in range(job["count"])]
    versions = explorer.versions()
    _emit(events, {"event": "ready", "framework": fw, "checks": checks, "versions": versions})
    if job["probe"]:
        os._exit(0)
    session = explorer.session(model, arrays)
    for name in checks:
        print(f"{MARK}{name} ===", file=sys.stderr, flush=True)
        _emit(events, {"event": "start", "check": name})
        answer = _safe_check(explorer, name, session)
        _emit(events, {"event": "done", "check": name, "result": answer})
        if name == explorer.CHECKS[0] and answer["path"]["status"] == "fails":
            break
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip framework teardown (thread pools can hang at exit)


# ---------------------------------------------------------------------------------------------
# benchmark through the runner


def bench(
    spec: str | os.PathLike,
    example_input_shapes: str | Sequence,
    modes: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    frameworks: Sequence[str] | None = None,
    framework: str | None = None,
    precisions: Sequence[str] | None = None,
    device: str = "cpu",
    out: str | os.PathLike | None = None,
    profile: str | profiles.Profile | None = None,
    resume: bool = False,
    progress: bool = True,
    threads: int | None = None,
    timeout_s: float | None = None,
) -> runner.RunResult:
    """Measure the model a spec builds, eager against graph modes, through the runner.

    Each cell (framework x mode x task x precision) runs in a fresh process that rebuilds the
    model from ``spec`` and times it as the ResNet-50 cells are timed (first call apart, then
    the profile's repeats); each record is appended to ``out`` (default
    ``results/explore-<profile>.jsonl``) with ``model`` = the spec (its file made absolute) and
    ``input_shape`` = the shapes of that cell (``latency``: batch 1; ``throughput`` and
    ``train``: the batch of ``example_input_shapes``). ``images_per_s`` counts samples.

    ``frameworks`` defaults to the model's own framework (``framework``, else found by building
    the model in a worker process) and the runtimes of its exports (a PyTorch model: also ONNX
    Runtime). ``modes`` and ``tasks`` take what ``python -m labkit
    bench`` takes (``eager``, ``graph``, a mode's own name; ``latency``, ``throughput``,
    ``train``: a synthetic loss, the mean of the squared outputs). Bad input raises
    ``ValueError``; a model that fails in one cell is a recorded failure.
    """
    s = models.parse(spec)
    inputs = models.parse_inputs(example_input_shapes)
    own = framework or framework_of_spec(s.canonical())
    if frameworks is None:
        fws = [own] + [x.name for x in fw_registry.specs() if x.exported_from == own]
    else:
        fws = runner._pick("framework", frameworks, fw_registry.NAMES)
    for fw in fws:
        if not fw_registry.spec(fw).explores:
            raise ValueError(
                f"labkit cannot benchmark other models with {fw_registry.spec(fw).display}: "
                f"choose from {', '.join(x.name for x in fw_registry.specs() if x.explores)}"
            )
    prof = profile if isinstance(profile, profiles.Profile) else profiles.get(profile)
    if modes is not None:
        runner._pick("mode", modes, runner.mode_names())
    tks = runner._pick("task", tasks, TASKS)
    precs = runner._pick(
        "precision", precisions if precisions is not None else ["fp32"], PRECISIONS
    )
    (dev,) = runner._pick("device", [device], DEVICES)
    cells = []
    for fw in fws:
        for mode in runner.resolve_modes(fw, modes):
            for task in tks:
                shapes = models.with_batch(inputs, 1 if task == "latency" else inputs[0].batch)
                for prec in precs:
                    cells.append(
                        runner.Cell(
                            fw,
                            mode,
                            task,
                            shapes[0].batch,
                            prec,
                            0,
                            dev,
                            prof.name,
                            model=s.canonical(),
                            input_shape=models.shapes_text(shapes),
                        )
                    )
    if not cells:
        raise ValueError(
            f"the plan is empty: none of the modes {', '.join(modes or [])} belongs to "
            f"{', '.join(fws)} (eager and graph work for every framework)"
        )
    plan = runner.Plan(list(dict.fromkeys(cells)), prof)
    out = Path(out or f"results/explore-{prof.name}.jsonl")
    return runner.run(
        plan, out, resume=resume, progress=progress, threads=threads, timeout_s=timeout_s
    )
