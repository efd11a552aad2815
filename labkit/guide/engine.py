"""The selection guide's engine: two voices scored from the rule tables, evidence from results.

Pure Python, no UI, no framework import, and no framework named here: every table the engine
reads is in :mod:`labkit.guide.rules` (read at call time: a changed rule row changes the advice),
:mod:`labkit.guide.questions` and :mod:`labkit.guide.advice`. :func:`recommend` adds up the
points of every rule whose condition holds for the learner's answers, once per voice:

- the **article's** ranking (``.article_ranking``, ``.article_top``) uses the article's rules
  and the decision flow's shared judgement; measurements never move it;
- the **course's** ranking (``.ranking``, ``.top``) uses the course's dated rules and the same
  shared judgement, and then step 3 (:func:`labkit.guide.evidence.gaps`): a *valid* measurement
  of the task that answers the need in which the fastest candidate beats another by more than
  ``EVIDENCE_MARGIN`` (a rule parameter in :mod:`labkit.guide.rules`) costs the slower one
  ``EVIDENCE_POINTS``. ``.moved_by`` names the measurements when they changed the course's
  order. A record counts only when its ``valid`` field is ``True``: invalid records, records of
  the older schema without the field, and missing measurements change nothing (the notes say
  which).

The evidence (``.evidence``) is the learner's own measurements where a results file exists,
otherwise the article's claims and published figures, each labelled with where it comes from.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import labkit.guide.rules as in_force  # read at call time: a changed rule row changes the advice

from ..sources.seeds import OUT_OF_REACH, OutOfReach
from .advice import (
    ALTERNATIVES,
    CONFLICTS,
    DEPLOY,
    DEVELOP,
    DISAGREEMENTS,
    OUT_OF_REACH_WHEN,
    Alternative,
    Disagreement,
)
from .evidence import MEASURED, Evidence, Gap, evidence, evidence_task, gaps, load_results
from .questions import (
    ALIASES,
    CANDIDATES,
    DEFAULT_SCALE,
    DISPLAY,
    EXPERTISE,
    HARDWARE,
    NOT_IN_LAB,
    NOT_MEASURED,
    PRIORITIES,
    SCALES,
    SCENARIOS,
    TARGETS,
)
from .render import markdown
from .rules import ARTICLE, BOTH, COURSE

__all__ = [
    "Ranked",
    "Reason",
    "Recommendation",
    "article_ranking",
    "check_inputs",
    "course_ranking",
    "recommend",
    "toolchain",
]

# ---- the answer -------------------------------------------------------------------------------


class Reason(NamedTuple):
    points: int
    text: str
    source: str  # the rule's source (article part, SOURCES keys) or MEASURED


class Ranked(NamedTuple):
    framework: str
    score: int
    reasons: tuple[Reason, ...]


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
    #: systems the answers bring up that this lab cannot run (labkit.sources.seeds.OUT_OF_REACH)
    out_of_reach: tuple[OutOfReach, ...] = ()

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


# ---- the two rankings ------------------------------------------------------------------------


def _reasons(inputs: Mapping, voices: tuple[str, ...]) -> dict[str, list[Reason]]:
    out: dict[str, list[Reason]] = {fw: [] for fw in CANDIDATES}
    for rule in in_force.RULES:
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
            for r in in_force.RULES
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
    alt = _alternative(inputs, ranking)

    notes = _notes(inputs, ranking, article, alt.framework) + measured_notes
    notes += _results_notes(found, moved, results)
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
        out_of_reach=tuple(
            e
            for e in OUT_OF_REACH
            if any(_holds(f, v, inputs) for f, v in OUT_OF_REACH_WHEN.get(e.key, ()))
        ),
    )


def _alternative(inputs: Mapping, ranking: tuple[Ranked, ...]) -> Alternative:
    """The scenario's first alternative that is not the top recommendation, else the runner-up."""
    top = ranking[0].framework
    alt = next(
        (a for a in ALTERNATIVES.get(inputs["scenario"] or "", ()) if a.framework != top), None
    )
    if alt is None:
        nxt = ranking[1]
        alt = Alternative(nxt.framework, f"it scores next ({nxt.score} points)")
    return alt


def _results_notes(found: list[Gap], moved: bool, results: Any) -> list[str]:
    """What the learner's results did not change, and a results file not written yet."""
    notes = []
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
    return notes


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
    if inputs["hardware"] in NOT_MEASURED:
        notes.append(NOT_MEASURED[inputs["hardware"]] + ".")
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
