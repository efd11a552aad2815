"""The selection guide's rules: plain data an instructor can read, print and change.

Two voices score the same candidates from the same answers; each :class:`Rule` gives one
framework points in one voice when one answer holds: **the article** (:data:`ARTICLE_RULES`,
each restating a part of the source article, seed 000) and **the course today**
(:data:`COURSE_RULES`, each sourced to a dated, checkable page of :data:`SOURCES` in
:mod:`labkit.guide.citations`). Rules in both voices (:data:`SHARED_RULES`) are the decision
flow's judgement the course adopts (a team's expertise saves learning time); they state no fact
to date. Step 3's parameters (:data:`EVIDENCE_MARGIN`, :data:`EVIDENCE_POINTS`,
:data:`EVIDENCE_TASK`) turn a valid measurement into points. The engine reads :data:`RULES` and
these parameters from this module at call time (a changed row changes the advice) and names no
framework itself; the other tables: :mod:`labkit.guide.questions`, :mod:`labkit.guide.advice`.
"""

from __future__ import annotations

from typing import NamedTuple

from .citations import (
    A_DEPLOY,
    A_GRAPHS,
    A_INFERENCE,
    A_RESEARCH,
    A_SMALL,
    A_SPECIAL,
    A_STEP1,
    A_STEP2,
    A_STEP4,
    A_TRAINING,
)
from .questions import EXPERTISE

__all__ = [
    "ARTICLE",
    "ARTICLE_RULES",
    "BOTH",
    "COURSE",
    "COURSE_RULES",
    "EVIDENCE_MARGIN",
    "EVIDENCE_POINTS",
    "EVIDENCE_TASK",
    "RULES",
    "SHARED_RULES",
    "VOICES",
    "Rule",
]

ARTICLE = "article"
COURSE = "course"
BOTH = "both"
VOICES: dict[str, str] = {
    ARTICLE: "what the article recommends",
    COURSE: "what the course recommends today",
}


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
        "paddle",
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
        "tpu",
        "tensorflow",
        1,
        "the article's large-scale scenario runs on GPU/TPU clusters with TensorFlow's "
        "MultiWorkerMirroredStrategy",
        A_TRAINING,
    ),
    _article(
        "hardware",
        "tpu",
        "mindspore",
        1,
        "the article names MindSpore's AutoParallel beside it for the same GPU/TPU clusters",
        A_TRAINING,
    ),
    _article(
        "hardware",
        "other_accelerator",
        "paddle",
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
        "paddle",
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
        "paddle",
        1,
        "runs on Ascend through its custom-device plugin",
        "paddle_custom_device",
    ),
    _course(
        "hardware",
        "tpu",
        "tensorflow",
        3,
        "tf.distribute.TPUStrategy trains on Cloud TPUs and TPU Pods, in Keras fit or a custom loop",
        "tf_tpu",
    ),
    _course(
        "hardware",
        "tpu",
        "torch",
        2,
        "PyTorch/XLA runs PyTorch on Cloud TPUs through XLA (TorchTPU is announced to replace it)",
        "torch_xla",
    ),
    _course(
        "hardware",
        "tpu",
        "mindspore",
        -3,
        "no TPU backend: MindSpore runs on CPUs, GPUs and NPUs (Ascend)",
        "mindspore_design",
    ),
    _course(
        "hardware",
        "other_accelerator",
        "paddle",
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
