"""A table of a lesson's rows: what notebook 07 shows of the graphs and files it compares.

- :func:`markdown`: rows of equal keys as a Markdown table, floats to three significant digits.

The graph passes themselves are written in the lessons, with each framework's own API (notebook
05: a ``torch.fx`` pass, Inductor's generated code, Grappler's options, ONNX Runtime's levels).
"""

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
