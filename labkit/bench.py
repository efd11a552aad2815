"""Framework-free timing of ResNet-50 steps (the benchmark engine builds on this).

An adapter's ``prepare(...)`` returns a :class:`Prepared`: a zero-argument ``step`` that runs one
inference batch or one training step on a host batch prepared in advance and returns only when
the work is done (results synchronised / copied to the host). Combinations that a framework
does not offer raise :class:`Unsupported` with the reason.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

TASKS: tuple[str, ...] = ("latency", "throughput", "train")
PRECISIONS: tuple[str, ...] = ("fp32", "bf16")
DEVICES: tuple[str, ...] = ("cpu", "gpu")


class Unsupported(Exception):
    """This framework x mode x task x precision x device does not exist here; says why."""


@dataclass
class Prepared:
    step: Callable[[], object]  # one inference batch or one training step, synchronised
    batch_size: int
    notes: str = ""  # how the mode/precision is realised, e.g. "torch.autocast(cpu, bfloat16)"
