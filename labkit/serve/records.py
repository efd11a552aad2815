"""Serving records: one result record per load step, the latency bound they are held to, and a
run as text.

:func:`p99_bound` is the seeds' figure for a real-time service, 100 ms, scaled to the image
size; :func:`step_record` turns a :class:`~labkit.serve.loadgen.Step` and what the server said
about itself into a record of :mod:`labkit.results` (``task: "serve"``, judged by
:func:`labkit.results.serving.verdict`); :func:`table` prints the steps and
:func:`summary_table` the rows of :func:`labkit.results.sweeps.summary` (the highest rate
under the bound, the p99 at half of it, the knee).

Not for: sending requests (:mod:`labkit.serve.loadgen`), nor what a sweep says
(:mod:`labkit.results.sweeps`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .. import bench, results
from ..results.sweeps import meets
from ..util import stats, tables
from .loadgen import Step

__all__ = [
    "FLOOR_S",
    "SEED_BOUND_S",
    "SEED_IMAGE_SIZE",
    "Bound",
    "p99_bound",
    "step_record",
    "summary_table",
    "table",
]

#: the seeds' latency limit of a real-time recommender ("under 100 ms"), and the image it is
#: scaled from (ResNet-50's 224x224)
SEED_BOUND_S = 0.100
SEED_IMAGE_SIZE = 224
#: the bound never goes below this: an HTTP request's own cost does not shrink with the image
FLOOR_S = 0.025


class Bound(float):
    """A latency bound in seconds that says where it comes from (``.why``)."""

    why: str

    def __new__(cls, seconds: float, why: str):
        self = super().__new__(cls, seconds)
        self.why = why
        return self


def p99_bound(image_size: int) -> Bound:
    """The p99 bound for ``image_size`` images: the seeds' 100 ms times the image's pixels over
    224x224's (the work per image scales with them), at least :data:`FLOOR_S`."""
    share = (image_size / SEED_IMAGE_SIZE) ** 2
    scaled = SEED_BOUND_S * share
    why = (
        f"p99 under {max(scaled, FLOOR_S) * 1e3:.0f} ms: the seeds' 100 ms for a real-time "
        f"recommender, scaled to {image_size}x{image_size} images ({share:.2f} of 224x224's "
        "pixels, so of the work per image)"
    )
    if scaled < FLOOR_S:
        why += (
            f", raised to {FLOOR_S * 1e3:.0f} ms because a request's own cost through HTTP and "
            "JSON (a few ms with this lab's Python client and server) does not shrink with the "
            "image"
        )
    return Bound(max(scaled, FLOOR_S), why)


def _server_delta(before: dict, after: dict) -> dict:
    """The server's own counts over a step (the statistics' ``labkit`` part, after - before)."""
    keys = ("requests", "images", "batches", "padded_images", "new_shapes", "queue_s", "compute_s")
    d = {k: after.get(k, 0) - before.get(k, 0) for k in (*keys, "cpu_s")}
    # a batch of a new size still running (a compile) counts with the seconds it has run so far
    d["new_shape_s"] = sum(
        sign * (side.get("new_shape_s", 0) + side.get("new_shape_running_s", 0))
        for sign, side in ((1, after), (-1, before))
    )
    return {
        "batches": d["batches"],
        "mean_batch": d["images"] / d["batches"] if d["batches"] else None,
        "padded_images": d["padded_images"],
        "queue_mean_s": d["queue_s"] / d["requests"] if d["requests"] else None,
        "compute_mean_s": d["compute_s"] / d["batches"] if d["batches"] else None,
        "new_shapes": d["new_shapes"],
        "new_shape_s": d["new_shape_s"],
        "cpu_s": d["cpu_s"],
    }


def _others(step: Step, server_cpu_s: float) -> float | None:
    """CPUs that processes other than the client and the server kept busy during the step."""
    mine = bench.busy_elsewhere(step.cpu_before, step.cpu_after)
    if mine is None:
        return None
    return max(0.0, mine - server_cpu_s / step.wall_s) if step.wall_s > 0 else None


def _figures(step: Step) -> dict:
    lat = sorted(step.latencies_s)
    if not lat:
        return {}
    return {
        "median_s": stats.median(lat),
        "iqr_s": stats.iqr(lat),
        "p90_s": stats.quantile(lat, 0.9),
        "p99_s": stats.quantile(lat, 0.99),
        "mean_s": sum(lat) / len(lat),
        "times_s": step.latencies_s,
        "repeats": len(lat),
    }


def step_record(
    step: Step,
    server: dict,
    stats_before: dict,
    stats_after: dict,
    *,
    encoding: str,
    client_cpus: list[int] | None,
    bound_s: float,
    machine: dict,
) -> dict:
    """The results record of one load step: ``server`` is the metadata's ``parameters``,
    ``stats_*`` the statistics' ``labkit`` parts before and after the step, ``machine`` the
    fingerprint (:func:`labkit.hardware.fingerprint`, read before the client was pinned)."""
    delta = _server_delta(stats_before, stats_after)
    # answers per second from the start to the last answer (at least the arrival window)
    span = max(step.planned_s, max(step.done_at, default=step.started) - step.started)
    achieved = step.answered / span if span > 0 else 0.0
    lag = stats.quantile(sorted(step.lags_s), 0.9) if step.lags_s else None
    reasons = "; ".join(
        f"{n} x {why}" for why, n in sorted(step.reasons.items(), key=lambda x: -x[1])
    )
    fields = dict(
        framework=server["framework"],
        mode=server["mode"],
        task=results.serving.SERVE_TASK,
        batch_size=int(server["max_batch"]),
        precision="fp32",
        image_size=int(server["image_size"]),
        device="cpu",
        profile=server["profile"],
        export_s=server.get("export_s"),
        prepare_s=server.get("prepare_s"),
        first_call_s=server.get("first_call_s"),
        warmup=max(0, (server.get("warmup_calls") or 1) - 1),
        cache="warm",
        images_per_s=achieved or None,
        peak_rss_mb=stats_after.get("peak_rss_mb"),
        notes=f"{server.get('notes', '')}; {server.get('network', '')}".strip("; "),
        threads=server.get("threads") or {"intra": None, "inter": None},
        thread_env=server.get("thread_env") or {},
        versions=server.get("versions") or {},
        machine=machine,
        wall_s=step.wall_s,
        load_1min=step.load_1min,
        others_cpus=_others(step, delta["cpu_s"]),
        load=step.load,
        offered_rps=step.offered_rps,
        concurrency=step.concurrency,
        achieved_rps=achieved,
        achieved_rps_halves=step.halves(),
        requests=step.requests,
        shed=step.shed,
        timeouts=step.timeouts,
        errors=step.errors,
        client_timeout_s=step.timeout_s,
        send_lag_p90_s=lag,
        max_wait_ms=server.get("max_wait_ms"),
        padding=server.get("padding", "none"),
        encoding=encoding,
        p99_bound_s=float(bound_s),
        server_cpus=server.get("cpus"),
        client_cpus=client_cpus,
        server_stats={**delta, "warmup_s": server.get("warmup_s"), "warmed": server.get("warmed")},
        refusals=dict(step.reasons),
        **_figures(step),
    )
    if not step.latencies_s:
        fields.update(status="failed", error=f"no request was answered: {reasons or 'none sent'}")
    else:
        fields.update(status="ok", error=None)
    return results.make(**fields)


# ---------------------------------------------------------------------------------------------
# a run as text


def _capacity_text(row: dict) -> str:
    if not row["capacity_rps"]:
        return "none of the rates tried"
    return ("at least " if row["at_least"] else "") + f"{row['capacity_rps']:g} requests/s"


def summary_table(rows: list[dict]) -> str:
    """:func:`summary`'s rows as a Markdown table."""
    head = ["framework/mode", "batching", "highest rate under the bound", "p99 at half of it",
            "knee", "p50 at the lowest rate", "all steps valid"]  # fmt: skip
    body = [
        [
            f"{r['framework']}/{r['mode']}",
            r["batching"],
            _capacity_text(r),
            f"{_ms(r['p99_at_half_s'])} ms" if r["p99_at_half_s"] else "-",
            f"{r['knee_rps']:g} requests/s" if r["knee_rps"] else "beyond the rates tried",
            f"{_ms(r['low_load_p50_s'])} ms",
            "yes" if r["valid"] else "no",
        ]
        for r in rows
    ]
    return tables.markdown(head, body)


def _ms(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value * 1e3:.1f}"


def table(records: Iterable[dict]) -> str:
    """A Markdown table of serving steps: load, what was answered, latencies, batching."""
    head = [
        "framework/mode",
        "batching",
        "load",
        "answered/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "shed",
        "timeouts",
        "errors",
        "mean batch",
        "under bound",
        "valid",
    ]
    rows = []
    for r in records:
        batching = (
            "off"
            if r["batch_size"] == 1
            else (f"{r['batch_size']} / {r['max_wait_ms']:g} ms, {r['padding']}")
        )
        load = (
            f"{r['offered_rps']:g}/s"
            if r.get("load") == "poisson"
            else f"{r.get('concurrency')} client" + "s" * (r.get("concurrency") != 1)
        )
        ok = r.get("status") == "ok"
        mean_batch = (r.get("server_stats") or {}).get("mean_batch")
        rows.append(
            [
                f"{r['framework']}/{r['mode']}",
                batching,
                load,
                f"{r['achieved_rps']:.1f}" if ok else "0",
                _ms(r.get("median_s")),
                _ms(r.get("p90_s")),
                _ms(r.get("p99_s")),
                str(r.get("shed")),
                str(r.get("timeouts")),
                str(r.get("errors")),
                f"{mean_batch:.2f}" if mean_batch else "-",
                "yes" if meets(r) else "no",
                "yes" if results.is_valid(r) else "NO",
            ]
        )
    return tables.markdown(head, rows)
