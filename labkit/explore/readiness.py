"""Graph readiness: :func:`check` asks a learner's model the course's questions, path by path,
in worker processes (:mod:`labkit.explore.workers`), and joins the answers into a
:class:`~labkit.explore.report.Report`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict

from .. import frameworks as fw_registry
from ..frameworks._kit.layout import Call, describe_arrays
from ..runner import inputs
from .report import Report
from .workers import Run, offered, run_workers

__all__ = ["DEFAULT_TIMEOUT_S", "check"]

#: seconds one check may take before its process is stopped (a compile on a slow laptop)
DEFAULT_TIMEOUT_S = 300.0


def _job(model: object, framework: str | None) -> tuple[dict, str]:
    """The worker's job for ``model`` (a spec or a saved file it builds, else a live object it
    unpickles: ``"model"`` None), and the model's name in the report."""
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
    return {"model": None, "framework": fw}, name if isinstance(name, str) else type(model).__name__


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
    arrays, call, example = _example(example_inputs, kwargs, layout)
    job |= {"example": example, "call": asdict(call)}
    job["checks"] = None if checks is None else [c.strip() for c in checks]
    report = Report(name, job["framework"] or "", describe_arrays(arrays))

    from tqdm.auto import tqdm

    with tqdm(total=0, unit="check", disable=not progress, dynamic_ncols=True) as bar:

        def tick(name: str, done: bool, total: int) -> None:
            if bar.total != total:
                bar.reset(total=total)
            bar.set_description_str(f"{report.model}: {name}")
            bar.update(done)

        run = Run(report, tick)
        run_workers(run, job, None if job["model"] else model, arrays, timeout_s)
    first = report.paths[0]
    if first.status != "works" and len(run.checks) > 1:
        why = {"fails": "does not get through", "crashed": "crashed in"}.get(first.status)
        why = "did not finish" if first.details.get("timed_out") else why or "stopped in"
        report.notes.append(f"the other paths were not checked: the model {why} {first.path}")
    report.notes = list(dict.fromkeys(report.notes))
    return report
