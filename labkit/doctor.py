"""The machine and installation report: ``python -m labkit doctor`` and notebook 00.

The machine, its ceiling per precision (the spec-sheet estimate beside the measured peak), the
profile and the frameworks. ``root`` reads a fixture tree instead of this machine (``--root``).
"""

from __future__ import annotations

import os

from . import frameworks, hardware, profiles
from .util import tables

__all__ = ["ceiling_rows", "framework_rows", "machine_rows", "markdown", "peaks", "text"]

CEILING_HEAD = ("precision", "estimate", "measured (IQR)", "of estimate", "clock implied")


def framework_rows() -> list[dict]:
    """One row per framework (and onnx): version, whether it imports, the error and the fix."""
    return [
        {
            "package": package,
            "version": p.version or "-",
            "status": p.status,
            "modes": ", ".join(frameworks.MODES.get(package, ())),
            "error": p.error,
            "fix": p.fix,
        }
        for package, p in frameworks.probe_all(fresh=True).items()
    ]


def machine_rows(root: str | os.PathLike = hardware.ROOT) -> list[tuple[str, str]]:
    r = hardware.report(root)
    quota = f", CPU quota {r.cpu_quota:g}" if r.cpu_quota is not None else ""
    smt = " (hyper-threads on: two CPUs share each core)" if r.smt else ""
    rows = [
        ("CPU", f"{r.cpu_model} ({r.arch}, {r.vendor})"),
        ("CPUs this process may use", f"{r.logical_cpus} on {r.physical_cores} cores{smt}{quota}"),
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
    """Per precision, the cells of :data:`CEILING_HEAD`, then the best kernel and the note."""
    rows = []
    for precision, ce in hardware.report(root).ceilings.items():
        estimate = "unknown" if ce.peak_gflops is None else f"{ce.peak_gflops:,.0f}"
        if found is None:
            missing = "not measured yet (python -m labkit doctor measures it)"
            if str(root) != hardware.ROOT:
                missing = f"not measured: the fixture tree holds no {hardware.FIXTURE_FILE}"
            rows.append([precision, estimate, "not measured", "-", "-", "", missing])
            continue
        p = found[precision]
        measured = "not measured" if p.gflops is None else f"{p.gflops:,.0f} ({p.iqr_gflops:,.0f})"
        share = "-" if p.of_estimate is None else f"{p.of_estimate:.0%}"
        clock = "-" if p.implied_clock_ghz is None else f">= {p.implied_clock_ghz:.2f} GHz"
        rows.append([precision, estimate, measured, share, clock, p.kernel, p.note])
    return rows


def _where(found: hardware.MeasuredPeaks | None) -> list[str]:
    if found is None:
        return []
    out = [f"measured {found.measured_at} ({found.source or 'just measured'})"]
    out += [f"problem: {p}" for p in found.problems]
    return out + ([f"warning: {found.busy}"] if found.busy else [])


def _profile_line() -> str:
    try:
        p = profiles.current()
        return f"{p.name} ({p.description})"
    except ValueError as exc:
        return f"INVALID: {exc}"


def markdown(
    root: str | os.PathLike = hardware.ROOT, found: hardware.MeasuredPeaks | None = None
) -> str:
    """The whole report as Markdown tables (notebook 00 displays this); the measured peaks are
    ``found``, else the cached ones (nothing is measured here)."""
    found = found if found is not None else peaks(root, measure=False)
    lines = [tables.markdown(("machine", ""), machine_rows(root)), ""]
    head = (*CEILING_HEAD, "best kernel", "how far apart, and why")
    lines += [tables.markdown(head, ceiling_rows(root, found), "lrrrrll")]
    lines += ["", f"**Profile:** {_profile_line()}", ""]
    body = [
        (*(r[k] for k in ("package", "version", "status", "modes")), _problem(r))
        for r in framework_rows()
    ]
    head = ("package", "version", "status", "modes", "problem and fix")
    return "\n".join([*lines, tables.markdown(head, body)])


def _problem(row: dict) -> str:
    return f"{row['error']} -- fix: {row['fix']}" if row["error"] else ""


def text(
    root: str | os.PathLike = hardware.ROOT, measure: bool = True, refresh: bool = False
) -> str:
    """The report for a terminal (``measure``: measure the peaks if none are cached; a fixture
    ``root``: its machine only, no frameworks)."""
    found = peaks(root, measure, refresh)
    fixture = str(root) != hardware.ROOT
    out = [f"Graph Lab doctor: the fixture tree {root}" if fixture else "Graph Lab doctor"]
    out += ["", "Machine", *(f"  {k:<30} {v}" for k, v in machine_rows(root)), ""]
    threads = f" with {found.threads} threads" if found else ""
    out.append(f"Ceiling per precision: spec-sheet estimate vs measured (GFLOP/s{threads})")
    rows = ceiling_rows(root, found)
    cells = [list(CEILING_HEAD)] + [r[:5] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(CEILING_HEAD))]
    out += ["  " + "  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in cells]
    for precision, *_, kernel, note in rows:
        out.append(f"  {precision}: " + (f"best kernel {kernel}; " if kernel else "") + note)
    out += [f"  {line}" for line in _where(found)]
    if fixture:
        return "\n".join(out)
    out += ["", f"Profile: {_profile_line()}", "", "Frameworks"]
    rows = framework_rows()
    for r in rows:
        out.append(f"  {r['package']:<12} {r['version']:<12} {r['status']:<14} {r['modes']}")
        if r["error"]:
            out += [f"      problem: {r['error']}", f"      fix:     {r['fix']}"]
    missing = [r["package"] for r in rows if r["status"] != "ok"]
    out += ["", f"Missing or broken: {', '.join(missing)}. The lessons that need them will say so."]
    if not missing:
        out[-1] = "All frameworks import."
    return "\n".join(out)
