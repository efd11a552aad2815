"""The rules file (``labkit/data/guide.toml``: every answer, rule, dated source, disagreement,
note and toolchain) read into typed tables, again whenever it changes (:func:`tables`).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace as Row
from typing import NamedTuple

from ..frameworks import specs
from ..sources import seeds

# fmt: off
__all__ = [
    "ARTICLE", "BOTH", "COURSE", "RULES_FILE", "VOICES", "Rule", "Step",
    "Tables", "holds", "tables",
]
# fmt: on

RULES_FILE = Path(__file__).resolve().parents[1] / "data" / "guide.toml"
ARTICLE, COURSE, BOTH = "article", "course", "both"
VOICES = {ARTICLE: "what the article recommends (2023)", COURSE: "what the course recommends today"}


class Rule(NamedTuple):
    """``framework`` gets ``points`` in ``voice`` when answer ``field`` is (or holds) ``value``."""

    voice: str
    field: str
    value: str
    framework: str
    points: int
    basis: str  # what it rewards: one basis counts once per framework and voice
    reason: str
    cite: tuple[str, ...]  # keys of Tables.sources (course) or Tables.parts (article, both)


class Step(NamedTuple):
    title: str
    question: str
    inputs: tuple[str, ...]


@dataclass(frozen=True)
class Tables:
    scenarios: dict[str, str]
    expertise: dict[str, str]
    answers: dict[str, dict[str, str]]  # targets, hardware, scale, priority
    defaults: dict[str, str]
    aliases: dict[str, str]
    outside_lab: dict[str, str]
    candidates: tuple[str, ...]
    display: dict[str, str]
    steps: tuple[Step, ...]
    unmeasured: dict[str, str]
    evidence: dict
    article: dict[str, str]
    parts: dict[str, str]
    sources: dict[str, Row]  # title, url, date, dated (where the date comes from)
    rules: tuple[Rule, ...]
    disagreements: tuple[Row, ...]  # topic, when (any holds), article, course, why, cite
    conflicts: tuple[tuple[tuple[tuple[str, str], ...], str], ...]
    toolchain: dict[str, dict[str, str]]
    out_of_reach_when: dict[str, tuple[tuple[str, str], ...]]
    runtimes: dict[str, tuple[str, ...]]  # whose records count for a candidate
    notes: dict[str, str]

    def names(self, frameworks) -> str:
        """'A', 'A and B', 'A, B and C'."""
        shown = [self.display[f] for f in frameworks]
        return " and ".join(filter(None, [", ".join(shown[:-1]), shown[-1]])) if shown else "none"

    def cite(self, key: str) -> str:
        """A citation in words: a dated page of the course, or a part of the 2023 article."""
        s = self.sources.get(key)
        return f"[{s.title}]({s.url}), {s.date}" if s else self.parts[key]


RULE_KEYS = ("framework", "points", "basis", "reason")
#: tables passed through as the file has them
RAW = ("answers", "defaults", "aliases", "unmeasured", "evidence", "article", "parts", "toolchain",
       "notes")  # fmt: skip


def _pairs(items: list[str]) -> tuple[tuple[str, str], ...]:
    return tuple(tuple(i.split("=", 1)) for i in items)  # type: ignore[misc]


def holds(field: str, value: str, inputs: dict) -> bool:
    got = inputs.get(field)
    return value in got if isinstance(got, tuple) else got == value


def _check(t: Tables) -> None:
    """A clear error for a row that names what does not exist (a typo in the file)."""
    valid = {"scenario": t.scenarios, "expertise": t.expertise, **t.answers}
    for r in t.rules:
        where = f"{RULES_FILE.name}: rule {r.framework} {r.field}={r.value}"
        if r.voice not in (ARTICLE, COURSE, BOTH):
            raise ValueError(f"{where}: voice {r.voice!r} is not article, course or both")
        if r.field not in valid or r.value not in valid[r.field]:
            raise ValueError(f"{where}: no such answer; answers are {sorted(valid)}")
        if r.framework not in t.candidates:
            raise ValueError(f"{where}: unknown framework; candidates are {t.candidates}")
        known = t.sources if r.voice == COURSE else t.parts
        if not r.cite or any(k not in known for k in r.cite):
            raise ValueError(f"{where}: cite {r.cite} must name keys of {sorted(known)}")


@lru_cache(maxsize=4)
def _read(path: Path, mtime: float) -> Tables:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    registered = [s for s in specs() if s.eager is not None]
    outside = dict(data["outside_lab"])
    candidates = (*(s.name for s in registered), *outside)
    flow = zip(seeds.DECISION_FLOW, data["step"], strict=True)
    t = Tables(
        **{k: data[k] for k in RAW},
        scenarios={s.key: s.title for s in seeds.SCENARIOS},
        expertise={s.name: s.display for s in registered},
        outside_lab=outside,
        candidates=candidates,
        display={**{s.name: s.display for s in specs()}, **outside},
        steps=tuple(Step(f.title, s["question"], tuple(s["sets"])) for f, s in flow),
        sources={k: Row(**v) for k, v in data["source"].items()},
        rules=tuple(
            Rule(r["voice"], r["if"], r["is"], *(r[k] for k in RULE_KEYS), tuple(r["cite"]))
            for r in data["rule"]
        ),
        disagreements=tuple(
            Row(**{**d, "when": _pairs(d["when"]), "cite": tuple(d["cite"])})
            for d in data["disagreement"]
        ),
        conflicts=tuple((_pairs(c["when"]), c["note"]) for c in data["conflict"]),
        out_of_reach_when={k: _pairs(v) for k, v in data["out_of_reach_when"].items()},
        runtimes={
            fw: (fw, *(s.name for s in specs() if s.exported_from == fw)) for fw in candidates
        },
    )
    _check(t)
    return t


def tables(path: str | Path | None = None) -> Tables:
    """The rules file read (``path``: another file with the same tables, e.g. a class's own)."""
    p = Path(path or RULES_FILE).resolve()
    if not p.exists():
        raise ValueError(f"no rules file at {p}: pass the path of a guide TOML file")
    return _read(p, p.stat().st_mtime)
