"""A finished job (:class:`Run`) and what is computed from it: steady step times, throughput,
weight differences, scaling efficiency."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import resnet
from ..util import stats
from .job import Job

__all__ = ["Run", "is_running_statistic", "max_difference", "scaling_efficiency", "steady"]


@dataclass
class Run:
    """A finished job: one result dict per worker (rank order), the wall time, the commands."""

    job: Job
    workers: list[dict]
    wall_s: float
    commands: list[list[str]]
    environments: list[dict[str, str]]  # what each command got on top of the launcher's environment
    out_dir: Path
    log: str
    pids: list[int]  # every process started for the job (all gone now)

    def weights(self, rank: int = 0) -> dict[str, np.ndarray]:
        with np.load(self.out_dir / self.workers[rank]["weights"]) as f:
            return {k: f[k] for k in f.files}

    def max_difference_between_workers(self, names: Callable[[str], bool] | None = None) -> float:
        """Largest absolute difference of any weight between worker 0 and any other worker."""
        first = self.weights(0)
        return max(
            (max_difference(first, self.weights(r), names) for r in range(1, len(self.workers))),
            default=0.0,
        )

    @property
    def step_s(self) -> float:
        """Median steady-state step time over workers (the first step, with its warm-up, left out)."""
        return float(np.median([steady(w["step_s"]) for w in self.workers]))

    @property
    def images_per_s(self) -> float:
        """Images per second of the whole job (all workers together) in the steady state."""
        return self.job.global_batch / self.step_s

    @property
    def images_per_s_per_worker(self) -> float:
        return self.images_per_s / self.job.workers

    @property
    def final_loss(self) -> float:
        """Loss of the last step on the global batch (the mean of the workers' equal-size shards)."""
        return float(np.mean([w["losses"][-1] for w in self.workers]))

    def summary(self) -> dict:
        w0 = self.workers[0]
        return {
            "framework": self.job.framework,
            "workers": self.job.workers,
            "model": self.job.model,
            "width": self.job.width if self.job.model == "resnet50" else None,
            "launcher": w0.get("launcher", ""),
            "backend": w0.get("backend", ""),
            "threads_per_worker": w0.get("threads"),
            "global_batch": self.job.global_batch,
            "step_s": round(self.step_s, 4),
            "images_per_s": round(self.images_per_s, 2),
            "compute_s": w0.get("compute_s"),
            "allreduce_s": w0.get("allreduce_s"),
            "gradient_mb": w0.get("gradient_mb"),
            "final_loss": self.final_loss,
            "wall_s": round(self.wall_s, 1),
            **self.large_model_summary(),
        }

    def large_model_summary(self) -> dict:
        """What a worker held (parameters, gradients, optimizer state), what PowerSGD sent,
        and the restarts, where the workers report them (PyTorch's do)."""
        w0, out = self.workers[0], {}
        if self.job.strategy != "ddp" or "param_bytes" in w0:
            out["strategy"] = self.job.strategy
        held = [w0.get(k) for k in ("param_bytes", "grad_bytes", "optimizer_bytes")]
        if all(isinstance(v, int) for v in held):
            out["held_mb_per_worker"] = round(sum(held) / 1e6, 3)
        for key in ("comm_hook", "powersgd_rank", "allreduce_bytes", "powersgd_bytes"):
            if key in w0:
                out[key] = w0[key]
        attempts = [w.get("attempt", 0) for w in self.workers]
        if self.job.max_restarts or any(attempts):
            out["restarts"] = max(attempts)
            out["resumed_from_step"] = w0.get("resumed_from_step", 0)
        return out


def steady(times: Sequence[float]) -> float:
    """Median of the step times without the first (warm-up) step, when there are several."""
    times = list(times)
    return float(np.median(times[1:] if len(times) > 1 else times))


def max_difference(
    a: dict[str, np.ndarray], b: dict[str, np.ndarray], names: Callable[[str], bool] | None = None
) -> float:
    """Largest absolute elementwise difference over the tensors both dicts hold (optionally only
    the names for which ``names(name)`` is true)."""
    if set(a) != set(b):
        raise ValueError(f"the weights hold different tensors: {sorted(set(a) ^ set(b))[:3]}")
    keys = [k for k in a if names is None or names(k)]
    return max((float(np.max(np.abs(a[k].astype(np.float64) - b[k]))) for k in keys), default=0.0)


def is_running_statistic(name: str) -> bool:
    """BatchNorm running mean/variance (not trained by gradients; updated from each batch)."""
    return name.endswith(resnet.BN_BUFFERS)


def scaling_efficiency(multi: Run, single: Run) -> float:
    """Throughput of ``multi`` over ``workers`` x the throughput of one process (1.0 = linear)."""
    return stats.scaling_efficiency(multi.images_per_s, single.images_per_s, multi.job.workers)
