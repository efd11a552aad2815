"""Is graph mode worth it for this model, here? :func:`bench` measures a learner's model, eager
against graph modes, through the benchmark runner: ResNet-50's JSONL records, with a ``model``
field naming the spec.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .. import profiles, runner
from ..runner import inputs
from .readiness import check

__all__ = ["bench"]


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
