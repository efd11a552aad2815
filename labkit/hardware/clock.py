"""The CPU's maximum clock, which the ceiling is worked out at."""

from __future__ import annotations

import os
import re

from .files import ROOT, cpuinfo, first, read, sysctl
from .topology import usable_cpus

__all__ = ["MAX_GHZ_ENV", "max_clock_ghz"]

#: environment variable: the CPU's maximum clock in GHz, for machines that do not report it
MAX_GHZ_ENV = "LABKIT_CPU_MAX_GHZ"
#: Apple silicon: published maximum performance-core clocks (GHz) by chip generation, since
#: macOS does not report clocks on Apple silicon
APPLE_MAX_GHZ: dict[str, float] = {"M1": 3.2, "M2": 3.5, "M3": 4.05, "M4": 4.5}


def _from_env() -> tuple[float, str] | None:
    env = os.environ.get(MAX_GHZ_ENV, "").strip()
    if not env:
        return None
    try:
        ghz = float(env)
    except ValueError:
        ghz = -1.0
    if not (0 < ghz < 20):
        raise ValueError(
            f"{MAX_GHZ_ENV}={env!r} is not a clock in GHz: give your CPU's maximum (boost) "
            f"clock, e.g. {MAX_GHZ_ENV}=3.7"
        )
    return ghz, f"{MAX_GHZ_ENV}={env} (your setting)"


def max_clock_ghz(root: str | os.PathLike = ROOT) -> tuple[float | None, str]:
    """``(GHz, source)``, or ``(None, why)``: ``LABKIT_CPU_MAX_GHZ``, else cpufreq's maximum,
    the GHz in the model name (a base clock), macOS's sysctl or Apple's published maximum;
    never the current clock (an idle CPU reports a fraction of its maximum)."""
    setting = _from_env()
    if setting:
        return setting
    khz = [
        int(text)
        for cpu in usable_cpus(root)
        if (text := read(root, f"sys/devices/system/cpu/cpu{cpu}/cpufreq/cpuinfo_max_freq"))
        and text.strip().isdigit()
    ]
    if khz:
        return max(khz) / 1e6, "cpufreq cpuinfo_max_freq"
    blocks = cpuinfo(root)
    name = first(blocks, "model name") or sysctl(root).get("machdep.cpu.brand_string", "")
    m = re.search(r"([\d.]+)\s*GHz", name, re.IGNORECASE)
    if m:
        return float(m.group(1)), f"the model name ({name!r}: a base clock, turbo can exceed it)"
    mac = sysctl(root)
    if mac.get("hw.cpufrequency_max", "").isdigit():
        return int(mac["hw.cpufrequency_max"]) / 1e9, "sysctl hw.cpufrequency_max"
    chip = re.search(r"Apple (M\d)", name)
    if chip and chip.group(1) in APPLE_MAX_GHZ:
        return APPLE_MAX_GHZ[chip.group(1)], f"Apple {chip.group(1)}'s published P-core maximum"
    current = first(blocks, "cpu MHz")
    seen = f" (the current clock, {float(current) / 1e3:.2f} GHz, is no maximum)" if current else ""
    return None, (
        f"unknown: no cpufreq maximum and no GHz in the model name {name!r}{seen}; "
        f"set {MAX_GHZ_ENV} to your CPU's maximum clock"
    )
