"""The seed articles' serving claims, each checked from a run's serving records within its scope.

Article 000 says, in its own words (restated in the course's): static graphs suit high-
concurrency inference (part 1.2); TensorFlow Serving serves high-concurrency inference on servers
(part 3, the multi-target deployment scenario, whose trait is a latency limit: "a real-time
recommender within 100 ms"); and a small team's basic deployment is a Flask or FastAPI service
(part 3, the small-team scenario). None of them gives a number to divide, so each row here says
what a serving run (notebook 07b, :mod:`labkit.serve`) measured in its place, with the verdict
words of the benchmark claims (:mod:`labkit.sources.claims.verdicts`):

- ``holds here`` / ``does not hold here`` / ``mixed here``: measured in the lab's own setting (one
  server process on this machine's CPUs, the profile's images), which the row names;
- ``different regime``: the claim is about something the lab does not run (TF Serving), and the
  row reports what it ran instead;
- ``not measured here``: the run has no steps for it.

Reached as ``claims.serving`` (its names stay its own). Not for: the benchmark claims (ratios
of the seeds' tables, the rest of :mod:`labkit.sources.claims`), nor running the load.
"""

from __future__ import annotations

from collections.abc import Iterable

from ... import frameworks
from ...results import sweeps
from ...results.serving import SERVE_TASK
from ...util import tables
from .. import seeds
from .verdicts import FAILS, HOLDS, MIXED, NOT_MEASURED, REGIME

__all__ = ["CLAIMS", "SEED_SECTIONS", "check", "markdown"]

#: the claims, in the course's words, keyed
CLAIMS: dict[str, str] = {
    "graph_concurrency": "Static graphs suit high-concurrency inference.",
    "serving_system": "TensorFlow Serving serves high-concurrency inference on servers.",
    "small_team": "A small team's basic deployment is a simple Flask or FastAPI inference service.",
    "realtime": "Latency-sensitive serving (a real-time recommender needs under 100 ms) calls for "
    "static graphs.",
}
#: where in the seeds each one is
SEED_SECTIONS: dict[str, str] = {
    "graph_concurrency": "seed 000, part 1.2 (where static graphs fit)",
    "serving_system": "seed 000, part 3 (multi-target deployment: "
    f"{seeds.scenario('deployment').reasons[0]})",
    "small_team": f"seed 000, part 3 (small team: {seeds.scenario('small_team').reasons[2]})",
    "realtime": f"seed 000, part 3 (multi-target deployment: {seeds.scenario('deployment').traits}; "
    "its recommendation: static-graph frameworks)",
}


def _rate(rps: float | None) -> str:
    return f"{rps:g} requests/s" if rps else "no rate tried"


def _eager_of(framework: str) -> tuple[str, str] | None:
    """The eager serving mode a framework's graph modes are compared with: its own, or that of
    the framework whose exports it runs (ONNX Runtime: PyTorch's)."""
    spec = frameworks.spec(framework)
    source = frameworks.spec(spec.exported_from) if spec.eager is None else spec
    if source.eager is None or not source.serve_modes:
        return None
    return source.name, source.serve_modes[0]


def _is_eager(row: dict) -> bool:
    return _eager_of(row["framework"]) == (row["framework"], row["mode"])


def _pairs(rows: list[dict]) -> list[tuple[dict, dict]]:
    """(graph mode, its eager baseline) summary rows served with the same batching, where at
    least one of the two met the bound at some rate (else the pair says nothing)."""
    by = {(r["framework"], r["mode"], r["batching"]): r for r in rows}
    out = []
    for r in rows:
        base = _eager_of(r["framework"])
        if base is None or _is_eager(r) or (*base, r["batching"]) not in by:
            continue
        eager = by[(*base, r["batching"])]
        if r["capacity_rps"] or eager["capacity_rps"]:
            out.append((r, eager))
    return out


def _graph_concurrency(rows: list[dict]) -> tuple[str, str]:
    pairs = _pairs(rows)
    if not pairs:
        return NOT_MEASURED, (
            "no graph mode and its eager baseline served alike with either meeting the bound"
        )
    wins = [(g["capacity_rps"] or 0) > (e["capacity_rps"] or 0) for g, e in pairs]
    said = "; ".join(
        f"{g['framework']} {g['mode']} {_rate(g['capacity_rps'])} vs {e['framework']} "
        f"{e['mode']} {_rate(e['capacity_rps'])} (batching {g['batching']})"
        for g, e in pairs
    )
    verdict = HOLDS if all(wins) else FAILS if not any(wins) else MIXED
    return verdict, f"highest rate under the bound, graph vs eager: {said}"


def _serving_system(rows: list[dict]) -> tuple[str, str]:
    saved = [s for s in frameworks.specs() if "savedmodel" in s.serve_modes]
    found = [
        r for r in rows for s in saved if (r["framework"], r["mode"]) == (s.name, "savedmodel")
    ]
    if not found:
        return NOT_MEASURED, "no SavedModel served in this run"
    said = "; ".join(f"{_rate(r['capacity_rps'])} (batching {r['batching']})" for r in found)
    return (
        REGIME,
        f"TF Serving is not installed here; the same SavedModel in the lab's FastAPI server: {said}",
    )


def _small_team(rows: list[dict]) -> tuple[str, str]:
    eager = [r for r in rows if _is_eager(r) and r["max_batch"] == 1]
    if not eager:
        return NOT_MEASURED, "no eager mode served without batching"
    best = max(eager, key=lambda r: r["capacity_rps"] or 0)
    alone = f"one request alone: {(best['low_load_p50_s'] or 0) * 1e3:.1f} ms at p50"
    if not best["capacity_rps"]:
        return FAILS, (
            f"a FastAPI server of the eager model, no batching: p99 over the bound at every rate "
            f"tried ({alone}); a lower traffic, or a faster machine, is needed"
        )
    return HOLDS, (
        f"a FastAPI server of the eager model, no batching: {best['framework']} within the bound "
        f"up to {_rate(best['capacity_rps'])} ({alone}): enough for a service whose traffic stays "
        "below that"
    )


def _realtime(rows: list[dict]) -> tuple[str, str]:
    met = [r for r in rows if r["capacity_rps"]]
    if not rows or not met:
        bound = rows[0]["bound_s"] if rows else None
        limit = f"p99 under {bound * 1e3:.0f} ms" if bound else "the bound"
        return NOT_MEASURED, f"no configuration kept {limit} at any rate tried"
    best = max(met, key=lambda r: r["capacity_rps"])
    best_eager = max((r["capacity_rps"] for r in met if _is_eager(r)), default=None)
    graph = not _is_eager(best)
    verdict = HOLDS if graph else FAILS
    return verdict, (
        f"{len(met)} of {len(rows)} configurations kept p99 under {best['bound_s'] * 1e3:.0f} ms "
        f"(the 100 ms scaled to these images) at some rate; the most: {best['framework']} "
        f"{best['mode']} ({'a graph' if graph else 'eager'}), batching {best['batching']}, up to "
        f"{_rate(best['capacity_rps'])}; the best eager configuration: {_rate(best_eager)}"
    )


_CHECKS = {
    "graph_concurrency": _graph_concurrency,
    "serving_system": _serving_system,
    "small_team": _small_team,
    "realtime": _realtime,
}


def check(steps: Iterable[dict], include_invalid: bool = True) -> list[dict]:
    """One row per claim: the claim, where the seeds make it, the verdict and what was measured
    (from :func:`labkit.results.sweeps.summary` of ``steps``), and the run's scope."""
    steps = list(steps)
    rows = sweeps.summary(steps, include_invalid=include_invalid)
    first = next((r for r in steps if r.get("task") == SERVE_TASK), {})
    machine = first.get("machine") or {}
    scope = (
        f"this machine ({machine.get('cpu', 'CPU')}, {machine.get('logical_cpus', '?')} CPUs), "
        f"{first.get('image_size', '?')} px images, profile {first.get('profile', '?')}, one "
        "server process; "
        + ("every step valid" if all(r["valid"] for r in rows) else "some steps invalid (flagged)")
    )
    out = []
    for key, statement in CLAIMS.items():
        verdict, measured = _CHECKS[key](rows)
        out.append(
            {
                "claim": statement,
                "seeds": SEED_SECTIONS[key],
                "verdict": verdict,
                "measured here": measured,
                "scope": scope,
            }
        )
    return out


def markdown(rows: list[dict]) -> str:
    """The claim rows as a Markdown table."""
    head = ["claim", "seeds", "verdict", "measured here", "scope"]
    return tables.markdown(head, [[r[h] for h in head] for r in rows])
