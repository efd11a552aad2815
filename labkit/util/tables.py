"""Tables as text, every cell escaped: Markdown and HTML."""

from __future__ import annotations

import html as _html
from collections.abc import Iterable, Sequence

__all__ = ["escape", "html", "markdown"]


def escape(text: object) -> str:
    """``text`` as one Markdown table cell: white space (newlines too) folded to single spaces
    and ``|`` escaped. None is an empty cell."""
    return " ".join(("" if text is None else str(text)).split()).replace("|", "\\|")


def markdown(head: Sequence[object], rows: Iterable[Sequence[object]], align: str = "") -> str:
    """A Markdown table of ``head`` and ``rows``, every cell through :func:`escape`. ``align``
    gives one letter per column, ``l`` (the default for a column not given) or ``r``."""
    rule = "".join("---:|" if a == "r" else "---|" for a in align.ljust(len(head), "l"))
    lines = ["| " + " | ".join(escape(h) for h in head) + " |", "|" + rule]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def html(head: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """An HTML table of ``head`` and ``rows``, every cell escaped (None is an empty cell)."""

    def esc(v: object) -> str:
        return _html.escape("" if v is None else str(v))

    out = ["<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head)]
    out[0] += "</tr></thead><tbody>"
    out += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows]
    return "\n".join(out + ["</tbody></table>"])
