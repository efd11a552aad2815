"""How fast could this machine compute: FLOPs per cycle from the ISA, and the compute ceiling.

The ceiling is ``cores x maximum clock x FLOPs per cycle`` per precision, an estimate: unknown
without a clock, and a figure above it is flagged with its likely cause, never an error.
"""

from __future__ import annotations

import math
import os
import platform
from dataclasses import dataclass

from .. import resnet
from . import machine

__all__ = [
    "ARM_PARTS",
    "CEILING_PRECISIONS",
    "Ceiling",
    "PerCycle",
    "ceiling",
    "per_cycle",
]

#: precisions the ceiling is estimated for (the runner's are fp32 and bf16; deploy adds int8)
CEILING_PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")

#: Arm cores by ``CPU part`` (``CPU implementer`` 0x41, Arm Ltd): (name, 128-bit FMA pipes).
#: From Arm's software optimisation guides: N-series cores have two, V-series four.
ARM_PARTS: dict[str, tuple[str, int]] = {
    "0xd0c": ("Neoverse N1", 2),
    "0xd49": ("Neoverse N2", 2),
    "0xd8e": ("Neoverse N3", 2),
    "0xd40": ("Neoverse V1", 4),
    "0xd4f": ("Neoverse V2", 4),
    "0xd84": ("Neoverse V3", 4),
}
#: Apple's implementer code on Linux (Asahi); its performance cores have four 128-bit FMA pipes
APPLE_IMPLEMENTER = "0x61"
#: macOS's sysctl names (``hw.optional.arm.*``) of the Arm features the rates depend on
APPLE_FEATURES = {"FEAT_BF16": "bf16", "FEAT_I8MM": "i8mm", "FEAT_DotProd": "asimddp"}
APPLE_CAVEAT = (
    "Apple's matrix coprocessor (used by the Accelerate framework) is not counted and can beat "
    "the NEON rate"
)


# ---------------------------------------------------------------------------------------------
# FLOPs per cycle


@dataclass(frozen=True)
class PerCycle:
    """What one core does per cycle at one precision, and how that was worked out."""

    flops: float
    how: str
    caveat: str = ""  # why a figure might honestly beat this rate
    #: the CPU has arithmetic of its own for this precision (False: it computes at a fallback
    #: rate, e.g. bf16 through fp32 units, so there is no low-precision unit to measure)
    native: bool = True


def _x86_fp32(flags: set[str], vendor: str, family: int) -> PerCycle:
    if "avx512f" in flags:
        if "AMD" in vendor and family < 26:  # Zen 4: 512-bit ops through two 256-bit FMA pipes
            return PerCycle(32, "AVX-512 on AMD Zen 4 (double-pumped: 2 x 256-bit FMA pipes)")
        if "AMD" in vendor:
            return PerCycle(64, "AVX-512 on AMD Zen 5: 2 x 512-bit FMA pipes")
        return PerCycle(
            64,
            "AVX-512: 2 x 512-bit FMA units (some Xeon Silver/Bronze and client parts have one)",
        )
    if "avx2" in flags and "fma" in flags:
        return PerCycle(32, "AVX2 + FMA: 2 x 256-bit FMA units")
    if "avx" in flags:
        return PerCycle(16, "AVX without FMA: a 256-bit add and a 256-bit multiply")
    return PerCycle(8, "SSE: a 128-bit add and a 128-bit multiply")


def _x86(flags: set[str], vendor: str, family: int) -> dict[str, PerCycle]:
    fp32 = _x86_fp32(flags, vendor, family)
    f = fp32.flops
    if {"amx_bf16", "amx_tile"} <= flags:
        bf16 = PerCycle(1024, "AMX tiles: 1024 bf16 FLOP/cycle")
    elif "avx512_bf16" in flags:
        bf16 = PerCycle(2 * f, "AVX-512 BF16 dot products: 2x the fp32 rate")
    else:
        bf16 = PerCycle(f, "no bf16 arithmetic: computed at the fp32 rate", native=False)
    if {"amx_int8", "amx_tile"} <= flags:
        int8 = PerCycle(2048, "AMX tiles: 2048 int8 op/cycle")
    elif "avx512_vnni" in flags or "avx_vnni" in flags:
        int8 = PerCycle(4 * f, "VNNI dot products: 4x the fp32 rate")
    else:
        int8 = PerCycle(
            2 * f, "no VNNI: 8-bit multiply-adds at most 2x the fp32 rate", native=False
        )
    return {"fp32": fp32, "bf16": bf16, "int8": int8}


def _arm(flags: set[str], implementer: str, part: str, caveat: str = "") -> dict[str, PerCycle]:
    if implementer == APPLE_IMPLEMENTER:
        core, pipes = "Apple performance core", 4
    elif implementer == "0x41" and part in ARM_PARTS:
        core, pipes = ARM_PARTS[part]
    else:
        core, pipes = f"Arm core (implementer {implementer or '?'}, part {part or '?'})", 4
        caveat = "the core is not in labkit's table: 4 FMA pipes were assumed"
    f = pipes * 8  # 4 fp32 lanes x 2 (FMA) per 128-bit pipe
    fp32 = PerCycle(f, f"{core}: {pipes} x 128-bit NEON FMA pipes", caveat)
    bf16 = (
        PerCycle(4 * f, "BF16 matrix multiply-accumulate (BFMMLA): up to 4x the fp32 rate", caveat)
        if "bf16" in flags
        else PerCycle(f, "no bf16 arithmetic: computed at the fp32 rate", caveat, native=False)
    )
    if "i8mm" in flags:
        int8 = PerCycle(8 * f, "int8 matrix multiply-accumulate (SMMLA): 8x the fp32 rate", caveat)
    elif "asimddp" in flags:
        int8 = PerCycle(4 * f, "int8 dot products (SDOT): 4x the fp32 rate", caveat)
    else:
        int8 = PerCycle(
            2 * f, "no int8 dot products: at most 2x the fp32 rate", caveat, native=False
        )
    return {"fp32": fp32, "bf16": bf16, "int8": int8}


def per_cycle(root: str | os.PathLike = machine.ROOT) -> dict[str, PerCycle]:
    """FLOPs (int8: operations) per cycle per core, for each of :data:`CEILING_PRECISIONS`."""
    blocks = machine.cpuinfo(root)
    isa, implementer = machine.isa_flags(blocks), machine.first(blocks, "CPU implementer")
    if implementer or "asimd" in isa:
        return _arm(isa, implementer, machine.first(blocks, "CPU part"))
    if blocks:
        family = machine.first(blocks, "cpu family", "0")
        return _x86(isa, machine.first(blocks, "vendor_id"), int(family) if family.isdigit() else 0)
    mac = machine.sysctl(root)
    if "Apple" in mac.get("machdep.cpu.brand_string", ""):
        flags = {
            f for feat, f in APPLE_FEATURES.items() if mac.get(f"hw.optional.arm.{feat}") == "1"
        }
        return _arm(flags, APPLE_IMPLEMENTER, "", APPLE_CAVEAT)
    arch = platform.machine().lower() if str(root) == machine.ROOT else ""
    if arch in ("arm64", "aarch64"):
        return _arm(set(), "", "")
    unknown = PerCycle(
        math.nan, "unknown: no /proc/cpuinfo or sysctl data to read the ISA from", native=False
    )
    return dict.fromkeys(CEILING_PRECISIONS, unknown)


# ---------------------------------------------------------------------------------------------
# the ceiling


@dataclass(frozen=True)
class Ceiling:
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


#: why the clock, by where it came from, may be below the one an honest figure ran at
CLOCK_CAVEATS = {
    "the model name": "the clock came from the model name, a base clock that turbo boost exceeds",
    "cpufreq": "cpufreq's maximum can leave out boost clocks (acpi-cpufreq)",
    machine.MAX_GHZ_ENV: f"{machine.MAX_GHZ_ENV} may be below the CPU's real maximum",
}


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
    clock_caveats = [c for source, c in CLOCK_CAVEATS.items() if clock_how.startswith(source)]
    caveats = tuple(c for c in (rate.caveat, *clock_caveats) if c)
    return Ceiling(precision, usable, ghz, rate.flops, peak, method, caveats)
