"""The course's two source articles as data: what they argue, their tables, their advice.

Framework-free. The articles (``shared/seeds/*.txt``, in Chinese) are the course's starting point
and the source of every *claim* the lab checks. This module holds their content restated in the
course's own words (never translated sentence by sentence) and their figures exactly as they give
them, each figure typed once: :mod:`labkit.claims` builds its claims from these tables, notebook 00
renders them, and notebooks 01-08 put them beside what a run measured.

- :data:`ARTICLES`: the two articles and what each argues;
- :data:`COMPARISON`: article 000's eager/static comparison table, one row per dimension;
- :data:`TRAINING` and :data:`INFERENCE`: its two benchmark tables (ResNet-50), with
  :data:`TRAINING_SETTING` / :data:`INFERENCE_SETTING` saying where they were measured;
- :data:`FIGURES`: the percentages its prose states (e.g. static graphs 20-50% faster);
- :data:`SCENARIOS`: its five project scenarios with the framework it recommends for each, keyed
  like :data:`labkit.guide.SCENARIOS`; :data:`DECISION_FLOW`: its four-step decision flow;
- :data:`DISTRIBUTED` and :data:`MOBILE`: article 003's comparison of distributed training and
  mobile deployment.

Framework names are the registry's (``torch``, ``tensorflow``, ``mindspore``, ``onnxruntime``)
plus ``paddlepaddle``, which the articles recommend but the lab does not install.
"""

from __future__ import annotations

from dataclasses import dataclass

from .frameworks import NAMES, spec
from .util import tables

#: frameworks the articles recommend that the lab does not install, with their display names
OUTSIDE_LAB: dict[str, str] = {"paddlepaddle": "PaddlePaddle"}


def display(name: str) -> str:
    """A framework's display name: the registry's, or :data:`OUTSIDE_LAB`'s."""
    if name in NAMES:
        return spec(name).display
    if name in OUTSIDE_LAB:
        return OUTSIDE_LAB[name]
    raise ValueError(f"unknown framework {name!r}: known are {', '.join([*NAMES, *OUTSIDE_LAB])}")


# --------------------------------------------------------------------------------------------
# Percentages the articles state in their prose


@dataclass(frozen=True)
class Figure:
    key: str
    template: str  # the claim in the course's words; "{percent}" stands for the range
    low: float  # as a ratio (1.2 = 20% faster, 0.9 = 10% less)
    high: float
    where: str  # part of which article

    @property
    def percent(self) -> str:
        """The range as the article writes it: 1.2-1.5 -> "20-50%", 0.90-0.95 -> "5-10%"."""
        a, b = sorted(round(abs(x - 1) * 100) for x in (self.low, self.high))
        return f"{a}-{b}%"

    @property
    def statement(self) -> str:
        return self.template.format(percent=self.percent)

    @property
    def range(self) -> str:
        return f"{self.low:g}x to {self.high:g}x"


FIGURES: tuple[Figure, ...] = (
    Figure(
        "static_speedup",
        "static graphs usually run {percent} faster than eager execution in large-scale training "
        "or deployment",
        1.20,
        1.50,
        "seed 000, part 1.2 (static graph advantages)",
    ),
    Figure(
        "training_speedup",
        "static-graph training is generally {percent} faster than eager training",
        1.05,
        1.10,
        "seed 000, part 2.1 (training conclusions)",
    ),
    Figure(
        "onnx_kept",
        "converting a PyTorch model to ONNX can lose a little performance, about {percent}",
        0.90,
        0.95,
        "seed 000, part 2.2 (inference conclusions)",
    ),
    Figure(
        "training_time_cut",
        "graph optimisation (XLA, operator fusion) shortens a ResNet-50 training run by {percent}",
        0.80,
        0.90,
        "seed 000, part 3.2 (large-scale training)",
    ),
    Figure(
        "lite_vs_tflite",
        "on resource-limited devices MindSpore Lite infers {percent} faster than TensorFlow Lite",
        1.15,
        1.25,
        "seed 000, part 3.3 (multi-target deployment)",
    ),
)


def figure(key: str) -> Figure:
    for f in FIGURES:
        if f.key == key:
            return f
    raise ValueError(f"unknown figure {key!r}: figures are {', '.join(f.key for f in FIGURES)}")


def _pct(key: str) -> str:
    return figure(key).percent


# --------------------------------------------------------------------------------------------
# The articles


@dataclass(frozen=True)
class Article:
    key: str  # the file's number, used in citations: "seed 000, part 2.1"
    file: str  # under shared/seeds/
    about: str  # what it is, in the course's words (not a translation of its title)
    date: str  # as the article states it; "" when it gives none
    argues: tuple[str, ...]  # its argument, point by point, in the course's words


ARTICLES: tuple[Article, ...] = (
    Article(
        "000",
        "000_a3237083cc650539.txt",
        "a lesson on choosing a deep learning framework: eager vs static graphs, benchmark "
        "tables, and a selection guide for five kinds of project",
        "",
        (
            (
                "Choosing a framework is matching a tool to the job, and the deepest difference "
                "between frameworks is *when the computation graph is built*: line by line as the "
                "code runs (eager, or dynamic graph) or completely, before anything runs (static "
                "graph)."
            ),
            (
                "Eager execution wins on debugging, flexibility and learning cost; static graphs "
                f"win on speed (the article puts it at {_pct('static_speedup')} in large-scale "
                "training and deployment), on deployment formats and on predictable memory use."
            ),
            (
                "Two benchmark tables back this up: ResNet-50 training on one and eight NVIDIA "
                "A100 GPUs, and ResNet-50 inference on a Xeon CPU, a T4 GPU and a Jetson Nano. From "
                f"them it concludes that static graphs train {_pct('training_speedup')} faster and "
                "that TensorFlow Serving and MindSpore Lite infer faster than PyTorch converted to "
                f"ONNX, which loses {_pct('onnx_kept')} in the conversion."
            ),
            (
                "It then recommends a framework for each of five project scenarios, gives a "
                "four-step decision flow, and sums up: PyTorch for flexible research, TensorFlow for "
                "large-scale training and multi-target deployment, MindSpore for domestic hardware "
                "and privacy-preserving training; mixing them (develop in one, deploy with another) "
                "is also fine."
            ),
        ),
    ),
    Article(
        "003",
        "003_f9e62a6d1d4a8e22.txt",
        "a comparison of the two mainstream frameworks (TensorFlow and PyTorch, recognisable "
        "from their APIs) and where each fits, published on a cloud vendor's site",
        "2026-01-08",
        (
            (
                "The two frameworks started from opposite designs: one from static graphs optimised "
                "before execution, with a complete production toolchain (data input, TF Lite, TF "
                "Serving); the other from define-by-run execution that can change while it runs, "
                "reaching deployment through TorchScript and ONNX."
            ),
            (
                "Eager execution makes debugging direct (it steps a custom RNN timestep by timestep); "
                "a static graph, made from Python with `tf.function`, pays off at deployment."
            ),
            (
                "For distributed training it says TensorFlow's `MultiWorkerMirroredStrategy` shards "
                "the data for you, while PyTorch's `torch.distributed` makes you shard data and "
                "synchronise gradients yourself; for mobile, TF Lite quantises, fuses operators and "
                "compiles ahead of time, while PyTorch serialises with TorchScript and relies on "
                "backends such as TVM."
            ),
            (
                "It advises eager frameworks for research, graph optimisation (and mixed precision, "
                "gradient compression, fault recovery) for training models above a billion "
                "parameters, and testing on the real device for mobile; it sees the two frameworks "
                "converging, ONNX becoming the exchange format, and recommends developing eagerly "
                "and converting the performance-critical paths to graphs."
            ),
        ),
    ),
)


def article(key: str) -> Article:
    for a in ARTICLES:
        if a.key == key:
            return a
    raise ValueError(f"unknown article {key!r}: the seeds are {', '.join(a.key for a in ARTICLES)}")


# --------------------------------------------------------------------------------------------
# Article 000, part 1.3: the comparison table


@dataclass(frozen=True)
class Contrast:
    key: str
    dimension: str
    eager_rating: str  # the article's one-word verdict for eager execution
    eager: str  # its reason, in the course's words
    static_rating: str
    static: str


COMPARISON: tuple[Contrast, ...] = (
    Contrast(
        "built",
        "when the graph is built",
        "while running",
        "each line builds its piece of the graph as it executes",
        "before running",
        "the whole graph is defined first, then handed to an execution engine",
    ),
    Contrast(
        "debugging",
        "debugging",
        "easy",
        "intermediate results can be printed or inspected in a debugger as they are computed",
        "hard",
        "the graph must be complete before it runs; looking inside needs extra logging",
    ),
    Contrast(
        "flexibility",
        "flexibility",
        "high",
        "any Python control flow works",
        "low",
        "control flow needs special constructs such as `tf.cond`",
    ),
    Contrast(
        "performance",
        "performance",
        "medium",
        "nothing is optimised ahead of time; operations are scheduled one by one",
        "high",
        "the graph is optimised and scheduled finely on the hardware",
    ),
    Contrast(
        "deployment",
        "deployment",
        "medium",
        "needs a conversion (e.g. to ONNX) that may cost performance",
        "high",
        "native deployment formats; the graph's structure is stable",
    ),
    Contrast(
        "learning",
        "learning cost",
        "low",
        "close to plain Python",
        "high",
        "graph concepts and a special syntax to learn",
    ),
)

SIDES: tuple[str, ...] = ("eager", "static")


def comparison_markdown(side: str | None = None, observed: dict[str, str] | None = None) -> str:
    """Article 000's comparison table as Markdown.

    ``side=None``: the whole table (both columns). ``side="eager"`` or ``"static"`` with
    ``observed`` (one text per row key of :data:`COMPARISON`): the article's verdict for that side
    beside what the notebook observed, so a learner reads the claim and the evidence together.
    """
    if side is None:
        lines = [
            "| dimension | eager (dynamic graph) | static graph |",
            "|---|---|---|",
        ]
        for c in COMPARISON:
            lines.append(
                f"| {c.dimension} | **{c.eager_rating}**: {tables.escape(c.eager)} "
                f"| **{c.static_rating}**: {tables.escape(c.static)} |"
            )
        return "\n".join(lines)
    if side not in SIDES:
        raise ValueError(f"side must be one of {', '.join(SIDES)} or None, got {side!r}")
    observed = observed or {}
    keys = [c.key for c in COMPARISON]
    if set(observed) != set(keys):
        missing = [k for k in keys if k not in observed]
        extra = [k for k in observed if k not in keys]
        raise ValueError(
            f"observed must give one text per row {keys}; missing {missing}, unknown {extra}"
        )
    lines = [
        f"| dimension | the article says ({side}) | seen in this notebook |",
        "|---|---|---|",
    ]
    for c in COMPARISON:
        rating, text = (c.eager_rating, c.eager) if side == "eager" else (c.static_rating, c.static)
        lines.append(
            f"| {c.dimension} | **{rating}**: {tables.escape(text)} | {tables.escape(observed[c.key])} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Article 000, part 2: the benchmark tables


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
    return row.eight_gpus / (8 * row.one_gpu)


def _num(x: float) -> str:
    return f"{x:g}"


def training_markdown() -> str:
    lines = [
        (
            "| configuration (as the article names it) | one A100, samples/s | 8x A100, samples/s "
            "| minutes per epoch | enabled |"
        ),
        "|---|---:|---:|---:|---|",
    ]
    for r in TRAINING:
        lines.append(
            f"| {r.label} | {_num(r.one_gpu)} | {_num(r.eight_gpus)} | {_num(r.epoch_min)} "
            f"| {r.options} |"
        )
    return "\n".join(lines)


def inference_markdown() -> str:
    head = " | ".join(INFERENCE_DEVICES.values())
    lines = [
        f"| deployment path | {head} | route |",
        "|---|" + "---:|" * len(INFERENCE_DEVICES) + "---|",
    ]
    for r in INFERENCE:
        values = " | ".join(_num(getattr(r, d)) for d in INFERENCE_DEVICES)
        lines.append(f"| {r.label} | {values} | {r.route} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Article 000, part 3: five scenarios; part 4: the decision flow


@dataclass(frozen=True)
class Scenario:
    key: str  # the key of labkit.guide.SCENARIOS
    title: str
    traits: str  # what characterises such a project, per the article
    recommended: tuple[str, ...]  # the article's recommendation(s), best first
    alternative: str  # "" when the article names none
    alternative_when: str
    reasons: tuple[str, ...]  # its reasons, in the course's words


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "research",
        "research and fast prototyping",
        "requirements change often, the model structure is edited constantly, intermediate "
        "results must be inspected, data sets are small",
        ("torch",),
        "tensorflow",
        "the team already has TensorFlow experience (eager mode, with the static-graph "
        "deployment path kept open)",
        (
            "eager execution lets an idea be tried and debugged quickly",
            (
                "a rich ecosystem of research libraries and pre-trained models (TorchVision, "
                "TorchText, Hugging Face Transformers)"
            ),
            "most papers publish PyTorch code, which makes results easy to reproduce and extend",
        ),
    ),
    Scenario(
        "large_scale_training",
        "industrial large-scale training",
        "tens of millions of samples or more, runs of days to months, clusters of GPUs or TPUs, "
        "training efficiency comes first",
        ("tensorflow", "mindspore"),
        "torch",
        "the team knows PyTorch well (TorchScript for speed, FSDP for multi-GPU training)",
        (
            (
                "graph optimisation (XLA, operator fusion) makes training faster; the article says "
                f"a ResNet-50 run gets {_pct('training_time_cut')} shorter"
            ),
            (
                "mature distributed strategies (TensorFlow's MultiWorkerMirroredStrategy, "
                "MindSpore's AutoParallel)"
            ),
            "predictable memory use, so long runs do not fail on memory spikes",
        ),
    ),
    Scenario(
        "deployment",
        "deployment to several targets (server, mobile, embedded)",
        "many kinds of hardware, latency limits (a real-time recommender within 100 ms), a "
        "demanding deployment toolchain",
        ("tensorflow", "mindspore"),
        "torch",
        "the model is already written in PyTorch: convert it to ONNX and run it with ONNX "
        "Runtime, accepting the conversion's performance cost",
        (
            (
                "TensorFlow covers the whole chain without converting formats again: TF Serving on "
                "servers, TF Lite on phones and boards"
            ),
            (
                "MindSpore Lite is the most tuned for embedded devices; the article says it infers "
                f"{_pct('lite_vs_tflite')} faster than TF Lite there"
            ),
            "a static graph's fixed structure avoids compatibility surprises in production",
        ),
    ),
    Scenario(
        "small_team",
        "a small team or a solo developer",
        "one to three people, limited experience, a project of a few weeks, needing both quick "
        "development and basic deployment",
        ("torch",),
        "tensorflow",
        "the project will later grow into industrial deployment, to avoid migrating frameworks",
        (
            "low learning cost, clear documentation, many tutorials",
            "eager execution cuts debugging time",
            "basic deployment is enough: a Flask or FastAPI service, or ONNX on a small device",
        ),
    ),
    Scenario(
        "special_hardware",
        "special hardware (domestic accelerators) or privacy needs",
        "Chinese AI chips such as Huawei Ascend, or privacy constraints that call for federated "
        "learning (for example on medical data)",
        ("mindspore", "paddlepaddle"),
        "",
        "",
        (
            "MindSpore supports Ascend chips best and ships a federated learning framework",
            (
                "PaddlePaddle is adapted to other domestic GPUs (Biren, MetaX) and has tools for "
                "Chinese NLP and industrial inspection"
            ),
        ),
    ),
)


def scenario(key: str) -> Scenario:
    for s in SCENARIOS:
        if s.key == key:
            return s
    raise ValueError(
        f"unknown scenario {key!r}: scenarios are {', '.join(s.key for s in SCENARIOS)}"
    )


@dataclass(frozen=True)
class FlowStep:
    title: str
    what: str  # in the course's words


DECISION_FLOW: tuple[FlowStep, ...] = (
    FlowStep(
        "Name the core need",
        "decide which scenario the project is (research, large-scale training, multi-target "
        "deployment, special domain) and what comes first: debugging speed for research, the "
        "toolchain for deployment",
    ),
    FlowStep(
        "Weigh the team's expertise",
        "a framework the team has already shipped with saves learning time, so it starts ahead",
    ),
    FlowStep(
        "Check the key performance",
        "run the project's core task (e.g. ResNet-50 training, BERT inference) on a little data "
        "in two or three candidate frameworks, and drop those that clearly miss the need",
    ),
    FlowStep(
        "Think about long-term growth",
        "if a prototype may become an industrial deployment, prefer the framework with the "
        "fuller deployment ecosystem (the article names TensorFlow) to avoid migrating later",
    ),
)


def scenarios_markdown() -> str:
    """The five scenarios: what marks each, what the article recommends and why."""
    lines = [
        "| scenario | what marks it | the article recommends | its reasons | alternative |",
        "|---|---|---|---|---|",
    ]
    for s in SCENARIOS:
        alt = f"{display(s.alternative)}, if {s.alternative_when}" if s.alternative else "none"
        lines.append(
            f"| {s.title} | {tables.escape(s.traits)} | {' or '.join(map(display, s.recommended))} "
            f"| {tables.escape('; '.join(s.reasons))} | {tables.escape(alt)} |"
        )
    return "\n".join(lines)


def decision_flow_markdown() -> str:
    return "\n".join(f"{i}. **{s.title}**: {s.what}." for i, s in enumerate(DECISION_FLOW, 1))


#: the article's closing advice, one line per framework
SUMMARY: dict[str, str] = {
    "torch": "flexible debugging and research efficiency",
    "tensorflow": "large-scale training efficiency and deployment to many targets",
    "mindspore": "domestic hardware or privacy-preserving computation",
}


# --------------------------------------------------------------------------------------------
# Article 003, parts 2.2 and 2.3: distributed training and mobile deployment


@dataclass(frozen=True)
class Capability:
    framework: str
    api: str  # what the article names
    says: str  # what it says about it, in the course's words
    checked: str  # where the course looks at it today


DISTRIBUTED: tuple[Capability, ...] = (
    Capability(
        "tensorflow",
        "`tf.distribute.MultiWorkerMirroredStrategy` (its snippet: `MirroredStrategy` and "
        "`model.compile` inside `strategy.scope()`)",
        "synchronises updates across devices, aggregates gradients with collective "
        "communication such as NCCL, and shards the data automatically",
        "notebook 08 runs it with `TF_CONFIG` and a custom loop, and checks what it shards for you",
    ),
    Capability(
        "torch",
        "`torch.distributed` (its snippet: `init_process_group('nccl')` and a "
        "`DistributedSampler`)",
        "the developer must shard the data and synchronise the gradients by hand",
        "notebook 08 runs `torchrun` with DistributedDataParallel, which synchronises the "
        "gradients itself",
    ),
)

MOBILE: tuple[Capability, ...] = (
    Capability(
        "tensorflow",
        "the TF Lite converter",
        "an end-to-end path to edge devices: 8- and 16-bit quantisation, operator fusion, and "
        "ahead-of-time compilation into code tuned for the target hardware",
        "notebook 07 converts ResNet-50 to TF Lite (now LiteRT) and quantises to int8 with ONNX "
        "Runtime",
    ),
    Capability(
        "torch",
        "TorchScript (`trace` or `script`) with back ends such as TVM",
        "serialises the model with TorchScript, then relies on compilers like TVM for other "
        "platforms",
        "notebook 03 shows TorchScript's deprecation warning and its successor `torch.export`; "
        "notebook 07 exports to ONNX",
    ),
)


def capability_markdown(rows: tuple[Capability, ...]) -> str:
    """One of article 003's comparisons (:data:`DISTRIBUTED`, :data:`MOBILE`) as Markdown."""
    lines = [
        "| framework | what the article names | what it says | checked in |",
        "|---|---|---|---|",
    ]
    for c in rows:
        lines.append(
            f"| {display(c.framework)} | {tables.escape(c.api)} | {tables.escape(c.says)} | {tables.escape(c.checked)} |"
        )
    return "\n".join(lines)
