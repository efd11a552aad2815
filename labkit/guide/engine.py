"""The guide's one scoring (:func:`rank`): per voice, the points of the rules whose condition
holds, each *basis* once per framework (the others listed as already counted), plus in the
course's voice step 3's points from valid measurements. Equal scores share a rank: a tie stays one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..sources import seeds
from .evidence import MEASURED, Evidence, Gap, evidence, evidence_task, gaps, load_results
from .render import markdown
from .rules import ARTICLE, BOTH, COURSE, Tables, holds, tables

__all__ = ["Ranked", "Reason", "Recommendation", "check_inputs", "rank", "recommend"]


class Reason(NamedTuple):
    points: int
    text: str
    cite: tuple[str, ...]  # keys of the rules file's sources or parts; () for a measurement
    basis: str


class Ranked(NamedTuple):
    framework: str
    score: int
    rank: int  # equal scores share a rank
    reasons: tuple[Reason, ...]
    counted: tuple[Reason, ...]  # rules that held but whose basis already counted


@dataclass(frozen=True)
class Recommendation:
    inputs: dict[str, Any]
    ranking: tuple[Ranked, ...]  # the course's, today
    article_ranking: tuple[Ranked, ...]  # the 2023 article's
    notes: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    measured: bool  # whether the learner's own results were read
    task: str | None  # the benchmark task that answers the need
    gaps: tuple[Gap, ...]  # valid measured gaps that cost points
    moved_by: tuple[Gap, ...]  # those that changed the course's order
    disagreements: tuple  # rules.Disagreement rows these answers touch
    out_of_reach: tuple  # seeds.OutOfReach rows these answers bring up
    tables: Tables

    @property
    def leaders(self) -> tuple[str, ...]:
        """The course's first rank: one framework, or several in a tie."""
        return tuple(r.framework for r in self.ranking if r.rank == 1)

    @property
    def article_leaders(self) -> tuple[str, ...]:
        return tuple(r.framework for r in self.article_ranking if r.rank == 1)

    @property
    def top(self) -> str | None:
        """What the course recommends today; None when its first rank is a tie."""
        return self.leaders[0] if len(self.leaders) == 1 else None

    @property
    def alternatives(self) -> tuple[str, ...]:
        """The course's second rank (the frameworks that score next), if any scores above 0."""
        nxt = [r for r in self.ranking if r.rank > 1]
        return tuple(r.framework for r in nxt if r.score == nxt[0].score > 0) if nxt else ()

    @property
    def toolchain(self) -> tuple[str, ...]:
        """How to develop, train and deploy with each leader: one line per target."""
        out = []
        for fw in self.leaders:
            chain = self.tables.toolchain[fw]
            name = f"{self.tables.display[fw]}: " if len(self.leaders) > 1 else ""
            out.append(f"{name}develop and train: {chain['develop']}")
            out += [f"{name}{t}: {chain[t]}" for t in self.inputs["targets"] or ("server",)]
        return tuple(out)

    def score(self, framework: str, voice: str = COURSE) -> int:
        ranking = self.article_ranking if voice == ARTICLE else self.ranking
        return next(r.score for r in ranking if r.framework == framework)

    def to_markdown(self) -> str:
        return markdown(self)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def _one(name: str, value: Any, valid: Mapping[str, str], t: Tables) -> str | None:
    """``value`` in canonical form, None when not given; an unknown one raises ``ValueError``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, not {type(value).__name__}: valid values "
                         f"are {', '.join(valid)}")  # fmt: skip
    key = value.strip().lower().replace("-", "_").replace(" ", "_")
    key = t.aliases.get(key, key)
    if key and key not in valid:
        raise ValueError(f"unknown {name} {value!r}: valid values are {', '.join(valid)}")
    return key or None


def check_inputs(scenario=None, expertise=None, targets=(), hardware=None, priority=None,
                 scale=None, rules: str | os.PathLike | None = None) -> dict:  # fmt: skip
    """The answers in canonical form; an unknown value raises ``ValueError`` naming the valid
    ones. Missing answers are fine; hardware and scale fall back to the rules file's defaults."""
    t = tables(rules)
    valid = {"scenario": t.scenarios, "expertise": t.expertise, **t.answers}
    given = {"scenario": scenario, "expertise": expertise, "hardware": hardware,
             "priority": priority, "scale": scale}  # fmt: skip
    out = {k: _one(k, v, valid[k], t) or t.defaults.get(k) for k, v in given.items()}
    items = [targets] if isinstance(targets, str) else list(targets or ())
    chosen = {_one("target", v, t.answers["targets"], t) for v in items}
    return {**out, "targets": tuple(x for x in t.answers["targets"] if x in chosen)}


def rank(inputs: Mapping, voice: str, t: Tables, measured: Iterable[Gap] = ()) -> tuple[Ranked, ...]:  # fmt: skip
    """One voice's ranking: each basis once per framework, equal scores sharing a rank (listed
    in the rules file's candidate order, which decides nothing)."""
    held: dict[str, dict[str, list[Reason]]] = {fw: {} for fw in t.candidates}
    for r in t.rules:
        if r.voice in (voice, BOTH) and holds(r.field, r.value, inputs):
            reason = Reason(r.points, r.reason, r.cite, r.basis)
            held[r.framework].setdefault(r.basis, []).append(reason)
    for g in measured if voice == COURSE else ():
        held[g.framework].setdefault(MEASURED, []).append(Reason(g.points, g.text(), (), MEASURED))
    rows = []
    for fw, bases in held.items():
        best = [max(rs, key=lambda r: abs(r.points)) for rs in bases.values()]
        rest = [r for rs in bases.values() for r in rs if r not in best]
        rows.append((fw, sum(r.points for r in best), tuple(best), tuple(rest)))
    scores = sorted({s for _, s, _, _ in rows}, reverse=True)
    firsts = {s: 1 + sum(1 for _, x, _, _ in rows if x > s) for s in scores}
    ranked = [Ranked(fw, s, firsts[s], best, rest) for fw, s, best, rest in rows]
    return tuple(sorted(ranked, key=lambda r: r.rank))


def _any(when, inputs: Mapping) -> bool:
    return any(holds(f, v, inputs) for f, v in when)


def recommend(scenario=None, expertise=None, targets=(), hardware=None, priority=None,
              results=None, scale=None, rules: str | os.PathLike | None = None) -> Recommendation:  # fmt: skip
    """Both voices' rankings for the answers; ``results``: a results file or records, ``rules``:
    another rules file. ``.leaders`` is the course's first rank (``.top`` if one framework)."""
    t = tables(rules)
    inputs = check_inputs(scenario, expertise, targets, hardware, priority, scale, rules)
    records, label = load_results(results)
    task = evidence_task(inputs, t)
    found, notes = gaps(records, task, t)
    unmeasured = rank(inputs, COURSE, t)
    ranking = rank(inputs, COURSE, t, found)
    moved = [(r.framework, r.rank) for r in ranking] != [(r.framework, r.rank) for r in unmeasured]
    shown = [r.framework for r in ranking if r.rank <= 2][:4]
    return Recommendation(
        inputs={**inputs, "results": label or None},
        ranking=ranking,
        article_ranking=rank(inputs, ARTICLE, t),
        notes=tuple(_notes(inputs, ranking, t) + notes + _results_notes(found, moved, results, t)),
        evidence=tuple(evidence(shown, records, label, t)),
        measured=bool(records),
        task=task,
        gaps=tuple(found),
        moved_by=tuple(found) if moved else (),
        disagreements=tuple(d for d in t.disagreements if _any(d.when, inputs)),
        out_of_reach=tuple(
            e for e in seeds.OUT_OF_REACH if _any(t.out_of_reach_when.get(e.key, ()), inputs)
        ),
        tables=t,
    )


def _notes(inputs: Mapping, ranking: tuple[Ranked, ...], t: Tables) -> list[str]:
    say = t.notes
    notes = [note for when, note in t.conflicts if all(holds(f, v, inputs) for f, v in when)]
    notes += [say["no_scenario"]] if inputs["scenario"] is None else []
    notes += [] if inputs["targets"] else [say["no_targets"]]
    if what := t.unmeasured.get(inputs["hardware"]):
        notes.append(say["unmeasured"].format(what=what))
    leaders = [r.framework for r in ranking if r.rank == 1]
    if len(leaders) > 1:
        level = say["all_level" if len(leaders) == len(ranking) else "tie"]
        notes.append(level.format(names=t.names(leaders), score=ranking[0].score))
    shown = dict.fromkeys(r.framework for r in ranking if r.rank <= 2 and r.score > 0)
    notes += [say["outside_lab"].format(name=t.display[f]) for f in shown if f in t.outside_lab]
    return notes


def _results_notes(found: list[Gap], moved: bool, results: Any, t: Tables) -> list[str]:
    notes = []
    if found and not moved:
        points = ", ".join(f"{t.display[g.framework]} {g.points:+d}" for g in found)
        notes.append(t.notes["order_stands"].format(points=points))
    if isinstance(results, (str, os.PathLike)) and not Path(results).exists():
        notes.append(t.notes["no_results"].format(path=results))
    return notes
