"""The figure of a serving run: latency against offered load, and what was answered.

:func:`latency_vs_load` draws, for each configuration (framework, mode, batching) of a run's
open-loop steps, the p99 and the median latency against the offered rate (left; the p99 bound
as a line, each configuration's knee marked), and the answered rate against the offered one
(right; the diagonal is keeping up). A framework keeps its colour from the registry; batching
on is drawn solid, off dashed. Invalid steps are drawn hollow.

Not for: the benchmark figures (:mod:`labkit.plots`).
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import frameworks, results
from ..results import sweeps

__all__ = ["latency_vs_load"]


def _label(r: dict) -> str:
    batching = "batching off" if r["batch_size"] == 1 else f"batch <= {r['batch_size']}"
    pad = "" if r.get("padding") in (None, "none") else f", {r['padding']}"
    return f"{r['framework']} {r['mode']}, {batching}{pad}"


def _colour(framework: str) -> str:
    try:
        return frameworks.spec(framework).color
    except ValueError:  # another server
        return "#777777"


def latency_vs_load(steps: Iterable[dict], title: str = ""):
    """The figure (matplotlib) of ``steps``: see the module's docstring."""
    import matplotlib.pyplot as plt

    fig, (lat, got) = plt.subplots(1, 2, figsize=(12, 4.6), constrained_layout=True)
    bound, top = None, 0.0
    for group in sweeps.configs(steps).values():
        runs = sorted(
            (r for r in group if r.get("load") == "poisson" and r["status"] == "ok"),
            key=lambda r: r["offered_rps"],
        )
        if not runs:
            continue
        bound = runs[0].get("p99_bound_s")
        x = [r["offered_rps"] for r in runs]
        style = {
            "color": _colour(runs[0]["framework"]),
            "ls": "-" if runs[0]["batch_size"] > 1 else "--",
        }
        lat.plot(x, [r["p99_s"] * 1e3 for r in runs], marker="o", label=_label(runs[0]), **style)
        lat.plot(x, [r["median_s"] * 1e3 for r in runs], lw=0.8, alpha=0.5, **style)
        got.plot(x, [r["achieved_rps"] for r in runs], marker="o", **style)
        for r in runs:
            if not results.is_valid(r):
                lat.plot(r["offered_rps"], r["p99_s"] * 1e3, "o", mfc="white", **style)
        knee = sweeps.knee(runs)
        if knee:
            lat.axvline(knee, alpha=0.25, **style)
        top = max(top, *x)
    if bound:
        lat.axhline(bound * 1e3, color="black", lw=1, label=f"p99 bound {bound * 1e3:.0f} ms")
    got.plot([0, top], [0, top], color="black", lw=0.8, label="answered = offered")
    lat.set(xlabel="offered rate (requests/s, Poisson)", ylabel="latency (ms): p99 marked, p50 thin",
            yscale="log", title=title or "latency against load (vertical lines: each knee)")  # fmt: skip
    got.set(xlabel="offered rate (requests/s)", ylabel="answered (requests/s)",
            title="what the server answered")  # fmt: skip
    lat.legend(fontsize=7)
    got.legend(fontsize=7)
    return fig
