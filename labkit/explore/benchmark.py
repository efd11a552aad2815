"""Is graph mode worth it for this model, here? :func:`bench` measures a learner's model, eager
against graph modes, through the benchmark runner: the cells are a plan like the ResNet-50's
(:meth:`labkit.runner.Plan.for_model`), each in a fresh process, the same JSONL records with a
``model`` field naming the spec, so ``python -m labkit report``, the speedups and the break-even
read them unchanged. Not for: whether the model captures (:func:`labkit.explore.check`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .. import profiles, runner
from ..runner import inputs
from .readiness import framework_of_spec

__all__ = ["bench"]


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
    s = inputs.parse(spec)
    shapes = inputs.parse_inputs(example_input_shapes)
    own = framework or framework_of_spec(s.canonical())
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
