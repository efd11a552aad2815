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
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

from .clock import max_clock_ghz
from .files import ROOT, cpuinfo, first, read, sysctl
from .peak import ARM_PARTS, CEILING_PRECISIONS, Ceiling, ceiling, vector_extensions
from .topology import cpu_quota, default_threads, physical_cores, usable_cpus

__all__ = ["MachineReport", "cpu_family", "fingerprint", "gpus", "isa_tier", "machine_of", "report"]


def gpus() -> list[str]:
    """NVIDIA GPUs by name, from nvidia-smi (no framework import)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def memory_gb(root: str | os.PathLike = ROOT) -> float:
    """The machine's memory in GiB (``MemTotal``, or macOS's ``hw.memsize``); 0 when unknown."""
    for line in (read(root, "proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 2**20, 1)
    size = sysctl(root).get("hw.memsize", "")
    return round(int(size) / 2**30, 1) if size.isdigit() else 0.0


@dataclass
class MachineReport:
    cpu_model: str
    vendor: str
    arch: str
    logical_cpus: int  #: CPUs of the affinity mask
    physical_cores: int  #: the physical cores behind them
    smt: bool  #: two of them are hyper-threads of one core
    cpu_quota: float | None  #: cgroup CPU quota in CPUs, None when unlimited
    threads: int  #: default_threads(): what the runner gives every framework
    clock_ghz: float | None  #: maximum clock, None when unknown
    vector_extensions: list[str]
    memory_gb: float
    gpus: list[str]
    os: str
    python: str
    ceilings: dict[str, Ceiling]


def _fixture_arch(blocks: list[dict[str, str]], model: str) -> str:
    if first(blocks, "CPU implementer"):
        return "aarch64"
    return "arm64" if "Apple" in model else "x86_64"


@functools.lru_cache(maxsize=8)
def report(root: str | os.PathLike = ROOT) -> MachineReport:
    """Everything above about one machine (cached per root)."""
    blocks = cpuinfo(root)
    mac = sysctl(root)
    real = str(root) == ROOT
    model = first(blocks, "model name") or mac.get("machdep.cpu.brand_string", "")
    part = first(blocks, "CPU part")
    if not model and part:
        model = ARM_PARTS.get(part, (f"Arm CPU part {part}", 0))[0]
    n, smt, _ = physical_cores(root)
    quota, _ = cpu_quota(root)
    ghz, _ = max_clock_ghz(root)
    return MachineReport(
        cpu_model=model or (platform.processor() or platform.machine() if real else "unknown"),
        vendor=first(blocks, "vendor_id") or ("Apple" if "Apple" in model else "unknown"),
        arch=platform.machine() if real else _fixture_arch(blocks, model),
        logical_cpus=len(usable_cpus(root)),
        physical_cores=n,
        smt=smt,
        cpu_quota=quota,
        threads=default_threads(root),
        clock_ghz=ghz,
        vector_extensions=vector_extensions(root),
        memory_gb=memory_gb(root),
        gpus=gpus() if real else [],
        os=platform.platform(terse=True) if real else "",
        python=platform.python_version(),
        ceilings={p: ceiling(p, root) for p in CEILING_PRECISIONS},
    )


def fingerprint() -> dict:
    """A compact machine identity stored with every benchmark result."""
    r = report()
    return {
        "cpu": r.cpu_model,
        "cores": r.physical_cores,
        "logical_cpus": r.logical_cpus,
        "cpu_quota": r.cpu_quota,
        "threads": r.threads,
        "arch": r.arch,
        "vector_extensions": r.vector_extensions,
        "gpus": r.gpus,
        "memory_gb": r.memory_gb,
        "os": r.os,
        "python": r.python,
        "clock_ghz": r.clock_ghz,
        "peak_gflops": {p: c.peak_gflops for p, c in r.ceilings.items()},
    }


#: fingerprint fields that make a machine type
MACHINE_FIELDS = ("cpu", "cores", "arch", "vector_extensions", "gpus", "memory_gb")


def cpu_family(cpu: str) -> str:
    """A CPU model string reduced to its family: 'Intel(R) Xeon(R) Platinum 8480+' -> 'Intel Xeon'."""
    s = re.sub(r"\((?:R|TM|tm|r)\)|®|™", " ", cpu or "")
    s = re.sub(r"\d+(?:th|st|nd|rd) Gen\b|\bCPU\b|\bProcessor\b|@.*$|\d+-Core", " ", s)
    words = s.split()
    brands = ("Intel", "AMD", "Apple", "Ampere", "AWS", "ARM", "Arm", "Qualcomm", "HiSilicon")
    if not words:
        return "unknown CPU"
    if words[0] in brands:
        series = next((w for w in words[1:] if re.match(r"^[A-Za-z][A-Za-z]+$", w)), "")
        if words[0] == "Apple" and len(words) > 1:
            series = re.sub(r"[^A-Za-z0-9]", "", words[1])
        return f"{words[0]} {series}".strip()
    return " ".join(words[:2])


def isa_tier(exts: Iterable[str]) -> str:
    """The widest vector unit: the one that decides a CPU's arithmetic rate."""
    exts = set(exts or ())
    for flag, name in (
        ("amx_tile", "AMX"),
        ("avx512f", "AVX-512"),
        ("avx2", "AVX2"),
        ("sve", "SVE"),
        ("asimd", "NEON"),
        ("avx", "AVX"),
    ):
        if flag in exts:
            return name
    return "SSE"


def machine_of(fingerprint: dict, fixture: bool = False) -> dict:
    """The machine type of a record's ``machine``: its id (a hash of :data:`MACHINE_FIELDS`),
    label, CPU, family, ISA tier, cores, architecture, memory and the fingerprint as JSON."""
    ident = {k: fingerprint.get(k) for k in MACHINE_FIELDS}
    mid = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:12]
    family = cpu_family(str(fingerprint.get("cpu") or ""))
    isa = isa_tier(fingerprint.get("vector_extensions") or [])
    gpus = fingerprint.get("gpus") or []
    label = f"{family} ({isa}), {fingerprint.get('cores', '?')} cores" + (
        f", {len(gpus)} GPU" if gpus else ""
    )
    return {
        "machine_id": mid,
        "label": ("fixture: " if fixture else "") + label,
        "cpu": str(fingerprint.get("cpu") or "unknown"),
        "family": family,
        "isa": isa,
        "cores": fingerprint.get("cores") if isinstance(fingerprint.get("cores"), int) else None,
        "arch": str(fingerprint.get("arch") or ""),
        "memory_gb": fingerprint.get("memory_gb")
        if isinstance(fingerprint.get("memory_gb"), int | float)
        else None,
        "fixture": fixture,
        "fingerprint": json.dumps(fingerprint, sort_keys=True),
    }
