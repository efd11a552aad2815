"""The articles' performance claims (``labkit/data/sources.toml``) audited against one run's
records. :func:`check` divides the records of each claim's declared ratios (never the best of
several, each with :func:`labkit.results.ratio`'s interval) and judges them only within the
claim's :class:`Regime`; measured elsewhere (a 2-core CPU against A100s, in-process against TF
Serving) the verdict is "different regime", the ratio shown beside the article's with every
difference named. Only valid records count unless asked. Advice is not a claim (see the guide).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import results
from ..frameworks import specs
from ..util import tables
from . import seeds
from .seeds import BASELINE, DATA, EPOCH_IMAGES, TRAINING, figure, words

# fmt: off
__all__ = [
    "CLAIMS", "EPOCH_CLAIM", "FAILS", "HOLDS", "LARGER", "MIXED", "MLPERF_CPU", "NOT_MEASURED",
    "NV_PT", "NV_TF", "PUBLISHED", "REGIME", "REGIMES", "SEED_EPOCH_IMAGES", "UNTESTABLE",
    "VERDICTS", "Claim", "Measured", "Ratio", "Regime", "Source", "Verdict", "check",
    "check_all", "claim", "epoch_consistency", "markdown", "read_records", "regime_of",
]
# fmt: on

HOLDS, FAILS, MIXED, NOT_MEASURED = "holds here", "does not hold here", "mixed here", "not measured here"  # fmt: skip
LARGER = "direction holds, larger than claimed"  # a 4x speed-up does not refute "20-50% faster"
REGIME = UNTESTABLE = "different regime"
VERDICTS = (HOLDS, LARGER, FAILS, MIXED, REGIME, NOT_MEASURED)
MIXED_PRECISIONS = frozenset({"bf16", "fp16", "amp", "mixed"})
SEED_EPOCH_IMAGES = EPOCH_IMAGES


@dataclass(frozen=True)
class Source:
    """A published figure, quoted exactly (``values`` fill ``figure``), or just the page."""

    title: str
    url: str
    figure: str = ""
    values: dict = field(default_factory=dict)

    def value(self, name: str) -> float:
        if name in self.values:
            return self.values[name]
        raise ValueError(f"{self.title} gives no value {name!r}: it gives {', '.join(self.values)}")

    def cite(self) -> str:
        page = f"{self.title}, {self.url}"
        return f"{self.figure} ({page})" if self.figure else page


def _source(p: dict) -> Source:
    values = dict(p.get("values", {}))
    if {"samples_per_s", "cores"} <= set(values):
        values["per_core"] = values["samples_per_s"] / values["cores"]
    return Source(p["title"], p["url"], p.get("figure", "").format(**values), values)


PUBLISHED = {k: _source(p) for k, p in DATA["published"].items()}
NV_PT, NV_TF, MLPERF_CPU = PUBLISHED["NV_PT"], PUBLISHED["NV_TF"], PUBLISHED["MLPERF_CPU"]


@dataclass(frozen=True)
class Regime:
    """The conditions a figure holds in; None: not stated. ``hardware``: classes such as
    "cpu", "gpu:<name part>" ("gpu:" any GPU), "jetson", "cluster", "embedded"."""

    hardware: tuple[str, ...] | None = None
    hardware_text: str = "not stated"
    model: str | None = None
    image_size: int | None = None
    batch: int | None = None
    precision: str | None = None  # "mixed" is AMP
    runtime: str | None = None
    metric: str = ""

    def describe(self) -> str:
        shown = {**asdict(self), "hardware": self.hardware_text}
        return "; ".join(
            f"{k}: {v or 'not stated'}" for k, v in shown.items() if k != "hardware_text"
        )

    def differences(self, here: Regime) -> list[tuple[str, str]]:
        """(condition, "here vs the claim") for each stated condition ``here`` does not meet."""
        out = []
        kinds = here.hardware or ()
        if self.hardware and not any(
            k == h or (h.startswith("gpu:") and k.startswith("gpu:") and h[4:] in k)
            for h in self.hardware
            for k in kinds
        ):
            out.append(
                ("hardware", f"{here.hardware_text} here, {self.hardware_text} in the claim")
            )
        for name in ("model", "image_size", "batch", "runtime"):
            mine, theirs = getattr(self, name), getattr(here, name)
            if mine and theirs != mine:
                out.append((name.replace("_", " "), f"{theirs} here, {mine} in the claim"))
        mixed = self.precision == "mixed" and here.precision in MIXED_PRECISIONS
        if self.precision and not mixed and here.precision != self.precision:
            out.append(("precision", f"{here.precision} here, {self.precision} in the claim"))
        return out


REGIMES = {k: Regime(**{**r, "hardware": tuple(r["hardware"])}) for k, r in DATA["regime"].items()}


def regime_of(rec: dict) -> Regime:
    """The regime a record was measured in (every record of this lab runs in-process)."""
    machine = rec.get("machine") or {}
    if rec.get("device") == "gpu":
        gpus = list(machine.get("gpus") or [])
        hardware, text = tuple(f"gpu:{g}" for g in gpus) or ("gpu:",), ", ".join(gpus) or "a GPU"
    else:
        cores, cpu = machine.get("cores"), machine.get("cpu") or "CPU"
        hardware, text = ("cpu",), f"{cores}-core {cpu}" if cores else str(cpu)
    got = [rec.get(k) for k in ("image_size", "batch_size")] + [rec.get("precision", "fp32")]
    return Regime(hardware, text, "ResNet-50", *got, "in-process", f"{rec.get('task')} images/s")


@dataclass(frozen=True)
class Ratio:
    label: str
    num: tuple[str, str]  # (framework, mode), declared up front
    den: tuple[str, str]
    task: str
    seed_value: float | None = None  # what the article's own table implies


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str
    seed_figure: str
    section: str
    low: float
    high: float
    ratios: tuple[Ratio, ...]
    regime: Regime
    published: tuple[Source, ...] = ()
    note: str = ""
    relative: bool = False  # the range is [low, high] x each ratio's seed_value
    untestable: str = ""  # why this lab can measure nothing for it

    @property
    def direction(self) -> int:
        """+1 a claimed gain, -1 a claimed loss, 0 a neighbourhood of the article's value."""
        return 0 if self.relative else 1 if self.low >= 1 else -1 if self.high <= 1 else 0

    @property
    def frameworks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(side[0] for r in self.ratios for side in (r.num, r.den)))

    def bounds(self, r: Ratio) -> tuple[float, float]:
        scale = r.seed_value if self.relative else 1.0
        return self.low * scale, self.high * scale


def _ratios(c: dict) -> tuple[Ratio, ...]:
    out = [
        Ratio(f"{s.name} {mode} / {s.eager} ({task})", (s.name, mode), (s.name, s.eager), task)
        for task in c.get("graph_vs_eager", ())
        for s in specs()
        if s.eager is not None
        for mode in s.graph_modes
    ]
    for r in c.get("ratios", ()):
        num, den, seed = tuple(r["num"]), tuple(r["den"]), r.get("seed")
        value = seeds.training_ratio(num, den) if seed == "training" else None
        value = seeds.inference_ratio(num[0], BASELINE) if seed == "inference" else value
        out.append(Ratio(r["label"], num, den, r["task"], value))
    return tuple(out)


def _claim(c: dict) -> Claim:
    if "figure" in c:
        f = figure(c["figure"])
        c = {"seed_figure": f.range, "section": f.where, "low": f.low, "high": f.high} | c
    note, published = c.get("note", ""), tuple(PUBLISHED[k] for k in c.get("published", ()))
    return Claim(c["key"], words(c["statement"]), words(c["seed_figure"]), c["section"], c["low"],
                 c["high"], _ratios(c), REGIMES[c["regime"]], published,
                 DATA["notes"].get(note, note), c.get("relative", False), c.get("untestable", ""))  # fmt: skip


CLAIMS = tuple(_claim(c) for c in DATA["claim"])
EPOCH_CLAIM = Claim(
    "epoch_consistency",
    f"The article's epoch times follow from its single-GPU throughputs and its {EPOCH_IMAGES:,} "
    "training images.", " / ".join(f"{r.epoch_min:g}" for r in TRAINING) + " min",
    "seed 000, part 2.1 (training table)", 1.0, math.inf, (), Regime(),
)  # fmt: skip


def claim(key: str) -> Claim:
    found = [c for c in CLAIMS if c.key == key]
    if found:
        return found[0]
    raise ValueError(f"unknown claim {key!r}: valid claims are {', '.join(c.key for c in CLAIMS)}")


@dataclass
class Measured:
    ratio: Ratio
    estimate: results.Estimate
    place: str  # "in", "below" or "above" the claimed range (by the median)
    noisy: bool  # the interval crosses a bound of the range
    here: Regime | None = None
    reading: str = ""  # "in", "larger", "smaller", "opposite" (or the place, no direction)

    def __str__(self) -> str:
        seed = f" (article: {self.ratio.seed_value:.2f}x)" if self.ratio.seed_value else ""
        return f"{self.ratio.label}: {self.estimate}{seed}"


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    measured: list[Measured] = field(default_factory=list)
    why: str = ""
    differences: tuple[str, ...] = ()
    invalid: list[Measured] = field(default_factory=list)  # what only invalid records say

    def label(self) -> str:
        """The verdict as the table shows it: a different regime names what differs."""
        if self.claim is EPOCH_CLAIM:
            return self.verdict.removesuffix(" here") + " (the article's own numbers)"
        if self.verdict != REGIME:
            return self.verdict
        names = ", ".join(dict.fromkeys(d.split(":")[0] for d in self.differences)) or "hardware"
        values = ", ".join(f"{m.estimate.value:.2f}x" for m in self.measured)
        nothing = f"nothing {'validly ' if self.invalid else ''}measured here"
        tail = f"measured here {values}, not judged" if values else nothing
        return f"{REGIME} ({names}): {'untestable here' if self.claim.untestable else tail}"

    def row(self) -> dict[str, str]:
        only = "only invalidly: " + "; ".join(map(str, self.invalid)) if self.invalid else ""
        shown = "; ".join(map(str, self.measured)) or only or "not measured"
        heres = list(dict.fromkeys(f"{h.hardware_text}, {h.image_size} px, batch {h.batch}, "
                                   f"{h.precision}" for m in self.measured if (h := m.here)))  # fmt: skip
        shown += f" (on {'; '.join(heres)})" if heres else ""
        cited = "; ".join(f"{s.figure} [{s.title}]({s.url})".lstrip() for s in self.claim.published)
        c = self.claim
        article = f"{c.seed_figure} ({c.section})"
        cells = [c.statement, article, c.regime.describe(), shown, self.label(), self.why, cited]
        return dict(zip(HEAD, cells))


def _place(est, low: float, high: float, direction: int) -> tuple[str, bool, str]:
    where = "below" if est.value < low else "above" if est.value > high else "in"
    noisy = (est.low < low <= est.high) or (est.low <= high < est.high)
    if where == "in" or direction == 0:
        return where, noisy, where
    gain = est.value > 1 if direction > 0 else est.value < 1
    beyond = where == ("above" if direction > 0 else "below")
    return where, noisy, "opposite" if not gain else "larger" if beyond else "smaller"


READINGS = {"larger": ": the direction, larger", "smaller": ": the direction, smaller",
            "opposite": ": the opposite direction"}  # fmt: skip


def _judge(c: Claim, measured: list[Measured]) -> tuple[str, str]:
    readings = [m.reading for m in measured]
    held = [r for r in readings if r in ("in", "larger")]
    verdict = MIXED if held and len(held) < len(readings) else LARGER if held else FAILS
    verdict = HOLDS if readings.count("in") == len(readings) else verdict
    parts = []
    for m in measured:
        low, high = c.bounds(m.ratio)
        rng = f">= {low:.3g}x" if math.isinf(high) else f"{low:.3g}x-{high:.3g}x"
        said = READINGS.get(m.reading, "") + (" (within noise)" if m.noisy else "")
        parts.append(f"{m.ratio.label} {m.estimate.value:.2f}x is {m.place} {rng}{said}")
    return verdict, "; ".join(parts)


def _precision(c: Claim, records: list[dict], precision: str) -> str:
    """A mixed-precision claim takes the mixed-precision records there are (bf16 here)."""
    if c.regime.precision != "mixed" or precision in MIXED_PRECISIONS:
        return precision
    mixed = sorted(p for p in MIXED_PRECISIONS if any(r.get("precision") == p for r in records))
    return mixed[0] if mixed else precision


def _device(c: Claim, records: list[dict]) -> str:
    """'gpu' when the claim names a GPU that some successful record ran on, else 'cpu'."""
    ran = [g for r in records if r.get("status") == "ok" and r.get("device") == "gpu"
           for g in (r.get("machine") or {}).get("gpus") or []]  # fmt: skip
    named = [h[4:] for h in c.regime.hardware or () if h.startswith("gpu:")]
    return "gpu" if any(n in g for n in named for g in ran) else "cpu"


def _measure(c: Claim, records: list[dict], precision: str, device: str, invalid: bool) -> list:
    out = []
    for r in c.ratios:
        found = results.pair(records, r.num, r.den, r.task, precision, device, invalid)
        if found:
            est = results.ratio(*found)
            where, noisy, reading = _place(est, *c.bounds(r), c.direction)
            out.append(Measured(r, est, where, noisy, regime_of(found[0]), reading))
    return out


def check(c: Claim, records: list[dict], precision: str = "fp32", include_invalid=False) -> Verdict:
    """The verdict on one claim from these records, judged only within the claim's regime."""
    device, precision = _device(c, records), _precision(c, records, precision)
    measured = _measure(c, records, precision, device, include_invalid)
    ran = [r for r in records if r.get("status") == "ok"]
    here = regime_of(ran[0]) if ran else Regime((device,), f"this machine's {device}", runtime="in-process")  # fmt: skip
    hard = tuple(f"{n}: {t}" for n, t in c.regime.differences(here) if n in ("hardware", "runtime"))
    if c.untestable:
        return Verdict(c, REGIME, [], f"untestable here: {c.untestable}", hard)
    if not measured:
        invalid = [] if include_invalid else _measure(c, records, precision, device, True)
        why = "its cells ran, but their records are invalid (no evidence): " if invalid else ""
        why += "; ".join(map(str, invalid)) or "run the benchmark cells of its ratios (06, 07)"
        if hard:
            why += f"; nothing measured here could be in its regime ({'; '.join(hard)})"
        return Verdict(c, REGIME if hard else NOT_MEASURED, [], why, hard, invalid)
    inside = [m for m in measured if not c.regime.differences(m.here)]
    diffs = tuple(
        dict.fromkeys(f"{n}: {t}" for m in measured for n, t in c.regime.differences(m.here))
    )
    note = f". Note: {c.note}" if c.note else ""
    if not inside:
        why = f"this run differs from the claim's regime in {'; '.join(diffs)}: its ratios stand "
        why += "beside the article's, neither confirming nor refuting it"
        return Verdict(c, REGIME, measured, why + note, diffs)
    verdict, why = _judge(c, inside)
    others = [m for m in measured if m not in inside]
    if others:
        why += ". Not judged (another regime): " + "; ".join(map(str, others))
    return Verdict(c, verdict, measured, why + note, diffs if others else ())


def epoch_consistency() -> Verdict:
    least = {r.label: EPOCH_IMAGES / r.one_gpu / 60 for r in TRAINING}
    ok = [r.epoch_min >= least[r.label] for r in TRAINING]
    verdict = HOLDS if all(ok) else FAILS if not any(ok) else MIXED
    why = "; ".join(f"{r.label}: {r.one_gpu:g} samples/s needs at least {least[r.label]:.1f} min, "
                    f"the article states {r.epoch_min:g}" for r in TRAINING)  # fmt: skip
    return Verdict(EPOCH_CLAIM, verdict, [], why)


def check_all(records: list[dict], precision: str = "fp32", include_invalid=False) -> list[Verdict]:
    """A verdict for every claim, plus the check of the article's own epoch times."""
    return [check(c, records, precision, include_invalid) for c in CLAIMS] + [epoch_consistency()]


def read_records(folder: str | Path, profile: str) -> tuple[list[dict], list[Path]]:
    """This run's records from notebooks 06 and 07 (``results/0[67]_*-<profile>.jsonl``),
    ResNet-50's own only (a learner's custom model is no evidence for the article's claims)."""
    files = sorted(Path(folder).glob(f"0[67]_*-{profile}.jsonl"))
    records = [r for f in files for r in results.load(f)]
    return [r for r in records if not results.custom(r)], files


HEAD = ("claim", "the article", "its regime", "measured here", "verdict", "why", "published")


def markdown(verdicts: Iterable[Verdict]) -> str:
    """The audit as a table, each claim's published figures listed under it (in a cell, their
    citations made rows of thousands of characters)."""
    rows = [v.row() for v in verdicts]
    cited = [f"- {r['claim']}: {r['published']}" for r in rows if r["published"]]
    table = tables.markdown(HEAD[:-1], [[r[h] for h in HEAD[:-1]] for r in rows])
    return (
        table
        + ("\n\nPublished figures, for scale (other hardware):\n" if cited else "")
        + ("\n".join(cited))
    )
