"""The seed articles' performance claims as data: what each states, the range the seeds give,
the ratios measured here to test it, and the regime it was made in.

Each :class:`Claim` names the quantity that can be measured on this machine (a throughput
:class:`Ratio` of two declared framework/modes), the range the seeds give for it and the
:class:`~labkit.sources.claims.regimes.Regime` it was made in. Every number comes from the
seeds' tables (:mod:`labkit.sources.seeds`), typed there once. :data:`EPOCH_CLAIM` is the one
claim checked on the seeds' own numbers (do their epoch times follow from their throughputs?).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...frameworks import specs
from ...util.lookup import by_key
from ..seeds import (
    EPOCH_IMAGES,
    INFERENCE,
    INFERENCE_DEVICES,
    TRAINING,
    figure,
    inference,
    inference_ratio,
    training_ratio,
)
from .published import (
    JETSON,
    MLPERF_INF,
    MLPERF_T4,
    MLPERF_TRAIN,
    NV_PERF,
    NV_PT,
    NV_T4_PT,
    NV_T4_TF,
    NV_TF,
    Source,
)
from .regimes import A100_TRAINING, IN_PROCESS, INFERENCE_TABLE, Regime

__all__ = [
    "CLAIMS",
    "EPOCH_CLAIM",
    "NOT_RUN_HERE",
    "SCOPE",
    "SEED_EPOCH_IMAGES",
    "SEED_TRAINING",
    "Claim",
    "Ratio",
    "claim",
]

#: ImageNet's training set as the seed states it ("1.2 million images")
SEED_EPOCH_IMAGES = EPOCH_IMAGES


@dataclass(frozen=True)
class Ratio:
    """One ratio the claim is judged on: framework/mode ``num`` over framework/mode ``den``.

    Both modes are declared up front: a claim is never judged on whichever mode happened to be
    fastest (picking the best of several biases a ratio upwards).
    """

    label: str
    num: tuple[str, str]  # (framework, mode)
    den: tuple[str, str]
    task: str  # "train", "throughput" or "latency"
    seed_value: float | None = None  # the ratio implied by the seeds' own table, if any


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str  # the claim, in the course's words
    seed_figure: str  # the seeds' number(s), as they give them
    seed_section: str  # where in the seeds
    low: float  # the claimed range of the measured ratio (relative: factors on seed_value)
    high: float
    ratios: tuple[Ratio, ...]  # what is measured here
    regime: Regime = field(default_factory=Regime)  # where it was made (none stated: any regime)
    published: tuple[Source, ...] = ()
    note: str = ""  # what differs between the seeds' setting and this lab
    relative: bool = False  # the range is [low, high] x each ratio's seed_value

    @property
    def needs(self) -> str:
        """The hardware the claim needs when no CPU can meet its regime ("" otherwise)."""
        hw = self.regime.hardware
        return self.regime.hardware_text if hw is not None and "cpu" not in hw else ""

    def bounds(self, r: Ratio) -> tuple[float, float]:
        if self.relative:
            if r.seed_value is None:
                raise ValueError(f"claim {self.key}: ratio {r.label!r} has no seed value")
            return self.low * r.seed_value, self.high * r.seed_value
        return self.low, self.high


def _per_framework(task: str, label: str) -> tuple[Ratio, ...]:
    """Every graph mode of every framework with an eager mode, each against that eager mode."""
    return tuple(
        Ratio(f"{s.name} {mode} {label}", (s.name, mode), (s.name, s.eager), task)
        for s in specs()
        if s.eager is not None
        for mode in s.graph_modes
    )


SCOPE = (
    "the seeds measured ImageNet on data-centre GPUs with mixed precision and large batches; "
    "this lab measures synthetic data on this machine, small batches, fp32 unless stated"
)
#: the serving runtimes this lab does not run, and what it runs in their place
NOT_RUN_HERE = (
    "compared here: TensorFlow's and MindSpore's graph modes and ONNX Runtime, each in the "
    "benchmark's own process; TF Serving and MindSpore Lite, which gave the seeds' figures, are "
    "not installed here"
)

_STATIC = figure("static_speedup")
_TRAIN = figure("training_speedup")
_ONNX = figure("onnx_kept")
_EAGER = ("torch", "eager")  # the training table's baseline row


def _training_ratio(label: str, side: tuple[str, str]) -> Ratio:
    return Ratio(label, side, _EAGER, "train", training_ratio(side, _EAGER))


def _inference_ratio(label: str, framework: str) -> Ratio:
    """Framework's graph over ONNX Runtime, as the inference table's CPU column implies: the
    graph each serving runtime runs, declared (a SavedModel's tf.function graph, no XLA;
    MindSpore's graph mode)."""
    mode = {"tensorflow": "function", "mindspore": "graph"}[framework]
    return Ratio(
        label,
        (framework, mode),
        ("onnxruntime", "ort"),
        "throughput",
        inference_ratio(framework, "torch"),
    )


def _list(values, unit: str = "") -> str:
    return " / ".join(f"{v:g}" for v in values) + (f" {unit}" if unit else "")


_T, _I = TRAINING, INFERENCE
_DEV = INFERENCE_DEVICES

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "graph_20_50",
        f"Static graphs run {_STATIC.percent} faster than eager execution in large-scale training "
        "and deployment.",
        _STATIC.range,
        _STATIC.where,
        _STATIC.low,
        _STATIC.high,
        _per_framework("train", "training") + _per_framework("throughput", "inference"),
        regime=Regime(
            metric="graph vs eager speed 'in large-scale training and deployment' (the seeds "
            "name no hardware, model, size or precision: any run can test it, within its regime)"
        ),
        note=SCOPE,
    ),
    Claim(
        "train_5_10",
        f"Static-graph training is {_TRAIN.percent} faster than dynamic (eager) training.",
        _TRAIN.range,
        _TRAIN.where,
        _TRAIN.low,
        _TRAIN.high,
        _per_framework("train", "training"),
        regime=A100_TRAINING,  # the conclusion the seeds draw from their A100 table
        note=SCOPE,
    ),
    Claim(
        "a100_training",
        "ResNet-50 training with AMP on one A100: "
        + ", ".join(f"{r.label} {r.one_gpu:g}" for r in _T)
        + f" samples/s (8x A100: {', '.join(f'{r.eight_gpus:g}' for r in _T)}).",
        _list((r.one_gpu for r in _T), "samples/s"),
        "seed 000, part 2.1 (training table)",
        0.9,
        1.1,
        (
            _training_ratio("TorchScript / torch eager (training)", ("torch", "torchscript")),
            _training_ratio("TF XLA / torch eager (training)", ("tensorflow", "xla")),
            _training_ratio("MindSpore graph / torch eager (training)", ("mindspore", "graph")),
        ),
        regime=A100_TRAINING,
        published=(NV_PT, NV_TF, NV_PERF, MLPERF_TRAIN),
        note=SCOPE,
        relative=True,
    ),
    Claim(
        "inference_fps",
        f"ResNet-50 inference at 224x224, FPS on {' / '.join(_DEV.values())}: "
        + ", ".join(f"{r.label} {'/'.join(f'{getattr(r, d):g}' for d in _DEV)}" for r in _I)
        + ".",
        " / ".join(
            f"{min(getattr(r, d) for r in _I):g}-{max(getattr(r, d) for r in _I):g}" for d in _DEV
        )
        + " FPS",
        "seed 000, part 2.2 (inference table)",
        0.9,
        1.1,
        (
            _inference_ratio("TF graph / ONNX Runtime (inference)", "tensorflow"),
            _inference_ratio("MindSpore graph / ONNX Runtime (inference)", "mindspore"),
        ),
        regime=INFERENCE_TABLE,
        published=(NV_T4_PT, NV_T4_TF, MLPERF_T4, MLPERF_INF, JETSON),
        relative=True,
        note=NOT_RUN_HERE,
    ),
    Claim(
        "onnx_cost",
        f"Converting a PyTorch model to ONNX costs about {_ONNX.percent} of its performance.",
        f"{_ONNX.range} of PyTorch",
        _ONNX.where,
        _ONNX.low,
        _ONNX.high,
        (
            Ratio(
                "ONNX Runtime / torch eager (inference)",
                ("onnxruntime", "ort"),
                ("torch", "eager"),
                "throughput",
            ),
            Ratio(
                "ONNX Runtime / torch.compile (inference)",
                ("onnxruntime", "ort"),
                ("torch", "compile"),
                "throughput",
            ),
        ),
        regime=Regime(
            hardware=INFERENCE_TABLE.hardware,
            hardware_text=INFERENCE_TABLE.hardware_text,
            model="ResNet-50",
            image_size=224,
            runtime=IN_PROCESS,
            metric="inference throughput, ONNX Runtime against PyTorch",
        ),
        note=f"the seeds do not say what the {_ONNX.percent} is measured against; PyTorch eager "
        "and its current graph compiler (torch.compile) are both shown",
    ),
    Claim(
        "cpu_graph_beats_onnx",
        "On CPU, the graph-optimised frameworks (TensorFlow, MindSpore) infer faster than "
        "PyTorch converted to ONNX.",
        f"TF {inference('tensorflow').cpu_fps:g} and MindSpore "
        f"{inference('mindspore').cpu_fps:g} vs ONNX Runtime "
        f"{inference('torch').cpu_fps:g} FPS "
        f"({inference_ratio('tensorflow', 'torch'):.2f}x, "
        f"{inference_ratio('mindspore', 'torch'):.2f}x)",
        "seed 000, part 2.2 (inference conclusions)",
        1.0,
        math.inf,
        (
            _inference_ratio("TF graph in-process / ONNX Runtime (inference)", "tensorflow"),
            _inference_ratio("MindSpore graph in-process / ONNX Runtime (inference)", "mindspore"),
        ),
        regime=Regime(
            hardware=("cpu",),
            hardware_text="an Intel Xeon 8375C CPU",
            model="ResNet-50",
            image_size=224,
            runtime="TF Serving and MindSpore Lite against ONNX Runtime",
            metric="CPU inference FPS",
        ),
        note=NOT_RUN_HERE,
    ),
)

#: the seeds' training table, for the epoch-time consistency check: (label, samples/s, minutes)
SEED_TRAINING: tuple[tuple[str, float, float], ...] = tuple(
    (r.label, r.one_gpu, r.epoch_min) for r in TRAINING
)


def claim(key: str) -> Claim:
    return by_key(CLAIMS, key, "claim", "valid claims are")


#: the epoch-time consistency check: a claim on the seeds' own numbers, no machine needed
EPOCH_CLAIM = Claim(
    "epoch_consistency",
    f"The seeds' epoch times ({', '.join(f'{m:g}' for _, _, m in SEED_TRAINING)} min) follow from "
    f"their single-GPU throughputs and their {SEED_EPOCH_IMAGES / 1e6:g} million training images.",
    _list((m for _, _, m in SEED_TRAINING), "min"),
    "seed 000, part 2.1 (training table)",
    1.0,
    math.inf,
    (),
)
