"""What a run measures: a :class:`Plan` of :class:`Cell` s, each one measurement of the lab's
ResNet-50 (:meth:`Plan.build`) or of a learner's model (:meth:`Plan.for_model`)."""

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
    """One measurement: a framework's mode on a task at a batch size, precision and device, of
    the ResNet-50 (seed-0 weights) or a learner's model (``model``, ``input_shape``)."""

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
        """``PYTHONPATH`` entries the cell's process needs for a learner's module."""
        return inputs.child_pythonpath() if self.custom else []

    def prepare(self, adapter) -> Prepared:
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
    """Every word ``--modes`` accepts."""
    own = [m for fw in fw_registry.NAMES for m in fw_registry.MODES[fw]]
    return list(dict.fromkeys(["eager", "graph", "quick", *own]))


def resolve_modes(framework: str, modes: Sequence[str] | None) -> list[str]:
    """The modes of ``framework`` that ``modes`` selects (None: all): ``eager``, ``graph`` (every
    other mode), ``quick`` (eager and the first graph mode) or a mode's own name."""
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
    """The cells of frameworks x modes x tasks x ``sized(task)`` x precisions, each once;
    ``ValueError`` for a bad choice or no cell at all."""
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
        """The ResNet-50's cells (default: every framework, mode and task, fp32, the CPU, the
        current profile); ``latency`` runs one image, the other tasks ``batch_sizes`` or the
        profile's batch. ``ValueError`` names the valid choices."""
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
        """A learner's model's cells: the model a spec builds (``"file.py:build"``) on inputs of
        ``shapes`` (batch first; batch 1 for ``latency``), by its ``framework`` and the runtimes
        of its exports unless ``frameworks`` is given; the rest as in :meth:`build`."""
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
