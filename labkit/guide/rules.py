"""The selection guide's tables: plain data an instructor can read, print and change.

Two voices score the same candidates from the same answers:

- **the article** (:data:`ARTICLE`): the advice of the course's source article (seed 000), each
  rule sourced to the part of the article it restates;
- **the course today** (:data:`COURSE`): what the course recommends for the pinned versions, each
  rule sourced to a dated, checkable page (:data:`SOURCES`: release notes, official docs and
  guides, the date the page itself gives or the date of the commit that last changed it).

Rules in both voices (:data:`BOTH`) are the decision flow's judgement that the course adopts
(a team's expertise saves learning time); they state no fact to date. Where the voices disagree,
:data:`DISAGREEMENTS` says why, with sources. The engine (``labkit.guide.engine``) reads these
tables and names no framework itself; this module is the one place in the guide that does.
"""

from __future__ import annotations

from typing import NamedTuple

from ..frameworks import specs

# ---- the inputs: every valid value with the words a learner sees ----------------------------

SCENARIOS: dict[str, str] = {
    "research": "research and fast prototyping",
    "large_scale_training": "large-scale industrial training",
    "deployment": "deployment to several targets (server, mobile, embedded)",
    "small_team": "a small team or a solo developer",
    "special_hardware": "special hardware (Ascend, domestic accelerators) or privacy needs",
}
#: frameworks a team can know and develop in: the registered ones with an eager mode
EXPERTISE: dict[str, str] = {s.name: s.display for s in specs() if s.eager is not None}
TARGETS: dict[str, str] = {
    "server": "server",
    "mobile": "mobile",
    "embedded": "embedded",
    "browser": "browser",
}
HARDWARE: dict[str, str] = {
    "cpu": "CPU only",
    "gpu": "NVIDIA GPU",
    "ascend": "Huawei Ascend NPU",
    "other_accelerator": "other domestic accelerator (e.g. Biren, MetaX GPUs)",
}
SCALES: dict[str, str] = {
    "small": "small (experiments, a few GB of data, models that fit one device)",
    "medium": "medium",
    "large": "large (tens of millions of samples, multi-device training)",
}
PRIORITIES: dict[str, str] = {
    "debugging": "debugging speed",
    "training_throughput": "training throughput",
    "inference_latency": "inference latency",
    "maintenance": "long-term maintenance and growth (prototype today, production later)",
}
DEFAULT_SCALE = "medium"

#: candidates the guide knows but the lab does not install (no adapter, no measurements)
OUTSIDE_LAB: dict[str, str] = {"paddlepaddle": "PaddlePaddle"}
#: the frameworks the guide ranks, in the order that breaks a tie nothing else breaks
CANDIDATES: tuple[str, ...] = (*EXPERTISE, *OUTSIDE_LAB)
DISPLAY: dict[str, str] = {**{s.name: s.display for s in specs()}, **OUTSIDE_LAB}
#: candidates this lab cannot run or measure, and why
NOT_IN_LAB: dict[str, str] = {
    "paddlepaddle": "PaddlePaddle is not installed in this lab, so the lab cannot run or measure it: "
    "install `paddlepaddle` in your own environment to benchmark it there",
}
#: spellings accepted for a value (case and surrounding spaces are ignored as well)
ALIASES: dict[str, str] = {
    "pytorch": "torch",
    "tf": "tensorflow",
    "paddle": "paddlepaddle",
    "none": "",
    "any": "",
}

# ---- the voices and the course's sources ----------------------------------------------------

ARTICLE = "article"
COURSE = "course"
BOTH = "both"
VOICES: dict[str, str] = {
    ARTICLE: "what the article recommends",
    COURSE: "what the course recommends today",
}
#: the article, as the rules of its voice cite it
ARTICLE_NAME = "the source article (seed 000: eager vs static graphs, benchmarks, selection guide)"


class Source(NamedTuple):
    """A dated, checkable source of a course rule: open ``url`` and find the fact there."""

    title: str
    url: str
    date: str  # ISO 8601, as the page gives it or as its source's last commit dates it
    dated: str  # where the date comes from


SOURCES: dict[str, Source] = {
    "torch_compile": Source(
        "Introduction to torch.compile (PyTorch tutorials)",
        "https://docs.pytorch.org/tutorials/intermediate/torch_compile_tutorial.html",
        "2026-01-26",
        "'Last Updated' on the page (created 2023-03-15, with PyTorch 2.0)",
    ),
    "torch_fsdp2": Source(
        "torch.distributed.fsdp.fully_shard, FSDP2 (PyTorch documentation)",
        "https://docs.pytorch.org/docs/stable/distributed.fsdp.fully_shard.html",
        "2025-10-13",
        "'Last Updated On' on the page",
    ),
    "torchscript_deprecated": Source(
        "TorchScript Language Reference: 'TorchScript is deprecated, please use torch.export "
        "instead' (PyTorch documentation)",
        "https://docs.pytorch.org/docs/stable/jit_language_reference.html",
        "2025-07-15",
        "'Last Updated On' on the page",
    ),
    "torch_onnx": Source(
        "Introduction to ONNX: torch.onnx export, dynamo=True recommended (PyTorch tutorials)",
        "https://docs.pytorch.org/tutorials/beginner/onnx/intro_onnx.html",
        "2025-07-11",
        "'Last Updated' on the page",
    ),
    "executorch": Source(
        "ExecuTorch README: PyTorch's on-device runtime, from smartphones to microcontrollers "
        "(v1.0.0 tagged 2025-10-17)",
        "https://github.com/pytorch/executorch/blob/52467d5f4919ae3c1bd1ce8910adf02a69a4990f/"
        "README.md",
        "2026-08-10",
        "date of the commit the link points to",
    ),
    "tf_function": Source(
        "Better performance with tf.function: eager by default, debug eagerly then decorate "
        "(TensorFlow guide)",
        "https://www.tensorflow.org/guide/function",
        "2023-11-27",
        "last change of the page's source, tensorflow/docs commit af33301",
    ),
    "tf_distribute": Source(
        "Distributed training with TensorFlow: tf.distribute.Strategy over GPUs, machines or "
        "TPUs (TensorFlow guide)",
        "https://www.tensorflow.org/guide/distributed_training",
        "2023-08-18",
        "last change of the page's source, tensorflow/docs commit dfea136",
    ),
    "tf_savedmodel": Source(
        "Using the SavedModel format: deploy with TFLite, TensorFlow.js or TensorFlow Serving "
        "(TensorFlow guide)",
        "https://www.tensorflow.org/guide/saved_model",
        "2025-01-29",
        "last change of the page's source, tensorflow/docs commit 857b9d4",
    ),
    "tf_serving": Source(
        "Serving Models: TensorFlow Serving for production environments (TFX guide)",
        "https://tensorflow.org/serving",
        "2021-01-28",
        "'Last updated' on the page",
    ),
    "litert": Source(
        "TensorFlow Lite is now LiteRT: one on-device runtime for models from TensorFlow, "
        "PyTorch, JAX and Keras (Google Developers Blog)",
        "https://developers.googleblog.com/en/tensorflow-lite-is-now-litert/",
        "2024-09-04",
        "publication date of the post",
    ),
    "mindspore_design": Source(
        "MindSpore design overview: device-edge-cloud, automatic parallelism, whole-graph "
        "sinking on Ascend, third-party chip plugins, jit (MindSpore documentation)",
        "https://github.com/mindspore-ai/docs/blob/e15d2d48aeb352ad6adda436c67612c8a04f72f2/"
        "docs/mindspore/source_en/design/overview.md",
        "2025-07-03",
        "date of the commit the link points to (published at mindspore.cn/docs/en/master/"
        "design/overview.html)",
    ),
    "mindspore_lite": Source(
        "MindSpore Lite architecture: one device-cloud MindIR, code generation for IoT "
        "(MindSpore Lite documentation)",
        "https://github.com/mindspore-ai/docs/blob/c99f5259c453969820444b559e23fff562e96de8/"
        "docs/lite/docs/source_en/reference/architecture_lite.md",
        "2024-09-05",
        "date of the commit the link points to",
    ),
    "mindspore_federated": Source(
        "MindSpore Federated: federated learning without sharing local data (MindSpore "
        "documentation)",
        "https://github.com/mindspore-ai/docs/blob/d97cfd6f60e20a1c752fd55181f51dfef97243a6/"
        "docs/federated/docs/source_en/index.rst",
        "2023-06-14",
        "date of the commit the link points to",
    ),
    "torch_npu": Source(
        "TorchNPU (torch_npu) README: the PyTorch adapter plugin for Ascend NPUs (Ascend/pytorch)",
        "https://github.com/Ascend/pytorch/blob/042818b84eabcb6ec1745f93dd35d753d762e5b9/README.md",
        "2026-08-20",
        "date of the commit the link points to",
    ),
    "paddle_custom_device": Source(
        "PaddleCustomDevice README: hardware backends for Ascend NPU, Biren GPU, Cambricon MLU, "
        "Enflame GCU and others (PaddlePaddle)",
        "https://github.com/PaddlePaddle/PaddleCustomDevice/blob/"
        "77090b642bfecc527ea0dc8ede72e9f0eec60a10/README_en.md",
        "2024-10-18",
        "date of the commit the link points to",
    ),
}

# ---- the rules --------------------------------------------------------------------------------

#: where the article says it (the article's voice cites its parts)
A_RESEARCH = "article, part 3.1 (research and prototyping)"
A_TRAINING = "article, part 3.2 (industrial large-scale training)"
A_DEPLOY = "article, part 3.3 (multi-target deployment)"
A_SMALL = "article, part 3.4 (small teams)"
A_SPECIAL = "article, part 3.5 (special domains)"
A_INFERENCE = "article, part 2.2 (inference conclusions)"
A_GRAPHS = "article, part 1 (where each execution mode fits)"
A_STEP1 = "article, part 4, step 1 (name the core need)"
A_STEP2 = "article, part 4, step 2 (weigh the team's expertise)"
A_STEP4 = "article, part 4, step 4 (think about long-term growth)"


class Rule(NamedTuple):
    """When input ``field`` has ``value`` (for targets: contains it), ``framework`` gets ``points``
    in ``voice``. ``source``: where in the article (article voice), a key of :data:`SOURCES`
    (course voice; several joined with ``+``), or the article's step (both voices)."""

    field: str
    value: str
    framework: str
    points: int
    reason: str
    source: str
    voice: str


def _article(field: str, value: str, fw: str, points: int, reason: str, where: str) -> Rule:
    return Rule(field, value, fw, points, reason, where, ARTICLE)


def _course(field: str, value: str, fw: str, points: int, reason: str, *keys: str) -> Rule:
    return Rule(field, value, fw, points, reason, "+".join(keys), COURSE)


#: the article's advice, as points (the article gives no numbers: the points rank its
#: recommendation first and its alternative second, as its text does)
ARTICLE_RULES: tuple[Rule, ...] = (
    # Step 1: the scenario.
    _article(
        "scenario",
        "research",
        "torch",
        4,
        "eager by default: print and a debugger see real values while the model changes daily, "
        "and most research code is PyTorch",
        A_RESEARCH,
    ),
    _article(
        "scenario",
        "research",
        "tensorflow",
        2,
        "the alternative: TF 2 runs eagerly too and keeps the static-graph route to deployment",
        A_RESEARCH,
    ),
    _article(
        "scenario",
        "large_scale_training",
        "tensorflow",
        4,
        "tf.function + XLA compile the training step and MultiWorkerMirroredStrategy spreads it "
        "over a cluster",
        A_TRAINING,
    ),
    _article(
        "scenario",
        "large_scale_training",
        "mindspore",
        3,
        "graph mode optimises the whole step and AutoParallel splits it over a cluster",
        A_TRAINING,
    ),
    _article(
        "scenario",
        "large_scale_training",
        "torch",
        2,
        "the alternative for a PyTorch team: TorchScript for speed, FSDP for many GPUs",
        A_TRAINING,
    ),
    _article(
        "scenario",
        "deployment",
        "tensorflow",
        4,
        "TF Serving on servers and TF Lite on phones and boards, with no second conversion",
        A_DEPLOY,
    ),
    _article(
        "scenario",
        "deployment",
        "mindspore",
        3,
        "MindSpore Lite is tuned hardest for constrained devices",
        A_DEPLOY,
    ),
    _article(
        "scenario",
        "deployment",
        "torch",
        2,
        "the alternative for an existing PyTorch model: ONNX and ONNX Runtime, at some "
        "performance cost",
        A_DEPLOY,
    ),
    _article(
        "scenario",
        "small_team",
        "torch",
        4,
        "low learning cost, plentiful tutorials, easy debugging and a simple path to a small "
        "service (Flask or FastAPI, ONNX)",
        A_SMALL,
    ),
    _article(
        "scenario",
        "small_team",
        "tensorflow",
        2,
        "the alternative when industrial deployment is coming: no framework migration later",
        A_SMALL,
    ),
    _article(
        "scenario",
        "special_hardware",
        "mindspore",
        4,
        "the best support for domestic AI chips such as Huawei Ascend, and built-in federated "
        "learning for private data",
        A_SPECIAL,
    ),
    _article(
        "scenario",
        "special_hardware",
        "paddlepaddle",
        3,
        "deep adaptation to domestic GPUs (Biren, MetaX) and toolkits for Chinese NLP and "
        "industrial inspection",
        A_SPECIAL,
    ),
    # The hardware.
    _article(
        "hardware",
        "ascend",
        "mindspore",
        4,
        "Ascend is the domestic chip the article names for MindSpore",
        A_SPECIAL,
    ),
    _article(
        "hardware",
        "other_accelerator",
        "paddlepaddle",
        3,
        "the article names PaddlePaddle for domestic GPUs such as Biren and MetaX",
        A_SPECIAL,
    ),
    _article(
        "hardware",
        "other_accelerator",
        "mindspore",
        1,
        "the article credits MindSpore with the best support for domestic AI chips",
        A_SPECIAL,
    ),
    # The deployment targets.
    _article("targets", "server", "tensorflow", 1, "TF Serving for high concurrency", A_DEPLOY),
    _article("targets", "mobile", "tensorflow", 1, "TF Lite on phones", A_DEPLOY),
    _article("targets", "mobile", "mindspore", 1, "MindSpore Lite on phones", A_DEPLOY),
    _article(
        "targets",
        "embedded",
        "mindspore",
        2,
        "the article claims MindSpore Lite infers 15-25% faster than TF Lite on constrained "
        "devices",
        A_DEPLOY,
    ),
    _article("targets", "embedded", "tensorflow", 1, "TF Lite on embedded devices", A_DEPLOY),
    # Data and model scale.
    _article(
        "scale",
        "small",
        "torch",
        1,
        "small experiments gain little from graph optimisation: eager mode fits them",
        A_GRAPHS,
    ),
    _article(
        "scale",
        "large",
        "tensorflow",
        1,
        "graph optimisation and distributed strategies pay off on large data and models",
        A_TRAINING,
    ),
    _article(
        "scale",
        "large",
        "mindspore",
        1,
        "graph optimisation and automatic parallelism pay off on large data and models",
        A_TRAINING,
    ),
    # What matters most.
    _article(
        "priority",
        "debugging",
        "torch",
        2,
        "research puts debugging first, and eager PyTorch is the easiest to debug",
        A_STEP1,
    ),
    _article(
        "priority",
        "training_throughput",
        "tensorflow",
        1,
        "static graphs train faster (XLA)",
        A_TRAINING,
    ),
    _article(
        "priority",
        "training_throughput",
        "mindspore",
        1,
        "static graphs train faster (graph mode)",
        A_TRAINING,
    ),
    _article(
        "priority",
        "inference_latency",
        "tensorflow",
        1,
        "SavedModel + TF Serving infer more efficiently than PyTorch through ONNX",
        A_INFERENCE,
    ),
    _article(
        "priority",
        "inference_latency",
        "mindspore",
        1,
        "MindSpore Lite infers more efficiently than PyTorch through ONNX",
        A_INFERENCE,
    ),
    _article(
        "priority",
        "maintenance",
        "tensorflow",
        3,
        "a project that may grow from prototype to industrial deployment should pick the most "
        "complete deployment ecosystem and avoid a migration later",
        A_STEP4,
    ),
)

#: the decision flow's judgement that the course adopts: it states no fact that could date
SHARED_RULES: tuple[Rule, ...] = tuple(
    Rule(
        "expertise",
        fw,
        fw,
        3,
        f"the team already knows {display}: no learning cost",
        A_STEP2,
        BOTH,
    )
    for fw, display in EXPERTISE.items()
)

#: what the course recommends today, each rule with its dated sources (keys of SOURCES)
COURSE_RULES: tuple[Rule, ...] = (
    # Step 1: the scenario.
    _course(
        "scenario",
        "research",
        "torch",
        4,
        "eager by default (print and pdb see real values); torch.compile speeds up the same "
        "code later with minimal changes",
        "torch_compile",
    ),
    _course(
        "scenario",
        "research",
        "tensorflow",
        2,
        "eager by default in TF 2; debug eagerly, then decorate with tf.function",
        "tf_function",
    ),
    _course(
        "scenario",
        "large_scale_training",
        "torch",
        3,
        "torch.compile compiles the training step and FSDP2 (fully_shard) shards the model over "
        "many GPUs",
        "torch_compile",
        "torch_fsdp2",
    ),
    _course(
        "scenario",
        "large_scale_training",
        "tensorflow",
        3,
        "tf.function builds the step's graph and tf.distribute.Strategy spreads training over "
        "GPUs, machines or TPUs",
        "tf_function",
        "tf_distribute",
    ),
    _course(
        "scenario",
        "large_scale_training",
        "mindspore",
        3,
        "static graph mode (or jit) compiles the step and automatic parallelism searches the "
        "sharding",
        "mindspore_design",
    ),
    _course(
        "scenario",
        "deployment",
        "tensorflow",
        3,
        "one SavedModel deploys to TF Serving, to LiteRT (formerly TF Lite) and to TensorFlow.js",
        "tf_savedmodel",
        "litert",
    ),
    _course(
        "scenario",
        "deployment",
        "torch",
        3,
        "torch.onnx exports for ONNX Runtime and other ONNX runtimes; torch.export feeds "
        "ExecuTorch, PyTorch's own runtime for phones and microcontrollers",
        "torch_onnx",
        "executorch",
    ),
    _course(
        "scenario",
        "deployment",
        "mindspore",
        3,
        "one MindIR model runs on devices and in the cloud with MindSpore Lite",
        "mindspore_lite",
    ),
    _course(
        "scenario",
        "small_team",
        "torch",
        4,
        "eager by default, and compiling (torch.compile) or exporting (torch.onnx) later needs "
        "no rewrite",
        "torch_compile",
        "torch_onnx",
    ),
    _course(
        "scenario",
        "small_team",
        "tensorflow",
        2,
        "eager by default; one SavedModel covers serving, phones and browsers later",
        "tf_function",
        "tf_savedmodel",
    ),
    _course(
        "scenario",
        "special_hardware",
        "mindspore",
        4,
        "built for Ascend (the whole graph sinks to the NPU), with MindSpore Federated for "
        "private data",
        "mindspore_design",
        "mindspore_federated",
    ),
    _course(
        "scenario",
        "special_hardware",
        "paddlepaddle",
        3,
        "custom-device plugins for domestic accelerators (Ascend NPU, Biren GPU, Cambricon MLU, "
        "Enflame GCU, ...)",
        "paddle_custom_device",
    ),
    # The hardware.
    _course(
        "hardware",
        "ascend",
        "mindspore",
        4,
        "Ascend is MindSpore's first target: the whole graph sinks to the NPU",
        "mindspore_design",
    ),
    _course(
        "hardware",
        "ascend",
        "torch",
        2,
        "torch_npu, Ascend's own adapter plugin, runs PyTorch on Ascend NPUs",
        "torch_npu",
    ),
    _course(
        "hardware",
        "ascend",
        "paddlepaddle",
        1,
        "runs on Ascend through its custom-device plugin",
        "paddle_custom_device",
    ),
    _course(
        "hardware",
        "other_accelerator",
        "paddlepaddle",
        3,
        "custom-device plugins cover domestic GPUs such as Biren's",
        "paddle_custom_device",
    ),
    _course(
        "hardware",
        "other_accelerator",
        "mindspore",
        1,
        "a plugin interface for third-party chips",
        "mindspore_design",
    ),
    # The deployment targets.
    _course(
        "targets",
        "server",
        "tensorflow",
        1,
        "TensorFlow Serving serves SavedModels in production",
        "tf_serving",
    ),
    _course(
        "targets",
        "server",
        "torch",
        1,
        "exports to ONNX for ONNX Runtime",
        "torch_onnx",
    ),
    _course("targets", "mobile", "tensorflow", 1, "LiteRT (formerly TF Lite) on phones", "litert"),
    _course("targets", "mobile", "torch", 1, "ExecuTorch on phones", "executorch"),
    _course("targets", "mobile", "mindspore", 1, "MindSpore Lite on devices", "mindspore_lite"),
    _course("targets", "embedded", "tensorflow", 1, "LiteRT, the on-device runtime", "litert"),
    _course("targets", "embedded", "torch", 1, "ExecuTorch down to microcontrollers", "executorch"),
    _course(
        "targets",
        "embedded",
        "mindspore",
        1,
        "MindSpore Lite, with code generation for IoT devices",
        "mindspore_lite",
    ),
    _course(
        "targets",
        "browser",
        "tensorflow",
        2,
        "TensorFlow.js is one of the SavedModel's deployment targets",
        "tf_savedmodel",
    ),
    _course(
        "targets",
        "browser",
        "mindspore",
        -2,
        "its documented deployment covers devices, edge and cloud, not browsers: export to ONNX "
        "and use a browser runtime instead",
        "mindspore_design",
    ),
    # What matters most.
    _course(
        "priority",
        "debugging",
        "torch",
        2,
        "eager by default; where torch.compile cannot trace it breaks the graph instead of failing",
        "torch_compile",
    ),
    _course(
        "priority",
        "debugging",
        "tensorflow",
        1,
        "eager by default, but inside tf.function Python runs only while tracing",
        "tf_function",
    ),
    _course(
        "priority",
        "debugging",
        "mindspore",
        1,
        "dynamic graphs to debug, jit for the parts to speed up",
        "mindspore_design",
    ),
)

#: every rule of both voices (the engine filters by voice)
RULES: tuple[Rule, ...] = ARTICLE_RULES + SHARED_RULES + COURSE_RULES


class Disagreement(NamedTuple):
    """Where the course departs from the article, and why; shown when any ``when`` holds."""

    topic: str
    when: tuple[tuple[str, str], ...]
    article: str
    course: str
    why: str
    sources: tuple[str, ...]  # keys of SOURCES


DISAGREEMENTS: tuple[Disagreement, ...] = (
    Disagreement(
        "graph compilation and training speed",
        (
            ("scenario", "large_scale_training"),
            ("priority", "training_throughput"),
            ("priority", "inference_latency"),
            ("scale", "large"),
            ("scale", "small"),
        ),
        "TensorFlow and MindSpore first, because static graphs are faster; PyTorch's static "
        "route is TorchScript",
        "the three frameworks level: each compiles its graphs today, so your measurement (step 3) "
        "decides",
        "PyTorch compiles with torch.compile since 2.0, and TorchScript, the route the article "
        "names, is deprecated in favour of torch.export; the article's own A100 training table "
        "puts all four frameworks within {seed_spread} of each other",
        ("torch_compile", "torchscript_deprecated"),
    ),
    Disagreement(
        "deployment toolchains",
        (("scenario", "deployment"), ("targets", "mobile"), ("targets", "embedded")),
        "TensorFlow first, MindSpore second (MindSpore Lite claimed 15-25% faster than TF Lite "
        "on small devices), PyTorch last (through ONNX, at a 5-10% cost)",
        "the three level as a scenario: each has its own route from one exported file to servers, "
        "phones and small devices; the targets you need, then your measurement, decide",
        "PyTorch now deploys on-device with ExecuTorch (1.0 in October 2025) and LiteRT accepts "
        "PyTorch models too; the course has no source for the 15-25% figure beyond the article, "
        "and notebook 07 measures the ONNX cost on your machine instead of assuming it",
        ("executorch", "litert"),
    ),
    Disagreement(
        "long-term maintenance",
        (("priority", "maintenance"),),
        "TensorFlow (+3): its deployment ecosystem avoids a framework migration later",
        "no points: both ecosystems made their users migrate recently",
        "TF Lite became LiteRT (2024), a runtime of its own, and TorchScript is deprecated in "
        "favour of torch.export: neither choice spared its users a migration",
        ("litert", "torchscript_deprecated"),
    ),
    Disagreement(
        "PyTorch on Ascend",
        (("hardware", "ascend"),),
        "MindSpore only",
        "MindSpore first, PyTorch second through torch_npu",
        "Ascend maintains torch_npu, an adapter plugin that runs PyTorch on Ascend NPUs",
        ("torch_npu",),
    ),
)

# ---- alternatives, conflicts, the decision flow, toolchains --------------------------------


class Alternative(NamedTuple):
    framework: str
    when: str


#: per scenario, the alternatives in order: the first that is not the top recommendation is shown
ALTERNATIVES: dict[str, tuple[Alternative, ...]] = {
    "research": (
        Alternative(
            "tensorflow",
            "the team already knows TensorFlow: TF 2 runs eagerly too, and "
            "the model is one export away from TF Serving or LiteRT",
        ),
        Alternative(
            "torch",
            "the work stays exploratory: eager PyTorch is the quickest to change",
        ),
    ),
    "large_scale_training": (
        Alternative(
            "torch",
            "the team knows PyTorch: torch.compile compiles the step and FSDP2 shards the model "
            "over many GPUs",
        ),
        Alternative(
            "tensorflow",
            "you train on NVIDIA GPUs, TPUs or CPUs: tf.function + XLA and tf.distribute",
        ),
        Alternative("mindspore", "you train on Ascend NPUs or want automatic parallelism"),
    ),
    "deployment": (
        Alternative(
            "torch",
            "the model already exists in PyTorch: export it to ONNX for ONNX Runtime, or with "
            "torch.export to ExecuTorch on devices",
        ),
        Alternative("tensorflow", "you need servers, phones and browsers from one SavedModel"),
        Alternative("mindspore", "embedded devices or Ascend hardware dominate: MindSpore Lite"),
    ),
    "small_team": (
        Alternative(
            "tensorflow",
            "industrial deployment is coming and the team prefers one SavedModel for serving, "
            "phones and browsers",
        ),
        Alternative("torch", "the team wants the gentlest learning curve and fastest iteration"),
    ),
    "special_hardware": (
        Alternative(
            "paddlepaddle",
            "your accelerator is a domestic GPU that PaddlePaddle supports, "
            "or you need its Chinese NLP or industrial-inspection toolkits",
        ),
        Alternative("mindspore", "the hardware is an Ascend NPU, or you need federated learning"),
    ),
}


class Conflict(NamedTuple):
    """Inputs that pull in different directions, and what the guide makes of them."""

    when: tuple[tuple[str, str], ...]
    message: str


CONFLICTS: tuple[Conflict, ...] = (
    Conflict(
        (("expertise", "mindspore"), ("targets", "browser")),
        "MindSpore has no browser runtime: export the model to ONNX "
        "(`mindspore.export(..., file_format='ONNX')`) and run it with ONNX Runtime Web, "
        "or use TensorFlow.js; the browser rule lowers MindSpore's score.",
    ),
    Conflict(
        (("scenario", "special_hardware"), ("hardware", "cpu")),
        "Special hardware was chosen with CPU-only hardware: the guide reads this as a privacy "
        "need (federated learning, such as MindSpore Federated).",
    ),
    Conflict(
        (("scenario", "special_hardware"), ("hardware", "gpu")),
        "Special hardware was chosen with an NVIDIA GPU: the guide reads this as a privacy "
        "need (federated learning, such as MindSpore Federated).",
    ),
    Conflict(
        (("scenario", "large_scale_training"), ("priority", "debugging")),
        "Debugging speed comes first but training is large: develop in eager mode (every "
        "framework has one) and switch on graph mode for the long runs.",
    ),
    Conflict(
        (("scenario", "research"), ("scale", "large")),
        "Research at large scale: prototype eagerly, then compile (torch.compile, tf.function, "
        "MindSpore graph mode) for the long runs.",
    ),
    Conflict(
        (("scenario", "large_scale_training"), ("scale", "small")),
        "Large-scale training with small data and models: the graph-mode gains the scenario "
        "counts on shrink at this size; measure before you commit (step 3).",
    ),
    Conflict(
        (("hardware", "ascend"), ("expertise", "tensorflow")),
        "The team knows TensorFlow but the hardware is Ascend: MindSpore (or PyTorch with "
        "torch_npu) is the supported route there, so budget time to learn it.",
    ),
)


class Step(NamedTuple):
    title: str
    question: str
    inputs: tuple[str, ...]  # the recommend() keywords this step sets


#: the source article's four-step decision flow, as the guide uses it
DECISION_FLOW: tuple[Step, ...] = (
    Step(
        "Name the core need",
        "Which scenario describes the project, and what matters most?",
        ("scenario", "priority"),
    ),
    Step(
        "Weigh the team's expertise", "Which framework does the team already know?", ("expertise",)
    ),
    Step(
        "Measure two or three candidates",
        "Run a small live benchmark of the candidates on your "
        "own machine and drop any that clearly miss the need.",
        ("results",),
    ),
    Step(
        "Think about long-term growth",
        "Where must the model run later, on what hardware, and at what scale?",
        ("targets", "hardware", "scale"),
    ),
)

#: step 3 as a rule: a valid measurement on the task of the need (EVIDENCE_TASK) in which the
#: fastest candidate's images/s exceed another's by more than this fraction ...
EVIDENCE_MARGIN = 0.20
#: ... costs the slower candidate this many points in the course's voice (it clearly misses
#: the need); an invalid, unjudged (older schema) or missing measurement changes nothing
EVIDENCE_POINTS = -3
#: which benchmark task answers a priority, or else a scenario
EVIDENCE_TASK: dict[str, str] = {
    "training_throughput": "train",
    "inference_latency": "latency",
    "large_scale_training": "train",
    "deployment": "throughput",
}

#: the toolchain per framework: how to develop and train, then one route per deployment target
DEVELOP: dict[str, str] = {
    "torch": "PyTorch eager to develop; torch.compile to train fast",
    "tensorflow": "TensorFlow 2 / Keras eagerly to develop; tf.function + XLA (jit_compile=True) "
    "to train fast",
    "mindspore": "MindSpore PyNative to develop; GRAPH_MODE / jit to train fast",
    "paddlepaddle": "PaddlePaddle dynamic graph to develop; paddle.jit.to_static to train fast",
}
DEPLOY: dict[str, dict[str, str]] = {
    "torch": {
        "server": "PyTorch -> ONNX (torch.onnx.export) -> ONNX Runtime",
        "mobile": "PyTorch -> torch.export -> ExecuTorch, or ONNX -> ONNX Runtime Mobile",
        "embedded": "PyTorch -> torch.export -> ExecuTorch, or ONNX -> ONNX Runtime",
        "browser": "PyTorch -> ONNX -> ONNX Runtime Web",
    },
    "tensorflow": {
        "server": "TensorFlow -> SavedModel -> TF Serving",
        "mobile": "TensorFlow -> SavedModel -> LiteRT (formerly TF Lite)",
        "embedded": "TensorFlow -> LiteRT (LiteRT for Microcontrollers)",
        "browser": "TensorFlow -> SavedModel -> TensorFlow.js",
    },
    "mindspore": {
        "server": "MindSpore -> MindIR -> MindSpore Serving / MindSpore Lite",
        "mobile": "MindSpore -> MindIR -> MindSpore Lite",
        "embedded": "MindSpore -> MindIR -> MindSpore Lite",
        "browser": "MindSpore -> ONNX -> ONNX Runtime Web (no native browser runtime)",
    },
    "paddlepaddle": {
        "server": "PaddlePaddle -> Paddle Inference / Paddle Serving",
        "mobile": "PaddlePaddle -> Paddle Lite",
        "embedded": "PaddlePaddle -> Paddle Lite",
        "browser": "PaddlePaddle -> Paddle.js",
    },
}

#: runtimes whose figures count for a candidate: its own, and the runtimes of its exports
#: (ONNX Runtime is PyTorch's deployment route)
RUNTIMES: dict[str, tuple[str, ...]] = {
    fw: (fw, *(s.name for s in specs() if s.exported_from == fw)) for fw in EXPERTISE
} | {fw: () for fw in OUTSIDE_LAB}
