"""Notebook 07's deployment helpers, used by the notebook and by ``export_and_time.py`` beside
it: the formats (:data:`FORMATS`), artefact sizes, logit agreement, and a results record for a
path timed in the notebook or its script (:func:`record`, naming the network :func:`model_id`).
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from labkit import bench, hardware, profiles, resnet, results
from labkit.runner import Cell, ceiling_fields
from labkit.util.numeric import max_rel_diff, top1_agreement

import numpy as np

__all__ = ["FORMATS", "Agreement", "agreement", "model_id", "record", "size_bytes"]

#: the formats as formats.toml beside this file lists them (name, written_by, runtime, ...)
FORMATS: list[dict[str, str]] = tomllib.loads(
    (Path(__file__).resolve().parent / "formats.toml").read_text(encoding="utf-8")
)["format"]


def size_bytes(path: str | Path) -> int:
    """Bytes of a model file, or of every file under a model directory (a SavedModel)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no model file or directory at {path}")
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files)


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
    if reference.shape != other.shape or reference.ndim != 2 or not reference.size:
        raise ValueError(
            "logits must be two arrays of the same (batch, classes) shape, the batch not empty: "
            f"got {reference.shape} and {other.shape}"
        )
    return Agreement(max_rel_diff(other, reference), top1_agreement(reference, other), len(other))


def model_id(width: int = resnet.WIDTH) -> str:
    """How a record names the network: ``resnet50``, or ``resnet50-w16`` for a narrower one
    (another model: its figures are not ResNet-50's)."""
    return results.DEFAULT_MODEL if width == resnet.WIDTH else f"{results.DEFAULT_MODEL}-w{width}"


def record(
    m: bench.Measurement,
    framework: str,
    mode: str,
    task: str,
    image_size: int,
    precision: str = "fp32",
    notes: str = "",
    export_s: float | None = None,
    model: str = results.DEFAULT_MODEL,
    where: str = "the notebook's process",
) -> results.Record:
    """A results record for ``m``, taken in ``where``, judged like a runner's and set against
    its precision's ceilings (estimated, and measured where cached); the cache is ``"warm"``."""
    profile = profiles.current().name
    cell = Cell(
        framework, mode, task, m.images_per_call, precision, image_size, "cpu", profile, model
    )
    return results.make(
        **asdict(cell),
        **m.as_dict(),
        **ceiling_fields(m.images_per_s, cell),
        status="ok",
        export_s=export_s,
        cache="warm",
        peak_rss_mb=bench.peak_rss_mb(),
        notes=(notes + "; " if notes else "") + f"timed in {where}",
        machine=hardware.fingerprint(),
    )
