"""Notebook 07's deployment helpers: the formats as data (:data:`FORMATS`), artefact sizes,
logit agreement, and a results record for a path timed in the notebook (:func:`record`).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..util.numeric import max_rel_diff, top1_agreement

__all__ = ["FORMATS", "Agreement", "Format", "agreement", "record", "size_bytes"]


@dataclass(frozen=True)
class Format:
    key: str  # how a FrameworkSpec's ``formats`` names it
    name: str
    written_by: str
    runtime: str
    server: str  # "yes", "no" or a short qualification
    mobile: str
    embedded: str
    url: str


#: the formats, as labkit/data/formats.toml lists them
FORMATS: tuple[Format, ...] = tuple(
    Format(**f)
    for f in tomllib.loads(
        (Path(__file__).resolve().parents[1] / "data" / "formats.toml").read_text(encoding="utf-8")
    )["format"]
)


def size_bytes(path: str | os.PathLike) -> int:
    """Bytes of a model file, or of every file under a model directory (a SavedModel)."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    raise FileNotFoundError(f"no model file or directory at {path}")


@dataclass(frozen=True)
class Agreement:
    max_rel_diff: float  # largest |difference| / largest |reference logit|
    top1: float  # share of inputs whose highest logit is the same class
    n: int  # inputs compared

    def __str__(self) -> str:
        return (
            f"max difference {self.max_rel_diff:.1e} of the largest logit, "
            f"top-1 agreement {self.top1:.0%} on {self.n} inputs"
        )


def agreement(reference: np.ndarray, other: np.ndarray) -> Agreement:
    """How closely ``other`` logits follow ``reference`` logits (both batch x classes)."""
    reference, other = np.asarray(reference, np.float64), np.asarray(other, np.float64)
    if reference.shape != other.shape or reference.ndim != 2:
        raise ValueError(
            f"logits must be two arrays of the same (batch, classes) shape, got "
            f"{reference.shape} and {other.shape}"
        )
    if reference.size == 0:
        raise ValueError(f"no logits to compare: the batch is empty, shape {reference.shape}")
    return Agreement(
        max_rel_diff(other, reference),
        top1_agreement(reference, other),
        reference.shape[0],
    )


def record(
    m,
    framework: str,
    mode: str,
    task: str,
    image_size: int,
    precision: str = "fp32",
    notes: str = "",
    export_s: float | None = None,
    model: str = "resnet50",
    where: str = "the notebook's process",
) -> dict:
    """A results record for a :class:`labkit.bench.Measurement` taken in ``where``, judged
    like a runner's and set against its precision's ceilings (estimated, and measured where
    cached). The cache is ``"warm"``; ``model``: :func:`labkit.resnet.model_id`."""
    from .. import bench, hardware, profiles, results
    from ..runner import Cell, ceiling_fields

    prof = profiles.current()
    cell = Cell(
        framework, mode, task, m.images_per_call, precision, image_size, "cpu", prof.name, model
    )
    return results.make(
        model=model,
        framework=framework,
        mode=mode,
        task=task,
        batch_size=m.images_per_call,
        precision=precision,
        image_size=image_size,
        device="cpu",
        status="ok",
        export_s=export_s,
        cache="warm",
        **m.as_dict(),
        peak_rss_mb=bench.peak_rss_mb(),
        **ceiling_fields(m.images_per_s, cell, None),
        notes=(notes + "; " if notes else "") + f"timed in {where}",
        threads={"intra": None, "inter": None},
        profile=prof.name,
        machine=hardware.fingerprint(),
    )
