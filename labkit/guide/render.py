"""The selection guide as Markdown: a recommendation page in two voices, and the rule tables.

Framework-free and without framework names: everything named comes from
:mod:`labkit.guide.rules`. ``markdown(rec)`` renders a ``labkit.guide.Recommendation``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import labkit.guide.rules as tables  # read at call time: the table shows the rows in force

from ..sources import claims as labkit_claims
from ..util.tables import escape
from .rules import (
    ALTERNATIVES,
    ARTICLE,
    ARTICLE_NAME,
    BOTH,
    CANDIDATES,
    CONFLICTS,
    COURSE,
    DECISION_FLOW,
    DISAGREEMENTS,
    DISPLAY,
    EVIDENCE_TASK,
    EXPERTISE,
    HARDWARE,
    PRIORITIES,
    SCALES,
    SCENARIOS,
    SOURCES,
    VOICES,
    Disagreement,
    Rule,
)

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
    """How far apart the article's own single-A100 training figures are (labkit.claims)."""
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
        keys = source_keys(source)
        refs = "".join(f"[{numbers.setdefault(k, len(numbers) + 1)}]" for k in keys)
        tail = f" {refs}" if refs else (f" ({source})" if source else "")
        parts.append(f"{points:+d} {escape(text)}{tail}")
    return "; ".join(parts) or "no rule applies"


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


def markdown(rec) -> str:
    """The recommendation (a ``labkit.guide.Recommendation``) as Markdown, both voices."""
    top, art = rec.ranking[0], rec.article_ranking[0]
    agree = rec.top == rec.article_top
    numbers: dict[str, int] = {}
    lines = [
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
        "",
        "### The two voices side by side",
        "",
        f"| rank | {VOICES[ARTICLE]} | points | {VOICES[COURSE]} | points |",
        "|---:|---|---:|---|---:|",
    ]
    for i, (a, c) in enumerate(zip(rec.article_ranking, rec.ranking), 1):
        lines.append(
            f"| {i} | {DISPLAY[a.framework]} | {a.score} | {DISPLAY[c.framework]} | {c.score} |"
        )
    lines += [
        "",
        f"### Ranking: {VOICES[COURSE]}",
        "",
        "| rank | framework | score | reasons (points) [sources below] |",
        "|---:|---|---:|---|",
    ]
    for i, r in enumerate(rec.ranking, 1):
        lines.append(f"| {i} | {DISPLAY[r.framework]} | {r.score} | {_reasons(r, numbers)} |")
    lines += [
        "",
        f"### Ranking: {VOICES[ARTICLE]}",
        "",
        "| rank | framework | score | reasons (points) (where the article says it) |",
        "|---:|---|---:|---|",
    ]
    for i, r in enumerate(rec.article_ranking, 1):
        lines.append(f"| {i} | {DISPLAY[r.framework]} | {r.score} | {_reasons(r, numbers)} |")
    if not agree or rec.disagreements:
        lines += ["", "### Where the voices differ", ""]
        if not agree:
            lines += _differ(rec)
        for d in rec.disagreements:
            refs = "".join(f"[{numbers.setdefault(k, len(numbers) + 1)}]" for k in d.sources)
            lines.append(
                f"- **{d.topic.capitalize()}.** The article: {d.article}. The course today: "
                f"{d.course}. Why: {why(d)} {refs}"
            )
    lines += ["", "### What your measurements changed (step 3)", ""]
    if rec.moved_by:
        lines += [
            f"- **Moved the course's ranking**: {DISPLAY[g.framework]} {g.points:+d}, {g.text()}."
            for g in rec.moved_by
        ]
    elif rec.gaps:
        lines += [
            f"- {DISPLAY[g.framework]} {g.points:+d}, {g.text()}; the order did not change."
            for g in rec.gaps
        ]
    else:
        lines.append(
            "- Nothing: "
            + (
                "see the notes for what your results could not decide."
                if rec.measured
                else "no results file yet."
            )
            + " Only valid records count (their `valid` field is true); records without a "
            "validity verdict (the older schema), invalid records and missing measurements "
            "change nothing."
        )
    if rec.notes:
        lines += ["", "### Notes", "", *(f"- {n}" for n in rec.notes)]
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
    if numbers:
        lines += ["", "### Sources of the course's rules", ""]
        lines += [
            f"{n}. [{SOURCES[k].title}]({SOURCES[k].url}), {SOURCES[k].date} ({SOURCES[k].dated})"
            for k, n in sorted(numbers.items(), key=lambda kv: kv[1])
        ]
    return "\n".join(lines) + "\n"


# ---- the rule tables --------------------------------------------------------------------------


def rules_markdown() -> str:
    """Every table of the guide as Markdown: what an instructor reads before changing a rule."""
    lines = [
        "### Rules: each row adds points to one framework when its condition holds",
        "",
        (
            f"*article*: {ARTICLE_NAME}, cited by part. *course*: what the course recommends "
            "today, each row with its dated source. *both*: the decision flow's judgement that the "
            "course adopts (it states no fact that could date)."
        ),
        "",
        "| voice | input | value | framework | points | reason | source |",
        "|---|---|---|---|---:|---|---|",
    ]
    lines += [
        f"| {_voice_of(r)} | {r.field} | {r.value} | {DISPLAY[r.framework]} | {r.points:+d} "
        f"| {escape(r.reason)} | {escape(cite(r.source))} |"
        for r in tables.RULES
    ]
    lines += [
        "",
        "### Where the course departs from the article, and why",
        "",
        "| topic | the article | the course today | why | sources |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {d.topic} | {escape(d.article)} | {escape(d.course)} | {escape(why(d))} "
        f"| {escape(cite('+'.join(d.sources)))} |"
        for d in DISAGREEMENTS
    ]
    lines += [
        "",
        "### Alternatives: the first one that is not the top recommendation is shown",
        "",
        "| scenario | alternative | prefer it when |",
        "|---|---|---|",
    ]
    lines += [
        f"| {s} | {DISPLAY[a.framework]} | {escape(a.when)} |"
        for s, alts in ALTERNATIVES.items()
        for a in alts
    ]
    lines += [
        "",
        "### Your own benchmark (step 3): valid measurements move the course's ranking",
        "",
        (
            f"On the benchmark task that answers the need, a candidate whose best valid images/s "
            f"trail the fastest candidate's by more than {tables.EVIDENCE_MARGIN:.0%} (the same "
            f"image size, batch, precision and device) gets {tables.EVIDENCE_POINTS:+d} points in "
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
        "",
        "### Conflicting answers and what the guide says",
        "",
        "| when | note |",
        "|---|---|",
    ]
    lines += [
        f"| {' and '.join(f'{f}={v}' for f, v in c.when)} | {escape(c.message)} |"
        for c in CONFLICTS
    ]
    return "\n".join(lines) + "\n"


def course_sources_markdown() -> str:
    """The course's sources as a list: title, link, date and where the date comes from."""
    used = {k for r in tables.RULES for k in source_keys(r.source)}
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
