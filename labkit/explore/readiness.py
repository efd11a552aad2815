"""Graph readiness: :func:`check` asks a learner's model the course's questions, path by path.

It finds the framework, turns the example inputs into arrays, hands the model to worker
processes (:mod:`labkit.explore.workers`: a spec is built there, a live object pickled by the
framework's ``pack``; one that cannot be pickled is checked in this process, and the report
says so) and joins their answers into a :class:`~labkit.explore.report.Report`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import frameworks as fw_registry
from ..frameworks._kit.explore import Call, GraphBreak, PathResult, Recompile, describe_arrays
from ..runner import inputs
from .report import Report
from .workers import Run, Source, Tick, choose, offered, run_here, run_workers

__all__ = ["DEFAULT_TIMEOUT_S", "check", "probe_spec"]

#: seconds one check may take before its process is stopped (a compile on a slow laptop)
DEFAULT_TIMEOUT_S = 300.0
#: how the report says a model had to be checked in this process
_HERE = (
    "the checks ran in this one: a check that crashes would end it. Give check() a spec "
    "('file.py:build_model') to isolate them."
)


# ---------------------------------------------------------------------------------------------
# the model and its inputs


def _resolve(model: object, framework: str | None) -> Source:
    """Where the model comes from, without building it here: a spec is built by the worker (so
    this process never imports the learner's framework, nor runs the builder)."""
    if framework is not None:
        fw_registry.spec(framework)  # ValueError naming the valid ones
    if isinstance(model, str | os.PathLike):
        spec = inputs.parse(model)
        if spec.saved_model:
            fw = framework or fw_registry.framework_of(spec.file)
            return Source("file", str(spec.file), fw, spec.text, spec.file)
        return Source("spec", spec.canonical(), framework, spec.text)
    fw = framework or fw_registry.framework_of(model)
    if fw is None:
        raise ValueError(
            f"cannot tell which framework a {type(model).__module__}.{type(model).__name__} "
            f"belongs to: pass framework= (one of {offered()}), or give the model as "
            "'file.py:build_model'"
        )
    return Source("object", None, fw, "", model)


_NO_INPUTS = (
    "give example inputs: a shape such as '8x3x224x224' (batch first; several inputs "
    "separated by commas), the tensors/arrays the model takes (keyword ones in kwargs=), or a "
    "function that returns them ('file.py:example_inputs')"
)


def _example(
    example_inputs: object, kwargs: dict | None, layout: str | None
) -> tuple[list[np.ndarray], Call, str | None]:
    """The example arrays, how the model takes them, and the function that makes them instead
    (a spec); no arrays and no function: the builder returns them (a spec's worker finds out)."""
    if inputs.is_function_spec(example_inputs):
        if kwargs:
            raise ValueError(
                "kwargs= goes with tensors; a function of example inputs returns its own"
            )
        return [], Call(layout=layout), inputs.parse(example_inputs).canonical()
    if example_inputs is None and not kwargs:
        return [], Call(layout=layout), None
    if isinstance(example_inputs, str):  # shapes: seeded random arrays of them
        example_inputs = inputs.example_arrays(inputs.parse_inputs(example_inputs))
    elif example_inputs is not None:  # shapes as tuples, or tensors
        with contextlib.suppress(ValueError):
            example_inputs = inputs.example_arrays(inputs.parse_inputs(example_inputs))
    arrays, call = inputs.example_of(example_inputs, kwargs)
    return arrays, Call(call.names, call.constants, layout), None


# ---------------------------------------------------------------------------------------------
# the checks


def _answers(
    source: Source,
    explorer,
    chosen: list[str] | None,
    requested: list[str] | None,
    given: tuple[list[np.ndarray], Call, str | None],
    timeout_s: float,
    tick: Tick,
    report: Report,
) -> Run:
    """The checks' answers: from worker processes, else (a live model that cannot travel) from
    this process, which the report then says."""
    run = Run(source.framework, chosen)
    with tempfile.TemporaryDirectory(prefix="labkit-pack-") as tmp:
        packed = Path(tmp) / "model.pkl" if source.kind == "object" else None
        try:
            if packed:
                explorer.pack(source.obj, packed)
        except ValueError as exc:  # the framework cannot pickle it
            report.notes.append(
                f"the model could not be handed to a separate process ({exc}), so {_HERE}"
            )
        else:
            ran = run_workers(source, packed, *given, chosen or requested, timeout_s, tick)
            if ran.unpack_failed:
                report.notes.append(
                    "the separate process could not load the pickled model "
                    f"({ran.info.get('error', '')}), so {_HERE}"
                )
            else:
                run = ran
        if source.kind == "object" and not run.answers:
            report.isolated = False
            run.checks = chosen
            run.answers = run_here(explorer, source.obj, given[0], given[1], chosen, tick)
            run.info = {"versions": explorer.versions(), "framework": source.framework}
    return run


def _fill(report: Report, run: Run) -> None:
    """The answers of ``run`` into ``report``, in the checks' order."""
    report.framework = run.info.get("framework", report.framework)
    report.versions = run.info.get("versions", {})
    report.inputs = run.info.get("inputs", report.inputs)
    report.call = run.info.get("call_text", report.call)
    notes = list(run.info.get("notes", []))
    for check_name in run.checks or []:
        if check_name not in run.answers:
            continue
        answer = run.answers[check_name]
        report.paths.append(PathResult(**answer["path"]))
        report.graph_breaks += [GraphBreak(**b) for b in answer["graph_breaks"]]
        report.recompiles += [Recompile(**r) for r in answer["recompiles"]]
        notes += answer.get("notes", [])
    first = report.paths[0] if report.paths else None
    if first is not None and first.status != "works" and len(run.checks) > 1:
        why = {
            "fails": "does not get through",
            "crashed": "crashed in",
        }.get(first.status, "stopped in")
        if first.details.get("timed_out"):
            why = "did not finish"
        notes.append(f"the other paths were not checked: the model {why} {first.path}")
    report.notes += list(dict.fromkeys(notes))


def check(
    model: object,
    example_inputs: object = None,
    framework: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    checks: Sequence[str] | None = None,
    progress: bool = True,
    kwargs: dict | None = None,
    layout: str | None = None,
) -> Report:
    """Check every capture path of ``model`` on ``example_inputs``; see :class:`Report`.

    ``model``: a ``torch.nn.Module`` (or a function of tensors), a Keras model or layer, a
    ``tf.function``, an ONNX file, or a spec ``"file.py:build"`` / ``"module:build"`` whose
    builder returns one (or ``(model, example_args, example_kwargs)``; built in the worker only).
    ``example_inputs``: shapes (``"8x3x224x224"``, several separated by commas, or a tuple of
    ints), the tensors themselves, a function that returns them (``"file.py:example_inputs"``), or
    None when the builder returns them; batch first. ``kwargs``: keyword arguments of the call,
    tensors or plain values (``use_cache=False``). ``layout``: ``"NCHW"`` or ``"NHWC"`` for image
    inputs without a signature. ``checks``: a subset of the framework's paths; the first (eager)
    always runs, and when the model does not get through it nothing else is tried.
    ``timeout_s`` bounds each check. Bad input raises ``ValueError`` with the fix."""
    if not (isinstance(timeout_s, int | float) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")
    source = _resolve(model, framework)
    given = _example(example_inputs, kwargs, layout)
    if source.kind == "object" and not given[0] and given[2] is None:
        raise ValueError(_NO_INPUTS)
    requested = None if checks is None else [c.strip() for c in checks]
    explorer, chosen = None, None
    if source.kind == "object":  # the framework is loaded here already: choose here
        explorer = fw_registry.explorer(source.framework)
        chosen = choose(explorer, source.obj, requested)
        source.name = explorer.describe(source.obj)
    report = Report(source.name, source.framework or "", describe_arrays(given[0]))
    report.call = given[1].text(given[0]) if given[0] else ""

    from tqdm.auto import tqdm

    bar = tqdm(total=len(chosen or []), unit="check", disable=not progress, dynamic_ncols=True)

    def tick(check_name: str, done: bool, total: int) -> None:
        if bar.total != total:
            bar.reset(total=total)
        bar.set_description_str(f"{source.name}: {check_name}")
        if done:
            bar.update(1)

    try:
        run = _answers(source, explorer, chosen, requested, given, timeout_s, tick, report)
    finally:
        bar.close()
    _fill(report, run)
    return report


def probe_spec(spec: str | os.PathLike, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
    """What a worker process finds in a spec (this one imports nothing): ``framework``, and
    ``inputs`` (the shapes of the example inputs its builder returns, or ""). ``ValueError``
    when the spec cannot be built or no framework takes the model."""
    source = _resolve(spec, None)
    if source.kind == "file":
        return {"framework": source.framework, "inputs": ""}
    ran = run_workers(source, None, [], Call(), None, None, timeout_s, lambda *_: None, probe=True)
    return {"framework": ran.framework, "inputs": ran.info.get("inputs", "")}
