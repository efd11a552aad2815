"""Graph readiness: :func:`check` asks a learner's model the course's questions, path by path,
in worker processes (:mod:`labkit.explore.workers`), and joins the answers into a
:class:`~labkit.explore.report.Report`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .. import frameworks as fw_registry
from ..frameworks._kit.explore import GraphBreak, PathResult, Recompile
from ..frameworks._kit.layout import Call, describe_arrays
from ..runner import inputs
from .report import Report
from .workers import Run, Source, offered, run_workers

__all__ = ["DEFAULT_TIMEOUT_S", "check"]

#: seconds one check may take before its process is stopped (a compile on a slow laptop)
DEFAULT_TIMEOUT_S = 300.0


def _resolve(model: object, framework: str | None) -> Source:
    """Where the model comes from; a spec is built by the worker only."""
    if framework is not None:
        fw_registry.spec(framework)  # ValueError naming the valid ones
    if isinstance(model, str | os.PathLike):
        spec = inputs.parse(model)
        if spec.saved_model:
            fw = framework or fw_registry.framework_of(spec.file)
            return Source("file", str(spec.file), fw, spec.text)
        return Source("spec", spec.canonical(), framework, spec.text)
    fw = framework or fw_registry.framework_of(model)
    if fw is None:
        raise ValueError(
            f"cannot tell which framework a {type(model).__module__}.{type(model).__name__} "
            f"belongs to: pass framework= (one of {offered()}), or give the model as "
            "'file.py:build_model'"
        )
    return Source("object", None, fw, "", model)


def _example(example_inputs: object, kwargs: dict | None, layout: str | None):
    """The example arrays, how the model takes them, and the function that makes them instead."""
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
    arrays, call = inputs.example_of(example_inputs, kwargs)
    return arrays, Call(call.names, call.constants, layout), None


def _fill(report: Report, run: Run) -> None:
    """The answers of ``run`` into ``report``, in the checks' order."""
    info = run.info
    report.framework = info.get("framework", report.framework)
    report.versions = info.get("versions", {})
    report.inputs = info.get("inputs", report.inputs)
    report.call = info.get("call_text", report.call)
    notes = list(info.get("notes", []))
    for name in [c for c in run.checks or [] if c in run.answers]:
        answer = run.answers[name]
        report.paths.append(PathResult(**answer["path"]))
        report.graph_breaks += [GraphBreak(**b) for b in answer["graph_breaks"]]
        report.recompiles += [Recompile(**r) for r in answer["recompiles"]]
        notes += answer["notes"]
    first = report.paths[0] if report.paths else None
    if first is not None and first.status != "works" and len(run.checks) > 1:
        why = {"fails": "does not get through", "crashed": "crashed in"}.get(first.status)
        why = "did not finish" if first.details.get("timed_out") else why or "stopped in"
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
    builder returns one (or ``(model, example_args, example_kwargs)``). ``example_inputs``:
    shapes (``"8x3x224x224"``, batch first, several separated by commas), the tensors, a
    function that returns them (``"file.py:example_inputs"``), or None when the builder returns
    them. ``kwargs``: keyword arguments of the call (tensors or plain values). ``layout``:
    ``"NCHW"`` or ``"NHWC"``. ``checks``: a subset of the paths (the first, eager, always runs;
    ``[]``: only it).
    ``timeout_s`` bounds each check. Bad input raises ``ValueError`` with the fix."""
    if not (isinstance(timeout_s, int | float) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")
    source = _resolve(model, framework)
    arrays, call, example = _example(example_inputs, kwargs, layout)
    requested = None if checks is None else [c.strip() for c in checks]
    if source.kind == "object":
        name = getattr(source.obj, "__name__", None) or getattr(source.obj, "name", None)
        source.name = name if isinstance(name, str) else type(source.obj).__name__
    report = Report(source.name, source.framework or "", describe_arrays(arrays))
    report.call = call.text(arrays) if arrays else ""

    from tqdm.auto import tqdm

    bar = tqdm(total=0, unit="check", disable=not progress, dynamic_ncols=True)

    def tick(name: str, done: bool, total: int) -> None:
        if bar.total != total:
            bar.reset(total=total)
        bar.set_description_str(f"{source.name}: {name}")
        bar.update(done)

    try:
        run = run_workers(source, arrays, call, example, requested, timeout_s, tick)
    finally:
        bar.close()
    _fill(report, run)
    return report
