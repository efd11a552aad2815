"""Run-size profiles, one knob that scales every notebook and benchmark (``smoke``: CI and
Binder, ``standard``: a laptop, ``full``: 224x224), read from ``labkit/data/profiles.toml`` and
chosen by ``LABKIT_PROFILE`` (default ``standard``) or by name (:func:`get`)."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PROFILES", "Profile", "current", "get", "names"]

ENV_VAR = "LABKIT_PROFILE"
DEFAULT = "standard"


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    image_size: int  # ResNet-50 input side, pixels
    latency_batch: int  # MLPerf SingleStream: one image at a time
    throughput_batch: int  # MLPerf Offline: a larger batch
    train_batch: int
    warmup: int  # untimed calls after the first (compile) call
    min_repeats: int  # timed samples at least ...
    min_time_s: float  # ... and at least this much timed work (a record is valid with both)
    max_repeats: int  # timed samples at most (a fast call is timed in blocks to reach min_time_s)
    #: the IQR / median a valid record may have: 10% (torch.utils.benchmark warns from there),
    #: 25% under smoke, whose few short samples on a shared 2-core machine vary that much
    max_spread: float
    cell_timeout_s: float  # per benchmark cell (one subprocess)
    demo_steps: int  # size of small teaching loops in notebooks (training steps, calls)
    #: ResNet-50's base width (64) in lessons that hold several copies of it (05, 08): smoke
    #: narrows it to fit Binder's 2 GB; the benchmarks always run the real network
    resnet_width: int

    def __post_init__(self) -> None:
        if not 1 <= self.min_repeats <= self.max_repeats or self.min_time_s < 0:
            raise ValueError(
                f"profile {self.name!r}: need 1 <= min_repeats <= max_repeats and min_time_s >= 0 "
                f"(got {self.min_repeats}, {self.max_repeats}, {self.min_time_s})"
            )
        if not 0 < self.max_spread < 1:
            raise ValueError(
                f"profile {self.name!r}: need 0 < max_spread < 1, got {self.max_spread}"
            )


#: the profiles, as labkit/data/profiles.toml lists them
_DATA = tomllib.loads((Path(__file__).parent / "data" / "profiles.toml").read_text("utf-8"))
PROFILES: dict[str, Profile] = {p["name"]: Profile(**p) for p in _DATA["profile"]}


def names() -> list[str]:
    return list(PROFILES)


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
