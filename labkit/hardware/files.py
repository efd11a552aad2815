"""Reading a machine's files under ``root``, the folder that stands for ``/`` (a fixture tree in
the tests; for macOS a file ``sysctl`` holds ``sysctl`` output).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["ROOT", "cpuinfo", "first", "isa_flags", "parse_cpu_list", "read", "sysctl"]

ROOT = "/"


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
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return sorted(set(out))


def cpuinfo(root: str | os.PathLike = ROOT) -> list[dict[str, str]]:
    """``/proc/cpuinfo`` as one dict per processor (Arm kernels put some keys in a last block)."""
    text = read(root, "proc/cpuinfo") or ""
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


def first(blocks: list[dict[str, str]], key: str, default: str = "") -> str:
    """The first non-empty value of ``key`` over :func:`cpuinfo`'s blocks."""
    return next((b[key] for b in blocks if b.get(key)), default)


def isa_flags(blocks: list[dict[str, str]]) -> set[str]:
    """The CPU's ISA flags: x86's ``flags``, else Arm's ``Features``."""
    return set((first(blocks, "flags") or first(blocks, "Features")).split())


def sysctl(root: str | os.PathLike = ROOT) -> dict[str, str]:
    """macOS's ``sysctl`` values (a fixture tree's file ``sysctl``); empty elsewhere."""
    text = read(root, "sysctl")
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
    exe = shutil.which("sysctl") or "/usr/sbin/sysctl"
    try:
        return subprocess.run(
            [exe, "-a"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
