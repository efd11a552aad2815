"""What machine is this and how fast could it compute: its CPUs, their physical cores, the CPU
quota and maximum clock, read from its files under ``root``, the folder that stands for ``/`` (a
fixture tree in the tests; for macOS a file ``sysctl`` holds ``sysctl`` output); the compute
ceiling per precision (``cores x maximum clock x FLOPs per cycle``: an estimate, unknown without
a clock; a figure above it is flagged with its likely cause, never an error); the report, the
fingerprint stored with results and the machine type it reduces to (never a host name).

The affinity mask (``taskset``, ``--cpuset-cpus``), the physical cores behind it (hyper-threads
share a core's vector units, so they count once) and the cgroup CPU quota (Docker ``--cpus``,
Binder, JupyterHub) give :func:`default_threads`, the thread count of every framework.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

from .. import resnet
from ..util import data_file

__all__ = [
    "CEILING_PRECISIONS",
    "MAX_GHZ_ENV",
    "ROOT",
    "Ceiling",
    "ceiling",
    "default_threads",
    "fingerprint",
    "machine_of",
    "per_cycle",
    "report",
]

ROOT = "/"
#: environment variable: the CPU's maximum clock in GHz, for machines that do not report it
MAX_GHZ_ENV = "LABKIT_CPU_MAX_GHZ"
#: what labkit knows of CPUs: labkit/data/cpus.toml
CPUS = data_file("cpus")


def read(root: str | os.PathLike, rel: str) -> str | None:
    """The text of the file ``rel`` under ``root``, or None when it cannot be read."""
    try:
        return (Path(root) / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def parse_cpu_list(text: str) -> list[int]:
    """``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]`` (the kernel's CPU list format)."""
    spans = [part.split("-") for part in text.strip().split(",") if part.strip()]  # "a" or "a-b"
    return sorted({cpu for s in spans for cpu in range(int(s[0]), int(s[-1]) + 1)})


def _pairs(text: str) -> dict[str, str]:
    """``key: value`` lines as a dict (a block of ``/proc/cpuinfo``, ``sysctl`` output)."""
    pairs = (line.partition(":") for line in text.splitlines())
    return {k.strip(): v.strip() for k, sep, v in pairs if sep}


def cpuinfo(root: str | os.PathLike = ROOT) -> list[dict[str, str]]:
    """``/proc/cpuinfo`` as one dict per processor (Arm kernels put some keys in a last block)."""
    chunks = re.split(r"\n\s*\n", read(root, "proc/cpuinfo") or "")
    return [block for chunk in chunks if (block := _pairs(chunk))]


def first(blocks: list[dict[str, str]], key: str) -> str:
    """The first non-empty value of ``key`` over :func:`cpuinfo`'s blocks ("" when none)."""
    return next((b[key] for b in blocks if b.get(key)), "")


def isa_flags(blocks: list[dict[str, str]]) -> set[str]:
    """The CPU's ISA flags: x86's ``flags``, else Arm's ``Features``."""
    return set((first(blocks, "flags") or first(blocks, "Features")).split())


@functools.lru_cache(maxsize=8)
def sysctl(root: str | os.PathLike = ROOT) -> dict[str, str]:
    """macOS's ``sysctl`` values (a fixture tree's file ``sysctl``); empty elsewhere."""
    text = read(root, "sysctl")
    if text is None and str(root) == ROOT and sys.platform == "darwin":
        cmd = ["/usr/sbin/sysctl", "-a"]
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
            text = done.stdout
    return _pairs(text or "")


def usable_cpus(root: str | os.PathLike = ROOT) -> list[int]:
    """The logical CPUs this process may run on (its affinity mask): Linux's
    ``proc/self/status``, else macOS's sysctl."""
    allowed = _pairs(read(root, "proc/self/status") or "").get("Cpus_allowed_list")
    if allowed:
        return parse_cpu_list(allowed)
    return list(range(int(sysctl(root).get("hw.logicalcpu") or 1)))


def physical_cores(root: str | os.PathLike = ROOT) -> tuple[int, bool, str]:
    """``(cores, smt, how)``: the physical cores behind the usable CPUs, and whether any two
    usable CPUs are hyper-threads (SMT siblings) of one core."""
    cpus = usable_cpus(root)
    base = "sys/devices/system/cpu/cpu{}/topology/"
    siblings = [read(root, base.format(cpu) + "thread_siblings_list") for cpu in cpus]
    if cpus and None not in siblings:
        used = {frozenset(parse_cpu_list(s)) & set(cpus) for s in siblings}
        smt = any(len(g) > 1 for g in used)
        return len(used), smt, "SMT siblings from sysfs thread_siblings_list"
    blocks = {b.get("processor"): b for b in cpuinfo(root)}
    ids = [blocks.get(str(cpu), {}) for cpu in cpus]
    if cpus and all("core id" in b for b in ids):
        n = len({(b.get("physical id", "0"), b["core id"]) for b in ids})
        return n, n < len(cpus), "core ids in /proc/cpuinfo"
    mac = sysctl(root)
    if mac.get("hw.physicalcpu"):
        n, logical = int(mac["hw.physicalcpu"]), int(mac.get("hw.logicalcpu") or 0)
        return n, logical > n, "sysctl hw.physicalcpu"
    return len(cpus), False, "no topology found: each usable CPU counted as a core"


def _ancestors(path: str) -> list[str]:
    """``/a/b`` -> ``["a/b/", "a/", ""]``: the folder of a cgroup and of every cgroup above it."""
    parts = [p for p in path.strip("/").split("/") if p]
    return ["".join(p + "/" for p in parts[:i]) for i in range(len(parts), -1, -1)]


def cpu_quota(root: str | os.PathLike = ROOT) -> tuple[float | None, str]:
    """``(CPUs, where)``: the CPU time per second this process's cgroup may use (None: no
    limit), the smallest of v2 ``cpu.max`` and v1 ``cfs_quota_us / cfs_period_us`` on the way
    up the cgroup tree."""
    paths = {}  # controller ("" for cgroup v2) -> this process's cgroup
    for line in (read(root, "proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            paths.update(dict.fromkeys(parts[1].split(","), parts[2].strip()))
    found: list[tuple[float, str]] = []
    for rel in _ancestors(paths.get("", "/")):
        text = read(root, f"sys/fs/cgroup/{rel}cpu.max")
        if text and text.split()[0] != "max":
            quota, period = (text.split() + ["100000"])[:2]
            found.append((int(quota) / int(period), f"cgroup v2 sys/fs/cgroup/{rel}cpu.max"))
    for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        for rel in _ancestors(paths.get("cpu", "/")):
            folder = f"sys/fs/cgroup/{mount}/{rel}"
            quota = read(root, folder + "cpu.cfs_quota_us")
            period = read(root, folder + "cpu.cfs_period_us")
            if quota and period and int(quota) > 0 and int(period) > 0:
                found.append((int(quota) / int(period), f"cgroup v1 {folder}cpu.cfs_quota_us"))
    return min(found) if found else (None, "no cgroup CPU quota")


def default_threads(root: str | os.PathLike = ROOT) -> int:
    """The intra-op threads of every framework: the physical cores of the affinity mask, at
    most the CPU quota rounded down, at least 1."""
    cores, _, _ = physical_cores(root)
    quota, _ = cpu_quota(root)
    return max(1, cores if quota is None else min(cores, math.floor(quota)))


def max_clock_ghz(root: str | os.PathLike = ROOT) -> tuple[float | None, str]:
    """``(GHz, source)``, or ``(None, why)``: ``LABKIT_CPU_MAX_GHZ``, else cpufreq's maximum, the
    GHz in the model name (a base clock) or Apple's published maximum; never the current clock
    (an idle CPU reports a fraction of its maximum)."""
    env = os.environ.get(MAX_GHZ_ENV, "").strip()
    if env:
        if not re.fullmatch(r"\d+(\.\d*)?|\.\d+", env) or not 0 < float(env) < 20:
            raise ValueError(
                f"{MAX_GHZ_ENV}={env!r} is not a clock in GHz: give your CPU's maximum (boost) "
                f"clock, e.g. {MAX_GHZ_ENV}=3.7"
            )
        return float(env), f"{MAX_GHZ_ENV}={env} (your setting)"
    path = "sys/devices/system/cpu/cpu{}/cpufreq/cpuinfo_max_freq"
    texts = [(read(root, path.format(cpu)) or "").strip() for cpu in usable_cpus(root)]
    khz = [int(t) for t in texts if t.isdigit()]
    if khz:
        return max(khz) / 1e6, "cpufreq cpuinfo_max_freq"
    blocks, mac = cpuinfo(root), sysctl(root)
    name = first(blocks, "model name") or mac.get("machdep.cpu.brand_string", "")
    m = re.search(r"([\d.]+)\s*GHz", name, re.IGNORECASE)
    if m:
        return float(m.group(1)), f"the model name ({name!r}: a base clock, turbo can exceed it)"
    chip = re.search(r"Apple (M\d)", name)
    if chip and chip.group(1) in CPUS["apple_max_ghz"]:
        ghz = CPUS["apple_max_ghz"][chip.group(1)]
        return ghz, f"Apple {chip.group(1)}'s published P-core maximum"
    current = first(blocks, "cpu MHz")
    seen = f" (the current clock, {float(current) / 1e3:.2f} GHz, is no maximum)" if current else ""
    return None, (
        f"unknown: no cpufreq maximum and no GHz in the model name {name!r}{seen}; "
        f"set {MAX_GHZ_ENV} to your CPU's maximum clock"
    )


# ---------------------------------------------------------------------------------------------
# the ceiling: FLOPs per cycle from the ISA, times the cores and the clock

#: precisions the ceiling is estimated for (the runner's are fp32 and bf16; deploy adds int8)
CEILING_PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")


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
        rule = next(r for r in CPUS[isa][precision] if set(r.get("flags", ())) <= flags)
        flops = rule.get("flops") or rule["times"] * (out["fp32"].flops if out else pipes)
        how = rule["how"].format(core=core, pipes=pipes)
        out[precision] = PerCycle(flops, how, caveat, rule.get("native", True))
    return out


def _arm(flags: set[str], implementer: str, part: str, caveat: str = "") -> dict[str, PerCycle]:
    cores = CPUS["arm_cores"]
    core, pipes = cores.get(f"{implementer}:{part}") or cores.get(implementer) or ("", 4)
    if not core:
        core = f"Arm core (implementer {implementer or '?'}, part {part or '?'})"
        caveat = "the core is not in labkit's table: 4 FMA pipes were assumed"
    return _rates("arm", flags, pipes, caveat, core)


def per_cycle(root: str | os.PathLike = ROOT) -> dict[str, PerCycle]:
    """FLOPs (int8: operations) per cycle per core, for each of :data:`CEILING_PRECISIONS`."""
    blocks = cpuinfo(root)
    isa, implementer = isa_flags(blocks), first(blocks, "CPU implementer")
    if implementer or "asimd" in isa:
        return _arm(isa, implementer, first(blocks, "CPU part"))
    if blocks:
        family = f"family {first(blocks, 'cpu family')}"
        return _rates("x86", isa | {first(blocks, "vendor_id"), family})
    mac, apple = sysctl(root), CPUS["apple"]
    if "Apple" in mac.get("machdep.cpu.brand_string", ""):
        features = apple["features"].items()
        flags = {f for feat, f in features if mac.get(f"hw.optional.arm.{feat}") == "1"}
        return _arm(flags, apple["implementer"], "", apple["caveat"])
    return _rates("unknown", set())


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
        """Most ResNet-50 images/s at ``image_size`` (training: 3x the FLOPs); None when unknown."""
        if self.peak_gflops is None:
            return None
        return self.peak_gflops * 1e9 / resnet.flops(image_size, training=training)

    def explain_above(self) -> str:
        """The likely cause, in words, of a measurement above this ceiling."""
        if self.peak_gflops is None:
            return ""
        causes = [*self.caveats, "a timing error (a step that returns before its work is done)"]
        return CPUS["say"]["above_ceiling"].format(**self._asdict(), causes="; ".join(causes))


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
    quota_how = "" if quota is None else f", CPU quota {quota:g} ({quota_where})"
    cores_how = f"{n} physical cores ({topology}{', SMT on' if smt else ''}){quota_how}"
    known = ghz is not None and not math.isnan(rate.flops)
    peak = usable * ghz * rate.flops if known else None
    clock = f"{ghz:.2f} GHz max ({clock_how})" if ghz is not None else f"clock {clock_how}"
    method = f"{usable:g} cores [{cores_how}] x {clock} x {rate.flops:g} {precision} "
    method += f"FLOP/cycle ({rate.how})"
    method += f" = {peak:.0f} GFLOP/s" if peak is not None else ": peak unknown"
    low = [c for src, c in CPUS["clock_caveats"].items() if clock_how.startswith(src)]
    caveats = tuple(c for c in (rate.caveat, *low) if c)
    return Ceiling(precision, usable, ghz, rate.flops, peak, method, caveats)


# ---------------------------------------------------------------------------------------------
# the report, the fingerprint and the machine type


def gpus() -> list[str]:
    """NVIDIA GPUs by name, from nvidia-smi (no framework import)."""
    cmd = ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):  # no NVIDIA driver
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def memory_gb(root: str | os.PathLike = ROOT) -> float:
    """The machine's memory in GiB (``MemTotal``, or macOS's ``hw.memsize``); 0 when unknown."""
    kib = _pairs(read(root, "proc/meminfo") or "").get("MemTotal", "").split()  # "16384 kB"
    if kib:
        return round(int(kib[0]) / 2**20, 1)
    size = sysctl(root).get("hw.memsize", "")
    return round(int(size) / 2**30, 1) if size.isdigit() else 0.0


@functools.lru_cache(maxsize=8)
def report(root: str | os.PathLike = ROOT) -> SimpleNamespace:
    """Everything about one machine (cached per root); every field but ``vendor``, ``smt`` and
    ``ceilings`` is in its :func:`fingerprint`."""
    blocks, real = cpuinfo(root), str(root) == ROOT
    model = first(blocks, "model name") or sysctl(root).get("machdep.cpu.brand_string", "")
    arm, part = first(blocks, "CPU implementer"), first(blocks, "CPU part")
    if not model and part:
        model = CPUS["arm_cores"].get(f"{arm}:{part}", [f"Arm CPU part {part}"])[0]
    arch = "aarch64" if arm else "arm64" if "Apple" in model else "x86_64"
    cores, smt, _ = physical_cores(root)
    flags = isa_flags(blocks)
    return SimpleNamespace(
        cpu=model or (platform.processor() or platform.machine() if real else "unknown"),
        vendor=first(blocks, "vendor_id") or ("Apple" if "Apple" in model else "unknown"),
        arch=platform.machine() if real else arch,
        logical_cpus=len(usable_cpus(root)),  # CPUs of the affinity mask
        cores=cores,  # the physical cores behind them
        smt=smt,  # two of them are hyper-threads of one core
        cpu_quota=cpu_quota(root)[0],  # in CPUs, None when unlimited
        threads=default_threads(root),  # what the runner gives every framework
        clock_ghz=max_clock_ghz(root)[0],  # the maximum clock, None when unknown
        vector_extensions=[f for f in CPUS["vector_flags"] if f in flags],
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


def machine_of(fingerprint: dict, fixture: bool = False) -> dict:
    """The machine type of a record's ``machine``: its id (a hash of :data:`MACHINE_FIELDS`),
    label, CPU, family, ISA tier, cores, architecture, memory and the fingerprint as JSON."""
    ident = {k: fingerprint.get(k) for k in MACHINE_FIELDS}
    mid = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:12]
    family = cpu_family(str(fingerprint.get("cpu") or ""))
    exts = fingerprint.get("vector_extensions") or []  # the widest unit decides the rate
    isa = next((name for flag, name in CPUS["isa_tiers"].items() if flag in exts), "SSE")
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
