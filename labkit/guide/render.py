"""The guide as Markdown: a recommendation page in two voices, and the rules file as tables.

Every sentence that names a framework's place is written from the scores beside it (a tie is
printed as a tie); the rules file's texts state facts and conditions, never an order.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..sources import seeds
from ..util import tables as md
from .rules import ARTICLE, COURSE, VOICES, Tables, tables

__all__ = [
    "decision_flow_markdown",
    "describe",
    "markdown",
]


def describe(inputs: Mapping, t: Tables) -> str:
    """The learner's answers, in words."""
    a = t.answers
    return (f"scenario: {t.scenarios.get(inputs['scenario'], 'not given')}; team knows: "
            f"{t.expertise.get(inputs['expertise'], 'no framework yet')}; targets: "
            f"{', '.join(inputs['targets']) or 'not given'}; hardware: "
            f"{a['hardware'][inputs['hardware']]}; scale: {a['scale'][inputs['scale']]}; "
            f"priority: {a['priority'].get(inputs['priority'], 'not given')}")  # fmt: skip


def _group(ranking, t: Tables, rank: int = 1) -> str:
    """A rank in words: 'PyTorch (4 points)' or 'a tie: A and B (3 points each)'."""
    rows = [r for r in ranking if r.rank == rank]
    if len(rows) == 1:
        return f"{t.display[rows[0].framework]} ({rows[0].score} points)"
    return f"a tie: {t.names([r.framework for r in rows])} ({rows[0].score} points each)"


def _refs(keys, t: Tables, numbers: dict[str, int]) -> str:
    """Numbered references to the course's dated sources; the article's parts in words."""
    return " ".join(f"[{numbers.setdefault(k, len(numbers) + 1)}]" if k in t.sources
                    else f"({t.parts[k]})" for k in keys)  # fmt: skip


def _reasons(r, t: Tables, numbers: dict[str, int]) -> str:
    parts = [f"{x.points:+d} {x.text} {_refs(x.cite, t, numbers)}".rstrip() for x in r.reasons]
    parts += [f"(already counted as {x.basis}: {x.text})" for x in r.counted]
    return "; ".join(parts) or "no rule applies"


def _head(rec, t: Tables) -> list[str]:
    agree = set(rec.leaders) == set(rec.article_leaders)
    lines = [
        f"## Recommended: {_group(rec.ranking, t)}", "",
        f"**{VOICES[COURSE].capitalize()}:** {_group(rec.ranking, t)}. "
        f"**{VOICES[ARTICLE].capitalize()}:** {_group(rec.article_ranking, t)}. "
        + ("The two voices agree." if agree else "The two voices differ: see below."), "",
        f"*Your project* - {describe(rec.inputs, t)}.", "", "**Toolchain**", "",
        *(f"- {step}" for step in rec.toolchain),
    ]  # fmt: skip
    nxt = [r for r in rec.ranking if r.framework in rec.alternatives]
    if nxt:
        why = "; ".join(f"{t.display[r.framework]}: " + "; ".join(x.text for x in r.reasons)
                        for r in nxt)  # fmt: skip
        lines += ["", f"**Next in the course's ranking:** {_group(rec.ranking, t, nxt[0].rank)}: {why}."]  # fmt: skip
    return lines


def _rankings(rec, t: Tables, numbers: dict[str, int]) -> list[str]:
    """Both voices in one table: rank and points in each, every reason with its source."""
    article = {r.framework: r for r in rec.article_ranking}
    rows = [[t.display[c.framework], c.rank, c.score, _reasons(c, t, numbers),
             article[c.framework].rank, article[c.framework].score,
             _reasons(article[c.framework], t, numbers)] for c in rec.ranking]  # fmt: skip
    head = ["framework", "course rank", "points", "the course's reasons [sources below]",
            "article rank", "points", "the article's reasons"]  # fmt: skip
    return ["", "### The two voices side by side", "",
            "Equal points share a rank: a tie is a tie. Each basis counts once per framework.",
            "", md.markdown(head, rows, "lrrlrrl")]  # fmt: skip


def _differences(rec, t: Tables, numbers: dict[str, int]) -> list[str]:
    lines = ["", "### Where the voices differ", ""] if rec.disagreements else []
    shown = [r.framework for r in rec.ranking if r.score or rec.score(r.framework, ARTICLE)]
    scores = ", ".join(f"{t.display[f]} {rec.score(f, ARTICLE)} -> {rec.score(f)}" for f in shown)
    for d in rec.disagreements:
        lines.append(f"- **{d.topic.capitalize()}.** The article: {d.article}. The course today: "
                     f"{d.course}. Why: {seeds.words(d.why)} "
                     f"{_refs(d.cite, t, numbers)}.")  # fmt: skip
    return lines + ([f"- Points for your answers, article -> course: {scores}."] if lines else [])


def _changed(rec, t: Tables) -> list[str]:
    lines = ["", "### What your measurements changed (step 3)", ""]
    verb = "moved the course's ranking" if rec.moved_by else "the order did not change"
    lines += [f"- {t.display[g.framework]} {g.points:+d}, {g.text()}; {verb}." for g in rec.gaps]
    why = "see the notes" if rec.measured else "no results file yet"
    nothing = (f"- Nothing ({why}). Only valid records count; invalid records, records without "
               "a validity verdict and missing measurements change nothing.")  # fmt: skip
    return lines if rec.gaps else [*lines, nothing]


def _evidence(rec, t: Tables) -> list[str]:
    lines = ["", "### Notes", "", *(f"- {n}" for n in rec.notes)] if rec.notes else []
    lines += ["", "### Evidence", ""]
    lines += [f"- **{t.names(e.frameworks)}**: {md.escape(e.statement)}"
              + (f" - *{e.source}*" if e.source else "") for e in rec.evidence]  # fmt: skip
    if rec.out_of_reach:
        rows = [[e.name, e.needs, f"`{md.escape(e.command)}`", f"{e.claim} ({e.where})"]
                for e in rec.out_of_reach]  # fmt: skip
        head = ["system", "why this lab cannot run it", "what would run it", "the articles' figure"]
        lines += ["", "### What this lab cannot run here", "", md.markdown(head, rows)]
    return lines


def markdown(rec) -> str:
    """A ``Recommendation`` as Markdown, both voices, every point with its source."""
    t, numbers = rec.tables, {}
    lines = _head(rec, t) + _rankings(rec, t, numbers) + _differences(rec, t, numbers)
    lines += _changed(rec, t) + _evidence(rec, t)
    if numbers:
        lines += ["", "### Sources of the course's rules", ""]
        lines += [f"{n}. {t.cite(k)} ({t.sources[k].dated})" for k, n in numbers.items()]
    return "\n".join(lines) + "\n"


def decision_flow_markdown(t: Tables | None = None) -> str:
    t = t or tables()
    return "\n".join(f"{i}. **{s.title}.** {s.question}" for i, s in enumerate(t.steps, 1)) + "\n"
