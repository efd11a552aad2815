"""What a run measures: its cells, and the two workloads a cell can measure.

A :class:`Cell` is one measurement (a framework's mode on a task at a batch size, precision and
device, sized by a profile); a :class:`Plan` is the cells of a run, in order. Two workloads:

- the lab's ResNet-50 (:data:`RESNET50`): :meth:`Plan.build` crosses frameworks x modes x tasks
  x batch sizes x precisions;
- a learner's model (:data:`LEARNER_MODEL`): :meth:`Plan.for_model` crosses frameworks x modes x
  tasks x precisions for a spec and its input shapes (:mod:`labkit.runner.inputs`), the cells
  recording ``model`` and ``input_shape``.

Where the two differ (a cell's label, how its step is prepared, whether a compute ceiling
applies, what its process must import) is said once, by :class:`Cell`; the rest of the runner
treats every cell alike. Not for: running cells (:mod:`labkit.runner.loop`, :mod:`labkit.runner.process`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import frameworks as fw_registry
from .. import profiles, resnet, results
from ..frameworks.contract import DEVICES, PRECISIONS, TASKS, Prepared, Unsupported
from . import inputs

__all__ = ["Cell", "Plan"]


@dataclass(frozen=True)
class Cell:
    """One measurement: a framework's mode on a task at a batch size, precision and device.

    Its model is the lab's ResNet-50 (the seed-0 weights of :mod:`labkit.resnet`, FLOP count
    known, so a figure stands against this machine's ceiling), or a learner's model
    (:meth:`Plan.for_model`: built in the cell's process from its spec, run on the example
    inputs its builder returns when they have the cell's ``input_shape``, else on seeded inputs
    of that shape; no ceiling applies).
    """

    framework: str
    mode: str
    task: str
    batch_size: int
    precision: str
    image_size: int
    device: str
    profile: str
    model: str = results.DEFAULT_MODEL
    input_shape: str = ""

    @property
    def custom(self) -> bool:
        """Whether the cell measures a learner's model rather than the ResNet-50."""
        return self.model != results.DEFAULT_MODEL

    def label(self) -> str:
        if self.custom:
            return (
                f"{results.model_name(self.model)} {self.framework} {self.mode} {self.task} "
                f"{self.input_shape} {self.precision} {self.device}"
            )
        return (
            f"{self.framework} {self.mode} {self.task} b{self.batch_size} {self.precision} "
            f"{self.image_size}px {self.device}"
        )

    def key(self) -> tuple:
        return tuple(getattr(self, k) for k in results.KEY)

    def child_path(self) -> list[str]:
        """``PYTHONPATH`` entries the cell's process needs besides labkit's: a learner's module
        must import there as it does here."""
        return inputs.child_pythonpath() if self.custom else []

    def prepare(self, adapter) -> Prepared:
        """The cell's step, prepared by ``adapter`` (in the cell's own process)."""
        if not self.custom:
            weights = resnet.init_weights(0)
            return adapter.prepare(
                weights,
                self.mode,
                self.task,
                self.batch_size,
                self.precision,
                self.image_size,
                self.device,
            )
        if not hasattr(adapter, "prepare_model"):
            raise Unsupported(f"labkit cannot benchmark other models with {self.framework}")
        model, given = inputs.build_example(self.model)
        arrays = inputs.example_arrays(inputs.parse_inputs(self.input_shape))
        if given is not None:  # the builder's own inputs, at this cell's batch
            example = inputs.to_batch(given[0], arrays[0].shape[0] if arrays[0].ndim else 1)
            if [(a.shape, a.dtype) for a in example] == [(a.shape, a.dtype) for a in arrays]:
                arrays = example
                own = fw_registry.framework_of(model)
                if own is not None and given[1].binds:
                    model = fw_registry.explorer(own).bind(model, given[1])
        return adapter.prepare_model(
            model, arrays, self.mode, self.task, self.precision, self.device
        )


# ---------------------------------------------------------------------------------------------
# choosing


def _pick(kind: str, given: Sequence[str] | None, valid: Sequence[str]) -> list[str]:
    if given is None:
        return list(valid)
    given = [g.strip() for g in given if g.strip()]
    if not given:
        raise ValueError(f"no {kind} given: choose from {', '.join(valid)}")
    bad = [g for g in given if g not in valid]
    if bad:
        raise ValueError(
            f"unknown {kind} {', '.join(map(repr, bad))}: valid {kind}s are {', '.join(valid)}"
        )
    return list(dict.fromkeys(given))


def mode_names() -> list[str]:
    """Every word ``--modes`` accepts: eager, graph, quick, and each framework's own modes."""
    own = [m for fw in fw_registry.NAMES for m in fw_registry.MODES[fw]]
    return list(dict.fromkeys(["eager", "graph", "quick", *own]))


def resolve_modes(framework: str, modes: Sequence[str] | None) -> list[str]:
    """The modes of ``framework`` that ``modes`` selects (None: all of them).

    ``eager`` is the framework's eager mode (MindSpore: pynative), ``graph`` every other mode
    (ONNX Runtime's only mode is a graph), ``quick`` the eager mode and the spec's first graph
    mode (what a quick plan measures), and a mode's own name selects it.
    """
    spec = fw_registry.spec(framework)
    if modes is None:
        return list(spec.modes)
    out: list[str] = []
    for m in modes:
        if m == "eager":
            out += [spec.eager] if spec.eager else []
        elif m == "graph":
            out += spec.graph_modes
        elif m == "quick":
            out += ([spec.eager] if spec.eager else []) + list(spec.graph_modes[:1])
        elif m in spec.modes:
            out.append(m)
    return list(dict.fromkeys(x for x in spec.modes if x in out))  # the framework's order


def _batches(sizes: Sequence[int] | None) -> list[int] | None:
    if sizes is None:
        return None
    bad = [b for b in sizes if isinstance(b, bool) or not isinstance(b, int) or b < 1]
    if bad or not sizes:
        raise ValueError(
            f"batch sizes must be whole numbers >= 1, got {list(sizes)}: e.g. --batch-sizes 1,8"
        )
    return list(dict.fromkeys(sizes))


def _profile(profile: str | profiles.Profile | None) -> profiles.Profile:
    return profile if isinstance(profile, profiles.Profile) else profiles.get(profile)


def _cells(
    fws: Sequence[str],
    choices: tuple[Sequence[str] | None, Sequence[str] | None, Sequence[str] | None, str],
    prof: profiles.Profile,
    sized: Callable[[str], list[dict]],
    offered: bool,
) -> list[Cell]:
    """The cells of frameworks x modes x tasks x sizes x precisions, each once, in that order,
    ``choices`` (modes, tasks, precisions, device) checked first; ``sized(task)``: the fields
    of a task's cells that the model decides (batch size, image size, model, input shape).
    None at all: ``ValueError`` (``offered``: naming each framework's modes)."""
    modes, tasks, precisions, device = choices
    if modes is not None:
        _pick("mode", modes, mode_names())
        modes = [m.strip() for m in modes if m.strip()]
    tasks = _pick("task", tasks, TASKS)
    precisions = _pick("precision", precisions if precisions is not None else ["fp32"], PRECISIONS)
    (device,) = _pick("device", [device], DEVICES)
    cells = [
        Cell(fw, mode, task, precision=prec, device=device, profile=prof.name, **size)
        for fw in fws
        for mode in resolve_modes(fw, modes)
        for task in tasks
        for size in sized(task)
        for prec in precisions
    ]
    if not cells:
        theirs = ""
        if offered:
            modes = "; ".join(f"{fw}: {', '.join(fw_registry.MODES[fw])}" for fw in fws)
            theirs = f"their modes: {modes}; "
        raise ValueError(
            f"the plan is empty: none of the modes {', '.join(modes or [])} belongs to "
            f"{', '.join(fws)} ({theirs}eager and graph work for every framework)"
        )
    return list(dict.fromkeys(cells))


# ---------------------------------------------------------------------------------------------
# the plan


@dataclass
class Plan:
    """The cells to measure, in order, and the profile that sizes them."""

    cells: list[Cell]
    profile: profiles.Profile

    def __len__(self) -> int:
        return len(self.cells)

    def __iter__(self):
        return iter(self.cells)

    @classmethod
    def build(
        cls,
        frameworks: Sequence[str] | None = None,
        modes: Sequence[str] | None = None,
        tasks: Sequence[str] | None = None,
        batch_sizes: Sequence[int] | None = None,
        precisions: Sequence[str] | None = None,
        device: str = "cpu",
        profile: str | profiles.Profile | None = None,
    ) -> Plan:
        """The ResNet-50's cells: validate every choice (``ValueError`` names the valid ones).

        Defaults: every framework, every mode, every task, fp32, the CPU, the current profile.
        ``latency`` always runs one image per call (``profile.latency_batch``); ``throughput``
        and ``train`` run ``batch_sizes`` when given, else the profile's batch for that task.
        """
        prof = _profile(profile)
        fws = _pick("framework", frameworks, fw_registry.NAMES)
        sizes = _batches(batch_sizes)
        default_batch = {
            "latency": prof.latency_batch,
            "throughput": prof.throughput_batch,
            "train": prof.train_batch,
        }

        def sized(task: str) -> list[dict]:
            batched = sizes or [default_batch[task]]
            chosen_sizes = [prof.latency_batch] if task == "latency" else batched
            return [{"batch_size": b, "image_size": prof.image_size} for b in chosen_sizes]

        return cls(_cells(fws, (modes, tasks, precisions, device), prof, sized, offered=True), prof)

    @classmethod
    def for_model(
        cls,
        spec: str | os.PathLike | inputs.Spec,
        shapes: str | Sequence,
        framework: str,
        frameworks: Sequence[str] | None = None,
        modes: Sequence[str] | None = None,
        tasks: Sequence[str] | None = None,
        precisions: Sequence[str] | None = None,
        device: str = "cpu",
        profile: str | profiles.Profile | None = None,
    ) -> Plan:
        """A learner's model's cells: the model a spec builds (``"file.py:build"``), on inputs
        of ``shapes`` (``"8x16x64"``, batch first: :func:`labkit.runner.inputs.parse_inputs`).

        ``framework`` is the model's own; ``frameworks`` defaults to it and the runtimes of its
        exports that run a learner's model (a PyTorch model: also ONNX Runtime; not TVM). Each cell records ``model`` (the spec,
        its file made absolute) and ``input_shape``: batch 1 for ``latency``, the batch of
        ``shapes`` for ``throughput`` and ``train``; its ``image_size`` is 0. ``modes``,
        ``tasks``, ``precisions``, ``device`` and ``profile`` as in :meth:`build`; bad input
        raises ``ValueError`` naming the valid choices.
        """
        model = (spec if isinstance(spec, inputs.Spec) else inputs.parse(spec)).canonical()
        given = inputs.parse_inputs(shapes)
        if frameworks is None:
            fws = [framework] + [
                x.name for x in fw_registry.specs() if x.exported_from == framework and x.explores
            ]
        else:
            fws = _pick("framework", frameworks, fw_registry.NAMES)
        for fw in fws:
            if not fw_registry.spec(fw).explores:
                raise ValueError(
                    f"labkit cannot benchmark other models with {fw_registry.spec(fw).display}: "
                    f"choose from {', '.join(x.name for x in fw_registry.specs() if x.explores)}"
                )
        prof = _profile(profile)

        def sized(task: str) -> list[dict]:
            batched = inputs.with_batch(given, 1 if task == "latency" else given[0].batch)
            return [
                {
                    "batch_size": batched[0].batch,
                    "image_size": 0,
                    "model": model,
                    "input_shape": inputs.shapes_text(batched),
                }
            ]

        return cls(
            _cells(fws, (modes, tasks, precisions, device), prof, sized, offered=False), prof
        )
