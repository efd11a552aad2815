"""What this process may use of the machine: its CPUs, their physical cores, its CPU quota and
the CPUs' maximum clock, read from the machine's files under ``root``, the folder that stands for
``/`` (a fixture tree in the tests; for macOS a file ``sysctl`` holds ``sysctl`` output).

The affinity mask (``taskset``, ``--cpuset-cpus``), the physical cores behind it (hyper-threads
share a core's vector units, so they count once) and the cgroup CPU quota (Docker ``--cpus``,
Binder, JupyterHub) give :func:`default_threads`, the thread count of every framework.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

__all__ = [
    "CPUS",
    "MAX_GHZ_ENV",
    "ROOT",
    "cpu_quota",
    "cpuinfo",
    "default_threads",
    "first",
    "isa_flags",
    "max_clock_ghz",
    "parse_cpu_list",
    "physical_cores",
    "read",
    "sysctl",
    "usable_cpus",
]

ROOT = "/"
#: environment variable: the CPU's maximum clock in GHz, for machines that do not report it
MAX_GHZ_ENV = "LABKIT_CPU_MAX_GHZ"
#: what labkit knows of CPUs: labkit/data/cpus.toml
CPUS = tomllib.loads((Path(__file__).parent.parent / "data" / "cpus.toml").read_text("utf-8"))


def read(root: str | os.PathLike, rel: str) -> str | None:
    """The text of the file ``rel`` under ``root``, or None when it cannot be read."""
    try:
        return (Path(root) / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def parse_cpu_list(text: str) -> list[int]:
    """``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]`` (the kernel's CPU list format)."""
    out: list[int] = []
    for part in text.strip().split(","):
        if part.strip():
            lo, _, hi = part.strip().partition("-")
            out += range(int(lo), int(hi or lo) + 1)
    return sorted(set(out))


def cpuinfo(root: str | os.PathLike = ROOT) -> list[dict[str, str]]:
    """``/proc/cpuinfo`` as one dict per processor (Arm kernels put some keys in a last block)."""
    blocks = []
    for chunk in re.split(r"\n\s*\n", read(root, "proc/cpuinfo") or ""):
        block = {}
        for line in chunk.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                block.setdefault(key.strip(), value.strip())
        if block:
            blocks.append(block)
    return blocks


def first(blocks: list[dict[str, str]], key: str, default: str = "") -> str:
    """The first non-empty value of ``key`` over :func:`cpuinfo`'s blocks."""
    return next((b[key] for b in blocks if b.get(key)), default)


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
    pairs = (line.partition(":") for line in (text or "").splitlines())
    return {k.strip(): v.strip() for k, sep, v in pairs if sep}


def usable_cpus(root: str | os.PathLike = ROOT) -> list[int]:
    """The logical CPUs this process may run on (its affinity mask): Linux's
    ``proc/self/status``, else macOS's sysctl."""
    status = read(root, "proc/self/status") or ""
    m = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.MULTILINE)
    if m:
        return parse_cpu_list(m.group(1))
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
    """``(GHz, source)``, or ``(None, why)``: ``LABKIT_CPU_MAX_GHZ``, else cpufreq's maximum,
    the GHz in the model name (a base clock) or Apple's published maximum;
    never the current clock (an idle CPU reports a fraction of its maximum)."""
    env = os.environ.get(MAX_GHZ_ENV, "").strip()
    if env:
        if not re.fullmatch(r"\d+(\.\d*)?|\.\d+", env) or not 0 < float(env) < 20:
            raise ValueError(
                f"{MAX_GHZ_ENV}={env!r} is not a clock in GHz: give your CPU's maximum (boost) "
                f"clock, e.g. {MAX_GHZ_ENV}=3.7"
            )
        return float(env), f"{MAX_GHZ_ENV}={env} (your setting)"
    khz = [
        int(text)
        for cpu in usable_cpus(root)
        if (text := read(root, f"sys/devices/system/cpu/cpu{cpu}/cpufreq/cpuinfo_max_freq"))
        and text.strip().isdigit()
    ]
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
