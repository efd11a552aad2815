"""The conditions a figure holds in (:class:`Regime`): a claim's, and a measurement's.

A claim made on A100 GPUs at 224 px with mixed precision through TF Serving can be confirmed or
refuted only by a measurement in that regime: :meth:`Regime.differences` names what a
measurement lacks, :func:`regime_of` reads a record's regime (every record of this lab runs
in-process), :data:`A100_TRAINING` / :data:`INFERENCE_TABLE` are the regimes of the seeds'
two benchmark tables, and :data:`LARGE_SCALE` is the course's reading of "large-scale training
and deployment", which the seeds' prose names without saying more.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "A100_TRAINING",
    "INFERENCE_TABLE",
    "IN_PROCESS",
    "LARGE_SCALE",
    "MIXED_PRECISIONS",
    "Record",
    "Regime",
    "regime_of",
]

#: one benchmark result as the runner writes it (see :mod:`labkit.sources.claims`)
Record = dict

#: precisions that count as mixed precision (the seeds' "AMP")
MIXED_PRECISIONS = frozenset({"bf16", "fp16", "amp", "mixed"})
#: the runtime of every measurement in this lab: the framework (or ONNX Runtime's Python API)
#: inside the benchmark's own process, no serving system in front of it
IN_PROCESS = "in-process"


@dataclass(frozen=True)
class Regime:
    """The conditions a figure holds in: a claim's (None: the claim does not say) or a
    measurement's. ``hardware`` lists the hardware classes the claim covers: ``"cpu"``,
    ``"gpu:<name part>"`` (e.g. ``"gpu:A100"``) or ``"jetson"``; ``runtime`` is
    :data:`IN_PROCESS` or the serving runtimes the claim's figures came from."""

    hardware: tuple[str, ...] | None = None
    hardware_text: str = "not stated"
    model: str | None = None
    image_size: int | None = None
    batch: int | None = None
    precision: str | None = None  # "fp32", "mixed" (AMP) or a record's precision
    runtime: str | None = None
    metric: str = ""

    def describe(self) -> str:
        parts = [f"hardware: {self.hardware_text}"]
        parts.append(f"model: {self.model or 'not stated'}")
        parts.append(f"images: {f'{self.image_size} px' if self.image_size else 'not stated'}")
        parts.append(f"batch: {self.batch if self.batch else 'not stated'}")
        parts.append(f"precision: {_precision(self.precision) if self.precision else 'not stated'}")
        parts.append(f"runtime: {self.runtime or 'not stated'}")
        if self.metric:
            parts.append(f"metric: {self.metric}")
        return "; ".join(parts)

    def brief(self) -> str:
        """A measurement's regime in one line, as a claim-check row shows it."""
        return (
            f"{self.hardware_text}, {self.image_size} px, batch {self.batch}, "
            f"{_precision(self.precision)}, {self.runtime}"
        )

    def differences(self, here: Regime) -> list[tuple[str, str]]:
        """What a measurement in regime ``here`` lacks of this (a claim's) regime: (name,
        "here vs the claim") for every condition the claim states and ``here`` does not meet."""
        out = []
        if self.hardware is not None and not any(_hardware_in(h, here) for h in self.hardware):
            out.append(
                ("hardware", f"{here.hardware_text} here, {self.hardware_text} in the claim")
            )
        if self.model and here.model and self.model != here.model:
            out.append(("model", f"{here.model} here, {self.model} in the claim"))
        if self.image_size and here.image_size != self.image_size:
            out.append(
                ("image size", f"{here.image_size} px here, {self.image_size} px in the claim")
            )
        if self.batch and here.batch != self.batch:
            out.append(("batch", f"batch {here.batch} here, {self.batch} in the claim"))
        if self.precision and not _same_precision(self.precision, here.precision):
            out.append(
                (
                    "precision",
                    f"{_precision(here.precision)} here, {_precision(self.precision)} in the claim",
                )
            )
        if self.runtime and self.runtime != here.runtime:
            out.append(("runtime", f"{here.runtime} here, {self.runtime} in the claim"))
        return out


def _precision(p: str | None) -> str:
    return "mixed precision (AMP)" if p == "mixed" else str(p)


def _same_precision(claimed: str, here: str | None) -> bool:
    if claimed == "mixed":
        return here in MIXED_PRECISIONS
    return claimed == here


def _hardware_in(cls: str, here: Regime) -> bool:
    """Whether a measurement's regime ``here`` is of hardware class ``cls``."""
    kinds = here.hardware or ()
    if cls.startswith("gpu:"):
        return any(k.startswith("gpu:") and cls[4:] in k for k in kinds)
    if cls == "jetson":
        return any("jetson" in k.lower() or "tegra" in k.lower() for k in kinds)
    return cls in kinds


def regime_of(rec: Record) -> Regime:
    """The regime a record was measured in (every record here runs in-process)."""
    machine = rec.get("machine") or {}
    if rec.get("device") == "gpu":
        gpus = list(machine.get("gpus") or [])
        hardware = tuple(f"gpu:{g}" for g in gpus) or ("gpu:",)
        text = ", ".join(gpus) or "a GPU"
    else:
        hardware = ("cpu",)
        cores = machine.get("cores")
        cpu = machine.get("cpu") or "CPU"
        text = f"{cores}-core {cpu}" if cores else str(cpu)
    return Regime(
        hardware=hardware,
        hardware_text=text,
        model="ResNet-50",
        image_size=rec.get("image_size"),
        batch=rec.get("batch_size"),
        precision=rec.get("precision", "fp32"),
        runtime=IN_PROCESS,
        metric=f"{rec.get('task')} images/s",
    )


#: the seeds' training benchmark (part 2.1): ResNet-50 on ImageNet, one and eight A100s, AMP
A100_TRAINING = Regime(
    hardware=("gpu:A100",),
    hardware_text="one and eight NVIDIA A100 GPUs",
    model="ResNet-50",
    image_size=224,
    precision="mixed",
    runtime=IN_PROCESS,
    metric="training samples/s on ImageNet",
)
#: the seeds' inference benchmark (part 2.2): ResNet-50 at 224x224 through deployment runtimes
INFERENCE_TABLE = Regime(
    hardware=("cpu", "gpu:T4", "jetson"),
    hardware_text="an Intel Xeon 8375C CPU, an NVIDIA T4 GPU and a Jetson Nano",
    model="ResNet-50",
    image_size=224,
    runtime="ONNX Runtime, TF Serving and MindSpore Lite",
    metric="inference FPS",
)
#: "large-scale training and deployment", as the seeds' prose says (part 1.2) without naming
#: hardware or sizes; read here as data-centre GPUs at ResNet-50's full 224 px: a small run on a
#: CPU reports its ratio beside the claim, and a GPU run at 224 px can judge it
LARGE_SCALE = Regime(
    hardware=("gpu:",),
    hardware_text="large-scale training and deployment (the seeds name no hardware; read here as "
    "data-centre GPUs)",
    image_size=224,
    metric="graph vs eager speed",
)
