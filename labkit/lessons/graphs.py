"""What a graph compiler does, framework-free: count a graph's nodes, fold BatchNorm, plan memory.

The framework-specific helpers (``labkit.frameworks.torch.graphs``, ``tensorflow.graphs``,
``onnxruntime.graphs``) turn a real graph into the plain data used here: a list of node kinds,
or a list of steps with the tensors each one reads and writes.

- :class:`OpCounts`: how many nodes of each kind a graph holds; *compute* nodes are the ones
  that do arithmetic on tensors (not constants, attribute reads or list building). It and
  :class:`Step` are defined in :mod:`labkit.frameworks._kit.graphs`, where the framework
  packages build them.
- :func:`fold_batchnorm`: the arithmetic behind Conv+BatchNorm folding (inference only).
- :func:`plan_memory`: how much memory the intermediate tensors need if every one gets its own
  buffer, against the peak of the tensors alive at the same time (what a planner that reuses
  buffers needs at least).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..frameworks._kit.graphs import OpCounts, Step
from ..util import tables

__all__ = [
    "MemoryPlan",
    "OpCounts",
    "Step",
    "fold_batchnorm",
    "markdown",
    "plan_memory",
    "stage_rows",
]


def stage_rows(stages: dict[str, OpCounts], watch: Sequence[str] = ()) -> list[dict]:
    """One row per optimisation stage: total and compute nodes, plus counts of ``watch`` kinds."""
    rows = []
    for name, c in stages.items():
        row = {"stage": name, "nodes": c.total, "compute nodes": c.compute}
        row.update({w: c.count(w) for w in watch})
        row["most common"] = c.top(4)
        rows.append(row)
    return rows


def fold_batchnorm(
    weight: np.ndarray,
    bias: np.ndarray | None,
    gamma: np.ndarray,
    beta: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    eps: float = 1e-5,
) -> tuple[np.ndarray, np.ndarray]:
    """Fold an inference-mode BatchNorm into the convolution before it.

    BN(conv(x)) = gamma * (W*x + b - mean) / sqrt(var + eps) + beta, so with
    ``s = gamma / sqrt(var + eps)`` (one factor per output channel) the folded convolution has
    ``W' = W * s`` (scaled along the output-channel axis 0) and ``b' = (b - mean) * s + beta``.
    """
    weight = np.asarray(weight, dtype=np.float64)
    cout = weight.shape[0]
    for name, a in (("gamma", gamma), ("beta", beta), ("mean", mean), ("var", var)):
        if np.shape(a) != (cout,):
            raise ValueError(
                f"BatchNorm {name} must have one value per output channel ({cout},), "
                f"got shape {np.shape(a)}"
            )
    scale = np.asarray(gamma, np.float64) / np.sqrt(np.asarray(var, np.float64) + eps)
    b = np.zeros(cout) if bias is None else np.asarray(bias, np.float64)
    w = weight * scale.reshape((cout,) + (1,) * (weight.ndim - 1))
    return w.astype(np.float32), ((b - mean) * scale + beta).astype(np.float32)


@dataclass
class MemoryPlan:
    naive_bytes: int  # every intermediate tensor in a buffer of its own
    peak_bytes: int  # the most bytes alive at once (what buffer reuse needs at least)
    peak_step: str  # where the peak occurs
    live_bytes: list[int] = field(default_factory=list)  # bytes alive during each step

    @property
    def saving(self) -> float:
        """Share of the naive memory that buffer reuse saves."""
        return 1 - self.peak_bytes / self.naive_bytes if self.naive_bytes else 0.0


def plan_memory(
    steps: Sequence[Step], sizes: dict[str, int], keep: Iterable[str] = ()
) -> MemoryPlan:
    """Liveness analysis: a tensor lives from the step that writes it to the last step reading it.

    ``sizes`` gives the bytes of every intermediate tensor (graph inputs and weights are not
    counted: they exist either way); tensors in ``keep`` (the graph outputs) live to the end.
    """
    missing = sorted({t for s in steps for t in s.writes} - set(sizes))
    if missing:
        raise ValueError(
            f"no size for intermediate tensor(s) {missing[:5]}: give every tensor a "
            f"step writes a size in bytes"
        )
    last_read: dict[str, int] = {}
    for i, s in enumerate(steps):
        for t in s.reads:
            last_read[t] = i
    end = len(steps) - 1
    for t in keep:
        last_read[t] = end
    live: dict[str, int] = {}
    profile, peak, peak_step = [], 0, ""
    for i, s in enumerate(steps):
        for t in s.writes:
            live[t] = sizes[t]
        now = sum(live.values())
        profile.append(now)
        if now > peak:
            peak, peak_step = now, s.name
        for t in [t for t in live if last_read.get(t, i) <= i]:
            del live[t]  # its last reader has run (or nobody reads it): the buffer is free
    naive = sum(sizes[t] for s in steps for t in s.writes)
    return MemoryPlan(naive, peak, peak_step, profile)


def markdown(rows: Sequence[dict]) -> str:
    """Rows of equal keys as a Markdown table (``IPython.display.Markdown(markdown(rows))``)."""
    if not rows:
        return "_(no rows)_"
    head = list(rows[0])

    def cell(v) -> str:
        return f"{v:,.3g}" if isinstance(v, float) else v

    return tables.markdown(head, [[cell(r.get(h, "")) for h in head] for r in rows])
