"""The machine and installation report: ``python -m labkit doctor`` and notebook 00.

The machine, its ceiling per precision (the spec-sheet estimate beside the measured peak), the
profile and the frameworks, as Markdown tables (a notebook renders them, a terminal reads them).
The tests pass ``root``, a fixture tree: its machine and recorded peaks only.
"""

from __future__ import annotations

import os

from . import frameworks, hardware, profiles
from .util import tables

__all__ = ["markdown", "peaks"]


def _machine_rows(r) -> list[tuple[str, str]]:
    """The machine table of :func:`hardware.report`'s ``r``."""
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


def peaks(measure: bool = True, refresh: bool = False) -> hardware.MeasuredPeaks | None:
    """This machine's measured peaks: cached, or measured now (``measure``; ``refresh``: again)."""
    if measure or refresh:
        return hardware.measure(frameworks.peak_probes(), refresh=refresh)
    return hardware.cached(frameworks.peak_probes())


def _ceiling_rows(r, found: hardware.MeasuredPeaks | None, missing: str) -> list[list[str]]:
    """Per precision: the estimate, the measured peak (IQR), its share, kernel and note."""
    rows = []
    for precision, ce in r.ceilings.items():
        estimate = "unknown" if ce.peak_gflops is None else f"{ce.peak_gflops:,.0f}"
        p = found[precision] if found else hardware.measured.MeasuredPeak(precision, 0, missing)
        measured = "not measured" if p.gflops is None else f"{p.gflops:,.0f} ({p.iqr_gflops:,.0f})"
        share = "-" if p.of_estimate is None else f"{p.of_estimate:.0%}"
        rows.append([precision, estimate, measured, share, p.kernel, p.note])
    return rows


def markdown(
    root: str | os.PathLike = hardware.ROOT, found: hardware.MeasuredPeaks | None = None
) -> str:
    """The whole report, with the measured peaks ``found`` (:func:`peaks`; None: not measured).
    A fixture ``root``: its machine and the peaks it records, no frameworks."""
    fixture = str(root) != hardware.ROOT
    missing = "not measured yet (python -m labkit doctor measures it)"
    if fixture:
        found = hardware.recorded(root)
        missing = f"not measured: the fixture tree holds no {hardware.FIXTURE_FILE}"
    machine = hardware.report(root)
    lines = [tables.markdown(("machine", ""), _machine_rows(machine)), ""]
    threads = f", {found.threads} threads" if found else ""
    lines += [f"**Ceiling per precision** (GFLOP/s{threads}): spec-sheet estimate vs measured", ""]
    head = ("precision", "estimate", "measured (IQR)", "of estimate", "best kernel", "note")
    lines += [tables.markdown(head, _ceiling_rows(machine, found, missing), "lrrrll")]
    if found is not None:
        lines += ["", f"Peaks measured {found.measured_at} ({found.source or 'just measured'})."]
        lines += [f"problem: {p}" for p in found.problems]
    if fixture:
        return "\n".join(lines)
    try:
        p = profiles.current()
        profile = f"{p.name} ({p.description})"
    except ValueError as exc:
        profile = f"INVALID: {exc}"
    rows = [
        (package, p.version or "-", p.status, ", ".join(frameworks.MODES.get(package, ())))
        + (f"{p.error} -- fix: {p.fix}" if p.error else "",)
        for package, p in frameworks.probe_all(fresh=True).items()
    ]
    head = ("package", "version", "status", "modes", "problem and fix")
    missing = [r[0] for r in rows if r[2] != "ok"]
    last = f"Missing or broken: {', '.join(missing)}. The lessons that need them will say so."
    last = last if missing else "All frameworks import."
    lines += ["", f"**Profile:** {profile}", "", tables.markdown(head, rows), "", last]
    return "\n".join(lines)
