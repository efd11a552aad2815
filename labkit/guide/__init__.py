"""The framework selection guide: one rules file an instructor reads and changes, two voices.

The rules are data: ``labkit/data/guide.toml`` holds every answer, rule (condition, points,
basis, voice, dated citation), disagreement, conflict note and toolchain; ``rules`` reads it,
``engine`` scores it (:func:`recommend`: each basis once per framework, ties kept as ties),
``evidence`` turns the learner's valid measurements into step 3's points, ``render`` writes the
Markdown. Importing ``labkit.guide`` imports no framework and no UI; ``labkit.guide.form`` is the
ipywidgets form (notebook 09 and the app).
Not for: measuring (:mod:`labkit.runner`) or auditing the articles' claims (:mod:`labkit.sources`).
"""

from .engine import Ranked, Reason, Recommendation, check_inputs, rank, recommend
from .evidence import CLAIMED, MEASURED, Evidence, Gap, evidence, gaps, load_results, validity
from .render import decision_flow_markdown, describe
from .rules import ARTICLE, BOTH, COURSE, RULES_FILE, VOICES, Rule, Tables, tables


def __getattr__(name: str):  # the file's tables read at each access, e.g. guide.DISPLAY
    t = tables()
    found = {"DISPLAY": t.display, "CANDIDATES": t.candidates, "SCENARIOS": t.scenarios,
             "SOURCES": t.sources, "EVIDENCE_MARGIN": t.evidence["margin"]}  # fmt: skip
    if name in found:
        return found[name]
    raise AttributeError(f"module 'labkit.guide' has no attribute {name!r}")


# fmt: off
__all__ = [
    "ARTICLE", "BOTH", "CANDIDATES", "CLAIMED", "COURSE", "DISPLAY", "EVIDENCE_MARGIN",
    "MEASURED", "RULES_FILE", "SCENARIOS", "SOURCES", "VOICES",
    "Evidence", "Gap", "Ranked", "Reason", "Recommendation", "Rule", 
    "Tables", "check_inputs", "decision_flow_markdown",
    "describe", "evidence", "gaps", "load_results", "rank", "recommend",
    "tables", "validity",
]
# fmt: on
