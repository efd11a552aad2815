"""One cell, measured inside its own process (``python -m labkit.runner`` writes what
:func:`measure_cell` returns as JSON); a framework problem is a result, never a crash."""

from __future__ import annotations

import contextlib
import math
import time
import traceback
from dataclasses import asdict

from .. import bench, hardware, profiles, results
from .. import frameworks as fw_registry
from ..frameworks.contract import Unsupported
from .plan import Cell

__all__ = ["LOG_TAIL_CHARS", "ceiling_fields", "measure_cell"]

#: how much of a failed cell's output (its traceback, its log) the record keeps
LOG_TAIL_CHARS = 2000


def _versions(framework: str, adapter) -> dict:
    import labkit

    import numpy

    extra = fw_registry.spec(framework).extra_packages  # e.g. the exporter of ONNX Runtime's model
    return {
        framework: adapter.version() if adapter is not None else None,
        "numpy": numpy.__version__,
        "labkit": labkit.__version__,
        **{p: fw_registry.installed_version(p) for p in extra},
    }


def measure_cell(cell: Cell, threads: int) -> dict:
    """Measure ``cell`` in this (fresh) process and return its record's fields: the thread
    policy set and read back, an export timed apart, the shares of the ceiling and peak. A
    framework problem makes them say ``status: failed`` and why."""
    prof = profiles.get(cell.profile)
    out: dict = {
        "status": "failed",
        "versions": {},
        "load_1min": bench.load_1min(),
        "threads": {"intra": None, "inter": None},
    }
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
        out["versions"] = _versions(cell.framework, adapter)
    return out


def record_of(cell: Cell, fields: dict, machine: dict | None = None) -> results.Record:
    """The record of a cell; a result that makes no valid record becomes a failed one."""
    known = {k: v for k, v in fields.items() if k in results.FIELDS}  # judged with the machine
    try:
        return results.make(**{**asdict(cell), **known, "machine": machine or {}})
    except (ValueError, TypeError) as exc:
        wall = known.get("wall_s")
        return results.make(
            **asdict(cell),
            status="failed",
            error=f"the cell's result could not be recorded: {exc}",
            log=str(fields.get("log") or "")[-LOG_TAIL_CHARS:],
            wall_s=wall if isinstance(wall, float) and math.isfinite(wall) else None,
            cache=known.get("cache") if known.get("cache") in results.CACHE_STATES else "unknown",
            machine=machine or {},
        )


def _against(name: str, images_per_s: float, bound, image_size: int, training: bool) -> dict:
    """A figure against ``bound`` (the ceiling, a measured peak): the ``name`` fields of a record;
    none where the bound has no figure."""
    best = bound.images_per_s_at(image_size, training=training)
    if best is None:
        return {}
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
    size, training = cell.image_size, cell.task == "train"
    out = _against("ceiling", images_per_s, hardware.ceiling(cell.precision), size, training)
    threads = threads or hardware.default_threads()
    found = hardware.cached(fw_registry.peak_probes(), threads)
    if found is None:
        out["measured_peak_note"] = (
            f"no measured peak for {threads} threads on this machine yet (python -m labkit "
            "doctor measures it; so does every benchmark run)"
        )
        return out
    peak = found[cell.precision]
    against = _against("measured_peak", images_per_s, peak, size, training)
    if not against:
        return {**out, "measured_peak_note": peak.note}
    measured_peak = {
        "gflops": peak.gflops,
        "iqr_gflops": peak.iqr_gflops,
        "threads": peak.threads,
        "kernel": peak.kernel,
        "measured_at": found.measured_at,
        "others_cpus": found.others_cpus,
    }
    return {**out, **against, "measured_peak": measured_peak}
