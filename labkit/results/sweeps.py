"""What a serving sweep's records say: per configuration, the highest offered rate whose p99
stayed under the bound, the p99 at half that rate, and the knee where the server stopped keeping
up.

A *sweep* is a run of open-loop load steps (serving records, :mod:`labkit.results.serving`)
against one server configuration at rising offered rates. :func:`config_of` names a
configuration (framework, mode, batching, encoding, image size, the server's CPUs),
:func:`configs` groups a file's steps by it; :func:`meets` says whether one step stayed under
its bound, :func:`capacity` and :func:`knee` read a sweep, :func:`summary` gives one row per
configuration. Reached as ``results.sweeps``.

Not for: running the load (:mod:`labkit.serve`) or checking the seeds' claims
(:mod:`labkit.sources.claims.serving`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .query import is_valid
from .serving import SERVE_TASK

__all__ = ["FAILURE_SHARE", "capacity", "config_of", "configs", "knee", "meets", "summary"]

#: the share of a step's requests that may go unanswered (shed, timed out, failed) and still
#: count as under the bound
FAILURE_SHARE = 0.01


def config_of(record: dict) -> tuple:
    """What a sweep varies besides the load: framework, mode, batching (max batch, wait,
    padding), encoding, image size and the CPUs the server was pinned to."""
    keys = ("framework", "mode", "batch_size", "max_wait_ms", "padding", "encoding", "image_size")
    return (*(record.get(k) for k in keys), tuple(record.get("server_cpus") or ()))


def meets(record: dict, bound_s: float | None = None) -> bool:
    """Whether a step stayed under the bound: answered, p99 at most ``bound_s`` (default: the
    record's own), and at most :data:`FAILURE_SHARE` of its requests unanswered."""
    if record.get("status") != "ok":
        return False
    bound = bound_s if bound_s is not None else record.get("p99_bound_s")
    lost = sum(int(record.get(k) or 0) for k in ("shed", "timeouts", "errors"))
    return record["p99_s"] <= bound and lost <= FAILURE_SHARE * max(1, record["requests"])


def _open_loop(records: Iterable[dict]) -> list[dict]:
    return sorted(
        (r for r in records if r.get("task") == SERVE_TASK and r.get("load") == "poisson"),
        key=lambda r: r["offered_rps"],
    )


def capacity(
    records: Iterable[dict], bound_s: float | None = None, include_invalid: bool = False
) -> float | None:
    """The highest offered rate (requests/s) of ``records`` (one configuration's open-loop steps)
    that met the bound (:func:`meets`) with every lower rate tried also meeting it; None when
    even the lowest did not. Invalid steps are left out unless ``include_invalid``."""
    best = None
    for r in _open_loop(records):
        if not include_invalid and not is_valid(r):
            continue
        if not meets(r, bound_s):
            break
        best = r["offered_rps"]
    return best


def knee(records: Iterable[dict]) -> float | None:
    """The lowest offered rate at which the server stopped keeping up: it left more than 5% of
    the requests sent unanswered (shed, timed out, failed), or its median latency passed twice
    the lowest rate's. None when it kept up at every rate tried."""
    steps = _open_loop(records)
    base = next((r["median_s"] for r in steps if r.get("status") == "ok"), None)
    for r in steps:
        answered = (r.get("repeats") or 0) if r.get("status") == "ok" else 0
        slow = base is not None and r.get("status") == "ok" and r["median_s"] > 2 * base
        if answered < 0.95 * (r.get("requests") or 0) or slow:
            return r["offered_rps"]
    return None


def configs(records: Iterable[dict]) -> dict[tuple, list[dict]]:
    """The serving steps of ``records`` grouped by :func:`config_of`, in first-seen order."""
    out: dict[tuple, list[dict]] = {}
    for r in records:
        if r.get("task") == SERVE_TASK:
            out.setdefault(config_of(r), []).append(r)
    return out


def _batching(r: dict) -> str:
    if r["batch_size"] == 1:
        return "off"
    return f"up to {r['batch_size']} within {r['max_wait_ms']:g} ms, padding {r['padding']}"


def summary(records: Iterable[dict], include_invalid: bool = False) -> list[dict]:
    """One row per configuration: its highest rate under the bound (:func:`capacity`), the p99
    measured at half that rate (a step run there, e.g. by ``--half``), the knee, and the p50 at
    the lowest rate tried (about one request's own time); ``valid``: every open-loop step used
    was valid."""
    rows = []
    for steps in configs(records).values():
        open_loop = _open_loop(steps)
        if not open_loop:
            continue
        first = open_loop[0]
        best = capacity(open_loop, include_invalid=include_invalid)
        half = [r for r in open_loop if best and math.isclose(r["offered_rps"], round(best / 2, 2))]
        rows.append(
            {
                "framework": first["framework"],
                "mode": first["mode"],
                "batching": _batching(first),
                "max_batch": first["batch_size"],
                "capacity_rps": best,
                #: the highest rate tried still met the bound: the capacity is at least that
                "at_least": best is not None and best >= open_loop[-1]["offered_rps"],
                "p99_at_half_s": half[-1].get("p99_s") if half else None,
                "knee_rps": knee(open_loop),
                "low_load_p50_s": first.get("median_s"),
                "bound_s": first.get("p99_bound_s"),
                "steps": len(open_loop),
                "valid": all(is_valid(r) for r in open_loop),
            }
        )
    return rows
