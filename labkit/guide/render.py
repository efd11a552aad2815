"""The selection guide as Markdown: a recommendation page in two voices, and the rule tables.

Framework-free and without framework names: everything named comes from the guide's tables
(:mod:`labkit.guide.rules`, :mod:`~labkit.guide.questions`, :mod:`~labkit.guide.advice`,
:mod:`~labkit.guide.citations`). ``markdown(rec)`` renders a ``labkit.guide.Recommendation``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import labkit.guide.rules as in_force  # read at call time: the table shows the rows in force

from ..sources import claims as labkit_claims
from ..util import tables
from ..util.tables import escape
from .advice import ALTERNATIVES, CONFLICTS, DISAGREEMENTS, Disagreement
from .citations import ARTICLE_NAME, SOURCES
from .questions import (
    CANDIDATES,
    DECISION_FLOW,
    DISPLAY,
    EXPERTISE,
    HARDWARE,
    PRIORITIES,
    SCALES,
    SCENARIOS,
)
from .rules import ARTICLE, BOTH, COURSE, EVIDENCE_TASK, VOICES, Rule

__all__ = [
    "cite",
    "course_sources_markdown",
    "decision_flow_markdown",
    "describe",
    "markdown",
    "rules_markdown",
    "seed_spread",
    "source_keys",
    "why",
]

# ---- small pieces -----------------------------------------------------------------------------


def _label(table: Mapping[str, str], key: str | None, none: str = "not given") -> str:
    return table[key] if key else none


def describe(inputs: Mapping[str, Any]) -> str:
    """The learner's answers, in words."""
    targets = ", ".join(inputs["targets"]) if inputs["targets"] else "not given"
    return (
        f"scenario: {_label(SCENARIOS, inputs['scenario'])}; "
        f"team knows: {_label(EXPERTISE, inputs['expertise'], 'no framework yet')}; "
        f"targets: {targets}; hardware: {HARDWARE[inputs['hardware']]}; "
        f"scale: {SCALES[inputs['scale']]}; "
        f"priority: {_label(PRIORITIES, inputs['priority'])}"
    )


def source_keys(source: str) -> tuple[str, ...]:
    """The :data:`SOURCES` keys a course rule cites (empty for the article's parts)."""
    keys = tuple(source.split("+"))
    return keys if all(k in SOURCES for k in keys) else ()


def cite(source: str) -> str:
    """A rule's source in words: the dated pages of a course rule, else the article's part."""
    keys = source_keys(source)
    if not keys:
        return source
    return "; ".join(f"[{SOURCES[k].title}]({SOURCES[k].url}), {SOURCES[k].date}" for k in keys)


def seed_spread() -> str:
    """How far apart the article's own single-A100 training figures are (labkit.sources.claims)."""
    speeds = [sps for _, sps, _ in labkit_claims.SEED_TRAINING]
    return f"{max(speeds) / min(speeds) - 1:.0%}"


def why(d: Disagreement) -> str:
    """A disagreement's reason, with the figures it quotes computed from the article's tables."""
    return d.why.format(seed_spread=seed_spread())


def _voice_of(rule: Rule) -> str:
    return {ARTICLE: "article", COURSE: "course", BOTH: "both"}[rule.voice]


# ---- the recommendation page ------------------------------------------------------------------


def _reasons(ranked, numbers: dict[str, int]) -> str:
    """One ranking row's reasons; course sources become numbered references."""
    parts = []
    for points, text, source in ranked.reasons:
        tail = f" {_refs(source_keys(source), numbers)}" if source_keys(source) else ""
        parts.append(f"{points:+d} {text}" + (tail or (f" ({source})" if source else "")))
    return "; ".join(parts) or "no rule applies"


def _refs(keys, numbers: dict[str, int]) -> str:
    """Numbered references to :data:`SOURCES` keys, numbering new keys in order of first use."""
    return "".join(f"[{numbers.setdefault(k, len(numbers) + 1)}]" for k in keys)


def _by(ranking, framework: str):
    return next(r for r in ranking if r.framework == framework)


def _differ(rec) -> list[str]:
    """Why the two voices' top recommendations differ, from the rules each voice applied."""
    art, cur = rec.article_top, rec.top
    lines = [
        (
            f"- **The article recommends {DISPLAY[art]}, the course today {DISPLAY[cur]}.** "
            f"Article: {DISPLAY[art]} {rec.score(art, ARTICLE)} vs {DISPLAY[cur]} "
            f"{rec.score(cur, ARTICLE)} points; course: {DISPLAY[cur]} {rec.score(cur)} vs "
            f"{DISPLAY[art]} {rec.score(art)} points:"
        )
    ]
    for fw in (art, cur):
        for voice, ranking in ((ARTICLE, rec.article_ranking), (COURSE, rec.ranking)):
            r = _by(ranking, fw)
            why_ = "; ".join(f"{p:+d} {t}" for p, t, _ in r.reasons) or "no rule applies"
            lines.append(f"  - {DISPLAY[fw]}, {VOICES[voice]}: {r.score} points ({why_})")
    return lines


def _summary(rec) -> list[str]:
    """The page's head: both voices' top picks, the project, the toolchain, the alternative."""
    top, art = rec.ranking[0], rec.article_ranking[0]
    agree = rec.top == rec.article_top
    return [
        f"## Recommended: {DISPLAY[top.framework]} ({top.score} points)",
        "",
        (
            f"**{VOICES[COURSE].capitalize()}:** {DISPLAY[top.framework]} "
            f"({top.score} points). **{VOICES[ARTICLE].capitalize()}:** "
            f"{DISPLAY[art.framework]} ({art.score} points). "
            + (
                "The two voices agree."
                if agree
                else "The two voices disagree: see *Where the voices differ*."
            )
        ),
        "",
        f"*Your project* - {describe(rec.inputs)}.",
        "",
        "**Toolchain**",
        "",
        *(f"- {step}" for step in rec.toolchain),
        "",
        (
            f"**Alternative: {DISPLAY[rec.alternative]}** ({rec.score(rec.alternative)} points), "
            f"prefer it when {rec.alternative_when}."
        ),
    ]


def _rankings(rec, numbers: dict[str, int]) -> list[str]:
    """The two voices side by side, then each voice's ranking with every reason."""
    pairs = zip(rec.article_ranking, rec.ranking)
    side_by_side = tables.markdown(
        ["rank", VOICES[ARTICLE], "points", VOICES[COURSE], "points"],
        [
            [i, DISPLAY[a.framework], a.score, DISPLAY[c.framework], c.score]
            for i, (a, c) in enumerate(pairs, 1)
        ],
        align="rlrlr",
    )
    lines = ["", "### The two voices side by side", "", side_by_side]
    for voice, ranking, reasons in (
        (COURSE, rec.ranking, "reasons (points) [sources below]"),
        (ARTICLE, rec.article_ranking, "reasons (points) (where the article says it)"),
    ):
        rows = [
            [i, DISPLAY[r.framework], r.score, _reasons(r, numbers)]
            for i, r in enumerate(ranking, 1)
        ]
        head = ["rank", "framework", "score", reasons]
        lines += ["", f"### Ranking: {VOICES[voice]}", "", tables.markdown(head, rows, "rlr")]
    return lines


def _differences(rec, numbers: dict[str, int]) -> list[str]:
    """Where the voices differ: their top picks, and the disagreements these answers touch."""
    agree = rec.top == rec.article_top
    if agree and not rec.disagreements:
        return []
    lines = ["", "### Where the voices differ", ""]
    if not agree:
        lines += _differ(rec)
    for d in rec.disagreements:
        lines.append(
            f"- **{d.topic.capitalize()}.** The article: {d.article}. The course today: "
            f"{d.course}. Why: {why(d)} {_refs(d.sources, numbers)}"
        )
    return lines


def _changed(rec) -> list[str]:
    """Step 3: what the learner's measurements changed in the course's ranking."""
    lines = ["", "### What your measurements changed (step 3)", ""]
    if rec.moved_by:
        return lines + [
            f"- **Moved the course's ranking**: {DISPLAY[g.framework]} {g.points:+d}, {g.text()}."
            for g in rec.moved_by
        ]
    if rec.gaps:
        return lines + [
            f"- {DISPLAY[g.framework]} {g.points:+d}, {g.text()}; the order did not change."
            for g in rec.gaps
        ]
    return lines + [
        "- Nothing: "
        + (
            "see the notes for what your results could not decide."
            if rec.measured
            else "no results file yet."
        )
        + " Only valid records count (their `valid` field is true); records without a "
        "validity verdict (the older schema), invalid records and missing measurements "
        "change nothing."
    ]


def _evidence(rec) -> list[str]:
    """The notes, then the evidence, each labelled with its source."""
    lines = ["", "### Notes", "", *(f"- {n}" for n in rec.notes)] if rec.notes else []
    lines += ["", "### Evidence", ""]
    lines += [
        f"- **{', '.join(DISPLAY[f] for f in e.frameworks)}**: {escape(e.statement)} - *{e.source}*"
        for e in rec.evidence
    ]
    if not rec.measured:
        lines += [
            "",
            (
                "No results file yet: run `python -m labkit bench` (or the quick benchmark) "
                f"for {', '.join(DISPLAY[c] for c in rec.candidates)} to replace the claims "
                "with your own measurements."
            ),
        ]
    return lines


def _sources(numbers: dict[str, int]) -> list[str]:
    """The course's sources the page cited, in the order of their reference numbers."""
    if not numbers:
        return []
    return ["", "### Sources of the course's rules", ""] + [
        f"{n}. [{SOURCES[k].title}]({SOURCES[k].url}), {SOURCES[k].date} ({SOURCES[k].dated})"
        for k, n in sorted(numbers.items(), key=lambda kv: kv[1])
    ]


def markdown(rec) -> str:
    """The recommendation (a ``labkit.guide.Recommendation``) as Markdown, both voices."""
    numbers: dict[str, int] = {}  # the course's sources, numbered in order of first reference
    lines = _summary(rec) + _rankings(rec, numbers) + _differences(rec, numbers)
    lines += _changed(rec) + _evidence(rec) + _out_of_reach(rec) + _sources(numbers)
    return "\n".join(lines) + "\n"


def _out_of_reach(rec) -> list[str]:
    """The systems these answers bring up that this lab cannot run, said plainly."""
    if not rec.out_of_reach:
        return []
    rows = [
        [e.name, e.needs, f"`{escape(e.command)}`", f"{e.claim} ({e.where})"]
        for e in rec.out_of_reach
    ]
    head = ["system", "why this lab cannot run it", "what would run it", "the articles' figure"]
    return [
        "",
        "### What this lab cannot run here",
        "",
        (
            "Your answers bring these up; the lab cannot measure them, so their figures are the "
            "articles' claims, not evidence:"
        ),
        "",
        tables.markdown(head, rows),
    ]


# ---- the rule tables --------------------------------------------------------------------------


def _rule_tables() -> list[str]:
    """Every rule in force, then where the course departs from the article."""
    rule_rows = [
        [_voice_of(r), r.field, r.value, DISPLAY[r.framework], f"{r.points:+d}", r.reason]
        + [cite(r.source)]
        for r in in_force.RULES
    ]
    departures = [
        [d.topic, d.article, d.course, why(d), cite("+".join(d.sources))] for d in DISAGREEMENTS
    ]
    return [
        "### Rules: each row adds points to one framework when its condition holds",
        "",
        (
            f"*article*: {ARTICLE_NAME}, cited by part. *course*: what the course recommends "
            "today, each row with its dated source. *both*: the decision flow's judgement that the "
            "course adopts (it states no fact that could date)."
        ),
        "",
        tables.markdown(
            ["voice", "input", "value", "framework", "points", "reason", "source"],
            rule_rows,
            align="llllr",
        ),
        "",
        "### Where the course departs from the article, and why",
        "",
        tables.markdown(["topic", "the article", "the course today", "why", "sources"], departures),
    ]


def _step3_text() -> list[str]:
    """Step 3 in words: how a valid measurement moves the course's ranking, and the ties."""
    return [
        "### Your own benchmark (step 3): valid measurements move the course's ranking",
        "",
        (
            f"On the benchmark task that answers the need, a candidate whose best valid images/s "
            f"trail the fastest candidate's by more than {in_force.EVIDENCE_MARGIN:.0%} (the same "
            f"image size, batch, precision and device) gets {in_force.EVIDENCE_POINTS:+d} points in "
            "the course's voice: it clearly misses the need. Only records whose `valid` field is "
            "true count: invalid records, records without a validity verdict (the older schema) and "
            "missing measurements change nothing. The article's voice never moves. Claims and "
            "published figures are shown as evidence and never vote."
        ),
        "",
        "The benchmark task that counts: "
        + ", ".join(f"{k} -> {v}" for k, v in EVIDENCE_TASK.items())
        + " (a priority before a scenario).",
        "",
        "Ties: in the article's voice the framework with more scenario points wins, then the "
        "order " + ", ".join(DISPLAY[c] for c in CANDIDATES) + "; in the course's voice the "
        "article's order breaks a tie.",
    ]


def rules_markdown() -> str:
    """Every table of the guide as Markdown: what an instructor reads before changing a rule."""
    alternatives = [
        [s, DISPLAY[a.framework], a.when] for s, alts in ALTERNATIVES.items() for a in alts
    ]
    conflicts = [[" and ".join(f"{f}={v}" for f, v in c.when), c.message] for c in CONFLICTS]
    lines = _rule_tables() + [
        "",
        "### Alternatives: the first one that is not the top recommendation is shown",
        "",
        tables.markdown(["scenario", "alternative", "prefer it when"], alternatives),
        "",
    ]
    lines += _step3_text() + [
        "",
        "### Conflicting answers and what the guide says",
        "",
        tables.markdown(["when", "note"], conflicts),
    ]
    return "\n".join(lines) + "\n"


def course_sources_markdown() -> str:
    """The course's sources as a list: title, link, date and where the date comes from."""
    used = {k for r in in_force.RULES for k in source_keys(r.source)}
    used |= {k for d in DISAGREEMENTS for k in d.sources}
    return (
        "\n".join(
            f"- [{s.title}]({s.url}), {s.date} ({s.dated})" for k, s in SOURCES.items() if k in used
        )
        + "\n"
    )


def decision_flow_markdown() -> str:
    return (
        "\n".join(f"{i}. **{s.title}.** {s.question}" for i, s in enumerate(DECISION_FLOW, 1))
        + "\n"
    )
