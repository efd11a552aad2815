"""Graph readiness: :func:`check` asks a learner's model the course's questions, path by path,
in worker processes (:mod:`labkit.explore.workers`), and joins the answers into a
:class:`~labkit.explore.report.Report`; :func:`bench` measures the model, eager against graph
modes, through the benchmark runner (ResNet-50's records, with a ``model`` field).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .. import frameworks as fw_registry
from .. import profiles, runner
from ..frameworks._kit.layout import Call, describe_arrays
from ..runner import inputs
from .report import Report
from .workers import offered, run_workers

__all__ = ["DEFAULT_TIMEOUT_S", "bench", "check"]

#: seconds one check may take before its process is stopped (a compile on a slow laptop)
DEFAULT_TIMEOUT_S = 300.0


def _job(model: object, framework: str | None) -> tuple[dict, str]:
    """The worker's job for ``model`` (a spec or a saved file it builds, else a live object it
    unpickles), and the model's name in the report."""
    if framework is not None:
        fw_registry.spec(framework)  # ValueError naming the valid ones
    if isinstance(model, str | os.PathLike):
        spec = inputs.parse(model)
        fw = framework or (fw_registry.framework_of(spec.file) if spec.saved_model else None)
        return {"model": spec.canonical(), "framework": fw}, spec.text
    fw = framework or fw_registry.framework_of(model)
    if fw is None:
        raise ValueError(
            f"cannot tell which framework a {type(model).__module__}.{type(model).__name__} "
            f"belongs to: pass framework= (one of {offered()}), or give the model as "
            "'file.py:build_model'"
        )
    name = getattr(model, "__name__", None) or getattr(model, "name", None)
    return {"model": model, "framework": fw}, name if isinstance(name, str) else type(
        model
    ).__name__


def _example(example_inputs: object, kwargs: dict | None, layout: str | None) -> dict:
    """The example arrays, how the model takes them, and the function that makes them instead."""
    arrays, call, example = [], Call(), None
    if inputs.is_function_spec(example_inputs):
        if kwargs:
            raise ValueError(
                "kwargs= goes with tensors; a function of example inputs returns its own"
            )
        example = inputs.parse(example_inputs).canonical()
    elif example_inputs is not None or kwargs:
        if isinstance(example_inputs, str):  # shapes: seeded random arrays of them
            example_inputs = inputs.example_arrays(inputs.parse_inputs(example_inputs))
        arrays, call = inputs.example_of(example_inputs, kwargs)
    return {"arrays": arrays, "call": Call(call.names, call.constants, layout), "example": example}


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
    job, name = _job(model, framework)
    job |= _example(example_inputs, kwargs, layout)
    job |= {"checks": None if checks is None else [c.strip() for c in checks], "exact": False}
    report = Report(name, job["framework"] or "", describe_arrays(job["arrays"]))

    from tqdm.auto import tqdm

    with tqdm(total=0, unit="check", disable=not progress, dynamic_ncols=True) as bar:

        def tick(name: str, done: bool, total: int) -> None:
            if bar.total != total:
                bar.reset(total=total)
            bar.set_description_str(f"{report.model}: {name}")
            bar.update(done)

        ran = run_workers(report, job, timeout_s, tick)
    first = report.paths[0]
    if first.status != "works" and len(ran) > 1:
        why = {"fails": "does not get through", "crashed": "crashed in"}.get(first.status)
        why = "did not finish" if first.details.get("timed_out") else why or "stopped in"
        report.notes.append(f"the other paths were not checked: the model {why} {first.path}")
    report.notes = list(dict.fromkeys(report.notes))
    return report


def bench(
    spec: str | os.PathLike,
    example_input_shapes: str | None = None,
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
    """Measure the model a spec builds in each cell (framework x mode x task x precision, a
    fresh process each, as ResNet-50's cells); records go to ``out`` (default
    ``results/explore-<profile>.jsonl``). ``example_input_shapes`` None: the inputs the builder
    returns. ``frameworks`` default: the model's own and the runtimes of its exports."""
    s = inputs.parse(spec)
    if inputs.is_function_spec(example_input_shapes):
        raise ValueError(
            "the benchmark takes input shapes, or the example inputs the builder returns beside "
            "the model (return (model, example_args, example_kwargs)); a separate function of "
            "example inputs is for the checks only"
        )
    shapes, own = example_input_shapes, framework
    if shapes is None or own is None:  # the builder's inputs, the model's framework
        found = check(s.canonical(), shapes, own, checks=[], progress=False)
        shapes, own = shapes or found.inputs, own or found.framework
    plan = runner.Plan.for_model(
        s,
        shapes,
        own,
        frameworks=frameworks,
        modes=modes,
        tasks=tasks,
        precisions=precisions,
        device=device,
        profile=profile,
    )
    out = Path(out or f"results/explore-{plan.profile.name}.jsonl")
    return runner.run(
        plan, out, resume=resume, progress=progress, threads=threads, timeout_s=timeout_s
    )
