"""The seed articles' performance claims as data, and verdicts computed from measured records.

Framework-free. A *record* is one benchmark result as the runner writes it (a dict with at least
``framework``, ``mode``, ``task``, ``precision``, ``status``, ``batch_size``, ``median_s``,
``iqr_s``; ``device`` and ``machine`` when known). Each :class:`Claim` names the quantity that can
be measured on this machine (a throughput ratio), the range the seeds give for it, and the
:class:`Regime` it was made in (hardware class, model, image size, batch, precision, runtime,
metric). :func:`check` turns records into a :class:`Verdict` that never claims more than the
measurement's regime:

- ``holds here`` / ``does not hold here``: the measurement is in the claim's regime and every /
  no measured ratio's median lies in the claimed range; ``mixed here``: some do (the row says
  which);
- ``different regime``: the measurement differs from the claim's regime in something the claim
  states (a 2-core CPU at 32 px cannot confirm or refute a claim made on A100 GPUs at 224 px, nor
  one about TF Serving or MindSpore Lite, which this lab does not run); the row reports the ratio
  measured here beside the seeds' and names every difference;
- ``not measured here``: nothing measured for it yet.

Only records of the same task, precision, device, image size and batch size are divided. A ratio
carries the interval of :func:`labkit.results.ratio` (a bootstrap from the raw step times, as
:func:`labkit.results.speedups` reports); a median inside the range whose interval pokes out (or
the reverse) is reported as "within noise". Only the two modes each ratio declares are divided
(:func:`labkit.results.pair`, the lab's one pairing), and only valid records count as evidence
unless asked for (``include_invalid``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import results, seeds
from .frameworks import specs
from .util import tables

HOLDS, FAILS, MIXED = "holds here", "does not hold here", "mixed here"
REGIME, NOT_MEASURED = "different regime", "not measured here"
#: the name notebooks use for a claim this machine cannot judge (it needs other hardware)
UNTESTABLE = REGIME
VERDICTS: tuple[str, ...] = (HOLDS, FAILS, MIXED, REGIME, NOT_MEASURED)

#: ImageNet's training set as the seed states it ("1.2 million images")
SEED_EPOCH_IMAGES = seeds.EPOCH_IMAGES

Record = dict


# --------------------------------------------------------------------------------------------
# Data: sources and claims


@dataclass(frozen=True)
class Source:
    """A published figure (quoted exactly as the source gives it) or, figure "", just the page.

    ``values`` names the numbers a notebook computes with; ``figure`` then holds ``{name}``
    fields and is filled from them, so that each number is typed once.
    """

    title: str
    url: str
    figure: str = ""
    values: tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        if self.values:
            object.__setattr__(self, "figure", self.figure.format(**dict(self.values)))

    def value(self, name: str) -> float:
        found = dict(self.values)
        if name not in found:
            raise ValueError(
                f"{self.title} gives no value {name!r}: it gives {', '.join(found) or 'none'}"
            )
        return found[name]

    def cite(self) -> str:
        return (
            f"{self.figure} ({self.title}, {self.url})"
            if self.figure
            else f"{self.title}, {self.url}"
        )


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


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str  # the claim, in the course's words
    seed_figure: str  # the seeds' number(s), as they give them
    seed_section: str  # where in the seeds
    low: float  # the claimed range of the measured ratio (relative: factors on seed_value)
    high: float
    ratios: tuple[Ratio, ...]  # what is measured here
    regime: Regime = Regime()  # where the claim was made (nothing stated: any regime)
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


NV_PT = Source(
    "NVIDIA DeepLearningExamples, ResNet50 v1.5 for PyTorch, training performance on DGX A100 "
    "(8x A100 80GB), pytorch-21.03 NGC container",
    "https://github.com/NVIDIA/DeepLearningExamples/blob/291f0d02e815b148fa5c2b81bf07aa3552142895/"
    "PyTorch/Classification/ConvNets/resnet50v1.5/README.md",
    "1 GPU: {gpu1_tf32:g} img/s TF32, {gpu1_amp:g} img/s mixed precision; 8 GPUs: "
    "{gpu8_tf32:g} img/s TF32, {gpu8_amp:g} img/s mixed precision",
    (("gpu1_tf32", 938), ("gpu1_amp", 2470), ("gpu8_tf32", 7248), ("gpu8_amp", 16621)),
)
NV_TF = Source(
    "NVIDIA DeepLearningExamples, ResNet-50 v1.5 for TensorFlow, training performance on DGX A100 "
    "(8x A100 40GB), TensorFlow 20.06-tf1-py3 NGC container",
    "https://github.com/NVIDIA/DeepLearningExamples/blob/1d4211fe9d94550d7bc72bb9b0ac4f576533ca52/"
    "TensorFlow/Classification/ConvNets/resnet50v1.5/README.md",
    "1 GPU: {gpu1_tf32:g} img/s TF32 + XLA, {gpu1_amp:g} img/s mixed precision + XLA; 8 GPUs: "
    "{gpu8_tf32:g} and {gpu8_amp:g} img/s",
    (("gpu1_tf32", 909), ("gpu1_amp", 2375), ("gpu8_tf32", 7000), ("gpu8_amp", 17400)),
)
NV_PERF = Source(
    "NVIDIA Data Center Deep Learning Product Performance (current figures)",
    "https://developer.nvidia.com/deep-learning-performance-training-inference",
)
MLPERF_TRAIN = Source(
    "MLPerf Training results (MLCommons), ResNet-50 time to train",
    "https://mlcommons.org/benchmarks/training/",
)
NV_T4_PT = Source(
    "NVIDIA DeepLearningExamples, ResNet50 v1.5 for PyTorch, inference on one T4",
    NV_PT.url,
    "FP32: 98 img/s at batch 1, 428 img/s at batch 64; mixed precision: 1198 img/s at batch 256",
)
NV_T4_TF = Source(
    "NVIDIA DeepLearningExamples, ResNet-50 v1.5 for TensorFlow, inference on one T4",
    NV_TF.url,
    "FP32: 136.44 img/s at batch 1, 425.72 img/s at batch 256; mixed precision + XLA: "
    "1193.74 img/s at batch 256",
)
MLPERF_T4 = Source(
    "MLPerf Inference v0.5, closed division, NVIDIA T4x8 (8 T4 GPUs, TensorRT), ResNet-50 Offline",
    "https://github.com/mlcommons/inference_results_v0.5/blob/master/closed/NVIDIA/results/"
    "T4x8/resnet/Offline/performance/run_1/mlperf_log_summary.txt",
    "44977.8 samples/s for 8 GPUs, i.e. about 5600 per T4 (INT8)",
)
MLPERF_INF = Source(
    "MLPerf Inference results (MLCommons), datacenter and edge, ResNet-50",
    "https://mlcommons.org/benchmarks/inference-datacenter/",
)
JETSON = Source(
    "NVIDIA Jetson Nano deep learning inference benchmarks",
    "https://developer.nvidia.com/embedded/jetson-nano-dl-inference-benchmarks",
)

SCOPE = (
    "the seeds measured ImageNet on data-centre GPUs with mixed precision and large batches; "
    "this lab measures synthetic data on this machine, small batches, fp32 unless stated"
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
#: the serving runtimes this lab does not run, and what it runs in their place
NOT_RUN_HERE = (
    "compared here: TensorFlow's and MindSpore's graph modes and ONNX Runtime, each in the "
    "benchmark's own process; TF Serving and MindSpore Lite, which gave the seeds' figures, are "
    "not installed here"
)

_STATIC = seeds.figure("static_speedup")
_TRAIN = seeds.figure("training_speedup")
_ONNX = seeds.figure("onnx_kept")
_EAGER = ("torch", "eager")  # the training table's baseline row


def _training_ratio(label: str, side: tuple[str, str]) -> Ratio:
    return Ratio(label, side, _EAGER, "train", seeds.training_ratio(side, _EAGER))


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
        seeds.inference_ratio(framework, "torch"),
    )


def _list(values, unit: str = "") -> str:
    return " / ".join(f"{v:g}" for v in values) + (f" {unit}" if unit else "")


_T, _I = seeds.TRAINING, seeds.INFERENCE
_DEV = seeds.INFERENCE_DEVICES

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
        f"TF {seeds.inference('tensorflow').cpu_fps:g} and MindSpore "
        f"{seeds.inference('mindspore').cpu_fps:g} vs ONNX Runtime "
        f"{seeds.inference('torch').cpu_fps:g} FPS "
        f"({seeds.inference_ratio('tensorflow', 'torch'):.2f}x, "
        f"{seeds.inference_ratio('mindspore', 'torch'):.2f}x)",
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
    (r.label, r.one_gpu, r.epoch_min) for r in seeds.TRAINING
)


def claim(key: str) -> Claim:
    for c in CLAIMS:
        if c.key == key:
            return c
    raise ValueError(f"unknown claim {key!r}: valid claims are {', '.join(c.key for c in CLAIMS)}")


# --------------------------------------------------------------------------------------------
# Measurements with an interval


#: a ratio with its confidence interval, and the one function that computes it (from the
#: records' raw times: a bootstrap; see :func:`labkit.results.ratio`)
Estimate = results.Estimate
ratio = results.ratio


def pair(
    records: list[Record],
    r: Ratio,
    precision: str = "fp32",
    device: str = "cpu",
    include_invalid: bool = False,
) -> tuple[Record, Record] | None:
    """The records to divide for ratio ``r``: the lab's one pairing (:func:`labkit.results.pair`)
    of the two declared modes, same task, precision, device, model, image and batch size; where
    several settings were measured for both, the largest image size (then batch) wins, as
    closest to the seeds' 224x224. Records that failed their validity verdict are no evidence:
    left out unless ``include_invalid``."""
    return results.pair(records, r.num, r.den, r.task, precision, device, include_invalid)


# --------------------------------------------------------------------------------------------
# Verdicts


@dataclass
class Measured:
    ratio: Ratio
    estimate: Estimate
    num_mode: str
    den_mode: str
    place: str  # "in", "below" or "above" the claimed range (by the median)
    noisy: bool  # the interval crosses a boundary of the range
    here: Regime | None = None  # the regime the two records were measured in

    def __str__(self) -> str:
        s = f"{self.ratio.label}: {self.estimate}"
        if self.ratio.seed_value is not None:
            s += f" (seeds: {self.ratio.seed_value:.2f}x)"
        return s


def _short(here: Regime) -> str:
    return (
        f"{here.hardware_text}, {here.image_size} px, batch {here.batch}, "
        f"{_precision(here.precision)}, {here.runtime}"
    )


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    measured: list[Measured] = field(default_factory=list)
    why: str = ""
    differences: tuple[str, ...] = ()  # what the measurement lacks of the claim's regime

    def label(self) -> str:
        """The verdict as the table shows it: scoped, with the ratio and the differences for a
        different regime."""
        if self.verdict != REGIME:
            if not self.claim.ratios:  # arithmetic on the seeds' own numbers: no machine
                return self.verdict.removesuffix(" here") + " (the seeds' own numbers)"
            return self.verdict
        names = ", ".join(dict.fromkeys(d.split(":")[0] for d in self.differences))
        if not self.measured:
            return f"{REGIME} ({names}): nothing measured here yet"
        values = ", ".join(f"{m.estimate.value:.2f}x" for m in self.measured)
        plural = "ratios" if len(self.measured) > 1 else "ratio"
        return f"{REGIME} ({names}): {plural} {values} measured here"

    def row(self) -> dict[str, str]:
        """The claim-check table row: claim, seeds' figure, the claim's regime, measured here
        (with the regime it was measured in), the scoped verdict, why, published figures."""
        shown = "; ".join(str(m) for m in self.measured) or "not measured"
        heres = list(dict.fromkeys(_short(m.here) for m in self.measured if m.here))
        if heres:
            shown += " (measured on " + "; ".join(heres) + ")"
        published = "; ".join(
            f"{s.figure} [{s.title}]({s.url})" if s.figure else f"[{s.title}]({s.url})"
            for s in self.claim.published
        )
        return {
            "claim": self.claim.statement,
            "seeds": self.claim.seed_figure,
            "regime": self.claim.regime.describe(),
            "measured here": shown,
            "verdict": self.label(),
            "why": self.why,
            "published": published,
        }


def place(estimate: Estimate, low: float, high: float) -> tuple[str, bool]:
    """Where the median lies relative to [low, high], and whether the interval crosses a bound."""
    where = "below" if estimate.value < low else "above" if estimate.value > high else "in"
    crosses = (estimate.low < low <= estimate.high) or (estimate.low <= high < estimate.high)
    return where, crosses


def measure(
    c: Claim,
    records: list[Record],
    precision: str = "fp32",
    device: str = "cpu",
    include_invalid: bool = False,
) -> list[Measured]:
    """The claim's ratios that the records allow (a ratio with a side not measured, or measured
    only invalidly unless ``include_invalid``, is skipped)."""
    out = []
    for r in c.ratios:
        found = pair(records, r, precision, device, include_invalid)
        if found is None:
            continue
        num, den = found
        est = ratio(num, den)
        where, noisy = place(est, *c.bounds(r))
        out.append(
            Measured(r, est, str(num["mode"]), str(den["mode"]), where, noisy, regime_of(num))
        )
    return out


def _range(c: Claim, r: Ratio) -> str:
    low, high = c.bounds(r)
    return f">= {low:.3g}x" if math.isinf(high) else f"{low:.3g}x-{high:.3g}x"


def judge(c: Claim, measured: list[Measured]) -> tuple[str, str]:
    """The verdict and its reason from the measured ratios of a testable claim."""
    if not measured:
        return NOT_MEASURED, (
            "nothing measured for it yet: run the benchmark cells this claim "
            "needs (see the 'measured here' ratios)"
        )
    inside = [m for m in measured if m.place == "in"]
    parts = [
        f"{m.ratio.label} {m.estimate.value:.2f}x is {m.place} {_range(c, m.ratio)}"
        + (" (within noise)" if m.noisy else "")
        for m in measured
    ]
    verdict = HOLDS if len(inside) == len(measured) else FAILS if not inside else MIXED
    return verdict, "; ".join(parts)


def gpu_present(records: Iterable[Record], name: str) -> bool:
    """Whether some successful record ran on a GPU whose name contains ``name``."""
    for r in records:
        gpus = (r.get("machine") or {}).get("gpus") or []
        if r.get("status") == "ok" and r.get("device") == "gpu" and any(name in g for g in gpus):
            return True
    return False


def _machine_regime(records: Iterable[Record], device: str) -> Regime | None:
    """The regime of this machine's runs on ``device`` (any successful record), if any."""
    for r in records:
        if r.get("status") == "ok" and r.get("device", "cpu") == device:
            return regime_of(r)
    return None


def _precision_for(c: Claim, records: list[Record], precision: str) -> str:
    """The precision to divide records at: a mixed-precision claim takes the mixed-precision
    records there are (bf16 on this lab's machines) unless a precision was asked for."""
    if c.regime.precision != "mixed" or precision in MIXED_PRECISIONS:
        return precision
    mixed = [p for p in MIXED_PRECISIONS if any(r.get("precision") == p for r in records)]
    return min(mixed) if mixed else precision


def check(
    c: Claim, records: list[Record], precision: str = "fp32", include_invalid: bool = False
) -> Verdict:
    """The verdict on one claim from the records of this machine, within the claim's regime.

    A ratio is judged (holds here / does not hold here / mixed here) only when it was measured
    in the claim's regime; otherwise the verdict is "different regime", which reports the ratio
    measured here beside the seeds' and names every difference. With nothing measured the
    verdict is "not measured here", or "different regime" when this machine cannot meet the
    claim's regime at all (hardware it lacks, a runtime the lab does not run). Only valid
    records count (see :func:`labkit.results.valid`) unless ``include_invalid``.
    """
    wanted = c.regime.hardware or ()
    gpu = next(
        (h[4:] for h in wanted if h.startswith("gpu:") and gpu_present(records, h[4:])), None
    )
    device = "gpu" if gpu else "cpu"
    measured = measure(c, records, _precision_for(c, records, precision), device, include_invalid)
    if not measured:
        machine = _machine_regime(records, device) or Regime(
            hardware=(device,), hardware_text=f"this machine's {device.upper()}", runtime=IN_PROCESS
        )
        hard = [
            f"{name}: {text}"
            for name, text in c.regime.differences(machine)
            if name in ("hardware", "runtime")
        ]
        if hard:
            why = (
                "nothing measured for it here yet, and this machine cannot be in the claim's "
                f"regime ({'; '.join(hard)}): a ratio measured here would be reported beside "
                "the seeds', never as a verdict on the claim"
            )
            return Verdict(c, REGIME, [], why, tuple(hard))
        verdict, why = judge(c, measured)
        return Verdict(c, verdict, [], why)
    inside = [m for m in measured if not c.regime.differences(m.here)]
    differences = tuple(
        dict.fromkeys(
            f"{name}: {text}" for m in measured for name, text in c.regime.differences(m.here)
        )
    )
    if not inside:
        why = (
            f"the claim was made for {c.regime.describe()}; this run differs in "
            f"{'; '.join(differences)}. The ratios measured here stand beside the seeds' "
            "ratios (and published figures beside the seeds' absolute ones): they neither "
            "confirm nor refute the claim"
        )
        if c.note:
            why += f". Note: {c.note}"
        return Verdict(c, REGIME, measured, why, differences)
    verdict, why = judge(c, inside)
    others = [m for m in measured if m not in inside]
    if others:
        why += (
            ". Not judged, measured in a different regime: "
            + "; ".join(str(m) for m in others)
            + f" ({'; '.join(differences)})"
        )
    if c.note:
        why += f". Note: {c.note}"
    return Verdict(c, verdict, measured, why, differences if others else ())


def check_all(
    records: list[Record], precision: str = "fp32", include_invalid: bool = False
) -> list[Verdict]:
    """A verdict for every claim (valid records only unless ``include_invalid``), plus the
    seeds' epoch-time consistency check."""
    return [check(c, records, precision, include_invalid) for c in CLAIMS] + [epoch_consistency()]


# --------------------------------------------------------------------------------------------
# A check that needs no machine: do the seeds' epoch times follow from their throughputs?

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


def implied_epoch_minutes(samples_per_s: float, images: int = SEED_EPOCH_IMAGES) -> float:
    """The shortest possible epoch at a throughput: every image must pass once."""
    if samples_per_s <= 0:
        raise ValueError(f"throughput must be positive, got {samples_per_s}")
    return images / samples_per_s / 60


def epoch_consistency(table: tuple[tuple[str, float, float], ...] = SEED_TRAINING) -> Verdict:
    """Stated epoch time over the time the throughput implies: below 1 cannot happen."""
    measured, parts = [], []
    for name, sps, minutes in table:
        r = minutes / implied_epoch_minutes(sps)
        m = Measured(
            Ratio(f"{name}: stated / implied epoch time", ("", ""), ("", ""), "train"),
            Estimate(r, r, r),
            "",
            "",
            place(Estimate(r, r, r), 1.0, math.inf)[0],
            False,
        )
        measured.append(m)
        parts.append(
            f"{name}: {sps:g} samples/s needs at least "
            f"{implied_epoch_minutes(sps):.1f} min, the seeds state {minutes:g}"
        )
    verdict, _ = judge(EPOCH_CLAIM, measured)
    why = (
        "computed from the seeds' own numbers (an epoch cannot be shorter than images / "
        "throughput): " + "; ".join(parts)
    )
    return Verdict(EPOCH_CLAIM, verdict, measured, why)


# --------------------------------------------------------------------------------------------
# Presentation


def rows(verdicts: list[Verdict]) -> list[dict[str, str]]:
    return [v.row() for v in verdicts]


def markdown(verdicts: list[Verdict]) -> str:
    """The claim-check table as Markdown (``IPython.display.Markdown(markdown(...))``)."""

    head = ["claim", "seeds", "regime", "measured here", "verdict", "why", "published"]
    return tables.markdown(head, [[r[h] for h in head] for r in rows(verdicts)])


def sources(verdicts: list[Verdict]) -> list[Source]:
    """Every published source cited by these verdicts, once each."""
    seen: dict[str, Source] = {}
    for v in verdicts:
        for s in v.claim.published:
            seen.setdefault(s.title, s)
    return list(seen.values())
