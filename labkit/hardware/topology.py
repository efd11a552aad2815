"""What this process may use of the machine: its CPUs, their physical cores, its CPU quota.

The affinity mask (``taskset``, ``--cpuset-cpus``), the physical cores behind it (hyper-threads
share a core's vector units, so they count once) and the cgroup CPU quota (Docker ``--cpus``,
Binder, JupyterHub) give :func:`default_threads`, the thread count of every framework.
"""

from __future__ import annotations

import math
import os
import re

from .files import ROOT, cpuinfo, parse_cpu_list, read, sysctl

__all__ = ["cpu_quota", "default_threads", "physical_cores", "usable_cpus"]


def usable_cpus(root: str | os.PathLike = ROOT) -> list[int]:
    """The logical CPUs this process may run on (its affinity mask): Linux's
    ``proc/self/status``, else macOS's sysctl."""
    status = read(root, "proc/self/status") or ""
    m = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.MULTILINE)
    if m:
        return parse_cpu_list(m.group(1))
    if str(root) == ROOT and hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
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
        siblings = read(root, base + "thread_siblings_list") or read(root, base + "core_cpus_list")
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
    for line in (read(root, "proc/self/cgroup") or "").splitlines():
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
    """``(CPUs, where)``: the CPU time per second this process's cgroup may use (None: no
    limit), the smallest of v2 ``cpu.max`` and v1 ``cfs_quota_us / cfs_period_us`` on the way
    up the cgroup tree."""
    paths = _cgroup_paths(root)
    found: list[tuple[float, str]] = []
    v2 = paths.get("", "/")
    for rel in _ancestors(v2):
        folder = "sys/fs/cgroup/" + (rel + "/" if rel else "")
        text = read(root, folder + "cpu.max")
        if text and text.split()[0] != "max":
            quota, period = (text.split() + ["100000"])[:2]
            found.append((int(quota) / int(period), f"cgroup v2 {folder}cpu.max"))
    for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        for rel in _ancestors(paths.get("cpu", "/")):
            folder = f"sys/fs/cgroup/{mount}/" + (rel + "/" if rel else "")
            quota = read(root, folder + "cpu.cfs_quota_us")
            period = read(root, folder + "cpu.cfs_period_us")
            if quota and period and int(quota) > 0 and int(period) > 0:
                found.append((int(quota) / int(period), f"cgroup v1 {folder}cpu.cfs_quota_us"))
    if not found:
        return None, "no cgroup CPU quota"
    return min(found)


def default_threads(root: str | os.PathLike = ROOT) -> int:
    """The intra-op threads of every framework: the physical cores of the affinity mask, at
    most the CPU quota rounded down, at least 1."""
    cores, _, _ = physical_cores(root)
    quota, _ = cpu_quota(root)
    if quota is not None:
        cores = min(cores, math.floor(quota))
    return max(1, cores)
