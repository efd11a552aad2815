"""The framework selection guide as data: rules an instructor can read, print and change.

Pure Python, no UI and no framework import. :func:`recommend` adds up the points of every rule
whose condition holds for the learner's answers, ranks the candidate frameworks, picks the
alternative from the scenario's table, and attaches the evidence: the learner's own measurements
when a results file exists (written by ``python -m labkit bench``), otherwise the figures that the
course's source article claims and the course's reference measurements, each labelled with where
it comes from.

The tables below are the whole policy. ``print(rules_markdown())`` shows them as an instructor
reads them; changing a row changes the advice, and ``tests/test_guide.py`` pins the advice that the
source article gives for each of its five scenarios.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from . import claims as labkit_claims
from . import results as labkit_results
from .frameworks import spec, specs

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
#: the frameworks the guide ranks, in the order that breaks a tie that remains after scenario points
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

# ---- the rules --------------------------------------------------------------------------------

SEED = "source article, scenario guide"
FLOW = "source article, decision flow"
LAB = "course authors"


class Rule(NamedTuple):
    """When input ``field`` has ``value`` (for targets: contains it), ``framework`` gets ``points``."""

    field: str
    value: str
    framework: str
    points: int
    reason: str
    source: str


RULES: tuple[Rule, ...] = (
    # Step 1 of the decision flow: the core need (the scenario).
    Rule(
        "scenario",
        "research",
        "torch",
        4,
        "eager by default: print and a debugger see real values "
        "while the model changes daily, and most new papers ship PyTorch code",
        SEED,
    ),
    Rule(
        "scenario",
        "research",
        "tensorflow",
        2,
        "TF 2 also runs eagerly, and SavedModel is ready for deployment later",
        SEED,
    ),
    Rule(
        "scenario",
        "large_scale_training",
        "tensorflow",
        4,
        "tf.function + XLA compile the "
        "training step, and tf.distribute spreads it over many devices",
        SEED,
    ),
    Rule(
        "scenario",
        "large_scale_training",
        "mindspore",
        3,
        "graph mode optimises the whole training step, and AutoParallel splits it over a cluster",
        SEED,
    ),
    Rule(
        "scenario",
        "large_scale_training",
        "torch",
        2,
        "torch.compile closes much of the graph-mode gap, and FSDP shards a model over many GPUs",
        SEED,
    ),
    Rule(
        "scenario",
        "deployment",
        "tensorflow",
        4,
        "one exported SavedModel serves TF Serving, "
        "TF Lite (LiteRT) and TensorFlow.js without another framework",
        SEED,
    ),
    Rule(
        "scenario",
        "deployment",
        "mindspore",
        3,
        "MindIR goes to MindSpore Lite, which is built for small devices",
        SEED,
    ),
    Rule(
        "scenario",
        "deployment",
        "torch",
        2,
        "export to ONNX and ONNX Runtime runs it on servers, phones and in browsers",
        SEED,
    ),
    Rule(
        "scenario",
        "small_team",
        "torch",
        4,
        "the gentlest learning curve, abundant tutorials, "
        "and a simple path to a small service (ONNX, FastAPI)",
        SEED,
    ),
    Rule(
        "scenario",
        "small_team",
        "tensorflow",
        2,
        "one framework from notebook to production "
        "avoids a migration if industrial deployment comes",
        SEED,
    ),
    Rule(
        "scenario",
        "special_hardware",
        "mindspore",
        4,
        "first-class support for Ascend NPUs and "
        "built-in federated learning (MindSpore Federated) for private data",
        SEED,
    ),
    Rule(
        "scenario",
        "special_hardware",
        "paddlepaddle",
        3,
        "built for domestic hardware and "
        "industry: toolkits for Chinese NLP and industrial inspection, PaddleFL for federated "
        "learning",
        SEED,
    ),
    # Step 2: the team's expertise.
    Rule(
        "expertise", "torch", "torch", 3, "the team already knows PyTorch: no learning cost", FLOW
    ),
    Rule(
        "expertise",
        "tensorflow",
        "tensorflow",
        3,
        "the team already knows TensorFlow: no learning cost",
        FLOW,
    ),
    Rule(
        "expertise",
        "mindspore",
        "mindspore",
        3,
        "the team already knows MindSpore: no learning cost",
        FLOW,
    ),
    # The hardware.
    Rule("hardware", "gpu", "torch", 1, "mature CUDA builds and the largest GPU user base", LAB),
    Rule("hardware", "gpu", "tensorflow", 1, "mature CUDA builds, XLA on GPU", LAB),
    Rule(
        "hardware",
        "ascend",
        "mindspore",
        4,
        "Ascend is MindSpore's home hardware: its graph compiler targets the NPU directly",
        SEED,
    ),
    Rule("hardware", "ascend", "torch", 1, "runs on Ascend through the torch_npu extension", LAB),
    Rule(
        "hardware",
        "ascend",
        "paddlepaddle",
        1,
        "runs on Ascend through its custom-device plugin",
        LAB,
    ),
    Rule(
        "hardware",
        "other_accelerator",
        "paddlepaddle",
        3,
        "deep adaptation to domestic GPUs (e.g. Biren, MetaX)",
        SEED,
    ),
    Rule("hardware", "other_accelerator", "mindspore", 1, "aimed at domestic AI chips", SEED),
    # The deployment targets.
    Rule(
        "targets",
        "server",
        "tensorflow",
        1,
        "TF Serving: high-concurrency serving of a SavedModel",
        SEED,
    ),
    Rule("targets", "mobile", "tensorflow", 1, "TF Lite (LiteRT) on Android and iOS", SEED),
    Rule("targets", "mobile", "mindspore", 1, "MindSpore Lite on phones", SEED),
    Rule("targets", "mobile", "paddlepaddle", 1, "Paddle Lite on phones", LAB),
    Rule(
        "targets",
        "embedded",
        "mindspore",
        2,
        "MindSpore Lite is tuned hardest for constrained "
        "devices (the source claims 15-25% over TF Lite there)",
        SEED,
    ),
    Rule("targets", "embedded", "tensorflow", 1, "TF Lite for microcontrollers", LAB),
    Rule("targets", "embedded", "paddlepaddle", 1, "Paddle Lite on edge devices", LAB),
    Rule("targets", "browser", "tensorflow", 2, "TensorFlow.js runs models in the browser", LAB),
    Rule("targets", "browser", "torch", 1, "ONNX Runtime Web runs the exported ONNX model", LAB),
    Rule("targets", "browser", "paddlepaddle", 1, "Paddle.js runs models in the browser", LAB),
    Rule(
        "targets",
        "browser",
        "mindspore",
        -2,
        "no browser runtime: you would export to ONNX and run ONNX Runtime Web instead",
        LAB,
    ),
    # Data and model scale.
    Rule(
        "scale",
        "small",
        "torch",
        1,
        "small experiments gain little from graph compilation, which costs time on every change",
        SEED,
    ),
    Rule(
        "scale",
        "large",
        "tensorflow",
        1,
        "graph optimisation and distributed strategies pay off on large data and models",
        SEED,
    ),
    Rule(
        "scale",
        "large",
        "mindspore",
        1,
        "graph optimisation and automatic parallelism pay off on large data and models",
        SEED,
    ),
    # What matters most.
    Rule(
        "priority",
        "debugging",
        "torch",
        2,
        "eager by default: Python's debugger and print work everywhere",
        SEED,
    ),
    Rule(
        "priority",
        "debugging",
        "tensorflow",
        1,
        "eager by default, but code inside tf.function needs tf.print",
        LAB,
    ),
    Rule(
        "priority",
        "training_throughput",
        "tensorflow",
        1,
        "tf.function + XLA compile the training step",
        SEED,
    ),
    Rule(
        "priority",
        "training_throughput",
        "mindspore",
        1,
        "graph mode optimises the training step as a whole",
        SEED,
    ),
    Rule(
        "priority",
        "inference_latency",
        "tensorflow",
        1,
        "serves its own SavedModel: no conversion step",
        SEED,
    ),
    Rule(
        "priority",
        "inference_latency",
        "mindspore",
        1,
        "MindSpore Lite serves its own MindIR: no conversion step",
        SEED,
    ),
    Rule(
        "priority",
        "maintenance",
        "tensorflow",
        3,
        "step 4, long-term growth: the most complete "
        "deployment ecosystem avoids migrating frameworks later",
        FLOW,
    ),
)

#: points from the learner's own benchmark (step 3 of the decision flow): claims never vote
MEASURED_POINTS: dict[str, tuple[int, str]] = {
    "fastest": (1, "fastest on your machine in the benchmark that matches your need"),
    "slow": (-1, "under half the fastest framework's images/s on your machine"),
    "failed": (-1, "every benchmark of it failed on your machine"),
}
SLOW_FRACTION = 0.5
#: which benchmark task answers a priority, or else a scenario
EVIDENCE_TASK: dict[str, str] = {
    "training_throughput": "train",
    "inference_latency": "latency",
    "large_scale_training": "train",
    "deployment": "throughput",
}


class Alternative(NamedTuple):
    framework: str
    when: str


#: per scenario, the alternatives in order: the first that is not the top recommendation is shown
ALTERNATIVES: dict[str, tuple[Alternative, ...]] = {
    "research": (
        Alternative(
            "tensorflow",
            "the team already knows TensorFlow: TF 2 runs eagerly too, and "
            "the model is one export away from TF Serving or TF Lite",
        ),
        Alternative(
            "torch",
            "the work stays exploratory: eager PyTorch is the quickest to change, "
            "and most papers' code is PyTorch",
        ),
    ),
    "large_scale_training": (
        Alternative(
            "torch",
            "the team knows PyTorch: torch.compile recovers graph-mode speed and "
            "FSDP shards the model over many GPUs",
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
            "the model already exists in PyTorch: export it to ONNX and run "
            "ONNX Runtime everywhere (the source claims a 5-10% conversion cost)",
        ),
        Alternative("tensorflow", "you need servers, phones and browsers from one SavedModel"),
        Alternative("mindspore", "embedded devices or Ascend hardware dominate: MindSpore Lite"),
    ),
    "small_team": (
        Alternative(
            "tensorflow",
            "industrial deployment is coming: starting in TensorFlow avoids a "
            "framework migration later",
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
        "need (federated learning: MindSpore Federated, PaddleFL).",
    ),
    Conflict(
        (("scenario", "special_hardware"), ("hardware", "gpu")),
        "Special hardware was chosen with an NVIDIA GPU: the guide reads this as a privacy "
        "need (federated learning: MindSpore Federated, PaddleFL).",
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
        "mobile": "TensorFlow -> SavedModel -> TF Lite (LiteRT)",
        "embedded": "TensorFlow -> TF Lite (LiteRT, LiteRT for Microcontrollers)",
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
CLAIMED = "claimed by the course's source article"
PUBLISHED = "published"
MEASURED = "measured on your machine"

# ---- the answer -------------------------------------------------------------------------------


class Reason(NamedTuple):
    points: int
    text: str
    source: str


class Ranked(NamedTuple):
    framework: str
    score: int
    reasons: tuple[Reason, ...]


class Evidence(NamedTuple):
    frameworks: tuple[str, ...]  # the candidates it concerns
    statement: str
    source: str  # "measured on your machine on <date>", CLAIMED (where), PUBLISHED: link, LAB
    measured: bool


@dataclass(frozen=True)
class Recommendation:
    inputs: dict[str, Any]
    ranking: tuple[Ranked, ...]
    alternative: str
    alternative_when: str
    toolchain: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    measured: bool = False  # whether the learner's own results were read
    task: str | None = None  # the benchmark task that answers the need (EVIDENCE_TASK)

    @property
    def top(self) -> str:
        return self.ranking[0].framework

    @property
    def candidates(self) -> tuple[str, ...]:
        """Two or three frameworks worth a live benchmark (step 3): the lab can run these."""
        picks = [r.framework for r in self.ranking if r.framework not in NOT_IN_LAB]
        ordered = [f for f in (self.top, self.alternative) if f in picks]
        return tuple(dict.fromkeys(ordered + picks))[:3]

    def score(self, framework: str) -> int:
        return next(r.score for r in self.ranking if r.framework == framework)

    def to_markdown(self) -> str:
        return _markdown(self)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


# ---- input checking ---------------------------------------------------------------------------


def _one(name: str, value: Any, valid: Mapping[str, str]) -> str | None:
    """``value`` in canonical form, None when not given; unknown values raise ``ValueError``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(
            f"{name} must be a string, not {type(value).__name__}: valid values are "
            f"{', '.join(valid)}"
        )
    key = value.strip().lower().replace("-", "_").replace(" ", "_")
    key = ALIASES.get(key, key)
    if not key:
        return None
    if key not in valid:
        raise ValueError(f"unknown {name} {value!r}: valid values are {', '.join(valid)}")
    return key


def _targets(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else list(value)
    out = [_one("target", v, TARGETS) for v in items]
    return tuple(t for t in TARGETS if t in out)  # canonical order, duplicates dropped


def check_inputs(
    scenario: Any = None,
    expertise: Any = None,
    targets: Any = (),
    hardware: Any = "cpu",
    priority: Any = None,
    scale: Any = DEFAULT_SCALE,
) -> dict:
    """The inputs in canonical form; an unknown value raises ``ValueError`` naming the valid ones.

    Missing answers are fine: scenario, expertise and priority may be None, targets empty;
    hardware and scale fall back to their defaults.
    """
    return {
        "scenario": _one("scenario", scenario, SCENARIOS),
        "expertise": _one("expertise", expertise, EXPERTISE),
        "targets": _targets(targets),
        "hardware": _one("hardware", hardware, HARDWARE) or "cpu",
        "priority": _one("priority", priority, PRIORITIES),
        "scale": _one("scale", scale, SCALES) or DEFAULT_SCALE,
    }


def _holds(field_: str, value: str, inputs: Mapping[str, Any]) -> bool:
    got = inputs.get(field_)
    return value in got if isinstance(got, tuple) else got == value


# ---- evidence ---------------------------------------------------------------------------------


def _when(records: list[dict]) -> str:
    stamps = [str(r["timestamp"]) for r in records if r.get("timestamp")]
    return max(stamps)[:10] if stamps else ""


def load_results(results: Any) -> tuple[list[dict], str]:
    """Records from a results file path (read by ``labkit.results.load``) or loaded results.

    Returns the latest record of each cell and the label the evidence carries ("measured on
    your machine on <date>"). A path that does not exist yet gives no records: the guide then
    shows claimed and published figures. A corrupt file raises the loader's ``ValueError``.
    """
    if results is None:
        return [], ""
    if isinstance(results, (str, os.PathLike)):
        if not Path(results).exists():
            return [], ""
        records = labkit_results.load(results)
    else:
        records = [dict(r) for r in results]
    records = labkit_results.latest(records)
    when = _when(records)
    return records, MEASURED + (f" on {when}" if when else "")


def _ips(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _setting(rec: Mapping) -> str:
    return (
        f"{rec['task']}, batch {rec['batch_size']}, {rec['image_size']} px, "
        f"{rec['precision']}, {rec['device']}"
    )


def best(records: list[dict], framework: str, task: str) -> dict | None:
    """The fastest successful record of a candidate on ``task``, its deployment runtimes included."""
    found = [labkit_results.best(records, rt, task) for rt in RUNTIMES[framework]]
    return max((r for r in found if r), key=lambda r: r["images_per_s"], default=None)


def failures(records: list[dict], framework: str, task: str | None = None) -> list[str]:
    """The errors of a candidate's failed cells (unsupported combinations excluded)."""
    return [
        str(r["error"])
        for r in records
        if r.get("framework") in RUNTIMES[framework]
        and r.get("status") != "ok"
        and not r.get("unsupported")
        and (task is None or r.get("task") == task)
    ]


def _run_by(rec: Mapping) -> str:
    """The mode that produced a record, or the runtime's name for a runtime of exported graphs."""
    s = spec(rec["framework"])
    return s.display if s.eager is None else str(rec["mode"])


def _measured_evidence(fw: str, records: list[dict], label: str) -> list[Evidence]:
    out = []
    tasks = [
        t
        for t in ("latency", "throughput", "train")
        if any(r.get("task") == t and r.get("framework") in RUNTIMES[fw] for r in records)
    ]
    ups = [u for u in labkit_results.speedups(records) if u["framework"] in RUNTIMES[fw]]
    for task in tasks:
        top = best(records, fw, task)
        if top is None:
            continue
        line = f"best {_ips(top['images_per_s'])} images/s with {_run_by(top)} ({_setting(top)})"
        mine = [u for u in ups if u["task"] == task]
        if mine:
            u = max(mine, key=lambda u: u["speedup"])
            line += (
                f"; graph vs eager: {_run_by(u)} runs {u['speedup']:.2f}x "
                f"(+-{u['speedup_iqr']:.2f}) the speed of {u['baseline']}"
            )
        out.append(Evidence((fw,), line, label, True))
    errors = failures(records, fw)
    if errors and not out:
        out.append(Evidence((fw,), f"every benchmark failed, e.g. {errors[0]}", label, True))
    return out


def _claimed_evidence(frameworks: Iterable[str]) -> list[Evidence]:
    """The source article's claims (and published figures) that concern these frameworks."""
    out, seen = [], set()
    for c in labkit_claims.CLAIMS:
        involved = {side[0] for r in c.ratios for side in (r.num, r.den)}
        concern = tuple(fw for fw in frameworks if involved & set(RUNTIMES[fw]))
        if not concern:
            continue
        out.append(Evidence(concern, c.statement, f"{CLAIMED}, {c.seed_section}", False))
        for s in c.published:
            named = tuple(fw for fw in concern if DISPLAY[fw] in s.title)
            if s.figure and named and s.title not in seen:
                seen.add(s.title)
                out.append(Evidence(named, s.figure, f"{PUBLISHED}: [{s.title}]({s.url})", False))
    return out


def evidence(frameworks: Iterable[str], records: list[dict], label: str) -> list[Evidence]:
    """What backs the comparison of ``frameworks``: your measurements where they exist, the
    article's claims and published figures for the rest, each labelled with its source."""
    out: list[Evidence] = []
    unmeasured = []
    for fw in frameworks:
        if fw in NOT_IN_LAB:
            out.append(
                Evidence(
                    (fw,),
                    "no figures: the source article does not benchmark it. " + NOT_IN_LAB[fw],
                    LAB,
                    False,
                )
            )
            continue
        mine = _measured_evidence(fw, records, label)
        out += mine
        if not mine:
            unmeasured.append(fw)
            if records:
                out.append(
                    Evidence(
                        (fw,),
                        "not in your results file: the claims below stand in for a measurement",
                        LAB,
                        False,
                    )
                )
    return out + _claimed_evidence(unmeasured)


def comparable(records: list[dict], task: str) -> list[dict]:
    """The successful records of ``task`` in the one setting (model, image size, batch,
    precision, device) that the most candidates share: only like is compared with like. Ties
    prefer fp32, then the larger image and batch."""
    groups: dict[tuple, list[dict]] = {}
    for r in labkit_results.ok(records):
        if r.get("task") == task:
            setting = (r["image_size"], r["batch_size"], r["precision"], r["device"])
            model = tuple(r.get(k, v) for k, v in labkit_results.OPTIONAL.items())
            groups.setdefault((*setting, model), []).append(r)

    def rank(item):
        (size, batch, precision, _, _), recs = item
        present = sum(any(r["framework"] in RUNTIMES[fw] for r in recs) for fw in CANDIDATES)
        return present, precision == "fp32", size, batch

    return max(groups.items(), key=rank)[1] if groups else []


def _measured_points(
    inputs: Mapping, records: list[dict]
) -> tuple[str | None, dict[str, list[Reason]]]:
    """Points from the learner's own benchmark for the task that answers their need."""
    task = EVIDENCE_TASK.get(inputs["priority"] or "") or EVIDENCE_TASK.get(
        inputs["scenario"] or ""
    )
    points: dict[str, list[Reason]] = {}
    if not records or not task:
        return task, points
    same = comparable(records, task)
    fastest = {fw: rec for fw in CANDIDATES if (rec := best(same, fw, task)) is not None}
    for fw in CANDIDATES:
        if fw not in fastest and failures(records, fw, task):
            pts, why = MEASURED_POINTS["failed"]
            points.setdefault(fw, []).append(Reason(pts, f"{why} ({task})", MEASURED))
    if len(fastest) >= 2:
        top_ips = max(r["images_per_s"] for r in fastest.values())
        for fw, rec in fastest.items():
            ips = rec["images_per_s"]
            key = "fastest" if ips == top_ips else ("slow" if ips < SLOW_FRACTION * top_ips else "")
            if key:
                pts, why = MEASURED_POINTS[key]
                points.setdefault(fw, []).append(
                    Reason(
                        pts,
                        f"{why}: {_ips(ips)} images/s with {_run_by(rec)} ({_setting(rec)})",
                        MEASURED,
                    )
                )
    return task, points


# ---- the recommendation ----------------------------------------------------------------------


def recommend(
    scenario: Any,
    expertise: Any = None,
    targets: Any = (),
    hardware: Any = "cpu",
    priority: Any = None,
    results: Any = None,
    scale: Any = DEFAULT_SCALE,
) -> Recommendation:
    """Rank the candidate frameworks for a project described by the answers.

    ``scenario``: one of :data:`SCENARIOS` (None: no core need given); ``expertise``: one of
    :data:`EXPERTISE` or None; ``targets``: a subset of :data:`TARGETS`; ``hardware``: one of
    :data:`HARDWARE`; ``priority``: one of :data:`PRIORITIES` or None; ``scale``: one of
    :data:`SCALES`; ``results``: a results file path (JSONL from ``python -m labkit bench``) or
    loaded results. Unknown values raise ``ValueError`` naming the valid ones; missing or
    contradictory answers still get an answer, with notes that say what the guide assumed.
    """
    inputs = check_inputs(scenario, expertise, targets, hardware, priority, scale)
    records, label = load_results(results)
    task, measured = _measured_points(inputs, records)

    reasons: dict[str, list[Reason]] = {fw: [] for fw in CANDIDATES}
    for rule in RULES:
        if _holds(rule.field, rule.value, inputs):
            reasons[rule.framework].append(Reason(rule.points, rule.reason, rule.source))
    for fw, extra in measured.items():
        reasons[fw] += extra

    def scenario_points(fw: str) -> int:
        return sum(
            r.points
            for r in RULES
            if r.field == "scenario" and r.framework == fw and r.value == inputs["scenario"]
        )

    ranking = tuple(
        sorted(
            (Ranked(fw, sum(r.points for r in rs), tuple(rs)) for fw, rs in reasons.items()),
            key=lambda r: (-r.score, -scenario_points(r.framework), CANDIDATES.index(r.framework)),
        )
    )
    top = ranking[0].framework

    alt = next(
        (a for a in ALTERNATIVES.get(inputs["scenario"] or "", ()) if a.framework != top), None
    )
    if alt is None:
        nxt = ranking[1]
        alt = Alternative(nxt.framework, f"it scores next ({nxt.score} points)")

    notes = _notes(inputs, ranking, alt.framework, records, task, label)
    if isinstance(results, (str, os.PathLike)) and not Path(results).exists():
        notes.append(
            f"No results file at {results} yet: the evidence shows claimed and published "
            "figures until you run the benchmark."
        )
    shown = tuple(dict.fromkeys([top, alt.framework]))
    return Recommendation(
        inputs={**inputs, "results": label or None},
        ranking=ranking,
        alternative=alt.framework,
        alternative_when=alt.when,
        toolchain=toolchain(top, inputs["targets"]),
        evidence=tuple(evidence(shown, records, label)),
        notes=tuple(notes),
        measured=bool(records),
        task=task,
    )


def toolchain(framework: str, targets: Iterable[str] = ()) -> tuple[str, ...]:
    """How to develop, train and deploy with ``framework``: one line per target (server if none)."""
    chosen = tuple(targets) or ("server",)
    return (
        f"develop and train: {DEVELOP[framework]}",
        *(f"{t}: {DEPLOY[framework][t]}" for t in chosen),
    )


def _notes(
    inputs: Mapping,
    ranking: tuple[Ranked, ...],
    alternative: str,
    records: list[dict],
    task: str | None,
    label: str,
) -> list[str]:
    notes = [c.message for c in CONFLICTS if all(_holds(f, v, inputs) for f, v in c.when)]
    if inputs["scenario"] is None:
        notes.append(
            "No scenario chosen: the ranking uses your other answers only. Step 1 of "
            "the decision flow is to name the core need."
        )
    if not inputs["targets"]:
        notes.append("No deployment target chosen: the toolchain shows the server route.")
    if all(r.score == 0 for r in ranking):
        notes.append(
            "No answer favours any framework yet: every candidate scores 0, and the "
            f"list follows the default order ({', '.join(DISPLAY[c] for c in CANDIDATES)})."
        )
    elif ranking[0].score == ranking[1].score:
        notes.append(
            f"{DISPLAY[ranking[0].framework]} and {DISPLAY[ranking[1].framework]} tie at "
            f"{ranking[0].score} points: the scenario's points, then the default order, "
            "break the tie; let your benchmark (step 3) decide."
        )
    for fw in dict.fromkeys([ranking[0].framework, alternative]):
        if fw in NOT_IN_LAB:
            notes.append(NOT_IN_LAB[fw] + ".")
    same = comparable(records, task) if records and task else []
    if records and task and sum(best(same, fw, task) is not None for fw in CANDIDATES) < 2:
        notes.append(
            f"Your results ({label}) hold fewer than two frameworks measured alike for "
            f"the '{task}' task, so they inform the evidence but do not change the scores."
        )
    return notes


# ---- rendering --------------------------------------------------------------------------------


def _label(table: Mapping[str, str], key: str | None, none: str = "not given") -> str:
    return table[key] if key else none


def describe(inputs: Mapping[str, Any]) -> str:
    """The learner's answers, in words."""
    targets = ", ".join(inputs["targets"]) if inputs["targets"] else "not given"
    return (
        f"scenario: {_label(SCENARIOS, inputs['scenario'])}; "
        f"team knows: {_label(EXPERTISE, inputs['expertise'], 'no framework yet')}; "
        f"targets: {targets}; hardware: {HARDWARE[inputs['hardware']]}; "
        f"scale: {SCALES[inputs['scale']]}; "
        f"priority: {_label(PRIORITIES, inputs['priority'])}"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(rec: Recommendation) -> str:
    top = rec.ranking[0]
    lines = [
        f"## Recommended: {DISPLAY[top.framework]} ({top.score} points)",
        "",
        f"*Your project* - {describe(rec.inputs)}.",
        "",
        "**Toolchain**",
        "",
        *(f"- {step}" for step in rec.toolchain),
        "",
        (
            f"**Alternative: {DISPLAY[rec.alternative]}** ({rec.score(rec.alternative)} points), "
            f"prefer it when {rec.alternative_when}."
        ),
        "",
        "### Ranking",
        "",
        "| rank | framework | score | reasons (points) |",
        "|---:|---|---:|---|",
    ]
    for i, r in enumerate(rec.ranking, 1):
        why = "; ".join(f"{p:+d} {_cell(t)}" for p, t, _ in r.reasons) or "no rule applies"
        lines.append(f"| {i} | {DISPLAY[r.framework]} | {r.score} | {why} |")
    if rec.notes:
        lines += ["", "### Notes", "", *(f"- {n}" for n in rec.notes)]
    lines += ["", "### Evidence", ""]
    lines += [
        f"- **{', '.join(DISPLAY[f] for f in e.frameworks)}**: {_cell(e.statement)} - *{e.source}*"
        for e in rec.evidence
    ]
    if not rec.measured:
        lines += [
            "",
            (
                "No results file yet: run `python -m labkit bench` (or the quick benchmark) "
                f"for {', '.join(DISPLAY[c] for c in rec.candidates)} to replace the claims "
                "with your own measurements."
            ),
        ]
    return "\n".join(lines) + "\n"


def rules_markdown() -> str:
    """Every table of the guide as markdown: what an instructor reads before changing a rule."""
    lines = [
        "### Rules: each row adds points to one framework when its condition holds",
        "",
        "| input | value | framework | points | reason | source |",
        "|---|---|---|---:|---|---|",
    ]
    lines += [
        f"| {r.field} | {r.value} | {DISPLAY[r.framework]} | {r.points:+d} | {_cell(r.reason)} "
        f"| {r.source} |"
        for r in RULES
    ]
    lines += [
        "",
        "### Alternatives: the first one that is not the top recommendation is shown",
        "",
        "| scenario | alternative | prefer it when |",
        "|---|---|---|",
    ]
    lines += [
        f"| {s} | {DISPLAY[a.framework]} | {_cell(a.when)} |"
        for s, alts in ALTERNATIVES.items()
        for a in alts
    ]
    lines += [
        "",
        "### Your own benchmark (step 3): measured figures vote, claims never do",
        "",
        "| outcome | points | meaning |",
        "|---|---:|---|",
    ]
    lines += [f"| {k} | {p:+d} | {_cell(w)} |" for k, (p, w) in MEASURED_POINTS.items()]
    lines += [
        "",
        "The benchmark task that counts: "
        + ", ".join(f"{k} -> {v}" for k, v in EVIDENCE_TASK.items())
        + " (a priority before a scenario).",
        "",
        "Ties: the framework with more scenario points wins, then the order "
        + ", ".join(DISPLAY[c] for c in CANDIDATES)
        + ".",
        "",
        "### Conflicting answers and what the guide says",
        "",
        "| when | note |",
        "|---|---|",
    ]
    lines += [
        f"| {' and '.join(f'{f}={v}' for f, v in c.when)} | {_cell(c.message)} |" for c in CONFLICTS
    ]
    return "\n".join(lines) + "\n"


def decision_flow_markdown() -> str:
    return (
        "\n".join(f"{i}. **{s.title}.** {s.question}" for i, s in enumerate(DECISION_FLOW, 1))
        + "\n"
    )
