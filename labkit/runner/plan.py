"""What a run measures: a :class:`Plan` of :class:`Cell` s, each one measurement of the lab's
ResNet-50 (:meth:`Plan.build`) or of a learner's model (:meth:`Plan.for_model`); and how one
cell is measured inside its own process (``python -m labkit.runner`` writes what
:func:`measure_cell` returns as JSON): a framework problem is a result, never a crash."""

from __future__ import annotations

import contextlib
import os
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from .. import bench, hardware, profiles, resnet, results
from .. import frameworks as fw_registry
from ..frameworks.contract import DEVICES, PRECISIONS, TASKS, Prepared, Unsupported
from . import inputs

__all__ = ["LOG_TAIL_CHARS", "Cell", "Plan", "ceiling_fields", "measure_cell", "record_of"]

#: how much of a failed cell's output (its traceback, its log) the record keeps
LOG_TAIL_CHARS = 2000


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

    # the same words and key as the cell's record
    label = results.Record.label
    key = results.Record.key

    def prepare(self, adapter) -> Prepared:
        if not self.custom:
            sizes = (self.batch_size, self.precision, self.image_size, self.device)
            return adapter.prepare(resnet.init_weights(0), self.mode, self.task, *sizes)
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


def measure_cell(cell: Cell, threads: int) -> dict:
    """Measure ``cell`` in this (fresh) process and return its record's fields: the thread
    policy set and read back, an export timed apart, the shares of the ceiling and peak. A
    framework problem gives an ``error`` saying why instead (the record's defaults stand for
    the rest: ``status: failed``, no versions or threads)."""
    prof = profiles.get(cell.profile)
    out: dict = {"load_1min": bench.load_1min()}
    adapter = None
    try:
        adapter = fw_registry.get(cell.framework)
        adapter.set_threads(threads)
        t0 = time.perf_counter()
        prepared = cell.prepare(adapter)
        prepare_s = time.perf_counter() - t0 - (prepared.export_s or 0.0)
        out["threads"] = adapter.threads()
        m = bench.measure(
            prepared, prof.warmup, prof.min_repeats, prof.min_time_s, prof.max_repeats
        )
        out.update(
            m.as_dict(),
            status="ok",
            prepare_s=prepare_s,
            export_s=prepared.export_s,
            notes=prepared.notes,
            recipe=prepared.recipe,
        )
        out.update(ceiling_fields(m.images_per_s, cell, threads))
        if prepared.accuracy is not None:
            try:
                out["accuracy"] = prepared.accuracy()
            except Exception as exc:  # noqa: BLE001 - the timing stands; the record says why not
                out["accuracy"] = {"error": f"{type(exc).__name__}: {exc}".strip()[:LOG_TAIL_CHARS]}
    except Unsupported as exc:
        out["error"] = f"unsupported: {exc}"
    except MemoryError:
        out["error"] = (
            "out of memory: MemoryError while measuring (the cell needs more memory "
            "than it may use here: try a smaller batch size or the smoke profile)"
        )
    except Exception as exc:  # noqa: BLE001 - a framework error is a result, not a crash
        out["error"] = f"{type(exc).__name__}: {exc}".strip()
        out["log"] = traceback.format_exc()[-LOG_TAIL_CHARS:]
    out["peak_rss_mb"] = bench.peak_rss_mb()
    with contextlib.suppress(Exception):
        from labkit import __version__

        extra = ("numpy", *fw_registry.spec(cell.framework).extra_packages)  # ONNX's exporter
        out["versions"] = {p: fw_registry.installed_version(p) for p in extra} | {
            cell.framework: adapter.version() if adapter is not None else None,
            "labkit": __version__,
        }
    return out


def record_of(cell: Cell, fields: dict, machine: dict | None = None) -> results.Record:
    """The record of a cell; a result that makes no valid record becomes a failed one."""
    known = {k: v for k, v in fields.items() if k in results.FIELDS}  # judged with the machine
    try:
        return results.make(**{**asdict(cell), **known, "machine": machine or {}})
    except (ValueError, TypeError) as exc:  # wall_s and cache: the runner's own, always valid
        return results.make(
            **asdict(cell),
            status="failed",
            error=f"the cell's result could not be recorded: {exc}",
            log=str(fields.get("log") or "")[-LOG_TAIL_CHARS:],
            wall_s=known.get("wall_s"),
            cache=known.get("cache", "unknown"),
            machine=machine or {},
        )


def _against(name: str, images_per_s: float, bound, cell: Cell, missing: str = "") -> dict:
    """A figure against ``bound`` (the ceiling, a measured peak): the ``name`` fields of a record;
    only the note ``missing`` where the bound has no figure."""
    best = bound.images_per_s_at(cell.image_size, training=cell.task == "train")
    if best is None:
        return {f"{name}_note": missing}
    above = images_per_s > best
    return {
        f"{name}_images_per_s": best,
        f"{name}_share": images_per_s / best,
        f"above_{name}": above,
        f"{name}_note": bound.explain_above() if above else "",
    }


def ceiling_fields(images_per_s: float, cell: Cell, threads: int | None = None) -> dict:
    """A ResNet-50 CPU cell's figure against the spec-sheet ceiling (``ceiling_*``) and the
    cached measured peak (``measured_peak*``, or the note saying why there is none) at its
    precision; none for other cells."""
    if cell.device != "cpu" or cell.custom:  # the CPU's, for the ResNet-50
        return {}  # the record's defaults stand for what is not set here
    out = _against("ceiling", images_per_s, hardware.ceiling(cell.precision), cell)
    threads = threads or hardware.default_threads()
    found = hardware.cached(fw_registry.peak_probes(), threads)
    if found is None:
        out["measured_peak_note"] = (
            f"no measured peak for {threads} threads on this machine yet (python -m labkit "
            "doctor measures it; so does every benchmark run)"
        )
        return out
    peak = found[cell.precision]
    out |= _against("measured_peak", images_per_s, peak, cell, missing=peak.note)
    if "measured_peak_share" in out:
        picked = {k: getattr(peak, k) for k in ("gflops", "iqr_gflops", "threads", "kernel")}
        out["measured_peak"] = picked | {
            k: getattr(found, k) for k in ("measured_at", "others_cpus")
        }
    return out


def _pick(kind: str, given: Sequence[str] | None, valid: Sequence[str]) -> list[str]:
    if given is None:
        return list(valid)
    if not given:
        raise ValueError(f"no {kind} given: choose from {', '.join(valid)}")
    bad = [g for g in given if g not in valid]
    if bad:
        raise ValueError(
            f"unknown {kind} {', '.join(map(repr, bad))}: valid {kind}s are {', '.join(valid)}"
        )
    return list(dict.fromkeys(given))


def resolve_modes(framework: str, modes: Sequence[str] | None) -> list[str]:
    """The modes of ``framework`` that ``modes`` selects (None: all): ``eager``, ``graph`` (every
    other mode), ``quick`` (eager and the first graph mode) or a mode's own name."""
    spec = fw_registry.spec(framework)
    if modes is None:
        return list(spec.modes)
    eager = [spec.eager] if spec.eager else []
    words = {"eager": eager, "graph": spec.graph_modes, "quick": [*eager, *spec.graph_modes[:1]]}
    out = [x for m in modes for x in words.get(m, [m])]
    return [x for x in spec.modes if x in out]  # the framework's order


def _cells(fws: list[str], choices: tuple, prof: profiles.Profile, sizes: dict) -> list[Cell]:
    """The cells of frameworks x modes x tasks x ``sizes[task]`` x precisions, each once;
    ``ValueError`` for a bad choice or no cell at all."""
    modes, tasks, precisions, device = choices
    own = [m for fw in fw_registry.NAMES for m in fw_registry.MODES[fw]]
    words = list(dict.fromkeys(["eager", "graph", "quick", *own]))  # what --modes accepts
    modes = None if modes is None else _pick("mode", modes, words)
    tasks = _pick("task", tasks, TASKS)
    precisions = _pick("precision", ["fp32"] if precisions is None else precisions, PRECISIONS)
    (device,) = _pick("device", [device], DEVICES)
    cells = [
        Cell(fw, mode, task, precision=prec, device=device, profile=prof.name, **size)
        for fw in fws
        for mode in resolve_modes(fw, modes)
        for task in tasks
        for size in sizes[task]
        for prec in precisions
    ]
    if not cells:
        theirs = "; ".join(f"{fw}: {', '.join(fw_registry.MODES[fw])}" for fw in fws)
        raise ValueError(
            f"the plan is empty: none of the modes {', '.join(modes or [])} belongs to "
            f"{', '.join(fws)} (their modes: {theirs}; eager and graph work for every framework)"
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
        prof = profiles.get(profile)
        if batch_sizes is not None and (
            not batch_sizes or not all(type(b) is int and b >= 1 for b in batch_sizes)
        ):
            raise ValueError(
                f"batch sizes must be whole numbers >= 1, got {list(batch_sizes)}: "
                "e.g. --batch-sizes 1,8"
            )
        batches = {
            "latency": [prof.latency_batch],
            "throughput": batch_sizes or [prof.throughput_batch],
            "train": batch_sizes or [prof.train_batch],
        }
        size = {"image_size": prof.image_size}
        sizes = {task: [{**size, "batch_size": b} for b in bs] for task, bs in batches.items()}
        fws = _pick("framework", frameworks, fw_registry.NAMES)
        return cls(_cells(fws, (modes, tasks, precisions, device), prof, sizes), prof)

    @classmethod
    def for_model(
        cls,
        spec: str | os.PathLike | inputs.Spec,
        shapes: str | Sequence,
        framework: str,
        frameworks: Sequence[str] | None = None,
        modes: Sequence[str] | None = None,
        tasks: Sequence[str] | None = None,
        profile: str | profiles.Profile | None = None,
    ) -> Plan:
        """A learner's model's fp32 CPU cells: the model a spec builds (``"file.py:build"``) on inputs of
        ``shapes`` (batch first; batch 1 for ``latency``), by its ``framework`` and the runtimes
        of its exports unless ``frameworks`` is given; the rest as in :meth:`build`."""
        model = (spec if isinstance(spec, inputs.Spec) else inputs.parse(spec)).canonical()
        given = inputs.parse_inputs(shapes)
        able = [x.name for x in fw_registry.specs() if x.explores or x.model_files]
        if frameworks is None:
            exports = [x.name for x in fw_registry.specs() if x.exported_from == framework]
            fws = [framework] + [x for x in exports if x in able]
        else:
            fws = _pick("framework", frameworks, fw_registry.NAMES)
        if bad := [fw_registry.spec(fw).display for fw in fws if fw not in able]:
            raise ValueError(
                f"labkit cannot benchmark other models with {', '.join(bad)}: choose from "
                f"{', '.join(able)}"
            )
        sizes = {}
        for task in TASKS:
            batched = inputs.with_batch(given, 1 if task == "latency" else given[0].batch)
            shape = inputs.shapes_text(batched)
            size = {"batch_size": batched[0].batch, "image_size": 0, "input_shape": shape}
            sizes[task] = [{**size, "model": model}]
        prof = profiles.get(profile)
        return cls(_cells(fws, (modes, tasks, None, "cpu"), prof, sizes), prof)
