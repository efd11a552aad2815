"""The stack's pins, read from labkit's own installed metadata (pyproject.toml is the source)."""

from __future__ import annotations

import functools
import importlib.metadata


@functools.lru_cache(maxsize=1)
def pins() -> dict[str, str]:
    """Distribution name -> requirement string, for the requirements that apply on this machine."""
    from packaging.requirements import Requirement  # matplotlib's dependency: always installed

    try:
        reqs = importlib.metadata.requires("labkit") or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    out: dict[str, str] = {}
    for req in (Requirement(line) for line in reqs if "extra ==" not in line):
        if req.marker is None or req.marker.evaluate():
            out[req.name.lower()] = f"{req.name}{req.specifier}"
    return out


def requirement(*distributions: str) -> str:
    """The pinned requirement of the first of ``distributions`` that labkit pins (the names of
    one package's distributions, preferred first), e.g. 'tensorflow-cpu==2.21.0'."""
    table = pins()
    return next((table[d] for d in distributions if d in table), distributions[0])
