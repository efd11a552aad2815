"""Machine types: a fingerprint reduced to what makes two machines the same kind (CPU, cores,
architecture, vector extensions, GPUs, memory; never a host name).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable

__all__ = ["cpu_family", "isa_tier", "machine_of"]

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
