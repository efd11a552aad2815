"""The guide's evidence: your results read and judged (:func:`evidence`: yours where they exist,
else the article's claims and published figures, each labelled) and step 3 (:func:`gaps`: a valid
measurement in which the fastest candidate beats another by more than the margin costs points).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .. import results as labkit_results
from ..frameworks import spec
from ..sources import claims as labkit_claims

# fmt: off
__all__ = [
    "CLAIMED", "MEASURED", "Evidence", "Gap", "best", "comparable", "evidence", "evidence_task",
    "gaps", "load_results", "validity",
]
# fmt: on

CLAIMED = "claimed by the course's source article"
MEASURED = "measured on your machine"


class Evidence(NamedTuple):
    frameworks: tuple[str, ...]
    statement: str
    source: str  # "measured on your machine on <date>", CLAIMED (where), "published: <link>"
    measured: bool


class Gap(NamedTuple):
    """A valid measurement in which the fastest candidate beats ``framework`` by ``ratio``."""

    framework: str
    points: int
    ratio: float
    slower: str  # the slower candidate's best valid record, in words
    faster: str
    template: str  # the rules file's words for a gap

    def text(self) -> str:
        return self.template.format(ratio=self.ratio, slower=self.slower, faster=self.faster)


def load_results(results: Any) -> tuple[list[dict], str]:
    """The latest record of each cell from a results file or loaded records, and their label.
    A path that does not exist yet gives none; a corrupt file raises the loader's ValueError."""
    if results is None:
        return [], ""
    if isinstance(results, (str, os.PathLike)):
        if not Path(results).exists():
            return [], ""
        records = labkit_results.load(results)
    else:
        records = [dict(r) for r in results]
    records = labkit_results.latest(records)
    stamps = [str(r["timestamp"]) for r in records if r.get("timestamp")]
    return records, MEASURED + (f" on {max(stamps)[:10]}" if stamps else "")


def validity(record: Mapping) -> str:
    """The record's validity in words."""
    if labkit_results.is_valid(dict(record)):
        return "valid"
    if "valid" not in record:
        return "no validity verdict (an older record)"
    why = record.get("invalid_reasons") or []
    return "invalid" + (": " + "; ".join(map(str, [why] if isinstance(why, str) else why)) if why else "")  # fmt: skip


def _record(rec: Mapping) -> str:
    s, ips = spec(rec["framework"]), rec["images_per_s"]
    how = s.display if s.eager is None else f"{s.display} {rec['mode']}"
    speed = f"{ips:,.0f}" if ips >= 100 else f"{ips:.3g}"
    return (f"{how}, {speed} images/s ({rec['task']}, batch {rec['batch_size']}, "
            f"{rec['image_size']} px, {rec['precision']}, {rec['device']})")  # fmt: skip


def best(records: list[dict], framework: str, task: str, runtimes: Mapping) -> dict | None:
    """The fastest successful record of a candidate on ``task``, its export runtimes included."""
    found = [labkit_results.best(records, rt, task) for rt in runtimes[framework]]
    return max((r for r in found if r), key=lambda r: r["images_per_s"], default=None)


def evidence(frameworks: Iterable[str], records: list[dict], label: str, t) -> list[Evidence]:
    """Your measurements of ``frameworks`` where they exist; the article's claims and published
    figures for the others; a line for a candidate the lab cannot run."""
    out, unmeasured = [], []
    for fw in frameworks:
        mine = [r for r in labkit_results.ok(records) if r["framework"] in t.runtimes[fw]]
        tasks = dict.fromkeys(r["task"] for r in mine)
        for task in tasks:
            top = best(mine, fw, task, t.runtimes)
            out.append(Evidence((fw,), f"best: {_record(top)}; {validity(top)}", label, True))
        if not tasks:
            unmeasured.append(fw)
    for c in labkit_claims.CLAIMS:
        concern = tuple(fw for fw in unmeasured if set(c.frameworks) & set(t.runtimes[fw]))
        if concern:
            out.append(Evidence(concern, c.statement, f"{CLAIMED}, {c.section}", False))
            out += [Evidence(concern, s.figure, f"published: [{s.title}]({s.url})", False)
                    for s in c.published if s.figure]  # fmt: skip
    lone = [fw for fw in unmeasured if not any(fw in e.frameworks for e in out)]
    out += [Evidence((fw,), "no figures: neither article benchmarks it", "", False) for fw in lone]
    return list(dict.fromkeys(out))


def comparable(records: list[dict], task: str, t) -> list[dict]:
    """The successful records of ``task`` in the one setting (model, image size, batch,
    precision, device) that the most candidates share: only like is compared with like."""
    groups: dict[tuple, list[dict]] = {}
    for r in labkit_results.ok(records):
        if r.get("task") == task:
            groups.setdefault(labkit_results.context(r), []).append(r)
    at = {k: labkit_results.CONTEXT.index(k) for k in ("precision", "image_size", "batch_size")}

    def order(item):
        c, recs = item
        present = sum(any(r["framework"] in rts for r in recs) for rts in t.runtimes.values())
        return present, c[at["precision"]] == "fp32", c[at["image_size"]], c[at["batch_size"]]

    return max(groups.items(), key=order)[1] if groups else []


def evidence_task(inputs: Mapping, t) -> str | None:
    """The benchmark task that answers the need: the priority's, else the scenario's."""
    tasks = t.evidence["task"]
    return tasks.get(inputs["priority"] or "") or tasks.get(inputs["scenario"] or "")


def gaps(records: list[dict], task: str | None, t) -> tuple[list[Gap], list[str]]:
    """Step 3: candidates a valid measurement shows clearly slower than the fastest, and notes
    on what the records could not decide (invalid or unjudged records change nothing)."""
    if not records or not task:
        return [], []
    ran = [r for r in labkit_results.ok(records) if r.get("task") == task]
    invalid = [r for r in ran if "valid" in r and not labkit_results.is_valid(r)]
    unjudged = [r for r in ran if "valid" not in r]
    say = t.notes
    notes = [say["invalid"].format(count=len(invalid), task=task, shown="; ".join(
        f"{_record(r)}: {validity(r)}" for r in invalid[:3]))] if invalid else []  # fmt: skip
    notes += [say["unjudged"].format(count=len(unjudged), task=task)] if unjudged else []
    same = comparable([r for r in ran if labkit_results.is_valid(r)], task, t)
    fastest = {fw: r for fw in t.candidates if (r := best(same, fw, task, t.runtimes))}
    if len(fastest) < 2:
        return [], [*notes, say["too_few"].format(task=task)]
    lead = max(fastest.values(), key=lambda r: r["images_per_s"])
    margin, points, text = t.evidence["margin"], t.evidence["points"], say["gap"]
    out = [Gap(fw, points, lead["images_per_s"] / r["images_per_s"], _record(r), _record(lead), text)
           for fw, r in fastest.items() if lead["images_per_s"] / r["images_per_s"] > 1 + margin]  # fmt: skip
    if not out:
        notes.append(say["too_close"].format(task=task, margin=margin, lead=_record(lead)))
    return out, notes
