"""What every adapter's ``prepare`` and ``set_threads`` do with their arguments first: check them
(one ``ValueError`` per bad value, naming the valid ones; :class:`Unsupported`, saying why, for a
task or precision the framework's spec leaves out), and make the cell's host batch."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from ... import resnet
from ..contract import DEVICES, PRECISIONS, TASKS, FrameworkSpec, Unsupported

__all__ = ["INT8_PATH", "batch_of", "check_cell", "check_choice", "check_threads", "host_batch"]

#: where the lab's int8 cells are, for a framework that has none
INT8_PATH = "the lab's int8 path is ONNX Runtime's static quantisation (--frameworks onnxruntime)"


def check_choice(framework: str, kind: str, value: str, valid: Sequence[str]) -> str:
    """``value`` if it is one of ``valid``, else a ``ValueError`` that lists the valid ones."""
    if value not in valid:
        raise ValueError(
            f"unknown {kind} {value!r} for {framework}: valid {kind}s are {', '.join(valid)}"
        )
    return value


def check_cell(
    spec: FrameworkSpec,
    mode: str,
    task: str,
    batch_size: int,
    precision: str,
    device: str,
    why_not: dict[str, str] | None = None,
) -> None:
    """Validate ``prepare``'s arguments; a task or precision that ``spec`` does not offer raises
    :class:`Unsupported` with its reason in ``why_not``."""
    check_choice(spec.name, "mode", mode, spec.modes)
    check_choice(spec.name, "task", task, TASKS)
    check_choice(spec.name, "precision", precision, PRECISIONS)
    check_choice(spec.name, "device", device, DEVICES)
    check_threads(batch_size, "batch_size")
    for value, offered in ((task, spec.tasks), (precision, spec.precisions)):
        if value not in offered:
            raise Unsupported((why_not or {}).get(value) or f"{spec.display} has no {value} cell")


def check_threads(n: object, what: str = "thread count") -> int:
    """``n`` if it is a whole number >= 1, else ``ValueError``."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"{what} must be an integer >= 1, got {n!r}")
    return int(n)


def batch_of(inputs: list[np.ndarray]) -> int:
    """The batch size of a learner's model inputs (their first dimension)."""
    return int(inputs[0].shape[0]) if inputs and np.ndim(inputs[0]) else 1


def host_batch(
    weights: dict[str, np.ndarray], batch_size: int, image_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """The seeded host batch a step runs on (NCHW float32 images, labels) for ``weights``, which
    are checked first (``ValueError`` names a bad tensor)."""
    num_classes = resnet.validate_weights(weights)
    return resnet.random_batch(int(batch_size), image_size, seed=0, num_classes=num_classes)
