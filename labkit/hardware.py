"""What machine is this, and how fast could it possibly run ResNet-50?

Framework-free: it reads ``/proc/cpuinfo`` (or ``platform``), asks ``nvidia-smi`` for GPUs and
package metadata for versions. The compute ceiling is the textbook estimate
``cores x clock x FP32 FLOPs per cycle`` (vector width x 2 for fused multiply-add x FMA units);
dividing it by ResNet-50's FLOPs per image gives the most images/s the machine could reach.
A measurement above that ceiling is a timing bug, not a fast framework.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field

from . import resnet

#: Vector ISA extensions the report looks for (x86 flag names, plus Arm's).
VECTOR_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512_bf16",
    "avx512_vnni",
    "amx_bf16",
    "amx_tile",
    "asimd",
    "sve",
    "sve2",
)
#: Server CPUs boost above the clock that a VM reports; Zen 4 EPYC: 3.7 / 2.6 GHz.
BOOST_HEADROOM = 1.43


@dataclass
class Ceiling:
    flops_per_cycle_per_core: int
    clock_ghz: float
    cores: int
    peak_gflops: float  # at the reported clock
    peak_gflops_boost: float  # with BOOST_HEADROOM, the upper bound used for checks
    gflop_per_image: float  # ResNet-50 inference at 224x224
    images_per_s: float  # at the reported clock
    images_per_s_boost: float
    train_images_per_s_boost: float  # a training step costs ~3x the forward FLOPs
    method: str

    def images_per_s_at(self, image_size: int, training: bool = False) -> float:
        """Upper bound on images/s for ResNet-50 at ``image_size`` (inference or training)."""
        return self.peak_gflops_boost * 1e9 / resnet.flops(image_size, training=training)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class MachineReport:
    cpu_model: str
    vendor: str
    arch: str
    cores: int
    vector_extensions: list[str]
    memory_gb: float
    gpus: list[str]
    os: str
    python: str
    ceiling: Ceiling
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if ":" in line:
                    k, v = line.split(":", 1)
                    info.setdefault(k.strip(), v.strip())
    except OSError:
        pass
    return info


def cores() -> int:
    """CPUs this process may run on (the affinity mask, which containers narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def vector_extensions(info: dict[str, str] | None = None) -> list[str]:
    info = _cpuinfo() if info is None else info
    flags = set((info.get("flags") or info.get("Features") or "").split())
    return [f for f in VECTOR_FLAGS if f in flags]


def clock_ghz(info: dict[str, str] | None = None) -> tuple[float, str]:
    info = _cpuinfo() if info is None else info
    if "cpu MHz" in info:
        return float(info["cpu MHz"]) / 1000.0, "cpu MHz in /proc/cpuinfo"
    m = re.search(r"@\s*([\d.]+)\s*GHz", info.get("model name", ""))
    if m:
        return float(m.group(1)), "clock in the CPU model name"
    return 2.5, "assumed 2.5 GHz (the clock is not reported here)"


def flops_per_cycle(exts: list[str], vendor: str) -> tuple[int, str]:
    """FP32 FLOPs per cycle per core: lanes x 2 (FMA) x FMA pipes, by the widest vector ISA."""
    if "avx512f" in exts:
        if "AMD" in vendor:  # Zen 4/5: two 256-bit FMA pipes, AVX-512 double-pumped
            return 32, "AVX-512 on AMD: 2 x 256-bit FMA pipes = 32 FP32 FLOP/cycle"
        return 64, "AVX-512 on Intel: 2 x 512-bit FMA units = 64 FP32 FLOP/cycle"
    if "avx2" in exts and "fma" in exts:
        return 32, "AVX2+FMA: 2 x 256-bit FMA units = 32 FP32 FLOP/cycle"
    if "avx" in exts:
        return 16, "AVX without FMA: 16 FP32 FLOP/cycle"
    if "asimd" in exts or platform.machine() in ("arm64", "aarch64"):
        return 16, "Arm NEON: 2 x 128-bit FMA pipes = 16 FP32 FLOP/cycle"
    return 8, "SSE: 8 FP32 FLOP/cycle"


def ceiling(info: dict[str, str] | None = None) -> Ceiling:
    info = _cpuinfo() if info is None else info
    vendor = info.get("vendor_id", platform.processor() or "unknown")
    fpc, fpc_how = flops_per_cycle(vector_extensions(info), vendor)
    ghz, ghz_how = clock_ghz(info)
    n = cores()
    peak = n * ghz * fpc
    gflop = resnet.flops(224) / 1e9
    return Ceiling(
        flops_per_cycle_per_core=fpc,
        clock_ghz=round(ghz, 3),
        cores=n,
        peak_gflops=round(peak, 1),
        peak_gflops_boost=round(peak * BOOST_HEADROOM, 1),
        gflop_per_image=round(gflop, 2),
        images_per_s=round(peak / gflop, 1),
        images_per_s_boost=round(peak * BOOST_HEADROOM / gflop, 1),
        train_images_per_s_boost=round(peak * BOOST_HEADROOM / (3 * gflop), 1),
        method=(
            f"{n} cores x {ghz:.2f} GHz ({ghz_how}) x {fpc} FLOP/cycle ({fpc_how}); "
            f"upper bound allows {BOOST_HEADROOM:.2f}x boost clock; "
            f"ResNet-50 = {gflop:.2f} GFLOP per 224x224 image (2 x MACs)"
        ),
    )


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


def memory_gb() -> float:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return 0.0


@functools.lru_cache(maxsize=1)
def report() -> MachineReport:
    info = _cpuinfo()
    return MachineReport(
        cpu_model=info.get("model name", platform.processor() or platform.machine()),
        vendor=info.get("vendor_id", "unknown"),
        arch=platform.machine(),
        cores=cores(),
        vector_extensions=vector_extensions(info),
        memory_gb=memory_gb(),
        gpus=gpus(),
        os=platform.platform(terse=True),
        python=platform.python_version(),
        ceiling=ceiling(info),
    )


def fingerprint() -> dict:
    """A compact machine identity stored with every benchmark result."""
    r = report()
    return {
        "cpu": r.cpu_model,
        "cores": r.cores,
        "arch": r.arch,
        "vector_extensions": r.vector_extensions,
        "gpus": r.gpus,
        "memory_gb": r.memory_gb,
        "os": r.os,
        "python": r.python,
        "peak_gflops_boost": r.ceiling.peak_gflops_boost,
    }
