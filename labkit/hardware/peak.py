"""How fast could this machine compute: FLOPs per cycle from the ISA, and the compute ceiling.

The ceiling is ``cores x maximum clock x FLOPs per cycle`` per precision, an estimate: unknown
without a clock, and a figure above it is flagged with its likely cause, never an error.
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple

from .. import resnet
from . import machine

__all__ = ["CEILING_PRECISIONS", "Ceiling", "PerCycle", "ceiling", "per_cycle"]

#: precisions the ceiling is estimated for (the runner's are fp32 and bf16; deploy adds int8)
CEILING_PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")


# ---------------------------------------------------------------------------------------------
# FLOPs per cycle


class PerCycle(NamedTuple):
    """What one core does per cycle at one precision, and how that was worked out."""

    flops: float
    how: str
    caveat: str = ""  #: why a figure might honestly beat this rate
    #: the CPU has arithmetic of its own for this precision (False: it computes at a fallback
    #: rate, e.g. bf16 through fp32 units, so there is no low-precision unit to measure)
    native: bool = True


def _rates(
    isa: str, flags: set[str], pipes: int = 0, caveat: str = "", core: str = ""
) -> dict[str, PerCycle]:
    """Per precision, the first of ``isa``'s rules in cpus.toml whose flags the CPU has all of
    (Arm: its core, with ``pipes`` 128-bit FMA pipes)."""
    out: dict[str, PerCycle] = {}
    for precision in CEILING_PRECISIONS:
        rule = next(r for r in machine.CPUS[isa][precision] if set(r.get("flags", ())) <= flags)
        flops = rule.get("flops") or rule["times"] * (out["fp32"].flops if out else pipes)
        how = rule["how"].format(core=core, pipes=pipes)
        out[precision] = PerCycle(flops, how, caveat, rule.get("native", True))
    return out


def _arm(flags: set[str], implementer: str, part: str, caveat: str = "") -> dict[str, PerCycle]:
    cores = machine.CPUS["arm_cores"]
    core, pipes = cores.get(f"{implementer}:{part}") or cores.get(implementer) or ("", 4)
    if not core:
        core = f"Arm core (implementer {implementer or '?'}, part {part or '?'})"
        caveat = "the core is not in labkit's table: 4 FMA pipes were assumed"
    return _rates("arm", flags, pipes, caveat, core)


def per_cycle(root: str | os.PathLike = machine.ROOT) -> dict[str, PerCycle]:
    """FLOPs (int8: operations) per cycle per core, for each of :data:`CEILING_PRECISIONS`."""
    blocks = machine.cpuinfo(root)
    isa, implementer = machine.isa_flags(blocks), machine.first(blocks, "CPU implementer")
    if implementer or "asimd" in isa:
        return _arm(isa, implementer, machine.first(blocks, "CPU part"))
    if blocks:
        family = f"family {machine.first(blocks, 'cpu family')}"
        return _rates("x86", isa | {machine.first(blocks, "vendor_id"), family})
    mac, apple = machine.sysctl(root), machine.CPUS["apple"]
    if "Apple" in mac.get("machdep.cpu.brand_string", ""):
        features = apple["features"].items()
        flags = {f for feat, f in features if mac.get(f"hw.optional.arm.{feat}") == "1"}
        return _arm(flags, apple["implementer"], "", apple["caveat"])
    return _rates("unknown", set())


# ---------------------------------------------------------------------------------------------
# the ceiling


class Ceiling(NamedTuple):
    """The most this process could compute per second at one precision: an estimate."""

    precision: str
    cores: float  #: usable physical cores (a CPU quota can make it fractional)
    clock_ghz: float | None  #: the maximum clock; None when unknown
    flops_per_cycle: float  #: per core, at this precision (int8: operations)
    peak_gflops: float | None  #: cores x clock x flops_per_cycle; None when unknown
    method: str  #: how it was estimated, in words
    caveats: tuple[str, ...] = ()  #: why an honest figure could still beat it

    def images_per_s_at(self, image_size: int, training: bool = False) -> float | None:
        """Most ResNet-50 images/s at ``image_size`` (a training step: 3x the forward FLOPs);
        None when the peak is unknown."""
        if self.peak_gflops is None:
            return None
        return self.peak_gflops * 1e9 / resnet.flops(image_size, training=training)

    def explain_above(self) -> str:
        """The likely cause, in words, of a measurement above this ceiling."""
        if self.peak_gflops is None:
            return ""
        causes = [*self.caveats, "a timing error (a step that returns before its work is done)"]
        return (
            f"above the estimated {self.precision} ceiling ({self.peak_gflops:.0f} GFLOP/s): "
            "the estimate is an upper bound only as good as its inputs; likely causes: "
            + "; ".join(causes)
        )


def ceiling(precision: str = "fp32", root: str | os.PathLike = machine.ROOT) -> Ceiling:
    """The compute ceiling at ``precision`` (fp32, bf16 or int8) for this process's CPUs."""
    if precision.startswith("int8"):  # int8-dynamic, int8-static: int8 kernels
        precision = "int8"
    if precision not in CEILING_PRECISIONS:
        raise ValueError(
            f"unknown precision {precision!r}: the ceiling is estimated for "
            f"{', '.join(CEILING_PRECISIONS)}"
        )
    n, smt, topology = machine.physical_cores(root)
    quota, quota_where = machine.cpu_quota(root)
    usable = float(n) if quota is None else min(float(n), quota)
    ghz, clock_how = machine.max_clock_ghz(root)
    rate = per_cycle(root)[precision]
    cores_how = f"{n} physical cores ({topology}{', SMT on' if smt else ''})"
    if quota is not None:
        cores_how += f", CPU quota {quota:g} ({quota_where})"
    known = ghz is not None and not math.isnan(rate.flops)
    peak = usable * ghz * rate.flops if known else None
    clock = f"{ghz:.2f} GHz max ({clock_how})" if ghz is not None else f"clock {clock_how}"
    method = f"{usable:g} cores [{cores_how}] x {clock} x {rate.flops:g} {precision} "
    method += f"FLOP/cycle ({rate.how})"
    method += f" = {peak:.0f} GFLOP/s" if peak is not None else ": peak unknown"
    low = [c for src, c in machine.CPUS["clock_caveats"].items() if clock_how.startswith(src)]
    caveats = tuple(c for c in (rate.caveat, *low) if c)
    return Ceiling(precision, usable, ghz, rate.flops, peak, method, caveats)
