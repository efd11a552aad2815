"""What every adapter does with its arguments first (one ``ValueError`` per bad value, naming
the valid ones; :class:`Unsupported`, saying why, for a task or precision the spec leaves out),
the cell's host batch, and the canonical weights under a framework's own names."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ... import resnet
from ..contract import DEVICES, PRECISIONS, TASKS, FrameworkSpec, Unsupported

__all__ = [
    "INT8_PATH",
    "batch_of",
    "canonical_weights",
    "check_cell",
    "check_threads",
    "host_batch",
    "renamer",
]

#: where the lab's int8 cells are, for a framework that has none
INT8_PATH = "the lab's int8 path is ONNX Runtime's static quantisation (--frameworks onnxruntime)"


def check_cell(
    spec: FrameworkSpec,
    mode: str,
    task: str,
    batch_size: int,
    precision: str,
    device: str,
    why_not: dict[str, str] | None = None,
) -> None:
    """Validate ``prepare``'s arguments; a task or precision ``spec`` does not offer raises
    :class:`Unsupported` with its reason in ``why_not`` (by default, the spec's)."""
    for kind, value, valid in (
        ("mode", mode, spec.modes),
        ("task", task, TASKS),
        ("precision", precision, PRECISIONS),
        ("device", device, DEVICES),
    ):
        if value not in valid:
            raise ValueError(
                f"unknown {kind} {value!r} for {spec.name}: valid {kind}s are {', '.join(valid)}"
            )
    resnet.check_count(batch_size, "batch_size")
    for value, offered in ((task, spec.tasks), (precision, spec.precisions)):
        if value not in offered:
            why = (why_not or dict(spec.why_not)).get(value)
            raise Unsupported(why or f"{spec.display} has no {value} cell")


#: ``n`` if it is a whole number >= 1, else ``ValueError``
check_threads = functools.partial(resnet.check_count, what="thread count")


def batch_of(inputs: list[np.ndarray]) -> int:
    """The batch size of a learner's model inputs (their first dimension)."""
    return int(inputs[0].shape[0]) if inputs and np.ndim(inputs[0]) else 1


def host_batch(
    weights: dict[str, np.ndarray], batch_size: int, image_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """The seeded host batch (NCHW float32 images, labels) for ``weights``, checked first."""
    num_classes = resnet.validate_weights(weights)
    return resnet.random_batch(int(batch_size), image_size, seed=0, num_classes=num_classes)


def renamer(**bn: str) -> Callable[[str], str]:
    """A framework's name of a canonical tensor, where only BatchNorm's differ: ``bn`` maps
    the canonical leaf (``running_var``) to the framework's (``moving_variance``)."""
    modules = frozenset(c.bn for c in resnet.all_convs())

    def native_name(canonical: str) -> str:
        module, leaf = canonical.rsplit(".", 1)
        return f"{module}.{bn.get(leaf, leaf)}" if module in modules else canonical

    return native_name


def canonical_weights(
    native: dict, name: Callable[[str], str], transposed: tuple[str, ...] = ()
) -> dict[str, np.ndarray]:
    """Float32 copies, under canonical names, of a model's tensors ``native`` (by the name
    ``name`` gives); ``transposed``: those stored transposed."""
    width, classes = int(native["conv1.weight"].shape[0]), int(native["fc.bias"].shape[0])
    out = {n: np.array(native[name(n)], np.float32) for n in resnet.param_shapes(classes, width)}
    return {n: np.ascontiguousarray(a.T) if n in transposed else a for n, a in out.items()}
