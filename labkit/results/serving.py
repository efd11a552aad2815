"""The fields of a serving record and its validity verdict: one load step against an inference
server (:mod:`labkit.serve`), ``task: "serve"``.

A serving record is one step of a load run: requests sent to a server at one offered rate (open
loop, Poisson arrivals) or by a number of concurrent clients (closed loop), answered, shed or
timed out. It carries the fields of every record (:data:`labkit.results.FIELDS`: the latencies
of the answered requests are its ``times_s``, their median, p90 and IQR its ``median_s``,
``p90_s`` and ``iqr_s``, the answered images per second its ``images_per_s``; ``batch_size`` is
the server's largest batch, 1 with batching off) and the fields of :data:`SERVE_FIELDS`. Records
of the other tasks carry those as null; a file written before they existed reads them as null.

:func:`verdict` judges a step by rules in the spirit of the runner's (MLPerf's): enough
requests for a p99 and a long enough step, a quiet machine (beyond the server and the client),
a client that kept its schedule, an achieved rate that held steady, few failures beyond the
shed and the timed out (which are what overload looks like, not a broken measurement).

Not for: running servers or load (:mod:`labkit.serve`), nor which rate is the highest under a
bound (:func:`labkit.serve.capacity`).
"""

from __future__ import annotations

import math

from .. import bench

__all__ = [
    "ERROR_SHARE",
    "LOADS",
    "MAX_HALF_GAP",
    "MAX_LAG_SHARE",
    "PADDINGS",
    "SERVE_FIELDS",
    "SERVE_TASK",
    "min_requests",
    "verdict",
]

#: the ``task`` of a serving record
SERVE_TASK = "serve"
LOADS: tuple[str, ...] = ("poisson", "closed")
PADDINGS: tuple[str, ...] = ("none", "pow2")
#: the share of requests that may fail (beyond shed and timed out) in a valid step
ERROR_SHARE = 0.01
#: how far apart the two halves' achieved rates may be (relative), beyond Poisson noise
MAX_HALF_GAP = 0.25
#: how late the client may send (its p90), as a share of the mean time between arrivals
MAX_LAG_SHARE = 0.10

_NUM = (int, float, type(None))
_NONE = type(None)
#: field -> (accepted types, meaning): null in the records of other tasks, and in a file written
#: before the field existed
SERVE_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "load": (
        (str, _NONE),
        (
            "serve: poisson (open loop: requests arrive at random at offered_rps, MLPerf's Server "
            "scenario) | closed (concurrency clients, each sends again once answered)"
        ),
    ),
    "offered_rps": (_NUM, "serve, poisson: the offered rate, requests per second"),
    "concurrency": ((int, _NONE), "serve, closed: the number of concurrent clients"),
    "achieved_rps": (_NUM, "serve: answered requests per second over the step"),
    "achieved_rps_halves": (
        (list, _NONE),
        "serve: achieved_rps in the first and the second half of the step (steadiness)",
    ),
    "p99_s": (_NUM, "serve: 99th percentile latency of the answered requests, seconds"),
    "requests": ((int, _NONE), "serve: requests sent in the step"),
    "shed": (
        (int, _NONE),
        "serve: requests the server refused for overload (503/429 with a reason)",
    ),
    "timeouts": ((int, _NONE), "serve: requests with no answer within client_timeout_s"),
    "errors": ((int, _NONE), "serve: other failures (an error status, a broken connection)"),
    "client_timeout_s": (_NUM, "serve: how long the client waited for each answer"),
    "send_lag_p90_s": (
        _NUM,
        "serve: how late the client sent, 90th percentile (seconds after the scheduled arrival)",
    ),
    "max_wait_ms": (
        _NUM,
        "serve: dynamic batching's wait for a batch to fill, ms; null: batching off (batch 1)",
    ),
    "padding": (
        (str, _NONE),
        "serve: none (every batch runs at its own size) | pow2 (padded to a power of two)",
    ),
    "encoding": (
        (str, _NONE),
        (
            "serve: json (the Open Inference Protocol's JSON tensors) | binary (its binary tensor "
            "extension)"
        ),
    ),
    "p99_bound_s": (
        _NUM,
        (
            "serve: the latency bound the step is held to (labkit.serve.p99_bound: the seeds' "
            "100 ms scaled to the image size)"
        ),
    ),
    "server_cpus": ((list, _NONE), "serve: the CPUs the server was pinned to (null: not pinned)"),
    "client_cpus": ((list, _NONE), "serve: the CPUs the client was pinned to (null: not pinned)"),
    "server_stats": (
        (dict, _NONE),
        (
            "serve: the server's own counts over the step (batches, mean_batch, padded_images, "
            "queue_mean_s, compute_mean_s, new_shapes: batch sizes first met, new_shape_s: the "
            "seconds their batches took, cpu_s) and its warm-up before it was ready (warmed: "
            "the batch sizes run, warmup_s)"
        ),
    ),
    "refusals": (
        (dict, _NONE),
        "serve: why requests were shed or failed, each reason (status and message) -> count",
    ),
}


def min_requests(profile: str) -> int:
    """Requests a step needs for its p99 to be more than its slowest request: 100 (20 under
    ``smoke``, which checks that everything runs)."""
    return 20 if profile == "smoke" else 100


def _count(record: dict, field: str) -> int:
    value = record.get(field)
    return int(value) if isinstance(value, int | float) else 0


def _steadiness(record: dict) -> list[str]:
    halves = record.get("achieved_rps_halves") or []
    wall = record.get("wall_s") or 0
    if len(halves) != 2 or wall <= 0:
        return []
    mean = (halves[0] + halves[1]) / 2
    per_half = mean * wall / 2  # answers per half: Poisson noise is about sqrt of that
    if mean <= 0 or per_half <= 0:
        return []
    limit = MAX_HALF_GAP + 3 / math.sqrt(per_half)
    gap = abs(halves[0] - halves[1]) / mean
    if gap > limit:
        return [
            (
                f"unsteady achieved rate: {halves[0]:.1f} then {halves[1]:.1f} requests/s in the two "
                f"halves of the step ({gap:.0%} apart, more than {limit:.0%})"
            )
        ]
    return []


def _lateness(record: dict) -> list[str]:
    lag, rate = record.get("send_lag_p90_s"), record.get("offered_rps")
    if not isinstance(lag, int | float) or not isinstance(rate, int | float) or rate <= 0:
        return []
    limit = max(0.002, MAX_LAG_SHARE / rate)
    if lag > limit:
        return [
            (
                f"the load generator fell behind: 90% of its requests left up to {lag * 1e3:.1f} ms "
                f"late (at most {limit * 1e3:.1f} ms at {rate:g} requests/s)"
            )
        ]
    return []


def verdict(record: dict, min_time_s: float) -> list[str]:
    """Why a serving step is invalid (empty: valid); ``min_time_s`` is its profile's minimum.

    - at least :func:`min_requests` requests and ``min_time_s`` seconds;
    - a quiet machine: :func:`labkit.bench.busy_machine` with the server's threads and the
      client's one counted as the step's own;
    - the client kept its schedule (open loop): its p90 lateness at most :data:`MAX_LAG_SHARE`
      of the mean time between arrivals (and 2 ms);
    - a steady achieved rate: the step's two halves within :data:`MAX_HALF_GAP` of each other
      beyond Poisson noise;
    - at most :data:`ERROR_SHARE` of the requests failed otherwise than shed or timed out.
    """
    reasons = []
    sent, needed = _count(record, "requests"), min_requests(str(record.get("profile")))
    if sent < needed:
        reasons.append(f"{sent} requests, fewer than the {needed} a p99 needs")
    wall = record.get("wall_s") or 0.0
    if wall < min_time_s:
        reasons.append(f"the step lasted {wall:.2f} s, less than the {min_time_s:g} s required")
    threads = (record.get("threads") or {}).get("intra") or 1
    machine = record.get("machine") or {}
    reasons += bench.busy_machine(
        int(threads) + 1,
        record.get("others_cpus"),
        record.get("load_1min"),
        machine.get("logical_cpus") or machine.get("cores"),
    )
    reasons += _lateness(record) + _steadiness(record)
    errors = _count(record, "errors")
    if sent and errors > ERROR_SHARE * sent:
        reasons.append(
            f"{errors} of {sent} requests failed (not shed, not timed out): more than "
            f"{ERROR_SHARE:.0%}"
        )
    return reasons
