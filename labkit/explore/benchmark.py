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
from .readiness import probe_spec

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
    found = (
        probe_spec(s.canonical())
        if example_input_shapes is None or framework is None
        else {"framework": framework}
    )
    if example_input_shapes is None and not found["inputs"]:
        raise ValueError(
            f"{s.text}: give the input shapes (--input 8x3x224x224), or let the builder return "
            "(model, example_args, example_kwargs)"
        )
    shapes = found["inputs"] if example_input_shapes is None else example_input_shapes
    own = framework or found["framework"]
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
