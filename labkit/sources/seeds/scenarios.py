"""Article 000's advice: five project scenarios (part 3) and a four-step decision flow (part 4).

- :data:`SCENARIOS`: what marks each kind of project and the framework(s) the article recommends
  for it, with its reasons and alternative; the selection guide (:mod:`labkit.guide`) offers the
  same scenarios, keyed and titled as here;
- :data:`DECISION_FLOW`: the article's four steps, titled as the guide's steps are;
- :data:`SUMMARY`: the article's closing advice, one line per framework.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...util import tables
from ...util.lookup import by_key
from .articles import display, figure

__all__ = [
    "DECISION_FLOW",
    "SCENARIOS",
    "SUMMARY",
    "FlowStep",
    "Scenario",
    "decision_flow_markdown",
    "scenario",
    "scenarios_markdown",
]


@dataclass(frozen=True)
class Scenario:
    key: str  # the guide reads its scenarios from here (labkit.guide.SCENARIOS)
    title: str  # as the guide offers it too
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
                f"a ResNet-50 run gets {figure('training_time_cut').percent} shorter"
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
                f"{figure('lite_vs_tflite').percent} faster than TF Lite there"
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
        "special hardware (Ascend, domestic accelerators) or privacy needs",
        "Chinese AI chips such as Huawei Ascend, or privacy constraints that call for federated "
        "learning (for example on medical data)",
        ("mindspore", "paddle"),
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
    return by_key(SCENARIOS, key, "scenario", "scenarios are")


@dataclass(frozen=True)
class FlowStep:
    title: str  # as the guide's steps are titled too
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
        "Measure two or three candidates",
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
    head = ["scenario", "what marks it", "the article recommends", "its reasons", "alternative"]
    rows = []
    for s in SCENARIOS:
        alt = f"{display(s.alternative)}, if {s.alternative_when}" if s.alternative else "none"
        recommended = " or ".join(map(display, s.recommended))
        rows.append([s.title, s.traits, recommended, "; ".join(s.reasons), alt])
    return tables.markdown(head, rows)


def decision_flow_markdown() -> str:
    return "\n".join(f"{i}. **{s.title}**: {s.what}." for i, s in enumerate(DECISION_FLOW, 1))


#: the article's closing advice, one line per framework
SUMMARY: dict[str, str] = {
    "torch": "flexible debugging and research efficiency",
    "tensorflow": "large-scale training efficiency and deployment to many targets",
    "mindspore": "domestic hardware or privacy-preserving computation",
}
