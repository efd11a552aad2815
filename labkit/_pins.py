"""The stack's pins, read from labkit's own installed metadata (pyproject.toml is the source)."""

from __future__ import annotations

import functools
import importlib.metadata
import re


@functools.lru_cache(maxsize=1)
def pins() -> dict[str, str]:
    """Distribution name -> requirement string, for the requirements that apply on this machine."""
    try:
        reqs = importlib.metadata.requires("labkit") or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    try:
        from packaging.requirements import Requirement
    except ImportError:  # packaging is nearly always there; without it, ignore markers
        Requirement = None
    out: dict[str, str] = {}
    for line in reqs:
        if "extra ==" in line:
            continue
        if Requirement is not None:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate():
                continue
            out[req.name.lower()] = f"{req.name}{req.specifier}"
        else:
            name = re.split(r"[=<>!;\s]", line, maxsplit=1)[0]
            out.setdefault(name.lower(), line.split(";")[0].strip())
    return out


def requirement(*distributions: str) -> str:
    """The pinned requirement of the first of ``distributions`` that labkit pins (the names of
    one package's distributions, preferred first), e.g. 'tensorflow-cpu==2.21.0'."""
    table = pins()
    for dist in distributions:
        if dist in table:
            return table[dist]
    return distributions[0]
