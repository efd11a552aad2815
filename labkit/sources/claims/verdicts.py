"""Verdicts on the seeds' claims from this machine's records, never claiming more than the
measurement's regime allows; and the claim-check table as Markdown.

:func:`check` divides the records of a claim's two declared modes (:func:`pair`), places each
ratio's median and interval against the claimed range (:func:`place`, :func:`judge`) and scopes
the verdict to the regime the records were measured in; :func:`check_all` adds
:func:`epoch_consistency`, computed from the seeds' own numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from ... import results
from ...util import tables
from .catalog import CLAIMS, EPOCH_CLAIM, SEED_EPOCH_IMAGES, SEED_TRAINING, Claim, Ratio
from .published import Source
from .regimes import IN_PROCESS, MIXED_PRECISIONS, Record, Regime, regime_of

__all__ = [
    "FAILS",
    "HOLDS",
    "LARGER",
    "MIXED",
    "NOT_MEASURED",
    "REGIME",
    "UNTESTABLE",
    "VERDICTS",
    "Estimate",
    "Measured",
    "Verdict",
    "check",
    "check_all",
    "epoch_consistency",
    "gpu_present",
    "implied_epoch_minutes",
    "judge",
    "markdown",
    "measure",
    "pair",
    "place",
    "ratio",
    "read",
    "rows",
    "sources",
]

HOLDS, FAILS, MIXED = "holds here", "does not hold here", "mixed here"
#: every ratio in the claimed range or beyond it, on the far side of 1x: the claimed direction
#: holds, by more than the claim says (a 4x speed-up does not refute "20-50% faster")
LARGER = "direction holds, larger than claimed"
REGIME, NOT_MEASURED = "different regime", "not measured here"
#: the name notebooks use for a claim this machine cannot judge (it needs other hardware)
UNTESTABLE = REGIME
VERDICTS: tuple[str, ...] = (HOLDS, LARGER, FAILS, MIXED, REGIME, NOT_MEASURED)


#: a ratio with its confidence interval, and the one function that computes it (from the
#: records' raw times: a bootstrap; see :func:`labkit.results.ratio`)
Estimate = results.Estimate
ratio = results.ratio


def pair(
    records: list[Record],
    r: Ratio,
    precision: str = "fp32",
    device: str = "cpu",
    include_invalid: bool = False,
) -> tuple[Record, Record] | None:
    """The records to divide for ratio ``r``: the lab's one pairing (:func:`labkit.results.pair`)
    of the two declared modes, same task, precision, device, model, image and batch size; where
    several settings were measured for both, the largest image size (then batch) wins, as
    closest to the seeds' 224x224. Records that failed their validity verdict are no evidence:
    left out unless ``include_invalid``."""
    return results.pair(records, r.num, r.den, r.task, precision, device, include_invalid)


# --------------------------------------------------------------------------------------------
# Verdicts


@dataclass
class Measured:
    ratio: Ratio
    estimate: Estimate
    num_mode: str
    den_mode: str
    place: str  # "in", "below" or "above" the claimed range (by the median)
    noisy: bool  # the interval crosses a boundary of the range
    here: Regime | None = None  # the regime the two records were measured in
    reading: str = ""  # the median against the claim: see :func:`read` ("": as ``place``)

    def __str__(self) -> str:
        s = f"{self.ratio.label}: {self.estimate}"
        if self.ratio.seed_value is not None:
            s += f" (seeds: {self.ratio.seed_value:.2f}x)"
        return s


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    measured: list[Measured] = field(default_factory=list)
    why: str = ""
    differences: tuple[str, ...] = ()  # what the measurement lacks of the claim's regime
    invalid: list[Measured] = field(default_factory=list)  # ratios of invalid records only

    def label(self) -> str:
        """The verdict as the table shows it: scoped, with the ratio and the differences for a
        different regime."""
        if self.verdict != REGIME:
            if not self.claim.ratios:  # arithmetic on the seeds' own numbers: no machine
                return self.verdict.removesuffix(" here") + " (the seeds' own numbers)"
            return self.verdict
        names = ", ".join(dict.fromkeys(d.split(":")[0] for d in self.differences))
        if self.claim.untestable:
            return f"{REGIME} ({names}): untestable here"
        if not self.measured:
            return (
                f"{REGIME} ({names}): nothing {'validly ' if self.invalid else ''}measured here yet"
            )
        values = ", ".join(f"{m.estimate.value:.2f}x" for m in self.measured)
        plural = "ratios" if len(self.measured) > 1 else "ratio"
        return f"{REGIME} ({names}): {plural} {values} measured here"

    def row(self) -> dict[str, str]:
        """The claim-check table row: claim, seeds' figure, the claim's regime, measured here
        (with the regime it was measured in), the scoped verdict, why, published figures."""
        shown = "; ".join(str(m) for m in self.measured) or (
            "only invalidly: " + "; ".join(str(m) for m in self.invalid)
            if self.invalid
            else "not measured"
        )
        heres = list(dict.fromkeys(m.here.brief() for m in self.measured if m.here))
        if heres:
            shown += " (measured on " + "; ".join(heres) + ")"
        published = "; ".join(
            f"{s.figure} [{s.title}]({s.url})" if s.figure else f"[{s.title}]({s.url})"
            for s in self.claim.published
        )
        return {
            "claim": self.claim.statement,
            "seeds": self.claim.seed_figure,
            "regime": self.claim.regime.describe(),
            "measured here": shown,
            "verdict": self.label(),
            "why": self.why,
            "published": published,
        }


def place(estimate: Estimate, low: float, high: float) -> tuple[str, bool]:
    """Where the median lies relative to [low, high], and whether the interval crosses a bound."""
    where = "below" if estimate.value < low else "above" if estimate.value > high else "in"
    crosses = (estimate.low < low <= estimate.high) or (estimate.low <= high < estimate.high)
    return where, crosses


#: what each reading of a ratio says after "<ratio> is <place> <range>"
_READINGS = {
    "larger": ": the direction holds, larger than claimed",
    "smaller": ": the direction holds, smaller than claimed",
    "opposite": ": the opposite direction",
}


def read(direction: int, value: float, where: str) -> str:
    """A median against a claim of ``direction`` (:attr:`Claim.direction`), given its place:
    "in" the range; "larger" (beyond it, on the far side of 1x: the claimed direction, by
    more), "smaller" (between 1x and the range: the direction, by less), "opposite" (on the
    other side of 1x); for a claim with no direction, "above" or "below"."""
    if where == "in" or direction == 0:
        return where
    gain = value > 1 if direction > 0 else value < 1
    if not gain:
        return "opposite"
    beyond = where == "above" if direction > 0 else where == "below"
    return "larger" if beyond else "smaller"


def measure(
    c: Claim,
    records: list[Record],
    precision: str = "fp32",
    device: str = "cpu",
    include_invalid: bool = False,
) -> list[Measured]:
    """The claim's ratios that the records allow (a ratio with a side not measured, or measured
    only invalidly unless ``include_invalid``, is skipped)."""
    out = []
    for r in c.ratios:
        found = pair(records, r, precision, device, include_invalid)
        if found is None:
            continue
        num, den = found
        est = ratio(num, den)
        where, noisy = place(est, *c.bounds(r))
        reading = read(c.direction, est.value, where)
        here = regime_of(num)
        out.append(
            Measured(r, est, str(num["mode"]), str(den["mode"]), where, noisy, here, reading)
        )
    return out


def _range(c: Claim, r: Ratio) -> str:
    low, high = c.bounds(r)
    return f">= {low:.3g}x" if math.isinf(high) else f"{low:.3g}x-{high:.3g}x"


def judge(c: Claim, measured: list[Measured]) -> tuple[str, str]:
    """The verdict and its reason from the measured ratios of a testable claim."""
    if not measured:
        return NOT_MEASURED, (
            "nothing measured for it yet: run the benchmark cells this claim "
            "needs (see the 'measured here' ratios)"
        )
    readings = [m.reading or m.place for m in measured]
    parts = [
        f"{m.ratio.label} {m.estimate.value:.2f}x is {m.place} {_range(c, m.ratio)}"
        + _READINGS.get(reading, "")
        + (" (within noise)" if m.noisy else "")
        for m, reading in zip(measured, readings)
    ]
    held = [r for r in readings if r in ("in", "larger")]  # the claim, or its direction, holds
    if readings.count("in") == len(readings):
        verdict = HOLDS
    elif len(held) == len(readings):
        verdict = LARGER
    elif not held:
        verdict = FAILS
    else:
        verdict = MIXED
    return verdict, "; ".join(parts)


def gpu_present(records: Iterable[Record], name: str) -> bool:
    """Whether some successful record ran on a GPU whose name contains ``name``."""
    for r in records:
        gpus = (r.get("machine") or {}).get("gpus") or []
        if r.get("status") == "ok" and r.get("device") == "gpu" and any(name in g for g in gpus):
            return True
    return False


def _machine_regime(records: Iterable[Record], device: str) -> Regime | None:
    """The regime of this machine's runs on ``device`` (any successful record), if any."""
    for r in records:
        if r.get("status") == "ok" and r.get("device", "cpu") == device:
            return regime_of(r)
    return None


def _precision_for(c: Claim, records: list[Record], precision: str) -> str:
    """The precision to divide records at: a mixed-precision claim takes the mixed-precision
    records there are (bf16 on this lab's machines) unless a precision was asked for."""
    if c.regime.precision != "mixed" or precision in MIXED_PRECISIONS:
        return precision
    mixed = [p for p in MIXED_PRECISIONS if any(r.get("precision") == p for r in records)]
    return min(mixed) if mixed else precision


def _device_for(c: Claim, records: list[Record]) -> str:
    """ "gpu" when the claim names a GPU some successful record ran on, else "cpu"."""
    wanted = c.regime.hardware or ()  # "gpu:" (any GPU) or "gpu:<name part>"
    gpu = any(h.startswith("gpu:") and gpu_present(records, h[4:]) for h in wanted)
    return "gpu" if gpu else "cpu"


def _unmeasured(c: Claim, records: list[Record], device: str, invalid: list[Measured]) -> Verdict:
    """The verdict with nothing measured: "different regime" when this machine cannot meet the
    claim's hardware or runtime at all, else "not measured here": the judge's reason, or, where
    the claim's cells ran but gave only invalid records (``invalid``), what those would say."""
    machine = _machine_regime(records, device) or Regime(
        hardware=(device,), hardware_text=f"this machine's {device.upper()}", runtime=IN_PROCESS
    )
    hard = [
        f"{name}: {text}"
        for name, text in c.regime.differences(machine)
        if name in ("hardware", "runtime")
    ]
    if c.untestable:
        why = (
            f"untestable here: {c.untestable}. The claim is about {c.regime.describe()}; it "
            "stays the seeds' figure, neither confirmed nor refuted by this lab"
        )
        return Verdict(c, REGIME, [], why, tuple(hard))
    invalid_only = (
        "its cells ran here, but their records are invalid, and invalid records are no "
        "evidence (each one's flags say why: a spread too wide, a busy machine); run them "
        "again on a quieter machine or under a longer profile"
    )
    if hard:
        why = (
            (
                invalid_only + "; and even valid, a ratio"
                if invalid
                else "nothing measured for it here yet, and a ratio"
            )
            + f" measured here could not be in the claim's regime ({'; '.join(hard)}): it "
            "would be reported beside the seeds', never as a verdict on the claim"
        )
        return Verdict(c, REGIME, [], why, tuple(hard), invalid)
    verdict, why = judge(c, [])
    return Verdict(c, verdict, [], invalid_only if invalid else why, (), invalid)


def _scoped(c: Claim, measured: list[Measured]) -> Verdict:
    """The verdict on the measured ratios, judged only where they were measured in the claim's
    regime; the others are reported beside it, with every difference named."""
    inside = [m for m in measured if not c.regime.differences(m.here)]
    differences = tuple(
        dict.fromkeys(
            f"{name}: {text}" for m in measured for name, text in c.regime.differences(m.here)
        )
    )
    note = f". Note: {c.note}" if c.note else ""
    if not inside:
        why = (
            f"the claim was made for {c.regime.describe()}; this run differs in "
            f"{'; '.join(differences)}. The ratios measured here stand beside the seeds' "
            "ratios (and published figures beside the seeds' absolute ones): they neither "
            "confirm nor refute the claim"
        )
        return Verdict(c, REGIME, measured, why + note, differences)
    verdict, why = judge(c, inside)
    others = [m for m in measured if m not in inside]
    if others:
        why += (
            ". Not judged, measured in a different regime: "
            + "; ".join(str(m) for m in others)
            + f" ({'; '.join(differences)})"
        )
    return Verdict(c, verdict, measured, why + note, differences if others else ())


def check(
    c: Claim, records: list[Record], precision: str = "fp32", include_invalid: bool = False
) -> Verdict:
    """The verdict on one claim from the records of this machine, within the claim's regime.

    A ratio is judged (holds here / does not hold here / mixed here) only when it was measured
    in the claim's regime; otherwise the verdict is "different regime", which reports the ratio
    measured here beside the seeds' and names every difference. With nothing measured the
    verdict is "not measured here", or "different regime" when this machine cannot meet the
    claim's regime at all (hardware it lacks, a runtime the lab does not run). Only valid
    records count (see :func:`labkit.results.valid`) unless ``include_invalid``.
    """
    device = _device_for(c, records)
    precision = _precision_for(c, records, precision)
    measured = measure(c, records, precision, device, include_invalid)
    if not measured:
        invalid = [] if include_invalid else measure(c, records, precision, device, True)
        return _unmeasured(c, records, device, invalid)
    return _scoped(c, measured)


def check_all(
    records: list[Record], precision: str = "fp32", include_invalid: bool = False
) -> list[Verdict]:
    """A verdict for every claim (valid records only unless ``include_invalid``), plus the
    seeds' epoch-time consistency check."""
    return [check(c, records, precision, include_invalid) for c in CLAIMS] + [epoch_consistency()]


def implied_epoch_minutes(samples_per_s: float, images: int = SEED_EPOCH_IMAGES) -> float:
    """The shortest possible epoch at a throughput: every image must pass once."""
    if samples_per_s <= 0:
        raise ValueError(f"throughput must be positive, got {samples_per_s}")
    return images / samples_per_s / 60


def epoch_consistency(table: tuple[tuple[str, float, float], ...] = SEED_TRAINING) -> Verdict:
    """Stated epoch time over the time the throughput implies: below 1 cannot happen."""
    measured, parts = [], []
    for name, sps, minutes in table:
        r = minutes / implied_epoch_minutes(sps)
        where = place(Estimate(r, r, r), 1.0, math.inf)[0]
        m = Measured(
            Ratio(f"{name}: stated / implied epoch time", ("", ""), ("", ""), "train"),
            Estimate(r, r, r),
            "",
            "",
            where,
            False,
            reading=read(EPOCH_CLAIM.direction, r, where),
        )
        measured.append(m)
        parts.append(
            f"{name}: {sps:g} samples/s needs at least "
            f"{implied_epoch_minutes(sps):.1f} min, the seeds state {minutes:g}"
        )
    verdict, _ = judge(EPOCH_CLAIM, measured)
    why = (
        "computed from the seeds' own numbers (an epoch cannot be shorter than images / "
        "throughput): " + "; ".join(parts)
    )
    return Verdict(EPOCH_CLAIM, verdict, measured, why)


# --------------------------------------------------------------------------------------------
# Presentation


def rows(verdicts: list[Verdict]) -> list[dict[str, str]]:
    return [v.row() for v in verdicts]


def markdown(verdicts: list[Verdict]) -> str:
    """The claim-check table as Markdown (``IPython.display.Markdown(markdown(...))``)."""

    head = ["claim", "seeds", "regime", "measured here", "verdict", "why", "published"]
    return tables.markdown(head, [[r[h] for h in head] for r in rows(verdicts)])


def sources(verdicts: list[Verdict]) -> list[Source]:
    """Every published source cited by these verdicts, once each."""
    seen: dict[str, Source] = {}
    for v in verdicts:
        for s in v.claim.published:
            seen.setdefault(s.title, s)
    return list(seen.values())
