"""Article 000's two benchmark tables (part 2), their figures exactly as the article gives them.

- :data:`TRAINING`: ResNet-50 training on one and eight NVIDIA A100s (:data:`TRAINING_SETTING`),
  samples per second and minutes per epoch;
- :data:`INFERENCE`: ResNet-50 inference on a Xeon CPU, a T4 GPU and a Jetson Nano
  (:data:`INFERENCE_SETTING`), frames per second, one row per deployment path;
- the ratios the tables imply (:func:`training_ratio`, :func:`inference_ratio`,
  :func:`scaling_efficiency`) and both tables as Markdown.

Each figure is typed here once: the claims (:mod:`labkit.sources.claims`) are built from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...util import stats, tables

__all__ = [
    "EPOCH_IMAGES",
    "INFERENCE",
    "INFERENCE_DEVICES",
    "INFERENCE_SETTING",
    "TRAINING",
    "TRAINING_SETTING",
    "InferenceRow",
    "TrainingRow",
    "inference",
    "inference_markdown",
    "inference_ratio",
    "scaling_efficiency",
    "training",
    "training_markdown",
    "training_ratio",
]


@dataclass(frozen=True)
class TrainingRow:
    label: str  # as the article names the configuration
    framework: str  # registry name
    mode: str  # the registry mode closest to what the article ran
    one_gpu: float  # samples/s on one A100
    eight_gpus: float  # samples/s on eight A100s
    epoch_min: float  # minutes per epoch, as stated
    options: str  # what the article says was enabled


TRAINING_SETTING = (
    "ResNet-50 trained on ImageNet (about 1.2 million images) on one NVIDIA A100 and on eight; "
    "samples per second and minutes per epoch; the article cites vendors' and third-party tests "
    "of PyTorch 2.0, TensorFlow 2.10 and MindSpore 2.0"
)
#: ImageNet's training set as the article states it ("1.2 million images")
EPOCH_IMAGES = 1_200_000

TRAINING: tuple[TrainingRow, ...] = (
    TrainingRow("PyTorch 2.0 eager", "torch", "eager", 1280, 9800, 15.2, "AMP"),
    TrainingRow(
        "PyTorch 2.0 TorchScript", "torch", "torchscript", 1350, 10200, 14.5, "AMP + TorchScript"
    ),
    TrainingRow(
        "TensorFlow 2.10 tf.function + XLA", "tensorflow", "xla", 1320, 10000, 14.8, "AMP + XLA"
    ),
    TrainingRow(
        "MindSpore 2.0 graph mode",
        "mindspore",
        "graph",
        1380,
        10500,
        14.1,
        "AMP + graph optimisation",
    ),
)


@dataclass(frozen=True)
class InferenceRow:
    label: str
    framework: str  # the framework the model comes from (registry name)
    route: str  # the deployment path as the article gives it
    runtime: str  # what runs it
    cpu_fps: float  # Intel Xeon 8375C
    gpu_fps: float  # NVIDIA T4
    embedded_fps: float  # NVIDIA Jetson Nano


INFERENCE_SETTING = (
    "ResNet-50 inference at 224x224 on an Intel Xeon 8375C CPU, an NVIDIA T4 GPU and an NVIDIA "
    "Jetson Nano; frames (images) per second"
)
INFERENCE_DEVICES: dict[str, str] = {
    "cpu_fps": "CPU (Xeon 8375C)",
    "gpu_fps": "GPU (T4)",
    "embedded_fps": "Jetson Nano",
}

INFERENCE: tuple[InferenceRow, ...] = (
    InferenceRow(
        "PyTorch 2.0 via ONNX Runtime",
        "torch",
        "PyTorch model -> ONNX -> ONNX Runtime",
        "onnxruntime",
        45,
        320,
        18,
    ),
    InferenceRow(
        "TensorFlow 2.10 via TF Serving",
        "tensorflow",
        "SavedModel -> TensorFlow Serving",
        "tensorflow",
        52,
        350,
        22,
    ),
    InferenceRow(
        "MindSpore 2.0 via MindSpore Lite",
        "mindspore",
        "MindSpore model -> MindSpore Lite",
        "mindspore",
        55,
        360,
        25,
    ),
)


def training(framework: str, mode: str) -> TrainingRow:
    for r in TRAINING:
        if (r.framework, r.mode) == (framework, mode):
            return r
    raise ValueError(
        f"the training table has no row {framework}/{mode}: rows are "
        + ", ".join(f"{r.framework}/{r.mode}" for r in TRAINING)
    )


def inference(framework: str) -> InferenceRow:
    for r in INFERENCE:
        if r.framework == framework:
            return r
    raise ValueError(
        f"the inference table has no row for {framework!r}: rows are "
        + ", ".join(r.framework for r in INFERENCE)
    )


def training_ratio(num: tuple[str, str], den: tuple[str, str], gpus: int = 1) -> float:
    """The throughput ratio the training table implies (one or eight GPUs)."""
    if gpus not in (1, 8):
        raise ValueError(f"the training table has columns for 1 and 8 GPUs, not {gpus}")
    a, b = training(*num), training(*den)
    return (a.one_gpu / b.one_gpu) if gpus == 1 else (a.eight_gpus / b.eight_gpus)


def inference_ratio(num: str, den: str, device: str = "cpu_fps") -> float:
    """The FPS ratio the inference table implies on one of its devices."""
    if device not in INFERENCE_DEVICES:
        raise ValueError(f"device must be one of {', '.join(INFERENCE_DEVICES)}, got {device!r}")
    return getattr(inference(num), device) / getattr(inference(den), device)


def scaling_efficiency(row: TrainingRow) -> float:
    """Eight-GPU throughput over eight times the one-GPU throughput."""
    return stats.scaling_efficiency(row.eight_gpus, row.one_gpu, 8)


def _num(x: float) -> str:
    return f"{x:g}"


def training_markdown() -> str:
    head = [
        "configuration (as the article names it)",
        "one A100, samples/s",
        "8x A100, samples/s",
        "minutes per epoch",
        "enabled",
    ]
    rows = [
        [r.label, _num(r.one_gpu), _num(r.eight_gpus), _num(r.epoch_min), r.options]
        for r in TRAINING
    ]
    return tables.markdown(head, rows, align="lrrrl")


def inference_markdown() -> str:
    head = ["deployment path", *INFERENCE_DEVICES.values(), "route"]
    rows = [
        [r.label, *(_num(getattr(r, d)) for d in INFERENCE_DEVICES), r.route] for r in INFERENCE
    ]
    return tables.markdown(head, rows, align="l" + "r" * len(INFERENCE_DEVICES) + "l")
