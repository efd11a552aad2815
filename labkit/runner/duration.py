"""How long a plan should take on this machine, said before it starts (:func:`forecast`).

A cell measured here before takes what it took then; any other cell is estimated from its
workload's work per call and the rate this machine reached (or is assumed to reach), the
assumptions stated with the forecast. :meth:`Forecast.remaining_s` rescales the rest while a
run goes on (:class:`labkit.runner.live.LiveTable` shows it). Not for: running anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .. import frameworks as fw_registry
from .. import hardware, resnet, results
from ..util import stats
from .plan import Cell, Plan

__all__ = [
    "COMPILE_S",
    "EFFICIENCY",
    "STARTUP_S",
    "UNKNOWN_GFLOPS_PER_THREAD",
    "Forecast",
    "forecast",
    "minutes",
]

#: assumptions of a forecast without earlier records (stated with every such forecast)
STARTUP_S = 10.0  # a fresh process: Python, the framework's import, building ResNet-50
COMPILE_S = 30.0  # a graph mode's (or an export's) one-off work before the first call returns
EFFICIENCY = 0.25  # the share of the compute ceiling a ResNet-50 step reaches on a CPU
UNKNOWN_GFLOPS_PER_THREAD = 10.0  # the rate assumed where the ceiling itself is unknown


def minutes(seconds: float) -> str:
    """A duration as a person reads it: ``45 s``, ``12 min``."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


@dataclass
class Forecast:
    """How long a plan should take here: each cell's seconds and where the figure comes from."""

    cells: list[tuple[Cell, float, str]]  # (cell, seconds, "earlier run" or "estimate")
    assumptions: str = ""

    @property
    def total_s(self) -> float:
        return sum(s for _, s, _ in self.cells)

    def remaining_s(self, done: int, elapsed_s: float) -> float:
        """Seconds left after ``done`` cells took ``elapsed_s``: the forecast of the rest, scaled
        by how the finished cells compared with theirs."""
        forecast_done = sum(s for _, s, _ in self.cells[:done])
        scale = elapsed_s / forecast_done if done and forecast_done > 0 else 1.0
        return scale * sum(s for _, s, _ in self.cells[done:])

    def __str__(self) -> str:
        known = sum(src == "earlier run" for _, _, src in self.cells)
        parts = []
        if known:
            parts.append(f"{known} from earlier runs of the same cells here")
        if known < len(self.cells):
            parts.append(f"{len(self.cells) - known} estimated ({self.assumptions})")
        return (
            f"{len(self.cells)} cells, about {minutes(self.total_s)} on this machine: "
            + "; ".join(parts)
        )


def _same_machine(record: dict, machine: dict) -> bool:
    m = record.get("machine") or {}
    return m.get("cpu") == machine.get("cpu") and m.get("cores") == machine.get("cores")


def _rates(past: Iterable[dict]) -> dict[tuple, list[float]]:
    """The GFLOP/s that earlier ResNet-50 records reached, by (framework, training)."""
    rates: dict[tuple, list[float]] = {}
    for r in results.ok(past):
        if results.custom(r):  # no FLOP count for a learner's model
            continue
        training = r["task"] == "train"
        gflop = resnet.flops(r["image_size"], training=training) / 1e9
        rates.setdefault((r["framework"], training), []).append(r["images_per_s"] * gflop)
    return rates


def _default_rate(threads: int) -> tuple[float, str]:
    """The rate assumed without earlier records, and the assumptions in words."""
    how = "assumed ResNet-50 at "
    peak = hardware.ceiling("fp32").peak_gflops
    if peak is not None:
        rate = EFFICIENCY * peak
        how += f"{EFFICIENCY:.0%} of the {peak:.0f} GFLOP/s ceiling"
    else:
        rate = UNKNOWN_GFLOPS_PER_THREAD * threads
        how += f"{UNKNOWN_GFLOPS_PER_THREAD:g} GFLOP/s per thread (the ceiling is unknown)"
    how += f", {STARTUP_S:g} s to start a cell, {COMPILE_S:g} s to compile or export"
    return rate, how


def forecast(plan: Plan, history: Iterable[dict] = (), threads: int | None = None) -> Forecast:
    """How long ``plan`` should take on this machine, before it starts.

    A cell measured here before (same cell, same CPU) takes what it took then (its ``wall_s``);
    any other cell is estimated: :data:`STARTUP_S` for a fresh process, :data:`COMPILE_S` more
    for a graph mode or an export, and its calls (first, warm-up, the profile's timed minimum)
    at the rate earlier records of its framework reached here, else at :data:`EFFICIENCY` of the
    compute ceiling (an assumed :data:`UNKNOWN_GFLOPS_PER_THREAD` where the ceiling is unknown).
    A learner's model (:meth:`Plan.for_model`) has no known FLOP count: its estimate counts the
    start-up, the compile and the profile's minimum timed work only.
    """
    machine = hardware.fingerprint()
    threads = threads or hardware.default_threads()
    past = [r for r in history if _same_machine(r, machine) and r.get("wall_s")]
    walls = {results.key(r): float(r["wall_s"]) for r in past}
    rates = _rates(past)
    default_rate, how = _default_rate(threads)
    p = plan.profile
    cells = []
    for cell in plan:
        if cell.key() in walls:
            cells.append((cell, walls[cell.key()], "earlier run"))
            continue
        gflop = cell.workload.gflop(cell)
        if gflop is None:  # its cost per call is unknown: the profile's minimum timed work
            call, timed = 0.0, p.min_time_s
        else:
            training = cell.task == "train"
            call = gflop / stats.median(rates.get((cell.framework, training), [default_rate]))
            timed = min(max(p.min_repeats * call, p.min_time_s), p.max_repeats * call)
        spec = fw_registry.spec(cell.framework)
        compile_s = COMPILE_S if cell.mode != spec.eager else 0.0
        cells.append((cell, STARTUP_S + compile_s + (2 + p.warmup) * call + timed, "estimate"))
    return Forecast(cells, how)
