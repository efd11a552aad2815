"""A lesson's rows as a Markdown table (notebook 07's formats and deployment paths)."""

from __future__ import annotations

from collections.abc import Sequence

from ..util import tables

__all__ = ["markdown"]


def markdown(rows: Sequence[dict]) -> str:
    """Rows of equal keys as a Markdown table (``IPython.display.Markdown(markdown(rows))``)."""
    if not rows:
        return "_(no rows)_"
    head = list(rows[0])

    def cell(v) -> str:
        return f"{v:,.3g}" if isinstance(v, float) else v

    return tables.markdown(head, [[cell(r.get(h, "")) for h in head] for r in rows])
