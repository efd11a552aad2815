"""What the selection guide asks: every valid answer with the words a learner sees, and the
decision flow's steps that ask them.

The scenarios, the candidates outside the lab and the steps' titles are the source article's
(:mod:`labkit.sources.seeds`), defined there once; the other answers, the spellings accepted for
them and the question each step asks are the guide's own.
"""

from __future__ import annotations

from typing import NamedTuple

from ..frameworks import specs
from ..sources import seeds

__all__ = [
    "ALIASES",
    "CANDIDATES",
    "DECISION_FLOW",
    "DEFAULT_SCALE",
    "DISPLAY",
    "EXPERTISE",
    "HARDWARE",
    "NOT_IN_LAB",
    "NOT_MEASURED",
    "OUTSIDE_LAB",
    "PRIORITIES",
    "QUESTIONS",
    "SCALES",
    "SCENARIOS",
    "TARGETS",
    "Step",
]

#: the article's five project scenarios (keys and titles: :data:`labkit.sources.seeds.SCENARIOS`)
SCENARIOS: dict[str, str] = {s.key: s.title for s in seeds.SCENARIOS}
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
    "tpu": "Google TPU",
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

#: candidates the guide knows but the lab does not install (no adapter, no measurements): the
#: frameworks the articles recommend beyond the registry (:data:`labkit.sources.seeds.OUTSIDE_LAB`)
OUTSIDE_LAB: dict[str, str] = seeds.OUTSIDE_LAB
#: the frameworks the guide ranks, in the order that breaks a tie nothing else breaks
CANDIDATES: tuple[str, ...] = (*EXPERTISE, *OUTSIDE_LAB)
DISPLAY: dict[str, str] = {**{s.name: s.display for s in specs()}, **OUTSIDE_LAB}
#: candidates this lab cannot run or measure, and why
NOT_IN_LAB: dict[str, str] = {
    fw: f"{name} is not installed in this lab, so the lab cannot run or measure it"
    for fw, name in OUTSIDE_LAB.items()
}
#: hardware the course could not measure on, and what that means for the advice
NOT_MEASURED: dict[str, str] = {
    hw: f"The course measured nothing on {what}: its benchmarks ran on CPUs (a learner's NVIDIA "
    "GPU where there is one), so step 3 here cannot compare the candidates on that hardware and "
    f"the {what} rules rest on the frameworks' documentation only; measure a training step on "
    f"{what} itself before you commit"
    for hw, what in (
        ("tpu", "a TPU"),
        ("ascend", "an Ascend NPU"),
        ("other_accelerator", "a domestic accelerator"),
    )
}
#: spellings accepted for a value (case and surrounding spaces are ignored as well)
ALIASES: dict[str, str] = {
    "pytorch": "torch",
    "tf": "tensorflow",
    "paddlepaddle": "paddle",
    "none": "",
    "any": "",
}


class Step(NamedTuple):
    title: str
    question: str
    inputs: tuple[str, ...]  # the recommend() keywords this step sets


#: what the guide asks at each step of the article's decision flow, and the answers it sets
QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Which scenario describes the project, and what matters most?", ("scenario", "priority")),
    ("Which framework does the team already know?", ("expertise",)),
    (
        (
            "Run a small live benchmark of the candidates on your "
            "own machine and drop any that clearly miss the need."
        ),
        ("results",),
    ),
    (
        "Where must the model run later, on what hardware, and at what scale?",
        ("targets", "hardware", "scale"),
    ),
)
#: the source article's four-step decision flow (:data:`labkit.sources.seeds.DECISION_FLOW`: its
#: titles) as the guide uses it, one question per step
DECISION_FLOW: tuple[Step, ...] = tuple(
    Step(step.title, question, inputs)
    for step, (question, inputs) in zip(seeds.DECISION_FLOW, QUESTIONS, strict=True)
)
