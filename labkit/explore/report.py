"""The report of :func:`labkit.explore.check`: per capture path *works*, *caveats*, *fails* or
*crashed*, why, the framework's own message, the graph breaks and recompilations, as Markdown
or plain data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .. import frameworks as fw_registry
from ..frameworks._kit.explore import STATUSES, GraphBreak, PathResult, Recompile, first_lines
from ..util import tables

__all__ = ["Report"]


@dataclass
class Report:
    """What :func:`check` found: ``.paths``, ``.graph_breaks``, ``.recompiles``, ``.notes``."""

    model: str
    framework: str
    inputs: str
    paths: list[PathResult] = field(default_factory=list)
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    versions: dict = field(default_factory=dict)
    call: str = ""  #: how the model was called: ``model(2x16:int64, attention_mask=...)``

    def path(self, name: str) -> PathResult:
        found = {p.path: p for p in self.paths}
        if name not in found:
            raise KeyError(f"no path {name!r} in this report: it has {', '.join(found)}")
        return found[name]

    def status(self, name: str) -> str:
        return self.path(name).status

    def to_dict(self) -> dict:
        """Plain data (JSON-serialisable): what ``--out report.json`` writes."""
        data = asdict(self)
        data["recompiles"] = [{**asdict(r), "total": r.total} for r in self.recompiles]
        return data

    def to_markdown(self) -> str:
        """The report as Markdown: a table of paths, then graph breaks and recompilations."""
        display = fw_registry.spec(self.framework).display
        version = self.versions.get(self.framework)
        called = f" (called as `{self.call}`)" if self.call and "=" in self.call else ""
        called += "; checked in a worker process (a fresh one after a crash)"
        lines = [
            f"### Graph readiness of `{self.model}` ({display}{' ' + version if version else ''})",
            "",
            f"Inputs {self.inputs}{called}.",
            "",
            *[f"> {tables.escape(n)}\n" for n in self.notes if n.startswith("**")],
        ]
        head = ["path", "status", "what it means", "the framework says"]
        rows = [
            (p.path, p.status if p.status in ("works", "caveats") else f"**{p.status}**", p.reason)
            + (first_lines(p.message, 99, 240),)
            for p in self.paths
        ]
        lines.append(tables.markdown(head, rows))
        if self.graph_breaks:
            n = sum(b.count for b in self.graph_breaks)
            lines += ["", f"**Graph breaks** ({n}): where capture stopped and Python took over", ""]
            head = ["path", "where", "code", "why", "the framework says"]
            rows = [
                (b.path, b.location + (f" (x{b.count})" if b.count > 1 else ""))
                + (f"`{first_lines(b.code, 1, 80)}`", b.reason, first_lines(b.message, 99, 160))
                for b in self.graph_breaks
            ]
            lines.append(tables.markdown(head, rows))
        if self.recompiles:
            lines += ["", "**New input shapes**: graphs compiled (traced) at each call", ""]
            head = ["path", "changing", "shapes called", "compiles per call", "why"]
            rows = [
                (r.path, r.varied, ", ".join(r.shapes), ", ".join(map(str, r.compiles)))
                + (first_lines("; ".join(r.reasons[:2]), 1, 160),)
                for r in self.recompiles
            ]
            lines.append(tables.markdown(head, rows))
        rest = [n for n in self.notes if not n.startswith("**")]
        if rest:
            lines += ["", *[f"- {tables.escape(n)}" for n in rest]]
        return "\n".join(lines)

    _repr_markdown_ = to_markdown

    def __repr__(self) -> str:
        counts = {s: sum(p.status == s for p in self.paths) for s in STATUSES}
        counts = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        return f"<labkit.explore.Report {self.model} ({self.framework}): {counts}>"
