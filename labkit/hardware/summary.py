"""Everything about one machine in one report, the compact identity stored with results, and
the machine type a fingerprint reduces to (CPU, cores, architecture, vector extensions, GPUs,
memory; never a host name)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import subprocess
from collections.abc import Iterable
from types import SimpleNamespace

from . import machine
from .peak import CEILING_PRECISIONS, ceiling

__all__ = ["cpu_family", "fingerprint", "gpus", "isa_tier", "machine_of", "report"]


def gpus() -> list[str]:
    """NVIDIA GPUs by name, from nvidia-smi (no framework import)."""
    cmd = ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):  # no NVIDIA driver
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def memory_gb(root: str | os.PathLike = machine.ROOT) -> float:
    """The machine's memory in GiB (``MemTotal``, or macOS's ``hw.memsize``); 0 when unknown."""
    m = re.search(r"^MemTotal:\s*(\d+)", machine.read(root, "proc/meminfo") or "", re.MULTILINE)
    if m:
        return round(int(m.group(1)) / 2**20, 1)
    size = machine.sysctl(root).get("hw.memsize", "")
    return round(int(size) / 2**30, 1) if size.isdigit() else 0.0


@functools.lru_cache(maxsize=8)
def report(root: str | os.PathLike = machine.ROOT) -> SimpleNamespace:
    """Everything about one machine (cached per root); every field but ``vendor``, ``smt`` and
    ``ceilings`` is in its :func:`fingerprint`."""
    blocks, real = machine.cpuinfo(root), str(root) == machine.ROOT
    model = machine.first(blocks, "model name")
    model = model or machine.sysctl(root).get("machdep.cpu.brand_string", "")
    arm, part = machine.first(blocks, "CPU implementer"), machine.first(blocks, "CPU part")
    if not model and part:
        model = machine.CPUS["arm_cores"].get(f"{arm}:{part}", [f"Arm CPU part {part}"])[0]
    arch = "aarch64" if arm else "arm64" if "Apple" in model else "x86_64"
    cores, smt, _ = machine.physical_cores(root)
    flags = machine.isa_flags(blocks)
    return SimpleNamespace(
        cpu=model or (platform.processor() or platform.machine() if real else "unknown"),
        vendor=machine.first(blocks, "vendor_id") or ("Apple" if "Apple" in model else "unknown"),
        arch=platform.machine() if real else arch,
        logical_cpus=len(machine.usable_cpus(root)),  # CPUs of the affinity mask
        cores=cores,  # the physical cores behind them
        smt=smt,  # two of them are hyper-threads of one core
        cpu_quota=machine.cpu_quota(root)[0],  # in CPUs, None when unlimited
        threads=machine.default_threads(root),  # what the runner gives every framework
        clock_ghz=machine.max_clock_ghz(root)[0],  # the maximum clock, None when unknown
        vector_extensions=[f for f in machine.CPUS["vector_flags"] if f in flags],
        memory_gb=memory_gb(root),
        gpus=gpus() if real else [],
        os=platform.platform(terse=True) if real else "",
        python=platform.python_version(),
        ceilings={p: ceiling(p, root) for p in CEILING_PRECISIONS},
    )


def fingerprint() -> dict:
    """A compact machine identity stored with every benchmark result."""
    r = report()
    fields = {k: v for k, v in vars(r).items() if k not in ("vendor", "smt", "ceilings")}
    return fields | {"peak_gflops": {p: c.peak_gflops for p, c in r.ceilings.items()}}


#: fingerprint fields that make a machine type
MACHINE_FIELDS = ("cpu", "cores", "arch", "vector_extensions", "gpus", "memory_gb")


def cpu_family(cpu: str) -> str:
    """A CPU model string reduced to its family, its first two words once the trademarks,
    generation and clock are gone: 'Intel(R) Xeon(R) Platinum 8480+' -> 'Intel Xeon'."""
    s = re.sub(r"\((?:R|TM|tm|r)\)|®|™", " ", cpu or "")
    s = re.sub(r"\d+(?:th|st|nd|rd) Gen\b|\bCPU\b|\bProcessor\b|@.*$|\d+-Core", " ", s)
    return " ".join(s.split()[:2]) or "unknown CPU"  # the brand and its series


def isa_tier(exts: Iterable[str]) -> str:
    """The widest vector unit: the one that decides a CPU's arithmetic rate."""
    found = set(exts or ())
    tiers = machine.CPUS["isa_tiers"].items()
    return next((name for flag, name in tiers if flag in found), "SSE")


def machine_of(fingerprint: dict, fixture: bool = False) -> dict:
    """The machine type of a record's ``machine``: its id (a hash of :data:`MACHINE_FIELDS`),
    label, CPU, family, ISA tier, cores, architecture, memory and the fingerprint as JSON."""
    ident = {k: fingerprint.get(k) for k in MACHINE_FIELDS}
    mid = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:12]
    family = cpu_family(str(fingerprint.get("cpu") or ""))
    isa = isa_tier(fingerprint.get("vector_extensions") or [])
    cores, memory, gpus = (fingerprint.get(k) for k in ("cores", "memory_gb", "gpus"))
    label = f"{family} ({isa}), {fingerprint.get('cores', '?')} cores"
    label += f", {len(gpus)} GPU" if gpus else ""
    return {
        "machine_id": mid,
        "label": ("fixture: " if fixture else "") + label,
        "cpu": str(fingerprint.get("cpu") or "unknown"),
        "family": family,
        "isa": isa,
        "cores": cores if isinstance(cores, int) else None,
        "arch": str(fingerprint.get("arch") or ""),
        "memory_gb": memory if isinstance(memory, int | float) else None,
        "fixture": fixture,
        "fingerprint": json.dumps(fingerprint, sort_keys=True),
    }
