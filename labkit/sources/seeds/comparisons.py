"""The articles' comparisons: eager against static graphs (article 000, part 1.3), and
TensorFlow against PyTorch for distributed training and mobile deployment (article 003).

- :data:`COMPARISON`: article 000's comparison table, one row per dimension, each side with the
  article's one-word verdict and its reason; :func:`comparison_markdown` shows it whole, or one
  side beside what a notebook observed;
- :data:`DISTRIBUTED` and :data:`MOBILE`: article 003's comparisons, each row with where the
  course checks it today (:func:`capability_markdown`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...util import tables
from .articles import display

__all__ = [
    "COMPARISON",
    "DISTRIBUTED",
    "MOBILE",
    "SIDES",
    "Capability",
    "Contrast",
    "capability_markdown",
    "comparison_markdown",
]

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
        head = ["dimension", "eager (dynamic graph)", "static graph"]
        rows = [
            [c.dimension, f"**{c.eager_rating}**: {c.eager}", f"**{c.static_rating}**: {c.static}"]
            for c in COMPARISON
        ]
        return tables.markdown(head, rows)
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
    rows = []
    for c in COMPARISON:
        rating, text = (c.eager_rating, c.eager) if side == "eager" else (c.static_rating, c.static)
        rows.append([c.dimension, f"**{rating}**: {text}", observed[c.key]])
    head = ["dimension", f"the article says ({side})", "seen in this notebook"]
    return tables.markdown(head, rows)


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
    head = ["framework", "what the article names", "what it says", "checked in"]
    return tables.markdown(head, [[display(c.framework), c.api, c.says, c.checked] for c in rows])
