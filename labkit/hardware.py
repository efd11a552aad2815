"""What machine is this, what may this process use of it, and how fast could ResNet-50 run on it?

Framework-free. Every reading takes ``root``: the folder that stands for the filesystem root
(``"/"`` on a real machine), so the tests read fixture trees (``proc/cpuinfo``,
``proc/self/status``, ``proc/self/cgroup``, ``sys/devices/system/cpu/...``, ``sys/fs/cgroup/...``;
for macOS a file ``sysctl`` holding ``sysctl`` output) instead of the machine they run on.

What this process may use:

- the CPUs of its **affinity mask** (``Cpus_allowed_list`` in ``/proc/self/status``, which
  ``taskset``, ``docker --cpuset-cpus`` and Kubernetes narrow);
- the **physical cores** behind them: two hyper-threads (SMT siblings) share one core's vector
  units, so they count once (``thread_siblings_list``, else ``core id`` in ``/proc/cpuinfo``);
- the **CPU quota** of its cgroup (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``),
  which Docker ``--cpus``, Binder and JupyterHub set: a 1.5-CPU quota gives 1.5 cores' worth of
  time whatever the machine has.

:func:`default_threads` turns that into the thread count the runner gives every framework.

The compute **ceiling** is the textbook estimate ``cores x maximum clock x FLOPs per cycle per
core``, per precision: FLOPs per cycle follow from the instruction set (fp32 FMA units; bf16
through AVX-512 BF16, AMX or Arm's BF16 instructions; int8 through VNNI, AMX or Arm's dot
products). The clock is the *maximum* one: ``LABKIT_CPU_MAX_GHZ`` if you set it, else cpufreq's
``cpuinfo_max_freq``, else the GHz in the CPU's model name; otherwise it is unknown and so is the
ceiling (``peak_gflops`` is None), because the current clock in ``/proc/cpuinfo`` says nothing
about the maximum (an idle laptop reports a fraction of it). The ceiling stays an *estimate*: a
measurement above it is flagged with its likely cause (:meth:`Ceiling.explain_above`), never
treated as an error.
"""

from __future__ import annotations

import functools
import math
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import resnet

ROOT = "/"
#: environment variable: the CPU's maximum clock in GHz, for machines that do not report it
MAX_GHZ_ENV = "LABKIT_CPU_MAX_GHZ"
#: precisions the ceiling is estimated for (the runner's are fp32 and bf16; deploy adds int8)
CEILING_PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")

#: Vector and matrix ISA extensions the report looks for (x86 flag names, then Arm's).
VECTOR_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512_bf16",
    "avx512_vnni",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "asimddp",
    "sve",
    "sve2",
    "bf16",
    "i8mm",
)

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
#: Apple silicon: published maximum performance-core clocks (GHz) by chip generation, since
#: macOS does not report clocks on Apple silicon
APPLE_MAX_GHZ: dict[str, float] = {"M1": 3.2, "M2": 3.5, "M3": 4.05, "M4": 4.5}


# ---------------------------------------------------------------------------------------------
# reading files under root


def _read(root: str | os.PathLike, rel: str) -> str | None:
    try:
        return (Path(root) / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def parse_cpu_list(text: str) -> list[int]:
    """``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]`` (the kernel's CPU list format)."""
    out: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return sorted(set(out))


def cpuinfo(root: str | os.PathLike = ROOT) -> list[dict[str, str]]:
    """``/proc/cpuinfo`` as one dict per processor (Arm kernels put some keys in a last block)."""
    text = _read(root, "proc/cpuinfo") or ""
    blocks: list[dict[str, str]] = []
    for chunk in re.split(r"\n\s*\n", text):
        block = {}
        for line in chunk.splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                block.setdefault(k.strip(), v.strip())
        if block:
            blocks.append(block)
    return blocks


def _first(blocks: list[dict[str, str]], key: str, default: str = "") -> str:
    return next((b[key] for b in blocks if b.get(key)), default)


def sysctl(root: str | os.PathLike = ROOT) -> dict[str, str]:
    """macOS's ``sysctl`` values the report needs (a fixture tree holds them in a file ``sysctl``).

    Empty on other systems.
    """
    text = _read(root, "sysctl")
    if text is None and str(root) == ROOT and sys.platform == "darwin":
        text = _macos_sysctl()
    out = {}
    for line in (text or "").splitlines():
        k, sep, v = line.partition(":")
        if sep:
            out[k.strip()] = v.strip()
    return out


@functools.lru_cache(maxsize=1)
def _macos_sysctl() -> str:
    """Everything this Mac's ``sysctl -a`` reports, asked once ("key: value" lines)."""
    exe = shutil.which("sysctl") or "/usr/sbin/sysctl"
    try:
        return subprocess.run(
            [exe, "-a"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


# ---------------------------------------------------------------------------------------------
# what this process may use


def usable_cpus(root: str | os.PathLike = ROOT) -> list[int]:
    """The logical CPUs this process may run on: its affinity mask.

    Read from ``Cpus_allowed_list`` in ``proc/self/status`` (what ``sched_getaffinity`` returns);
    where that file is missing, the online CPUs, ``/proc/cpuinfo``'s processors, or (on a real
    machine without ``/proc``, e.g. macOS) ``os.cpu_count()``.
    """
    status = _read(root, "proc/self/status") or ""
    m = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.MULTILINE)
    if m:
        return parse_cpu_list(m.group(1))
    if str(root) == ROOT and hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    online = _read(root, "sys/devices/system/cpu/online")
    if online:
        return parse_cpu_list(online)
    procs = [int(b["processor"]) for b in cpuinfo(root) if b.get("processor", "").isdigit()]
    if procs:
        return procs
    mac = sysctl(root)
    n = int(mac.get("hw.logicalcpu") or 0) or (os.cpu_count() if str(root) == ROOT else 0) or 1
    return list(range(n))


def physical_cores(root: str | os.PathLike = ROOT) -> tuple[int, bool, str]:
    """``(cores, smt, how)``: the physical cores behind the usable CPUs, and whether any two
    usable CPUs are hyper-threads (SMT siblings) of one core."""
    cpus = usable_cpus(root)
    groups: set[frozenset[int]] = set()
    for cpu in cpus:
        base = f"sys/devices/system/cpu/cpu{cpu}/topology/"
        siblings = _read(root, base + "thread_siblings_list") or _read(
            root, base + "core_cpus_list"
        )
        if siblings is None:
            break
        groups.add(frozenset(parse_cpu_list(siblings)))
    else:
        if cpus:
            used = {frozenset(g & set(cpus)) for g in groups}
            smt = any(len(g) > 1 for g in used)
            return len(used), smt, "SMT siblings from sysfs thread_siblings_list"
    blocks = {b.get("processor"): b for b in cpuinfo(root)}
    ids = set()
    for cpu in cpus:
        b = blocks.get(str(cpu), {})
        if "core id" not in b:
            break
        ids.add((b.get("physical id", "0"), b["core id"]))
    else:
        if cpus:
            return len(ids), len(ids) < len(cpus), "core ids in /proc/cpuinfo"
    mac = sysctl(root)
    if mac.get("hw.physicalcpu"):
        n, logical = int(mac["hw.physicalcpu"]), int(mac.get("hw.logicalcpu") or 0)
        return n, logical > n, "sysctl hw.physicalcpu"
    return len(cpus), False, "no topology found: each usable CPU counted as a core"


def _cgroup_paths(root: str | os.PathLike) -> dict[str, str]:
    """controller (``""`` for cgroup v2) -> this process's cgroup path, from proc/self/cgroup."""
    out = {}
    for line in (_read(root, "proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(","):
                out[controller] = parts[2].strip()
    return out


def _ancestors(path: str) -> list[str]:
    """``/a/b`` -> ``["a/b", "a", ""]``: a cgroup and every cgroup above it."""
    parts = [p for p in path.strip("/").split("/") if p]
    return ["/".join(parts[:i]) for i in range(len(parts), -1, -1)]


def cpu_quota(root: str | os.PathLike = ROOT) -> tuple[float | None, str]:
    """``(CPUs, where)``: the CPU time per second this process's cgroup may use, None if unlimited.

    cgroup v2: ``cpu.max`` (``"150000 100000"`` is 1.5 CPUs, ``"max 100000"`` no limit); cgroup
    v1: ``cpu.cfs_quota_us / cpu.cfs_period_us`` (a quota of -1: no limit). A limit anywhere on
    the way up to the root applies, so the smallest one counts. Inside a container the
    process's own cgroup is usually mounted at the root of ``/sys/fs/cgroup``.
    """
    paths = _cgroup_paths(root)
    found: list[tuple[float, str]] = []
    v2 = paths.get("", "/")
    for rel in _ancestors(v2):
        folder = "sys/fs/cgroup/" + (rel + "/" if rel else "")
        text = _read(root, folder + "cpu.max")
        if text and text.split()[0] != "max":
            quota, period = (text.split() + ["100000"])[:2]
            found.append((int(quota) / int(period), f"cgroup v2 {folder}cpu.max"))
    for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        for rel in _ancestors(paths.get("cpu", "/")):
            folder = f"sys/fs/cgroup/{mount}/" + (rel + "/" if rel else "")
            quota = _read(root, folder + "cpu.cfs_quota_us")
            period = _read(root, folder + "cpu.cfs_period_us")
            if quota and period and int(quota) > 0 and int(period) > 0:
                found.append((int(quota) / int(period), f"cgroup v1 {folder}cpu.cfs_quota_us"))
    if not found:
        return None, "no cgroup CPU quota"
    return min(found)


def default_threads(root: str | os.PathLike = ROOT) -> int:
    """The intra-op thread count the runner gives every framework: the CPUs this process can
    really use.

    The physical cores of the affinity mask (a hyper-thread adds little to dense arithmetic
    and contends for the same vector units), at most the cgroup CPU quota rounded down (a
    1.5-CPU quota: one thread, which the quota never throttles), and at least 1.
    """
    cores, _, _ = physical_cores(root)
    quota, _ = cpu_quota(root)
    if quota is not None:
        cores = min(cores, math.floor(quota))
    return max(1, cores)


def cores(root: str | os.PathLike = ROOT) -> int:
    """The thread count labkit uses by default (the same as :func:`default_threads`)."""
    return default_threads(root)


# ---------------------------------------------------------------------------------------------
# the clock


def max_clock_ghz(root: str | os.PathLike = ROOT) -> tuple[float | None, str]:
    """``(GHz, source)``: the CPU's maximum clock, or ``(None, why)`` when it cannot be told.

    In order: ``LABKIT_CPU_MAX_GHZ`` (your setting), cpufreq's ``cpuinfo_max_freq`` (the
    highest over the usable CPUs), the GHz in the CPU's model name (Intel's names carry the
    *base* clock: turbo can exceed it), Apple silicon's published maximum. The current clock
    (``cpu MHz``) is never used: an idle CPU reports a fraction of its maximum.
    """
    env = os.environ.get(MAX_GHZ_ENV, "").strip()
    if env:
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
    khz = [
        int(text)
        for cpu in usable_cpus(root)
        if (text := _read(root, f"sys/devices/system/cpu/cpu{cpu}/cpufreq/cpuinfo_max_freq"))
        and text.strip().isdigit()
    ]
    if khz:
        return max(khz) / 1e6, "cpufreq cpuinfo_max_freq"
    blocks = cpuinfo(root)
    name = _first(blocks, "model name") or sysctl(root).get("machdep.cpu.brand_string", "")
    m = re.search(r"([\d.]+)\s*GHz", name, re.IGNORECASE)
    if m:
        return float(m.group(1)), f"the model name ({name!r}: a base clock, turbo can exceed it)"
    mac = sysctl(root)
    if mac.get("hw.cpufrequency_max", "").isdigit():
        return int(mac["hw.cpufrequency_max"]) / 1e9, "sysctl hw.cpufrequency_max"
    chip = re.search(r"Apple (M\d)", name)
    if chip and chip.group(1) in APPLE_MAX_GHZ:
        return APPLE_MAX_GHZ[chip.group(1)], f"Apple {chip.group(1)}'s published P-core maximum"
    current = _first(blocks, "cpu MHz")
    seen = f" (the current clock, {float(current) / 1e3:.2f} GHz, is no maximum)" if current else ""
    return None, (
        f"unknown: no cpufreq maximum and no GHz in the model name {name!r}{seen}; "
        f"set {MAX_GHZ_ENV} to your CPU's maximum clock"
    )


# ---------------------------------------------------------------------------------------------
# FLOPs per cycle


@dataclass(frozen=True)
class PerCycle:
    """What one core does per cycle at one precision, and how that was worked out."""

    flops: float
    how: str
    caveat: str = ""  # why a figure might honestly beat this rate


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
        bf16 = PerCycle(f, "no bf16 arithmetic: computed at the fp32 rate")
    if {"amx_int8", "amx_tile"} <= flags:
        int8 = PerCycle(2048, "AMX tiles: 2048 int8 op/cycle")
    elif "avx512_vnni" in flags or "avx_vnni" in flags:
        int8 = PerCycle(4 * f, "VNNI dot products: 4x the fp32 rate")
    else:
        int8 = PerCycle(2 * f, "no VNNI: 8-bit multiply-adds at most 2x the fp32 rate")
    return {"fp32": fp32, "bf16": bf16, "int8": int8}


def _arm(flags: set[str], implementer: str, part: str) -> dict[str, PerCycle]:
    if implementer == APPLE_IMPLEMENTER:
        pipes, core, caveat = 4, "Apple performance core", ""
    elif implementer == "0x41" and part in ARM_PARTS:
        core, pipes = ARM_PARTS[part]
        caveat = ""
    else:
        pipes, core = 4, f"Arm core (implementer {implementer or '?'}, part {part or '?'})"
        caveat = "the core is not in labkit's table: 4 FMA pipes were assumed"
    f = pipes * 8  # 4 fp32 lanes x 2 (FMA) per 128-bit pipe
    fp32 = PerCycle(f, f"{core}: {pipes} x 128-bit NEON FMA pipes", caveat)
    bf16 = (
        PerCycle(4 * f, "BF16 matrix multiply-accumulate (BFMMLA): up to 4x the fp32 rate", caveat)
        if "bf16" in flags
        else PerCycle(f, "no bf16 arithmetic: computed at the fp32 rate", caveat)
    )
    if "i8mm" in flags:
        int8 = PerCycle(8 * f, "int8 matrix multiply-accumulate (SMMLA): 8x the fp32 rate", caveat)
    elif "asimddp" in flags:
        int8 = PerCycle(4 * f, "int8 dot products (SDOT): 4x the fp32 rate", caveat)
    else:
        int8 = PerCycle(2 * f, "no int8 dot products: at most 2x the fp32 rate", caveat)
    return {"fp32": fp32, "bf16": bf16, "int8": int8}


def _apple(mac: dict[str, str]) -> dict[str, PerCycle]:
    flags = {
        name
        for key, name in (
            ("hw.optional.arm.FEAT_BF16", "bf16"),
            ("hw.optional.arm.FEAT_I8MM", "i8mm"),
            ("hw.optional.arm.FEAT_DotProd", "asimddp"),
        )
        if mac.get(key) == "1"
    }
    out = _arm(flags, APPLE_IMPLEMENTER, "")
    amx = (
        "Apple's matrix coprocessor (used by the Accelerate framework) is not counted and can "
        "beat the NEON rate"
    )
    return {p: PerCycle(c.flops, c.how, amx) for p, c in out.items()}


def per_cycle(root: str | os.PathLike = ROOT) -> dict[str, PerCycle]:
    """FLOPs (int8: operations) per cycle per core, for each of :data:`CEILING_PRECISIONS`."""
    blocks = cpuinfo(root)
    flags = set((_first(blocks, "flags") or _first(blocks, "Features")).split())
    if _first(blocks, "CPU implementer") or "asimd" in flags:
        return _arm(flags, _first(blocks, "CPU implementer"), _first(blocks, "CPU part"))
    if blocks:
        family = _first(blocks, "cpu family", "0")
        return _x86(flags, _first(blocks, "vendor_id"), int(family) if family.isdigit() else 0)
    mac = sysctl(root)
    if "Apple" in mac.get("machdep.cpu.brand_string", ""):
        return _apple(mac)
    machine = platform.machine().lower() if str(root) == ROOT else ""
    if machine in ("arm64", "aarch64"):
        return _arm(set(), "", "")
    unknown = PerCycle(math.nan, "unknown: no /proc/cpuinfo or sysctl data to read the ISA from")
    return dict.fromkeys(CEILING_PRECISIONS, unknown)


def vector_extensions(root: str | os.PathLike = ROOT) -> list[str]:
    blocks = cpuinfo(root)
    flags = set((_first(blocks, "flags") or _first(blocks, "Features")).split())
    return [f for f in VECTOR_FLAGS if f in flags]


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
        """Most ResNet-50 images/s at ``image_size`` (a training step: 3x the forward FLOPs).

        None when the peak is unknown.
        """
        if self.peak_gflops is None:
            return None
        return self.peak_gflops * 1e9 / resnet.flops(image_size, training=training)

    def explain_above(self) -> str:
        """The likely cause, in words, of a measurement above this ceiling."""
        if self.peak_gflops is None:
            return ""
        causes = list(self.caveats) + [
            "a timing error (a step that returns before its work is done)"
        ]
        return (
            f"above the estimated {self.precision} ceiling ({self.peak_gflops:.0f} GFLOP/s): "
            "the estimate is an upper bound only as good as its inputs; likely causes: "
            + "; ".join(causes)
        )

    def as_dict(self) -> dict:
        return asdict(self)


def _clock_caveat(source: str) -> str:
    if source.startswith("the model name"):
        return "the clock came from the model name, a base clock that turbo boost exceeds"
    if source.startswith("cpufreq"):
        return "cpufreq's maximum can leave out boost clocks (acpi-cpufreq)"
    if source.startswith(MAX_GHZ_ENV):
        return f"{MAX_GHZ_ENV} may be below the CPU's real maximum"
    return ""


def ceiling(precision: str = "fp32", root: str | os.PathLike = ROOT) -> Ceiling:
    """The compute ceiling at ``precision`` (fp32, bf16 or int8) for this process's CPUs."""
    if precision.startswith("int8"):  # int8-dynamic, int8-static: int8 kernels
        precision = "int8"
    if precision not in CEILING_PRECISIONS:
        raise ValueError(
            f"unknown precision {precision!r}: the ceiling is estimated for "
            f"{', '.join(CEILING_PRECISIONS)}"
        )
    n, smt, topology = physical_cores(root)
    quota, quota_where = cpu_quota(root)
    usable = float(n) if quota is None else min(float(n), quota)
    ghz, clock_how = max_clock_ghz(root)
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
    caveats = tuple(c for c in (rate.caveat, _clock_caveat(clock_how)) if c)
    return Ceiling(precision, usable, ghz, rate.flops, peak, method, caveats)


def ceilings(root: str | os.PathLike = ROOT) -> dict[str, Ceiling]:
    """The ceiling at every precision of :data:`CEILING_PRECISIONS`."""
    return {p: ceiling(p, root) for p in CEILING_PRECISIONS}


# ---------------------------------------------------------------------------------------------
# the machine report


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
    for line in (_read(root, "proc/meminfo") or "").splitlines():
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
    clock_source: str
    vector_extensions: list[str]
    memory_gb: float
    gpus: list[str]
    os: str
    python: str
    ceilings: dict[str, Ceiling]
    notes: list[str] = field(default_factory=list)

    @property
    def ceiling(self) -> Ceiling:
        """The fp32 ceiling."""
        return self.ceilings["fp32"]

    def as_dict(self) -> dict:
        return asdict(self)


def _fixture_arch(blocks: list[dict[str, str]], model: str) -> str:
    if _first(blocks, "CPU implementer"):
        return "aarch64"
    return "arm64" if "Apple" in model else "x86_64"


def report(root: str | os.PathLike = ROOT) -> MachineReport:
    """Everything above about one machine (cached per root)."""
    return _report(str(root))


@functools.lru_cache(maxsize=8)
def _report(root: str) -> MachineReport:
    blocks = cpuinfo(root)
    mac = sysctl(root)
    real = root == ROOT
    model = _first(blocks, "model name") or mac.get("machdep.cpu.brand_string", "")
    part = _first(blocks, "CPU part")
    if not model and part:
        model = ARM_PARTS.get(part, (f"Arm CPU part {part}", 0))[0]
    n, smt, _ = physical_cores(root)
    quota, _ = cpu_quota(root)
    ghz, clock_how = max_clock_ghz(root)
    return MachineReport(
        cpu_model=model or (platform.processor() or platform.machine() if real else "unknown"),
        vendor=_first(blocks, "vendor_id") or ("Apple" if "Apple" in model else "unknown"),
        arch=platform.machine() if real else _fixture_arch(blocks, model),
        logical_cpus=len(usable_cpus(root)),
        physical_cores=n,
        smt=smt,
        cpu_quota=quota,
        threads=default_threads(root),
        clock_ghz=ghz,
        clock_source=clock_how,
        vector_extensions=vector_extensions(root),
        memory_gb=memory_gb(root),
        gpus=gpus() if real else [],
        os=platform.platform(terse=True) if real else "",
        python=platform.python_version(),
        ceilings=ceilings(root),
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
