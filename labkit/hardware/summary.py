"""Everything about one machine in one report, and the compact identity stored with results."""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass

from .clock import max_clock_ghz
from .files import ROOT, cpuinfo, first, read, sysctl
from .peak import ARM_PARTS, CEILING_PRECISIONS, Ceiling, ceiling, vector_extensions
from .topology import cpu_quota, default_threads, physical_cores, usable_cpus

__all__ = ["MachineReport", "fingerprint", "gpus", "report"]


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
