"""The seed articles' performance claims as data, and verdicts computed from measured records.

Framework-free. A *record* is one benchmark result as the runner writes it (a dict with at least
``framework``, ``mode``, ``task``, ``precision``, ``status``, ``batch_size``, ``median_s``,
``iqr_s``; ``device`` and ``machine`` when known). Each :class:`Claim` names the quantity that can
be measured on this machine (a throughput ratio) and the range the seeds give for it;
:func:`check` turns records into a :class:`Verdict`:

- ``holds``: every measured ratio's median lies in the claimed range;
- ``does not hold``: none does;
- ``mixed``: some do (the row says which);
- ``cannot be tested here``: the figure needs hardware this machine lacks (the row still shows the
  ratio measurable here, next to published figures), or nothing was measured.

Only records of the same task, precision, device, image size and batch size are divided. A ratio
carries the uncertainty :func:`labkit.results.speedups` uses (the two relative IQRs of the step
times, propagated); a median inside the range whose interval pokes out (or the reverse) is
reported as "within noise".
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import results
from .results import EAGER_MODES

HOLDS, FAILS, MIXED, UNTESTABLE = "holds", "does not hold", "mixed", "cannot be tested here"
VERDICTS: tuple[str, ...] = (HOLDS, FAILS, MIXED, UNTESTABLE)

#: ImageNet's training set as the seed states it ("1.2 million images")
SEED_EPOCH_IMAGES = 1_200_000

Record = dict


# --------------------------------------------------------------------------------------------
# Data: sources and claims


@dataclass(frozen=True)
class Source:
    """A published figure (quoted exactly as the source gives it) or, figure "", just the page."""

    title: str
    url: str
    figure: str = ""

    def cite(self) -> str:
        return (
            f"{self.figure} ({self.title}, {self.url})"
            if self.figure
            else f"{self.title}, {self.url}"
        )


@dataclass(frozen=True)
class Ratio:
    """One ratio the claim is judged on: framework/mode ``num`` over framework/mode ``den``."""

    label: str
    num: tuple[str, str | None]  # (framework, mode); mode None = the fastest non-eager mode
    den: tuple[str, str | None]
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
    needs: str = ""  # hardware the seeds' absolute figures need ("" = testable anywhere)
    needs_gpu: str = ""  # a substring of the GPU name that would make it testable
    published: tuple[Source, ...] = ()
    note: str = ""  # what differs between the seeds' setting and this lab
    relative: bool = False  # the range is [low, high] x each ratio's seed_value

    def bounds(self, r: Ratio) -> tuple[float, float]:
        if self.relative:
            if r.seed_value is None:
                raise ValueError(f"claim {self.key}: ratio {r.label!r} has no seed value")
            return self.low * r.seed_value, self.high * r.seed_value
        return self.low, self.high


def _per_framework(task: str, label: str) -> tuple[Ratio, ...]:
    return tuple(
        Ratio(f"{fw} {label}", (fw, None), (fw, eager), task) for fw, eager in EAGER_MODES.items()
    )


NV_PT = Source(
    "NVIDIA DeepLearningExamples, ResNet50 v1.5 for PyTorch, training performance on DGX A100 "
    "(8x A100 80GB), pytorch-21.03 NGC container",
    "https://github.com/NVIDIA/DeepLearningExamples/blob/291f0d02e815b148fa5c2b81bf07aa3552142895/"
    "PyTorch/Classification/ConvNets/resnet50v1.5/README.md",
    "1 GPU: 938 img/s TF32, 2470 img/s mixed precision; 8 GPUs: 7248 img/s TF32, "
    "16621 img/s mixed precision",
)
NV_TF = Source(
    "NVIDIA DeepLearningExamples, ResNet-50 v1.5 for TensorFlow, training performance on DGX A100 "
    "(8x A100 40GB), TensorFlow 20.06-tf1-py3 NGC container",
    "https://github.com/NVIDIA/DeepLearningExamples/blob/1d4211fe9d94550d7bc72bb9b0ac4f576533ca52/"
    "TensorFlow/Classification/ConvNets/resnet50v1.5/README.md",
    "1 GPU: 909 img/s TF32 + XLA, 2375 img/s mixed precision + XLA; 8 GPUs: 7000 and 17400 img/s",
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

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "graph_20_50",
        "Static graphs run 20-50% faster than eager execution in large-scale training and deployment.",
        "1.2x to 1.5x",
        "seed 000, part 1.2 (static graph advantages)",
        1.2,
        1.5,
        _per_framework("train", "training") + _per_framework("throughput", "inference"),
        note=SCOPE,
    ),
    Claim(
        "train_5_10",
        "Static-graph training is 5-10% faster than dynamic (eager) training.",
        "1.05x to 1.10x",
        "seed 000, part 2.1 (training conclusions)",
        1.05,
        1.10,
        _per_framework("train", "training"),
        note=SCOPE,
    ),
    Claim(
        "a100_training",
        "ResNet-50 training with AMP on one A100: PyTorch 2.0 eager 1280, TorchScript 1350, "
        "TF 2.10 tf.function+XLA 1320, MindSpore 2.0 graph 1380 samples/s "
        "(8x A100: 9800, 10200, 10000, 10500).",
        "1280 / 1350 / 1320 / 1380 samples/s",
        "seed 000, part 2.1 (training table)",
        0.9,
        1.1,
        (
            Ratio(
                "TorchScript / torch eager (training)",
                ("torch", "torchscript"),
                ("torch", "eager"),
                "train",
                1350 / 1280,
            ),
            Ratio(
                "TF XLA / torch eager (training)",
                ("tensorflow", "xla"),
                ("torch", "eager"),
                "train",
                1320 / 1280,
            ),
            Ratio(
                "MindSpore graph / torch eager (training)",
                ("mindspore", "graph"),
                ("torch", "eager"),
                "train",
                1380 / 1280,
            ),
        ),
        needs="one and eight NVIDIA A100 GPUs",
        needs_gpu="A100",
        published=(NV_PT, NV_TF, NV_PERF, MLPERF_TRAIN),
        note=SCOPE,
        relative=True,
    ),
    Claim(
        "inference_fps",
        "ResNet-50 inference at 224x224, FPS on CPU (Xeon 8375C) / GPU (T4) / Jetson Nano: "
        "PyTorch 2.0 via ONNX Runtime 45/320/18, TF 2.10 via TF Serving 52/350/22, "
        "MindSpore 2.0 Lite 55/360/25.",
        "45-55 / 320-360 / 18-25 FPS",
        "seed 000, part 2.2 (inference table)",
        0.9,
        1.1,
        (
            Ratio(
                "TF graph / ONNX Runtime (inference)",
                ("tensorflow", None),
                ("onnxruntime", None),
                "throughput",
                52 / 45,
            ),
            Ratio(
                "MindSpore graph / ONNX Runtime (inference)",
                ("mindspore", None),
                ("onnxruntime", None),
                "throughput",
                55 / 45,
            ),
        ),
        needs="an Intel Xeon 8375C, an NVIDIA T4 and a Jetson Nano",
        needs_gpu="T4",
        published=(NV_T4_PT, NV_T4_TF, MLPERF_T4, MLPERF_INF, JETSON),
        relative=True,
        note="MindSpore Lite and TF Serving are not installed here: the lab runs MindSpore's graph "
        "mode (or its MindIR) and TensorFlow's graph (or its SavedModel) in-process",
    ),
    Claim(
        "onnx_cost",
        "Converting a PyTorch model to ONNX costs about 5-10% of its performance.",
        "0.90x to 0.95x of PyTorch",
        "seed 000, part 2.2 (inference conclusions)",
        0.90,
        0.95,
        (
            Ratio(
                "ONNX Runtime / torch eager (inference)",
                ("onnxruntime", None),
                ("torch", "eager"),
                "throughput",
            ),
            Ratio(
                "ONNX Runtime / best torch graph mode (inference)",
                ("onnxruntime", None),
                ("torch", None),
                "throughput",
            ),
        ),
        note="the seeds do not say what the 5-10% is measured against; both readings are shown",
    ),
    Claim(
        "cpu_graph_beats_onnx",
        "On CPU, the graph-optimised frameworks (TensorFlow, MindSpore) infer faster than "
        "PyTorch converted to ONNX.",
        "TF 52 and MindSpore 55 vs ONNX Runtime 45 FPS (1.16x, 1.22x)",
        "seed 000, part 2.2 (inference conclusions)",
        1.0,
        math.inf,
        (
            Ratio(
                "TF graph / ONNX Runtime (inference)",
                ("tensorflow", None),
                ("onnxruntime", None),
                "throughput",
                52 / 45,
            ),
            Ratio(
                "MindSpore graph / ONNX Runtime (inference)",
                ("mindspore", None),
                ("onnxruntime", None),
                "throughput",
                55 / 45,
            ),
        ),
    ),
)

#: the seeds' training table, for the epoch-time consistency check
SEED_TRAINING: tuple[tuple[str, float, float], ...] = (
    ("PyTorch 2.0 eager", 1280, 15.2),
    ("PyTorch 2.0 TorchScript", 1350, 14.5),
    ("TF 2.10 tf.function+XLA", 1320, 14.8),
    ("MindSpore 2.0 graph", 1380, 14.1),
)


def claim(key: str) -> Claim:
    for c in CLAIMS:
        if c.key == key:
            return c
    raise ValueError(f"unknown claim {key!r}: valid claims are {', '.join(c.key for c in CLAIMS)}")


# --------------------------------------------------------------------------------------------
# Measurements with an interval


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float

    def __post_init__(self):
        if not (self.low <= self.value <= self.high):
            raise ValueError(
                f"estimate {self.value} lies outside its interval [{self.low}, {self.high}]"
            )

    def __str__(self) -> str:
        return f"{self.value:.2f}x [{self.low:.2f}-{self.high:.2f}]"


def _rel_iqr(r: Record) -> float:
    median = float(r["median_s"])
    if median <= 0:
        raise ValueError(f"record has a non-positive median time {median}: {_describe(r)}")
    return float(r.get("iqr_s") or 0.0) / median


def ratio(num: Record, den: Record) -> Estimate:
    """Throughput of ``num`` over ``den`` (images/s), +- the propagated relative IQRs.

    The same uncertainty as :func:`labkit.results.speedups`:
    ``ratio * sqrt((iqr_n/med_n)^2 + (iqr_d/med_d)^2)``.
    """
    rel = math.hypot(_rel_iqr(num), _rel_iqr(den))
    value = (num["batch_size"] / num["median_s"]) / (den["batch_size"] / den["median_s"])
    spread = value * rel
    return Estimate(value, max(value - spread, 0.0), value + spread)


def _describe(r: Record) -> str:
    return f"{r.get('framework')}/{r.get('mode')}/{r.get('task')}/{r.get('precision')}"


def _context(r: Record) -> tuple:
    """What two records must share to be compared (everything but framework and mode)."""
    return (
        r.get("model", results.OPTIONAL["model"]),
        r.get("task"),
        r.get("precision", "fp32"),
        r.get("device", "cpu"),
        r.get("image_size"),
        r.get("batch_size"),
    )


def candidates(
    records: Iterable[Record],
    framework: str,
    mode: str | None,
    task: str,
    precision: str = "fp32",
    device: str = "cpu",
) -> list[Record]:
    """Successful records (the latest of each cell) of framework x mode x task x precision.

    ``mode=None`` means any mode except the framework's eager one (its graph modes).
    """
    eager = EAGER_MODES.get(framework)
    return [
        r
        for r in results.latest(records)
        if r.get("status") == "ok"
        and float(r.get("median_s") or 0) > 0
        and r.get("framework") == framework
        and r.get("task") == task
        and r.get("precision", "fp32") == precision
        and r.get("device", "cpu") == device
        and (r.get("mode") == mode if mode is not None else r.get("mode") != eager)
    ]


def _ips(r: Record) -> float:
    return r["batch_size"] / r["median_s"]


def pair(
    records: list[Record], r: Ratio, precision: str = "fp32", device: str = "cpu"
) -> tuple[Record, Record] | None:
    """The records to divide for ratio ``r``: same task, precision, device, image and batch size.

    Where several settings were measured for both sides, the largest image size (then batch)
    wins, as closest to the seeds' 224x224; within it each side's fastest mode is taken.
    """
    nums = candidates(records, r.num[0], r.num[1], r.task, precision, device)
    dens = candidates(records, r.den[0], r.den[1], r.task, precision, device)
    shared = {_context(x) for x in nums} & {_context(x) for x in dens}
    if not shared:
        return None
    ctx = max(shared, key=lambda c: (c[3] or 0, c[4] or 0))
    return (
        max((x for x in nums if _context(x) == ctx), key=_ips),
        max((x for x in dens if _context(x) == ctx), key=_ips),
    )


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

    def __str__(self) -> str:
        s = f"{self.ratio.label}: {self.estimate}"
        if self.ratio.seed_value is not None:
            s += f" (seeds: {self.ratio.seed_value:.2f}x)"
        return s


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    measured: list[Measured] = field(default_factory=list)
    why: str = ""

    def row(self) -> dict[str, str]:
        """The claim-check table row: claim, seeds' figure, measured here, verdict, why, published."""
        shown = "; ".join(str(m) for m in self.measured) or "not measured"
        published = "; ".join(
            f"{s.figure} [{s.title}]({s.url})" if s.figure else f"[{s.title}]({s.url})"
            for s in self.claim.published
        )
        return {
            "claim": self.claim.statement,
            "seeds": self.claim.seed_figure,
            "measured here": shown,
            "verdict": self.verdict,
            "why": self.why,
            "published": published,
        }


def place(estimate: Estimate, low: float, high: float) -> tuple[str, bool]:
    """Where the median lies relative to [low, high], and whether the interval crosses a bound."""
    where = "below" if estimate.value < low else "above" if estimate.value > high else "in"
    crosses = (estimate.low < low <= estimate.high) or (estimate.low <= high < estimate.high)
    return where, crosses


def measure(
    c: Claim, records: list[Record], precision: str = "fp32", device: str = "cpu"
) -> list[Measured]:
    """The claim's ratios that the records allow (a ratio with a side not measured is skipped)."""
    out = []
    for r in c.ratios:
        found = pair(records, r, precision, device)
        if found is None:
            continue
        num, den = found
        est = ratio(num, den)
        where, noisy = place(est, *c.bounds(r))
        out.append(Measured(r, est, str(num["mode"]), str(den["mode"]), where, noisy))
    return out


def _range(c: Claim, r: Ratio) -> str:
    low, high = c.bounds(r)
    return f">= {low:.3g}x" if math.isinf(high) else f"{low:.3g}x-{high:.3g}x"


def judge(c: Claim, measured: list[Measured]) -> tuple[str, str]:
    """The verdict and its reason from the measured ratios of a testable claim."""
    if not measured:
        return UNTESTABLE, (
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


def check(c: Claim, records: list[Record], precision: str = "fp32") -> Verdict:
    """The verdict on one claim from the records of this machine."""
    on_gpu = bool(c.needs_gpu) and gpu_present(records, c.needs_gpu)
    measured = measure(c, records, precision, "gpu" if on_gpu else "cpu")
    if c.needs and not on_gpu:
        why = (
            f"needs {c.needs}, which this machine lacks; the ratios measured here stand beside "
            f"the seeds' ratios, published figures beside the seeds' absolute ones"
        )
        return Verdict(c, UNTESTABLE, measured, why)
    verdict, why = judge(c, measured)
    if c.note and measured:
        why += f". Note: {c.note}"
    return Verdict(c, verdict, measured, why)


def check_all(records: list[Record], precision: str = "fp32") -> list[Verdict]:
    """A verdict for every claim, plus the seeds' epoch-time consistency check."""
    return [check(c, records, precision) for c in CLAIMS] + [epoch_consistency()]


# --------------------------------------------------------------------------------------------
# A check that needs no machine: do the seeds' epoch times follow from their throughputs?

EPOCH_CLAIM = Claim(
    "epoch_consistency",
    "The seeds' epoch times (15.2, 14.5, 14.8, 14.1 min) follow from their single-GPU throughputs "
    "and their 1.2 million training images.",
    "15.2 / 14.5 / 14.8 / 14.1 min",
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

    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    head = ["claim", "seeds", "measured here", "verdict", "why", "published"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows(verdicts):
        lines.append("| " + " | ".join(cell(r[h]) for h in head) + " |")
    return "\n".join(lines)


def sources(verdicts: list[Verdict]) -> list[Source]:
    """Every published source cited by these verdicts, once each."""
    seen: dict[str, Source] = {}
    for v in verdicts:
        for s in v.claim.published:
            seen.setdefault(s.title, s)
    return list(seen.values())
