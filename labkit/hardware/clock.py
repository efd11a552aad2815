"""The CPU's maximum clock: the one the compute ceiling is worked out at.

``LABKIT_CPU_MAX_GHZ`` if you set it, else cpufreq's ``cpuinfo_max_freq``, else the GHz in the
CPU's model name, else Apple silicon's published maximum; otherwise it is unknown (and so is the
ceiling), because the current clock in ``/proc/cpuinfo`` says nothing about the maximum (an idle
laptop reports a fraction of it).
"""

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
    """Your setting of :data:`MAX_GHZ_ENV`, or None when it is not set."""
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
    """``(GHz, source)``: the CPU's maximum clock, or ``(None, why)`` when it cannot be told.

    In order: ``LABKIT_CPU_MAX_GHZ`` (your setting), cpufreq's ``cpuinfo_max_freq`` (the
    highest over the usable CPUs), the GHz in the CPU's model name (Intel's names carry the
    *base* clock: turbo can exceed it), Apple silicon's published maximum. The current clock
    (``cpu MHz``) is never used: an idle CPU reports a fraction of its maximum.
    """
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
