"""What every adapter's ``prepare`` and ``set_threads`` do with their arguments first: check them
(one clear ``ValueError`` per bad value, naming the valid ones), and make the cell's host batch."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from ... import resnet
from ..contract import DEVICES, PRECISIONS, TASKS

__all__ = ["check_cell", "check_choice", "check_threads", "host_batch"]


def check_choice(framework: str, kind: str, value: str, valid: Sequence[str]) -> str:
    """``value`` if it is one of ``valid``, else a ``ValueError`` that lists the valid ones."""
    if value not in valid:
        raise ValueError(
            f"unknown {kind} {value!r} for {framework}: valid {kind}s are {', '.join(valid)}"
        )
    return value


def check_cell(
    framework: str,
    modes: Sequence[str],
    mode: str,
    task: str,
    batch_size: int,
    precision: str,
    device: str,
) -> None:
    """Validate the arguments of an adapter's ``prepare`` (one clear error per bad value)."""
    check_choice(framework, "mode", mode, modes)
    check_choice(framework, "task", task, TASKS)
    check_choice(framework, "precision", precision, PRECISIONS)
    check_choice(framework, "device", device, DEVICES)
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, numbers.Integral)
        or batch_size < 1
    ):
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")


def check_threads(n: object) -> int:
    """``n`` if it is a usable thread count (a whole number >= 1), else ``ValueError``."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"thread count must be an integer >= 1, got {n!r}")
    return int(n)


def host_batch(
    weights: dict[str, np.ndarray], batch_size: int, image_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """The host batch a benchmark step runs on: seeded images (NCHW float32) and labels for the
    class count of ``weights``, which are checked first (``ValueError`` names a bad tensor)."""
    num_classes = resnet.validate_weights(weights)
    return resnet.random_batch(int(batch_size), image_size, seed=0, num_classes=num_classes)
