"""The selection guide's engine: two voices scored from the rule tables, evidence from results.

Pure Python, no UI, no framework import, and no framework named here: every table the engine
reads is in :mod:`labkit.guide.rules`. :func:`recommend` adds up the points of every rule whose
condition holds for the learner's answers, once per voice:

- the **article's** ranking (``.article_ranking``, ``.article_top``) uses the article's rules
  and the decision flow's shared judgement; measurements never move it;
- the **course's** ranking (``.ranking``, ``.top``) uses the course's dated rules and the same
  shared judgement, and then step 3: a *valid* measurement of the task that answers the need in
  which the fastest candidate beats another by more than ``EVIDENCE_MARGIN`` (a rule parameter
  in :mod:`labkit.guide.rules`) costs the slower one ``EVIDENCE_POINTS``. ``.moved_by`` names
  the measurements when they changed the course's order. A record counts only when its ``valid`` field is ``True``: invalid
  records, records of the older schema without the field, and missing measurements change
  nothing (the notes say which).

The evidence (``.evidence``) is the learner's own measurements where a results file exists,
otherwise the article's claims and published figures, each labelled with where it comes from.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import labkit.guide.rules as tables  # read at call time: a changed rule row changes the advice

from .. import results as labkit_results
from ..bench import TASKS
from ..frameworks import spec
from ..sources import claims as labkit_claims
from .render import markdown
from .rules import (
    ALIASES,
    ALTERNATIVES,
    ARTICLE,
    BOTH,
    CANDIDATES,
    CONFLICTS,
    COURSE,
    DEFAULT_SCALE,
    DEPLOY,
    DEVELOP,
    DISAGREEMENTS,
    DISPLAY,
    EVIDENCE_TASK,
    EXPERTISE,
    HARDWARE,
    NOT_IN_LAB,
    PRIORITIES,
    RUNTIMES,
    SCALES,
    SCENARIOS,
    TARGETS,
    Alternative,
    Disagreement,
)

CLAIMED = "claimed by the course's source article"
PUBLISHED = "published"
MEASURED = "measured on your machine"
LAB = "course authors"

# ---- the answer -------------------------------------------------------------------------------


class Reason(NamedTuple):
    points: int
    text: str
    source: str  # the rule's source (article part, SOURCES keys) or MEASURED


class Ranked(NamedTuple):
    framework: str
    score: int
    reasons: tuple[Reason, ...]


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


@dataclass(frozen=True)
class Recommendation:
    inputs: dict[str, Any]
    ranking: tuple[Ranked, ...]  # the course's, today
    alternative: str
    alternative_when: str
    toolchain: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    measured: bool = False  # whether the learner's own results were read
    task: str | None = None  # the benchmark task that answers the need (EVIDENCE_TASK)
    article_ranking: tuple[Ranked, ...] = ()  # the source article's
    moved_by: tuple[Gap, ...] = ()  # the measurements that changed the course's order
    gaps: tuple[Gap, ...] = ()  # every measured gap that cost points (moved the order or not)
    disagreements: tuple[Disagreement, ...] = ()  # where the voices part, for these answers

    @property
    def top(self) -> str:
        """What the course recommends today."""
        return self.ranking[0].framework

    @property
    def article_top(self) -> str:
        """What the source article recommends."""
        return self.article_ranking[0].framework

    @property
    def candidates(self) -> tuple[str, ...]:
        """Two or three frameworks worth a live benchmark (step 3): the lab can run these."""
        picks = [r.framework for r in self.ranking if r.framework not in NOT_IN_LAB]
        ordered = [f for f in (self.top, self.alternative) if f in picks]
        return tuple(dict.fromkeys(ordered + picks))[:3]

    def score(self, framework: str, voice: str = COURSE) -> int:
        ranking = self.article_ranking if voice == ARTICLE else self.ranking
        return next(r.score for r in ranking if r.framework == framework)

    def to_markdown(self) -> str:
        return markdown(self)

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


# ---- results and evidence ---------------------------------------------------------------------


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
        if ratio > 1 + tables.EVIDENCE_MARGIN:
            out.append(Gap(fw, tables.EVIDENCE_POINTS, ratio, _record(rec), _record(lead)))
    if not out:
        notes.append(
            f"Your valid '{task}' measurements put every candidate within "
            f"{tables.EVIDENCE_MARGIN:.0%} of the fastest ({_record(lead)}): too close to move "
            "the course's ranking."
        )
    return out, notes


# ---- the two rankings ------------------------------------------------------------------------


def _reasons(inputs: Mapping, voices: tuple[str, ...]) -> dict[str, list[Reason]]:
    out: dict[str, list[Reason]] = {fw: [] for fw in CANDIDATES}
    for rule in tables.RULES:
        if rule.voice in voices and _holds(rule.field, rule.value, inputs):
            out[rule.framework].append(Reason(rule.points, rule.reason, rule.source))
    return out


def _rank(reasons: Mapping[str, list[Reason]], tiebreak) -> tuple[Ranked, ...]:
    ranked = [Ranked(fw, sum(r.points for r in rs), tuple(rs)) for fw, rs in reasons.items()]
    return tuple(sorted(ranked, key=lambda r: (-r.score, *tiebreak(r.framework))))


def article_ranking(inputs: Mapping) -> tuple[Ranked, ...]:
    """The article's ranking: its rules and the shared judgement; ties go to the framework with
    more scenario points, then to the default order."""

    def scenario_points(fw: str) -> int:
        return sum(
            r.points
            for r in tables.RULES
            if r.voice == ARTICLE
            and r.field == "scenario"
            and r.framework == fw
            and r.value == inputs["scenario"]
        )

    return _rank(
        _reasons(inputs, (ARTICLE, BOTH)),
        lambda fw: (-scenario_points(fw), CANDIDATES.index(fw)),
    )


def course_ranking(
    inputs: Mapping, article: tuple[Ranked, ...], measured: Iterable[Gap] = ()
) -> tuple[Ranked, ...]:
    """The course's ranking: its dated rules, the shared judgement and the measured gaps; where
    the course scores two frameworks level it keeps the article's order."""
    reasons = _reasons(inputs, (COURSE, BOTH))
    for g in measured:
        reasons[g.framework].append(Reason(g.points, g.text(), MEASURED))
    order = [r.framework for r in article]
    return _rank(reasons, lambda fw: (order.index(fw),))


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
    """Rank the candidate frameworks for a project described by the answers, in both voices.

    ``scenario``: one of :data:`SCENARIOS` (None: no core need given); ``expertise``: one of
    :data:`EXPERTISE` or None; ``targets``: a subset of :data:`TARGETS`; ``hardware``: one of
    :data:`HARDWARE`; ``priority``: one of :data:`PRIORITIES` or None; ``scale``: one of
    :data:`SCALES`; ``results``: a results file path (JSONL from ``python -m labkit bench``) or
    loaded results. Unknown values raise ``ValueError`` naming the valid ones; missing or
    contradictory answers still get an answer, with notes that say what the guide assumed.
    ``.top`` is the course's recommendation today, ``.article_top`` the article's; ``.moved_by``
    names the measurements that changed the course's order (empty when none did).
    """
    inputs = check_inputs(scenario, expertise, targets, hardware, priority, scale)
    records, label = load_results(results)
    task = evidence_task(inputs)
    found, measured_notes = gaps(records, task)

    article = article_ranking(inputs)
    unmeasured = course_ranking(inputs, article)
    ranking = course_ranking(inputs, article, found)
    moved = [r.framework for r in ranking] != [r.framework for r in unmeasured]
    top = ranking[0].framework

    alt = next(
        (a for a in ALTERNATIVES.get(inputs["scenario"] or "", ()) if a.framework != top), None
    )
    if alt is None:
        nxt = ranking[1]
        alt = Alternative(nxt.framework, f"it scores next ({nxt.score} points)")

    notes = _notes(inputs, ranking, article, alt.framework)
    notes += measured_notes
    if found and not moved:
        notes.append(
            "Your measurements cost "
            + ", ".join(f"{DISPLAY[g.framework]} {g.points:+d}" for g in found)
            + " points, but the course's order stands."
        )
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
        article_ranking=article,
        moved_by=tuple(found) if moved else (),
        gaps=tuple(found),
        disagreements=tuple(
            d for d in DISAGREEMENTS if any(_holds(f, v, inputs) for f, v in d.when)
        ),
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
    article: tuple[Ranked, ...],
    alternative: str,
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
        first, second = ranking[0].framework, ranking[1].framework
        notes.append(
            f"The course scores {DISPLAY[first]} and {DISPLAY[second]} level (they tie at "
            f"{ranking[0].score} points): it keeps the article's order between them. A valid "
            "measurement of your own (step 3) that separates them decides instead."
        )
    for fw in dict.fromkeys([ranking[0].framework, alternative]):
        if fw in NOT_IN_LAB:
            notes.append(NOT_IN_LAB[fw] + ".")
    return notes
