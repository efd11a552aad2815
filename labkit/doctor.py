"""The machine and installation report: ``python -m labkit doctor`` and notebook 00."""

from __future__ import annotations

from . import frameworks, hardware, profiles

__all__ = ["framework_rows", "machine_rows", "markdown", "text"]


def framework_rows() -> list[dict]:
    """One row per framework (and onnx): version, whether it imports, the error and the fix."""
    rows = []
    for package, p in frameworks.probe_all().items():
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


def machine_rows() -> list[tuple[str, str]]:
    r = hardware.report()
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


def _profile_line() -> str:
    try:
        p = profiles.current()
        return f"{p.name} ({p.description})"
    except ValueError as exc:
        return f"INVALID: {exc}"


def markdown() -> str:
    """The whole report as Markdown tables (notebook 00 displays this)."""
    lines = ["| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in machine_rows()]
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


def text() -> str:
    """The report for a terminal."""
    out = ["Graph Lab doctor", "", "Machine"]
    out += [f"  {k:<30} {v}" for k, v in machine_rows()]
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
