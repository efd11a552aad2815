"""The seed articles' serving claims, each checked from a run's serving records within its scope.

Article 000 says, in its own words (restated in the course's): static graphs suit high-
concurrency inference (part 1.2); TensorFlow Serving serves high-concurrency inference on servers
(part 3, the multi-target deployment scenario, whose trait is a latency limit: "a real-time
recommender within 100 ms"); and a small team's basic deployment is a Flask or FastAPI service
(part 3, the small-team scenario). None of them gives a number to divide, so each row here says
what this run measured in its place, with the verdict words of :mod:`labkit.sources.claims`:

- ``holds here`` / ``does not hold here`` / ``mixed here``: measured in the lab's own setting (one
  server process on this machine's CPUs, the profile's images), which the row names;
- ``different regime``: the claim is about something the lab does not run (TF Serving), and the
  row reports what it ran instead;
- ``not measured here``: the run has no steps for it.

Not for: the benchmark claims (ratios of the seeds' tables, :mod:`labkit.sources.claims`).
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import frameworks
from ..sources import claims as seed_claims
from ..sources import seeds
from ..util import tables
from . import records

__all__ = ["CLAIMS", "SEED_SECTIONS", "check", "markdown"]

#: the claims, in the course's words, keyed
CLAIMS: dict[str, str] = {
    "graph_concurrency": "Static graphs suit high-concurrency inference.",
    "serving_system": "TensorFlow Serving serves high-concurrency inference on servers.",
    "small_team": "A small team's basic deployment is a simple Flask or FastAPI inference service.",
    "realtime": "A real-time recommender must answer within 100 ms.",
}
#: where in the seeds each one is
SEED_SECTIONS: dict[str, str] = {
    "graph_concurrency": "seed 000, part 1.2 (where static graphs fit)",
    "serving_system": "seed 000, part 3 (multi-target deployment: "
    f"{seeds.scenario('deployment').reasons[0]})",
    "small_team": f"seed 000, part 3 (small team: {seeds.scenario('small_team').reasons[2]})",
    "realtime": f"seed 000, part 3 (multi-target deployment: {seeds.scenario('deployment').traits})",
}


def _rate(rps: float | None) -> str:
    return f"{rps:g} requests/s" if rps else "no rate tried"


def _pairs(rows: list[dict]) -> list[tuple[dict, dict]]:
    """(graph mode, eager mode of the same framework) summary rows, same batching."""
    by = {(r["framework"], r["mode"], r["batching"]): r for r in rows}
    out = []
    for r in rows:
        spec = frameworks.spec(r["framework"])
        eager = spec.serve_modes[0] if spec.eager is not None else None
        if eager and r["mode"] != eager and (r["framework"], eager, r["batching"]) in by:
            out.append((r, by[(r["framework"], eager, r["batching"])]))
    return out


def _graph_concurrency(rows: list[dict]) -> tuple[str, str]:
    pairs = _pairs(rows)
    if not pairs:
        return seed_claims.NOT_MEASURED, "no graph mode and its eager mode served alike"
    wins = [(g["capacity_rps"] or 0) > (e["capacity_rps"] or 0) for g, e in pairs]
    said = "; ".join(
        f"{g['framework']} {g['mode']} {_rate(g['capacity_rps'])} vs {e['mode']} "
        f"{_rate(e['capacity_rps'])} (batching {g['batching']})"
        for g, e in pairs
    )
    verdict = (
        seed_claims.HOLDS
        if all(wins)
        else seed_claims.FAILS
        if not any(wins)
        else seed_claims.MIXED
    )
    return verdict, f"highest rate under the bound, graph vs eager: {said}"


def _serving_system(rows: list[dict]) -> tuple[str, str]:
    saved = [s for s in frameworks.specs() if "savedmodel" in s.serve_modes]
    found = [
        r for r in rows for s in saved if (r["framework"], r["mode"]) == (s.name, "savedmodel")
    ]
    if not found:
        return seed_claims.NOT_MEASURED, "no SavedModel served in this run"
    said = "; ".join(f"{_rate(r['capacity_rps'])} (batching {r['batching']})" for r in found)
    return (
        seed_claims.REGIME,
        f"TF Serving is not installed here; the same SavedModel in the lab's FastAPI server: {said}",
    )


def _small_team(rows: list[dict]) -> tuple[str, str]:
    eager = [
        r
        for r in rows
        if frameworks.spec(r["framework"]).eager is not None
        and r["mode"] == frameworks.spec(r["framework"]).serve_modes[0]
        and r["max_batch"] == 1
    ]
    if not eager:
        return seed_claims.NOT_MEASURED, "no eager mode served without batching"
    best = max(eager, key=lambda r: r["capacity_rps"] or 0)
    verdict = seed_claims.HOLDS if best["capacity_rps"] else seed_claims.FAILS
    return verdict, (
        f"a FastAPI server of the eager model, no batching: {best['framework']} up to "
        f"{_rate(best['capacity_rps'])} within the bound (one request alone: "
        f"{(best['low_load_p50_s'] or 0) * 1e3:.1f} ms at p50); enough for a service whose "
        "traffic stays below that"
    )


def _realtime(rows: list[dict]) -> tuple[str, str]:
    if not rows:
        return seed_claims.NOT_MEASURED, "no serving steps"
    met = [r for r in rows if r["capacity_rps"]]
    bound = rows[0]["bound_s"]
    if not met:
        return seed_claims.FAILS, f"no configuration kept p99 under {bound * 1e3:.0f} ms"
    best = max(met, key=lambda r: r["capacity_rps"])
    verdict = seed_claims.HOLDS if len(met) == len(rows) else seed_claims.MIXED
    return verdict, (
        f"{len(met)} of {len(rows)} configurations kept p99 under {bound * 1e3:.0f} ms (the 100 ms "
        f"scaled to these images) at some rate; the most: {best['framework']} {best['mode']}, "
        f"batching {best['batching']}, up to {_rate(best['capacity_rps'])}"
    )


_CHECKS = {
    "graph_concurrency": _graph_concurrency,
    "serving_system": _serving_system,
    "small_team": _small_team,
    "realtime": _realtime,
}


def check(steps: Iterable[dict], include_invalid: bool = True) -> list[dict]:
    """One row per claim: the claim, where the seeds make it, the verdict and what was measured
    (from :func:`labkit.serve.records.summary` of ``steps``), and the run's scope."""
    steps = list(steps)
    rows = records.summary(steps, include_invalid=include_invalid)
    first = next((r for r in steps if r.get("task") == "serve"), {})
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
