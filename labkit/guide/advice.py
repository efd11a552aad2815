"""What the guide says besides the points: where the two voices disagree and why, the
alternative to prefer per scenario, answers that conflict, and the toolchain of each candidate.

Plain data, like the rules (:mod:`labkit.guide.rules`); a disagreement cites the course's dated
sources (:data:`labkit.guide.citations.SOURCES`) by key.
"""

from __future__ import annotations

from typing import NamedTuple

from ..frameworks import specs
from .questions import EXPERTISE, OUTSIDE_LAB

__all__ = [
    "ALTERNATIVES",
    "CONFLICTS",
    "DEPLOY",
    "DEVELOP",
    "DISAGREEMENTS",
    "OUT_OF_REACH_WHEN",
    "RUNTIMES",
    "Alternative",
    "Conflict",
    "Disagreement",
]


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
        "TPUs",
        (("hardware", "tpu"),),
        "TensorFlow and MindSpore: their distributed strategies use GPU/TPU clusters",
        "TensorFlow first (TPUStrategy), PyTorch second (PyTorch/XLA), MindSpore not at all",
        "MindSpore has no TPU backend (CPUs, GPUs and Ascend NPUs); TensorFlow trains on TPUs "
        "with TPUStrategy and PyTorch through PyTorch/XLA, whose README announces TorchTPU as its "
        "successor",
        ("tf_tpu", "torch_xla", "mindspore_design"),
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

# ---- alternatives, conflicts, toolchains -------------------------------------------------------


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
            "paddle",
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


#: the toolchain per framework: how to develop and train, then one route per deployment target
DEVELOP: dict[str, str] = {
    "torch": "PyTorch eager to develop; torch.compile to train fast",
    "tensorflow": "TensorFlow 2 / Keras eagerly to develop; tf.function + XLA (jit_compile=True) "
    "to train fast",
    "mindspore": "MindSpore PyNative to develop; GRAPH_MODE / jit to train fast",
    "paddle": "PaddlePaddle dynamic graph to develop; paddle.jit.to_static to train fast",
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
    "paddle": {
        "server": "PaddlePaddle -> Paddle Inference / Paddle Serving",
        "mobile": "PaddlePaddle -> Paddle Lite",
        "embedded": "PaddlePaddle -> Paddle Lite",
        "browser": "PaddlePaddle -> Paddle.js",
    },
}

#: the answers that bring up a system the lab cannot run (keys of
#: :data:`labkit.sources.seeds.OUT_OF_REACH`), shown with what would run it and its claimed figure
OUT_OF_REACH_WHEN: dict[str, tuple[tuple[str, str], ...]] = {
    "tensorrt": (("hardware", "gpu"),),
    "mindspore_lite": (("targets", "mobile"), ("targets", "embedded"), ("scenario", "deployment")),
    "tf_serving": (("targets", "server"), ("scenario", "deployment")),
    "ascend": (("hardware", "ascend"), ("scenario", "special_hardware")),
    "jetson": (("targets", "embedded"),),
}

#: runtimes whose figures count for a candidate: its own, and the runtimes of its exports
#: (ONNX Runtime is PyTorch's deployment route)
RUNTIMES: dict[str, tuple[str, ...]] = {
    fw: (fw, *(s.name for s in specs() if s.exported_from == fw)) for fw in EXPERTISE
} | {fw: () for fw in OUTSIDE_LAB}
