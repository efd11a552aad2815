"""The two source articles and the percentages their prose states.

- :data:`ARTICLES`: the two articles and what each argues, in the course's own words (never
  translated sentence by sentence);
- :data:`FIGURES`: the percentages article 000 states (e.g. static graphs 20-50% faster), each
  typed once as a ratio range;
- :data:`OUTSIDE_LAB` and :func:`display`: the frameworks the articles name, by display name
  (the registry's, plus any the articles recommend that the lab does not install: none since
  PaddlePaddle joined the registry).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...frameworks import NAMES, spec
from ...util.lookup import by_key

__all__ = [
    "ARTICLES",
    "FIGURES",
    "OUTSIDE_LAB",
    "Article",
    "Figure",
    "article",
    "display",
    "figure",
]

#: frameworks the articles recommend that the lab does not install, with their display names
OUTSIDE_LAB: dict[str, str] = {}


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
    return by_key(FIGURES, key, "figure", "figures are")


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
    return by_key(ARTICLES, key, "article", "the seeds are")
