"""The course's two source articles as data: what they argue, their tables, their advice.

Framework-free. The articles (``shared/seeds/*.txt``, in Chinese) are the course's starting point
and the source of every *claim* the lab checks. This package holds their content restated in the
course's own words (never translated sentence by sentence) and their figures exactly as they give
them, each figure typed once: :mod:`labkit.sources.claims` builds its claims from these tables,
notebook 00 renders them, and notebooks 01-08 put them beside what a run measured. Everything is
read as ``seeds.X``:

- :data:`ARTICLES`: the two articles and what each argues; :data:`FIGURES`: the percentages
  article 000's prose states (e.g. static graphs 20-50% faster) (:mod:`.articles`);
- :data:`COMPARISON`: article 000's eager/static comparison table, one row per dimension;
  :data:`DISTRIBUTED` and :data:`MOBILE`: article 003's comparison of distributed training and
  mobile deployment (:mod:`.comparisons`);
- :data:`TRAINING` and :data:`INFERENCE`: article 000's two benchmark tables (ResNet-50), with
  :data:`TRAINING_SETTING` / :data:`INFERENCE_SETTING` saying where they were measured
  (:mod:`.throughput`);
- :data:`OUT_OF_REACH`: the systems the articles name that the lab cannot run (TensorRT,
  MindSpore Lite, TF Serving, Ascend, Jetson), each with what would run it and their figure
  (:mod:`.outside`);
- :data:`SCENARIOS`: its five project scenarios with the framework it recommends for each, the
  guide's scenarios too; :data:`DECISION_FLOW`: its four-step decision flow (:mod:`.scenarios`).

Framework names are the registry's (``torch``, ``tensorflow``, ``mindspore``, ``paddle``,
``onnxruntime``, ...), plus :data:`OUTSIDE_LAB`, any the articles recommend that the lab does
not install (none today). Not for: measurements (the claims check them against records) or the guide's rules.
"""

from .articles import (
    ARTICLES,
    FIGURES,
    OUTSIDE_LAB,
    Article,
    Figure,
    article,
    display,
    figure,
)
from .comparisons import (
    COMPARISON,
    DISTRIBUTED,
    MOBILE,
    SIDES,
    Capability,
    Contrast,
    capability_markdown,
    comparison_markdown,
)
from .outside import OUT_OF_REACH, OutOfReach, out_of_reach, out_of_reach_markdown
from .scenarios import (
    DECISION_FLOW,
    SCENARIOS,
    SUMMARY,
    FlowStep,
    Scenario,
    decision_flow_markdown,
    scenario,
    scenarios_markdown,
)
from .throughput import (
    EPOCH_IMAGES,
    INFERENCE,
    INFERENCE_DEVICES,
    INFERENCE_SETTING,
    TRAINING,
    TRAINING_SETTING,
    InferenceRow,
    TrainingRow,
    inference,
    inference_markdown,
    inference_ratio,
    scaling_efficiency,
    training,
    training_markdown,
    training_ratio,
)

__all__ = [
    "ARTICLES",
    "COMPARISON",
    "DECISION_FLOW",
    "DISTRIBUTED",
    "EPOCH_IMAGES",
    "FIGURES",
    "INFERENCE",
    "INFERENCE_DEVICES",
    "INFERENCE_SETTING",
    "MOBILE",
    "OUTSIDE_LAB",
    "OUT_OF_REACH",
    "SCENARIOS",
    "SIDES",
    "SUMMARY",
    "TRAINING",
    "TRAINING_SETTING",
    "Article",
    "Capability",
    "Contrast",
    "Figure",
    "FlowStep",
    "InferenceRow",
    "OutOfReach",
    "Scenario",
    "TrainingRow",
    "article",
    "capability_markdown",
    "comparison_markdown",
    "decision_flow_markdown",
    "display",
    "figure",
    "inference",
    "inference_markdown",
    "inference_ratio",
    "out_of_reach",
    "out_of_reach_markdown",
    "scaling_efficiency",
    "scenario",
    "scenarios_markdown",
    "training",
    "training_markdown",
    "training_ratio",
]
