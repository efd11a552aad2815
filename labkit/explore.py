"""Bring your own model: what happens to it in graph mode, and is graph mode worth it here?

Framework-free. :func:`check` asks a learner's model the questions the course asks of its
ResNet-50, each capture path in turn (eager, ``torch.compile`` with its graph breaks and
recompilations, ``fullgraph``, ``torch.export`` strict and non-strict, the TorchScript trace, ONNX
export; ``tf.function`` and its retracing, XLA, SavedModel, TF Lite; ONNX Runtime at each
optimisation level) and returns a :class:`Report`: per path *works*, *caveats*, *fails* or
*crashed*, the reason in plain words and the framework's own message. The checks themselves live
in each framework's package (``labkit/frameworks/<name>/explore.py``, reached through the
registry); this module picks the framework from the model's type, runs the checks and joins the
answers.

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
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import bench as bench_lib
from . import frameworks as fw_registry
from . import models, profiles, runner

STATUSES: tuple[str, ...] = ("works", "caveats", "fails", "crashed")
#: seconds one check may take before its process is stopped (a compile on a slow laptop)
DEFAULT_TIMEOUT_S = 300.0
#: relative tolerance of "agrees with eager" (float32 graphs reorder sums; bigger gaps are bugs)
RTOL = 1e-3
LOG_TAIL_LINES = 12


# ---------------------------------------------------------------------------------------------
# the report


@dataclass
class PathResult:
    """One capture path: does the model get through it, why (plain words), and the framework's
    own message (condensed; empty when there is nothing to say)."""

    path: str
    status: str
    reason: str
    message: str = ""
    details: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {', '.join(STATUSES)}")


@dataclass
class GraphBreak:
    """Where a graph capture stopped and handed control back to Python, and why."""

    reason: str  #: in plain words
    location: str  #: ``file.py:12 in forward``
    code: str = ""  #: the source line
    message: str = ""  #: the framework's own words, condensed
    count: int = 1  #: how many times the capture stopped there
    path: str = ""  #: the capture path that reported it


@dataclass
class Recompile:
    """How often a capture path compiled (traced) again while one dimension of the input changed."""

    path: str  #: e.g. ``torch.compile``, ``tf.function(reduce_retracing=True)``
    varied: str  #: what changed: ``batch size``, ``sequence length``, ``image size``
    shapes: list[str]  #: the input shapes called, in order
    compiles: list[int]  #: graphs compiled (traced) during each call
    reasons: list[str] = field(default_factory=list)  #: the framework's reasons, condensed

    @property
    def total(self) -> int:
        return sum(self.compiles)

    @property
    def every_call(self) -> bool:
        """True when every new shape compiled again (no generalisation)."""
        return all(c > 0 for c in self.compiles)


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
            "each check in a separate process"
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
            lines.append(f"| {p.path} | {status} | {_md(p.reason)} | {_md(p.message, 240)} |")
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
                    f"| {b.path} | {_md(b.location)}{times} | `{_md(b.code, 80)}` | "
                    f"{_md(b.reason)} | {_md(b.message, 160)} |"
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
                    f"{', '.join(map(str, r.compiles))} | {_md('; '.join(r.reasons[:2]), 160)} |"
                )
        if self.notes:
            lines += ["", *[f"- {_md(n)}" for n in self.notes]]
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items() if n)
        return f"<labkit.explore.Report {self.model} ({self.framework}): {counts}>"


def _md(text: str, limit: int | None = None) -> str:
    text = " ".join(str(text).split())
    if limit and len(text) > limit:
        text = text[: limit - 3] + "..."
    return text.replace("|", "\\|")


# ---------------------------------------------------------------------------------------------
# helpers for the framework packages' checks (numpy only)


def result(
    path: str,
    status: str,
    reason: str,
    message: str = "",
    graph_breaks: Iterable[GraphBreak] = (),
    recompiles: Iterable[Recompile] = (),
    **details,
) -> dict:
    """One check's answer as plain data (what a worker sends back)."""
    return {
        "path": asdict(PathResult(path, status, reason, message, details)),
        "graph_breaks": [asdict(b) for b in graph_breaks],
        "recompiles": [asdict(r) for r in recompiles],
    }


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def condense(message: object, lines: int = 2, limit: int = 400) -> str:
    """The first ``lines`` non-empty lines of an error message, at most ``limit`` characters."""
    if isinstance(message, BaseException):
        text = str(message).strip()
        message = f"{type(message).__name__}: {text}" if text else type(message).__name__
    text = _ANSI.sub("", str(message))
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][:lines]
    out = " / ".join(kept)
    return out if len(out) <= limit else out[: limit - 3] + "..."


_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)(?:, in (\w+))?')


def _user_frame(text: str) -> re.Match | None:
    found = [
        m
        for m in _FILE_LINE.finditer(text)
        if "site-packages" not in m.group(1)
        and "dist-packages" not in m.group(1)
        and not m.group(1).startswith("<")
    ]
    return found[-1] if found else None


def user_location(text: str) -> str:
    """``file.py:12 in forward``: the last place in ``text`` (an error message or traceback)
    that is the learner's code rather than a library's; "" when there is none."""
    m = _user_frame(text)
    if m is None:
        return ""
    return f"{Path(m.group(1)).name}:{m.group(2)}" + (f" in {m.group(3)}" if m.group(3) else "")


def user_code(text: str) -> str:
    """The source line at :func:`user_location` (read from the file), or ""."""
    import linecache

    m = _user_frame(text)
    return linecache.getline(m.group(1), int(m.group(2))).strip() if m else ""


def agreement(
    outputs: Sequence[np.ndarray], references: Sequence[np.ndarray], rtol: float = RTOL
) -> tuple[bool, float, str]:
    """Whether ``outputs`` match ``references`` (count, shapes, values within ``rtol`` of the
    references' scale); the largest absolute difference; what differs, in words."""
    if len(outputs) != len(references):
        return False, float("inf"), f"{len(outputs)} outputs instead of {len(references)}"
    worst = 0.0
    for i, (out, ref) in enumerate(zip(outputs, references)):
        out, ref = np.asarray(out), np.asarray(ref)
        if out.shape != ref.shape:
            return False, float("inf"), f"output {i} has shape {out.shape}, eager {ref.shape}"
        if ref.size == 0:
            continue
        a, b = out.astype(np.float64), ref.astype(np.float64)
        nan = np.isnan(a) | np.isnan(b)
        if np.any(np.isnan(a) != np.isnan(b)):
            return False, float("inf"), f"output {i} has NaN where eager has none (or the reverse)"
        diff = np.abs(a - b)[~nan]
        scale = float(np.max(np.abs(b[~nan]))) if diff.size else 0.0
        biggest = float(diff.max()) if diff.size else 0.0
        worst = max(worst, biggest)
        if biggest > rtol * max(scale, 1e-6):
            return False, worst, f"output {i} differs by up to {biggest:.3g} (scale {scale:.3g})"
    return True, worst, ""


def probes(arrays: Sequence[np.ndarray]) -> list[tuple[str, list[np.ndarray]]]:
    """Other inputs of the same shapes, to catch a graph that froze a data-dependent decision:
    new random values, and all zeros (padding, an empty sequence)."""
    new = [
        models.random_array(a.shape, a.dtype, 1000 + k)
        if a.dtype.kind != "i"
        else np.random.default_rng(1000 + k).integers(a.min(), a.max() + 1, a.shape).astype(a.dtype)
        for k, a in enumerate(arrays)
    ]
    return [("new values", new), ("zeros", [np.zeros_like(a) for a in arrays])]


@dataclass(frozen=True)
class Variation:
    """A series of inputs in which one kind of dimension changes at every call."""

    name: str  #: "batch size", "sequence length" or "image size"
    inputs: list[list[np.ndarray]]  #: the example first, then three new sizes

    @property
    def shapes(self) -> list[str]:
        return [models.describe_arrays(xs) for xs in self.inputs]


def _resized(arrays: Sequence[np.ndarray], dims: dict[int, dict[int, int]], seed: int):
    """``arrays`` with the sizes in ``dims`` (input -> {dim: size}), values drawn anew."""
    out = []
    for k, a in enumerate(arrays):
        shape = list(a.shape)
        for d, size in dims.get(k, {}).items():
            shape[d] = size
        if a.dtype.kind == "i":
            rng = np.random.default_rng(seed + k)
            out.append(rng.integers(a.min(), a.max() + 1, shape).astype(a.dtype))
        else:
            out.append(models.random_array(shape, a.dtype, seed + k))
    return out


def variations(arrays: Sequence[np.ndarray]) -> list[Variation]:
    """The series the new-shape checks call: the batch (the first dimension of every input)
    and, for a single input, its sequence length (rank 3: batch, time, features) or its image
    size (rank 4 and up: the dimensions after the channels)."""
    out = []
    if arrays and all(a.ndim >= 1 for a in arrays):
        b = arrays[0].shape[0]
        sizes = [b + 1, b + 2, b + 3]
        out.append(
            Variation(
                "batch size",
                [list(arrays)]
                + [
                    _resized(arrays, {k: {0: s} for k in range(len(arrays))}, 10 * s) for s in sizes
                ],
            )
        )
    if len(arrays) == 1 and arrays[0].ndim >= 3:
        a = arrays[0]
        if a.ndim == 3:
            name, dims = "sequence length", (1,)
        else:
            name, dims = "image size", tuple(range(2, a.ndim))
        step = max(1, a.shape[dims[0]] // 4)
        series = [
            _resized(arrays, {0: {d: a.shape[d] + i * step for d in dims}}, 100 + i)
            for i in (1, 2, 3)
        ]
        out.append(Variation(name, [list(arrays)] + series))
    return out


# ---------------------------------------------------------------------------------------------
# running the checks: worker processes, crash and timeout handling


@dataclass
class _Source:
    """Where the worker gets the model: a spec to rebuild, a saved file, or a packed object."""

    kind: str  # "spec" | "file" | "object"
    value: str | None
    framework: str
    name: str
    obj: object = None


def _resolve(model: object, framework: str | None) -> _Source:
    if isinstance(model, str | os.PathLike):
        spec = models.parse(model)
        if spec.saved_model:
            fw = framework or fw_registry.framework_of(spec.file)
            return _Source("file", str(spec.file), fw, spec.name, spec.file)
        built = models.build(spec)
        fw = framework or fw_registry.framework_of(built)
        if fw is None:
            raise ValueError(
                f"model {spec.text!r}: its builder returned a {type(built).__name__}, which no "
                f"registered framework claims; pass framework= (one of "
                f"{', '.join(s.name for s in fw_registry.specs() if s.explores)})"
            )
        return _Source("spec", spec.canonical(), fw, spec.name, built)
    fw = framework or fw_registry.framework_of(model)
    if fw is None:
        raise ValueError(
            f"cannot tell which framework a {type(model).__module__}.{type(model).__name__} "
            "belongs to: pass framework= (one of "
            f"{', '.join(s.name for s in fw_registry.specs() if s.explores)}), or give the "
            "model as 'file.py:build_model'"
        )
    return _Source("object", None, fw, "", model)


def _is_shape_like(x: object) -> bool:
    if isinstance(x, str | models.Input):
        return True
    return (
        isinstance(x, tuple | list)
        and bool(x)
        and all(isinstance(d, int | np.integer) and not isinstance(d, bool) for d in x)
    )


def _example(example_inputs: object, explorer) -> list[np.ndarray]:
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
    return [np.ascontiguousarray(a) for a in explorer.to_arrays(items)]


def _child_env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": models.child_pythonpath(),
        "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python",
        "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
        "PYTHONUNBUFFERED": "1",
    }


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
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return "\n".join(lines[-LOG_TAIL_LINES:])
    return ""


def _died(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exited with status {code}"


def _crashed(name: str, code: int, log: str) -> dict:
    return result(
        name,
        "crashed",
        f"the check's process died ({_died(code)}) while it ran {name}: the framework crashed "
        "(or ran out of memory) on this model; the other checks ran in a fresh process",
        condense(log, lines=LOG_TAIL_LINES, limit=1200),
    )


def _timed_out(name: str, timeout_s: float) -> dict:
    return result(
        name,
        "fails",
        f"did not finish within {timeout_s:g} s, so its process was stopped; give check() a "
        "larger timeout_s if it only needs longer",
    )


def _run_workers(
    source: _Source,
    packed: Path | None,
    arrays: list[np.ndarray],
    checks: list[str],
    gate: str,
    timeout_s: float,
    tick: Callable[[str, bool], None],
) -> tuple[dict[str, dict], dict] | None:
    """Run ``checks`` in worker processes; restart after a crash or a timeout.

    Returns the answers by check and what the worker reported about itself (versions), or
    None when the worker could not unpack the model (the caller then checks it here).
    """
    answers: dict[str, dict] = {}
    info: dict = {}
    remaining = list(checks)
    with tempfile.TemporaryDirectory(prefix="labkit-explore-") as tmp:
        work = Path(tmp)
        np.savez(work / "inputs.npz", *arrays)
        for attempt in range(len(checks) + 1):
            if not remaining:
                break
            events, log = work / f"events-{attempt}.jsonl", work / f"log-{attempt}.txt"
            job = {
                "framework": source.framework,
                "kind": "packed" if packed else source.kind,
                "value": str(packed) if packed else source.value,
                "inputs": str(work / "inputs.npz"),
                "count": len(arrays),
                "checks": remaining,
                "gate": gate,
                "events": str(events),
            }
            (work / "job.json").write_text(json.dumps(job))
            cmd = [sys.executable, "-m", "labkit.explore", "--job", str(work / "job.json")]
            cmd += ["--parent", str(os.getpid())]
            with open(log, "wb") as logf:
                proc = subprocess.Popen(
                    cmd,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=_child_env(),
                    cwd=tmp,
                    start_new_session=True,
                )
            current, started, seen, code = None, time.perf_counter(), 0, None
            stop, progressed = False, False
            try:
                while True:
                    code = proc.poll()
                    new, seen = _read_events(events, seen)
                    for ev in new:
                        if ev["event"] == "ready" or ev["event"] == "unpack_failed":
                            info = ev
                        elif ev["event"] == "start":
                            current, started = ev["check"], time.perf_counter()
                            tick(current, False)
                        elif ev["event"] == "done":
                            progressed = True
                            answers[ev["check"]] = ev["result"]
                            remaining.remove(ev["check"])
                            tick(ev["check"], True)
                            current, started = None, time.perf_counter()
                            if ev["check"] == gate and ev["result"]["path"]["status"] == "fails":
                                stop = True
                    if info.get("event") == "unpack_failed":
                        return None
                    if code is not None or stop:
                        break
                    if time.perf_counter() - started > timeout_s:
                        runner._kill_group(proc)
                        name = current or remaining[0]
                        answers[name] = _timed_out(name, timeout_s)
                        remaining.remove(name)
                        tick(name, True)
                        current = None
                        break
                    time.sleep(0.05)
            finally:
                runner._kill_group(proc)
            if stop:
                break
            if current is not None:  # died in the middle of a check
                answers[current] = _crashed(current, code, _log_tail(log))
                remaining.remove(current)
                tick(current, True)
            elif remaining and code is not None and not progressed:
                # died before its first check (loading the framework or the model): a fresh
                # process would die the same way, so every remaining check is reported
                for name in list(remaining):
                    answers[name] = _crashed(name, code, _log_tail(log))
                    answers[name]["path"]["reason"] = (
                        f"the check process died ({_died(code)}) before its first check, "
                        "while it loaded the framework or the model"
                    )
                    remaining.remove(name)
                    tick(name, True)
    return answers, info


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
            condense(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}", lines=6),
        )
    answer["path"].setdefault("details", {})["seconds"] = round(time.perf_counter() - t0, 3)
    return answer


def _run_here(explorer, model, arrays, checks, gate, tick) -> dict[str, dict]:
    session = explorer.session(model, arrays)
    answers = {}
    for name in checks:
        tick(name, False)
        answers[name] = _safe_check(explorer, name, session)
        tick(name, True)
        if name == gate and answers[name]["path"]["status"] == "fails":
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
    ``"module:build"`` whose builder returns one of these. ``example_inputs``: a shape text such
    as ``"8x3x224x224"`` (several inputs separated by commas), a tuple of ints, or the tensors
    (arrays) themselves; the first dimension is the batch. ``framework`` overrides the
    framework found from the model's type. ``timeout_s`` bounds each check. ``checks`` picks a
    subset of the framework's paths (in their order); the first path (eager, or for a saved
    model its loading) always runs, because nothing else can work when it does not.

    Bad input (an unknown spec, a builder that raises, a model no framework claims, unknown
    checks) raises ``ValueError`` with the fix. The model not running on the inputs is not an
    error: the report says so on its first path and checks nothing else.
    """
    if not (isinstance(timeout_s, int | float) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")
    source = _resolve(model, framework)
    explorer = fw_registry.explorer(source.framework)
    if not explorer.accepts(source.obj):
        raise ValueError(
            f"{explorer.SPEC.display}'s checks do not take a {type(source.obj).__name__}: "
            f"{explorer.ACCEPTS}"
        )
    gate = explorer.CHECKS[0]
    if checks is None:
        chosen = list(explorer.CHECKS)
    else:
        chosen = [c.strip() for c in checks]
        bad = [c for c in chosen if c not in explorer.CHECKS]
        if bad:
            raise ValueError(
                f"unknown check {', '.join(map(repr, bad))} for {explorer.SPEC.display}: valid "
                f"checks are {', '.join(explorer.CHECKS)}"
            )
        chosen = [gate] + [c for c in explorer.CHECKS if c in chosen and c != gate]
    arrays = _example(example_inputs, explorer)
    name = source.name or explorer.describe(source.obj)
    report = Report(name, source.framework, models.describe_arrays(arrays))

    from tqdm.auto import tqdm

    bar = tqdm(total=len(chosen), unit="check", disable=not progress, dynamic_ncols=True)

    def tick(check_name: str, done: bool) -> None:
        bar.set_description_str(f"{name}: {check_name}")
        if done:
            bar.update(1)

    packed, answers, info = None, None, {}
    try:
        with tempfile.TemporaryDirectory(prefix="labkit-pack-") as tmp:
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
                ran = _run_workers(source, packed, arrays, chosen, gate, timeout_s, tick)
                if ran is None:
                    report.notes.append(
                        "the separate process could not load the pickled model, so the checks "
                        "ran in this one: a check that crashes would end it. Give check() a "
                        "spec ('file.py:build_model') to isolate them."
                    )
                else:
                    answers, info = ran
            if answers is None:
                report.isolated = False
                bar.reset(total=len(chosen))
                answers = _run_here(explorer, source.obj, arrays, chosen, gate, tick)
                info = {"versions": explorer.versions()}
    finally:
        bar.close()
    report.versions = info.get("versions", {})
    for check_name in chosen:
        if check_name not in answers:
            continue
        answer = answers[check_name]
        report.paths.append(PathResult(**answer["path"]))
        report.graph_breaks += [GraphBreak(**b) for b in answer["graph_breaks"]]
        report.recompiles += [Recompile(**r) for r in answer["recompiles"]]
    first = report.paths[0] if report.paths else None
    if first is not None and first.status == "fails" and len(chosen) > 1:
        report.notes.append(
            f"the other paths were not checked: the model does not get through {gate} "
            "with these inputs"
        )
    return report


# ---------------------------------------------------------------------------------------------
# the worker process


def _emit(path: Path, event: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(event, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


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
        runner._exit_with_parent(args.parent, Path(args.job).parent)
    explorer = fw_registry.explorer(job["framework"])
    try:
        if job["kind"] == "packed":
            model = explorer.unpack(Path(job["value"]))
        elif job["kind"] == "file":
            model = Path(job["value"])
        else:
            model = models.build(job["value"])
    except Exception as exc:  # noqa: BLE001 - reported in the report, never a crash of check()
        _emit(events, {"event": "unpack_failed", "error": condense(exc)})
        return 0
    with np.load(job["inputs"]) as data:
        arrays = [data[f"arr_{i}"] for i in range(job["count"])]
    session = explorer.session(model, arrays)
    _emit(events, {"event": "ready", "versions": explorer.versions()})
    for name in job["checks"]:
        print(f"{MARK}{name} ===", file=sys.stderr, flush=True)
        _emit(events, {"event": "start", "check": name})
        answer = _safe_check(explorer, name, session)
        _emit(events, {"event": "done", "check": name, "result": answer})
        if name == job["gate"] and answer["path"]["status"] == "fails":
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

    ``frameworks`` defaults to the model's own framework and the runtimes of its exports (a
    PyTorch model: also ONNX Runtime). ``modes`` and ``tasks`` take what ``python -m labkit
    bench`` takes (``eager``, ``graph``, a mode's own name; ``latency``, ``throughput``,
    ``train``: a synthetic loss, the mean of the squared outputs). Bad input raises
    ``ValueError``; a model that fails in one cell is a recorded failure.
    """
    s = models.parse(spec)
    inputs = models.parse_inputs(example_input_shapes)
    if s.saved_model:
        own = fw_registry.framework_of(s.file)
    else:
        built = models.build(s)
        own = fw_registry.framework_of(built)
        if own is None:
            raise ValueError(
                f"model {s.text!r}: its builder returned a {type(built).__name__}, which no "
                "registered framework claims"
            )
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
    tks = runner._pick("task", tasks, bench_lib.TASKS)
    precs = runner._pick(
        "precision", precisions if precisions is not None else ["fp32"], bench_lib.PRECISIONS
    )
    (dev,) = runner._pick("device", [device], bench_lib.DEVICES)
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


if __name__ == "__main__":
    from labkit.explore import _worker_main as _main  # the module proper, not this __main__ copy

    sys.exit(_main())
