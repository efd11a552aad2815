"""Run-size profiles, one knob that scales every notebook and benchmark (``smoke``: CI and
Binder, ``standard``: a laptop, ``full``: 224x224), read from ``labkit/data/profiles.toml`` and
chosen by ``LABKIT_PROFILE`` (default ``standard``) or by name (:func:`get`)."""

from __future__ import annotations

import os
from collections import namedtuple

from .util import data_file

__all__ = ["PROFILES", "Profile", "current", "get"]

ENV_VAR = "LABKIT_PROFILE"
DEFAULT = "standard"


#: the profiles, as labkit/data/profiles.toml lists them (it says what each field sizes)
_DATA = data_file("profiles")
Profile = namedtuple("Profile", _DATA["profile"][0])
PROFILES: dict[str, Profile] = {p["name"]: Profile(**p) for p in _DATA["profile"]}


def get(name: str | Profile | None = None) -> Profile:
    """The profile called ``name`` (a :class:`Profile` as it is), or the one ``LABKIT_PROFILE``
    selects; ``ValueError`` that lists the valid ones for an unknown name."""
    if isinstance(name, Profile):
        return name
    where = f"profile {name!r}"
    if name is None:
        name = os.environ.get(ENV_VAR, "").strip() or DEFAULT
        where = f"{ENV_VAR}={name!r}"
    if name.strip().lower() not in PROFILES:
        raise ValueError(
            f"unknown {where}: valid profiles are {', '.join(PROFILES)} "
            f"(e.g. export {ENV_VAR}=smoke)"
        )
    return PROFILES[name.strip().lower()]


def current() -> Profile:
    return get(None)
