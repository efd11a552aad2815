"""The guide's evidence: the learner's results read, judged and compared, and step 3's gaps.

:func:`load_results` reads a results file (or loaded records); :func:`evidence` says what backs a
comparison of candidates, the learner's own measurements where they exist, otherwise the source
article's claims (:mod:`labkit.sources.claims`) and published figures, each labelled with where it
comes from. :func:`gaps` is step 3 as a rule: a *valid* measurement of the task that answers the
need (:func:`evidence_task`) in which the fastest candidate beats another by more than
``EVIDENCE_MARGIN`` (read from :mod:`labkit.guide.rules` at call time) costs the slower one
``EVIDENCE_POINTS``. Framework-free, and no framework named here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import labkit.guide.rules as in_force  # read at call time: a changed rule row changes the advice

from .. import results as labkit_results
from ..frameworks import spec
from ..frameworks.contract import TASKS
from ..sources import claims as labkit_claims
from .advice import RUNTIMES
from .questions import CANDIDATES, DISPLAY, NOT_IN_LAB
from .rules import EVIDENCE_TASK

__all__ = [
    "CLAIMED",
    "LAB",
    "MEASURED",
    "PUBLISHED",
    "Evidence",
    "Gap",
    "best",
    "comparable",
    "evidence",
    "evidence_task",
    "failures",
    "gaps",
    "is_valid",
    "load_results",
    "validity",
]

CLAIMED = "claimed by the course's source article"
PUBLISHED = "published"
MEASURED = "measured on your machine"
LAB = "course authors"


class Evidence(NamedTuple):
    frameworks: tuple[str, ...]  # the candidates it concerns
    statement: str
    source: str  # "measured on your machine on <date>", CLAIMED (where), PUBLISHED: link, LAB
    measured: bool


class Gap(NamedTuple):
    """Step 3 as a rule: a valid measurement in which ``faster`` beats ``framework`` by
    ``ratio`` (> 1 + EVIDENCE_MARGIN), which costs ``framework`` ``points``."""

    framework: str
    points: int
    ratio: float
    slower: str  # the slower candidate's best valid record, in words
    faster: str  # the fastest candidate's best valid record, in words

    def text(self) -> str:
        return (
            f"measured {self.ratio:.2f}x slower than the fastest candidate on your machine "
            f"({self.slower}, against {self.faster}; both records valid)"
        )


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


def is_valid(record: Mapping) -> bool:
    """Whether a record counts as evidence: its ``valid`` field is ``True`` (records of the
    older schema carry no such field and do not count)."""
    return labkit_results.is_valid(dict(record))


def validity(record: Mapping) -> str:
    """The record's validity in words."""
    if is_valid(record):
        return "valid"
    if "valid" not in record:
        return "no validity verdict (an older record)"
    why = record.get("invalid_reasons") or []
    why = [why] if isinstance(why, str) else list(why)
    return "invalid" + (f": {'; '.join(map(str, why))}" if why else "")


def _ips(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _setting(rec: Mapping) -> str:
    return (
        f"{rec['task']}, batch {rec['batch_size']}, {rec['image_size']} px, "
        f"{rec['precision']}, {rec['device']}"
    )


def _run_by(rec: Mapping) -> str:
    """The mode that produced a record, or the runtime's name for a runtime of exported graphs."""
    s = spec(rec["framework"])
    return s.display if s.eager is None else str(rec["mode"])


def _record(rec: Mapping) -> str:
    return (
        f"{DISPLAY.get(rec['framework'], rec['framework'])} {_run_by(rec)}, "
        f"{_ips(rec['images_per_s'])} images/s ({_setting(rec)})"
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


def _measured_evidence(fw: str, records: list[dict], label: str) -> list[Evidence]:
    out = []
    tasks = [
        t
        for t in TASKS
        if any(r.get("task") == t and r.get("framework") in RUNTIMES[fw] for r in records)
    ]
    ups = [u for u in labkit_results.speedups(records) if u["framework"] in RUNTIMES[fw]]
    for task in tasks:
        top = best(records, fw, task)
        if top is None:
            continue
        line = (
            f"best {_ips(top['images_per_s'])} images/s with {_run_by(top)} ({_setting(top)}; "
            f"{validity(top)})"
        )
        mine = [u for u in ups if u["task"] == task]
        if mine:
            u = max(mine, key=lambda u: u["speedup"])
            line += (
                f"; graph vs eager: {_run_by(u)} runs {u['speedup']:.2f}x "
                f"(95% interval {u['speedup_low']:.2f}-{u['speedup_high']:.2f}) the speed of "
                f"{u['baseline']}"
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
            model = tuple(r.get(k, v) for k, v in labkit_results.DEFAULTS.items())
            groups.setdefault((*setting, model), []).append(r)

    def rank(item):
        (size, batch, precision, _, _), recs = item
        present = sum(any(r["framework"] in RUNTIMES[fw] for r in recs) for fw in CANDIDATES)
        return present, precision == "fp32", size, batch

    return max(groups.items(), key=rank)[1] if groups else []


def evidence_task(inputs: Mapping) -> str | None:
    """The benchmark task that answers the learner's need: the priority's, else the scenario's."""
    return EVIDENCE_TASK.get(inputs["priority"] or "") or EVIDENCE_TASK.get(
        inputs["scenario"] or ""
    )


def gaps(records: list[dict], task: str | None) -> tuple[list[Gap], list[str]]:
    """Step 3: the candidates that a valid measurement shows clearly slower than the fastest,
    and notes that say what the records could and could not decide."""
    if not records or not task:
        return [], []
    ran = [r for r in labkit_results.ok(records) if r.get("task") == task]
    invalid = [r for r in ran if "valid" in r and not is_valid(r)]
    unjudged = [r for r in ran if "valid" not in r]
    notes = []
    if invalid:
        shown = "; ".join(f"{_record(r)}: {validity(r)}" for r in invalid[:3])
        notes.append(
            f"{len(invalid)} of your '{task}' records are invalid ({shown}"
            f"{'; ...' if len(invalid) > 3 else ''}): they are shown as evidence but change "
            "nothing in the ranking."
        )
    if unjudged:
        notes.append(
            f"{len(unjudged)} of your '{task}' records carry no validity verdict (they were "
            "written before labkit judged each record): they are shown as evidence but do not "
            "move the course's ranking; run the benchmark again to have them judged."
        )
    same = comparable([r for r in ran if is_valid(r)], task)
    fastest = {fw: rec for fw in CANDIDATES if (rec := best(same, fw, task)) is not None}
    if len(fastest) < 2:
        notes.append(
            f"Your results hold fewer than two frameworks measured alike and validly for the "
            f"'{task}' task, so they inform the evidence but do not change the scores."
        )
        return [], notes
    lead = max(fastest.values(), key=lambda r: r["images_per_s"])
    out = []
    for fw, rec in fastest.items():
        ratio = lead["images_per_s"] / rec["images_per_s"]
        if ratio > 1 + in_force.EVIDENCE_MARGIN:
            out.append(Gap(fw, in_force.EVIDENCE_POINTS, ratio, _record(rec), _record(lead)))
    if not out:
        notes.append(
            f"Your valid '{task}' measurements put every candidate within "
            f"{in_force.EVIDENCE_MARGIN:.0%} of the fastest ({_record(lead)}): too close to move "
            "the course's ranking."
        )
    return out, notes
