"""The machine and installation report: ``python -m labkit doctor`` and notebook 00.

The machine (:func:`machine_rows`), its ceiling per precision with the spec-sheet estimate and
the measured matrix-multiply peak side by side (:func:`ceiling_rows`: how far they sit apart,
the clock the measurement implies, the best kernel), the profile, and the frameworks.
``root`` reads a fixture tree instead of this machine (``--root``): its estimate from its files
and its measured peaks from the probe output it records (:func:`labkit.hardware.recorded`).
"""

from __future__ import annotations

import os

from . import frameworks, hardware, profiles, runner
from .util import tables

__all__ = ["ceiling_rows", "framework_rows", "machine_rows", "markdown", "peaks", "text"]

_CEILING_HEAD = ("precision", "estimate", "measured (IQR)", "of estimate", "clock implied")


def framework_rows() -> list[dict]:
    """One row per framework (and onnx): version, whether it imports, the error and the fix."""
    rows = []
    for package, p in frameworks.probe_all(fresh=True).items():
        rows.append(
            {
                "package": package,
                "version": p.version or "-",
                "status": p.status,
                "modes": ", ".join(frameworks.MODES.get(package, ())),
                "error": p.error,
                "fix": p.fix,
            }
        )
    return rows


def machine_rows(root: str | os.PathLike = hardware.ROOT) -> list[tuple[str, str]]:
    r = hardware.report(root)
    c = r.ceiling
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
        if ce.peak_gflops is None:
            rows.append((f"{precision} peak", "unknown (see how it is estimated)"))
            continue
        train = ce.images_per_s_at(224, training=True)
        rows.append(
            (
                f"{precision} peak",
                (
                    f"{ce.peak_gflops:,.0f} GFLOP/s: ResNet-50 ceiling (224x224) "
                    f"{ce.images_per_s_at(224):,.1f} images/s inference, {train:,.1f} training"
                ),
            )
        )
    rows.append(("how the ceiling is estimated", c.method))
    return rows


def peaks(
    root: str | os.PathLike = hardware.ROOT, measure: bool = True, refresh: bool = False
) -> hardware.MeasuredPeaks | None:
    """The measured peaks of ``root``'s machine: this machine's (cached, or measured now when
    ``measure``; ``refresh`` measures again), or the ones a fixture tree records."""
    if str(root) != hardware.ROOT:
        return hardware.recorded(root)
    if measure or refresh:
        return runner.measured_peaks(refresh=refresh)
    return runner.cached_peaks()


def ceiling_rows(
    root: str | os.PathLike = hardware.ROOT, found: hardware.MeasuredPeaks | None = None
) -> list[dict]:
    """Per precision, the spec-sheet estimate and the measured peak side by side (GFLOP/s; int8:
    GOP/s): ``precision, estimate, measured, iqr, of_estimate, clock_ghz, threads, kernel,
    images_per_s_224, note`` (None where a figure is unknown or not measured)."""
    rows = []
    missing = (
        "not measured yet (python -m labkit doctor measures it)"
        if str(root) == hardware.ROOT
        else f"not measured: the fixture tree holds no {hardware.FIXTURE_FILE}"
    )
    for precision, ce in hardware.report(root).ceilings.items():
        peak = found[precision] if found is not None else None
        rows.append(
            {
                "precision": precision,
                "estimate": ce.peak_gflops,
                "measured": peak.gflops if peak else None,
                "iqr": peak.iqr_gflops if peak else None,
                "of_estimate": peak.of_estimate if peak else None,
                "clock_ghz": peak.implied_clock_ghz if peak else None,
                "threads": peak.threads if peak else None,
                "kernel": peak.kernel if peak else "",
                "images_per_s_224": peak.images_per_s_at(224) if peak else None,
                "note": peak.note if peak else missing,
            }
        )
    return rows


def _cells(row: dict) -> list[str]:
    """The texts of one ceiling row, in :data:`_CEILING_HEAD`'s order."""
    known = lambda v, fmt: "-" if v is None else fmt.format(v)
    measured = "not measured"
    if row["measured"] is not None:
        measured = f"{row['measured']:,.0f} ({row['iqr']:,.0f})"
    return [
        row["precision"],
        "unknown" if row["estimate"] is None else f"{row['estimate']:,.0f}",
        measured,
        known(row["of_estimate"], "{:.0%}"),
        known(row["clock_ghz"], ">= {:.2f} GHz"),
    ]


def _ceiling_text(rows: list[dict], found: hardware.MeasuredPeaks | None) -> list[str]:
    threads = f" with {found.threads} threads" if found else ""
    out = [f"Ceiling per precision: spec-sheet estimate vs measured (GFLOP/s{threads})"]
    lines = [list(_CEILING_HEAD)] + [_cells(r) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(_CEILING_HEAD))]
    out += ["  " + "  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in lines]
    for r in rows:
        kernel = f"best kernel {r['kernel']}; " if r["kernel"] else ""
        images = r["images_per_s_224"]
        at = f"ResNet-50 (224x224) at that rate: {images:,.1f} images/s; " if images else ""
        out.append(f"  {r['precision']}: {kernel}{at}{r['note']}")
    if found is not None:
        where = found.source or "just measured"
        out.append(f"  measured {found.measured_at} ({where})")
        out += [f"  problem: {p}" for p in found.problems]
        out += [f"  warning: {found.busy}"] if found.busy else []
    return out


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
    lines = ["| machine | |", "|---|---|"]
    lines += [f"| {k} | {tables.escape(v)} |" for k, v in machine_rows(root)]
    rows = ceiling_rows(root, found)
    head = (*_CEILING_HEAD, "best kernel", "how far apart, and why")
    body = [[*_cells(r), r["kernel"], r["note"]] for r in rows]
    lines += ["", tables.markdown(head, body, "lrrrrll")]
    lines += [
        "",
        f"**Profile:** {_profile_line()}",
        "",
        "| package | version | status | modes | problem and fix |",
        "|---|---|---|---|---|",
    ]
    for row in framework_rows():
        problem = f"{row['error']} -- fix: {row['fix']}" if row["error"] else ""
        lines.append(
            f"| {row['package']} | {row['version']} | {row['status']} | {row['modes']} "
            f"| {problem} |"
        )
    return "\n".join(lines)


def text(
    root: str | os.PathLike = hardware.ROOT, measure: bool = True, refresh: bool = False
) -> str:
    """The report for a terminal (``measure``: measure the peaks if none are cached; a fixture
    ``root``: its machine only, no frameworks)."""
    found = peaks(root, measure, refresh)
    fixture = str(root) != hardware.ROOT
    title = f"Graph Lab doctor: the fixture tree {root}" if fixture else "Graph Lab doctor"
    out = [title, "", "Machine"]
    out += [f"  {k:<30} {v}" for k, v in machine_rows(root)]
    out += ["", *_ceiling_text(ceiling_rows(root, found), found)]
    if fixture:
        return "\n".join(out)
    out += ["", f"Profile: {_profile_line()}", "", "Frameworks"]
    for row in framework_rows():
        out.append(
            f"  {row['package']:<12} {row['version']:<12} {row['status']:<14} {row['modes']}"
        )
        if row["error"]:
            out.append(f"      problem: {row['error']}")
            out.append(f"      fix:     {row['fix']}")
    missing = [r["package"] for r in framework_rows() if r["status"] != "ok"]
    out += [
        "",
        "All frameworks import."
        if not missing
        else f"Missing or broken: {', '.join(missing)}. The lessons that need them will say so.",
    ]
    return "\n".join(out)
