"""The machine and installation report: ``python -m labkit doctor`` and notebook 00.

The machine, its ceiling per precision (the spec-sheet estimate beside the measured peak), the
profile and the frameworks, as Markdown tables (a notebook renders them, a terminal reads them).
``root`` reads a fixture tree instead of this machine (``--root``): its machine only.
"""

from __future__ import annotations

import os

from . import frameworks, hardware, profiles
from .util import tables

__all__ = ["ceiling_rows", "framework_rows", "machine_rows", "markdown", "peaks"]

CEILING_HEAD = ("precision", "estimate", "measured (IQR)", "of estimate", "best kernel", "note")


def framework_rows() -> list[tuple[str, ...]]:
    """One row per framework (and onnx): version, status, modes, and the problem with its fix."""
    return [
        (
            package,
            p.version or "-",
            p.status,
            ", ".join(frameworks.MODES.get(package, ())),
            f"{p.error} -- fix: {p.fix}" if p.error else "",
        )
        for package, p in frameworks.probe_all(fresh=True).items()
    ]


def machine_rows(root: str | os.PathLike = hardware.ROOT) -> list[tuple[str, str]]:
    r = hardware.report(root)
    quota = f", CPU quota {r.cpu_quota:g}" if r.cpu_quota is not None else ""
    smt = " (hyper-threads on: two CPUs share each core)" if r.smt else ""
    rows = [
        ("CPU", f"{r.cpu} ({r.arch}, {r.vendor})"),
        ("CPUs this process may use", f"{r.logical_cpus} on {r.cores} cores{smt}{quota}"),
        ("benchmark threads", f"{r.threads} intra-op, 1 inter-op in every framework"),
        ("maximum clock", f"{r.clock_ghz:.2f} GHz" if r.clock_ghz else "unknown"),
        ("vector extensions", ", ".join(r.vector_extensions) or "none found"),
        ("memory", f"{r.memory_gb} GB"),
        ("GPU", "; ".join(r.gpus) or "none (CPU only)"),
        ("OS / Python", f"{r.os} / Python {r.python}"),
    ]
    for precision, ce in r.ceilings.items():
        peak = "unknown (see how it is estimated)"
        if ce.peak_gflops is not None:
            peak = f"{ce.peak_gflops:,.0f} GFLOP/s: ResNet-50 ceiling (224x224) "
            peak += f"{ce.images_per_s_at(224):,.1f} images/s inference, "
            peak += f"{ce.images_per_s_at(224, training=True):,.1f} training"
        rows.append((f"{precision} peak", peak))
    rows.append(("how the ceiling is estimated", r.ceilings["fp32"].method))
    return rows


def peaks(
    root: str | os.PathLike = hardware.ROOT, measure: bool = True, refresh: bool = False
) -> hardware.MeasuredPeaks | None:
    """The measured peaks of ``root``'s machine: this machine's (cached, or measured now when
    ``measure``; ``refresh`` measures again), or the ones a fixture tree records."""
    if str(root) != hardware.ROOT:
        return hardware.recorded(root)
    if measure or refresh:
        return hardware.measure(frameworks.peak_probes(), refresh=refresh)
    return hardware.cached(frameworks.peak_probes())


def ceiling_rows(
    root: str | os.PathLike = hardware.ROOT, found: hardware.MeasuredPeaks | None = None
) -> list[list[str]]:
    """Per precision, the cells of :data:`CEILING_HEAD`."""
    rows = []
    missing = "not measured yet (python -m labkit doctor measures it)"
    if str(root) != hardware.ROOT:
        missing = f"not measured: the fixture tree holds no {hardware.FIXTURE_FILE}"
    for precision, ce in hardware.report(root).ceilings.items():
        estimate = "unknown" if ce.peak_gflops is None else f"{ce.peak_gflops:,.0f}"
        if found is None:
            rows.append([precision, estimate, "not measured", "-", "", missing])
            continue
        p = found[precision]
        measured = "not measured" if p.gflops is None else f"{p.gflops:,.0f} ({p.iqr_gflops:,.0f})"
        share = "-" if p.of_estimate is None else f"{p.of_estimate:.0%}"
        rows.append([precision, estimate, measured, share, p.kernel, p.note])
    return rows


def _profile_line() -> str:
    try:
        p = profiles.current()
        return f"{p.name} ({p.description})"
    except ValueError as exc:
        return f"INVALID: {exc}"


def markdown(
    root: str | os.PathLike = hardware.ROOT, found: hardware.MeasuredPeaks | None = None
) -> str:
    """The whole report; the measured peaks are ``found``, else the cached ones (nothing is
    measured here). A fixture ``root``: its machine only, no frameworks."""
    found = found if found is not None else peaks(root, measure=False)
    lines = [tables.markdown(("machine", ""), machine_rows(root)), ""]
    threads = f", {found.threads} threads" if found else ""
    lines += [f"**Ceiling per precision** (GFLOP/s{threads}): spec-sheet estimate vs measured", ""]
    lines += [tables.markdown(CEILING_HEAD, ceiling_rows(root, found), "lrrrll")]
    if found is not None:
        lines += ["", f"Peaks measured {found.measured_at} ({found.source or 'just measured'})."]
        lines += [f"problem: {p}" for p in found.problems]
    if str(root) != hardware.ROOT:  # a fixture tree: its machine only
        return "\n".join(lines)
    lines += ["", f"**Profile:** {_profile_line()}", ""]
    rows = framework_rows()
    head = ("package", "version", "status", "modes", "problem and fix")
    missing = [r[0] for r in rows if r[2] != "ok"]
    last = f"Missing or broken: {', '.join(missing)}. The lessons that need them will say so."
    last = last if missing else "All frameworks import."
    return "\n".join([*lines, tables.markdown(head, rows), "", last])
