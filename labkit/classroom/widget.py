"""The class explorer: widgets over the class database for notebook 11 (ipywidgets).

Filter by framework, task, precision and machine type; the speedup figure and its summary table
follow the filters. ipywidgets and IPython are imported only when the explorer is made.
"""

from __future__ import annotations

import os

from ..util import tables
from .db import choices, connect, ratios, speedup_summary
from .figures import speedup_figure
from .page import fmt_number

__all__ = ["explorer"]


def _dropdowns(opts: dict[str, list]) -> dict:
    import ipywidgets as w

    any_ = [("any", None)]
    return {
        "framework": w.Dropdown(
            options=any_ + [(v, v) for v in opts["framework"]], description="Framework"
        ),
        "task": w.Dropdown(options=any_ + [(v, v) for v in opts["task"]], description="Task"),
        "precision": w.Dropdown(
            options=any_ + [(v, v) for v in opts["precision"]], description="Precision"
        ),
        "machine": w.Dropdown(options=any_ + opts["machine"], description="Machine"),
    }


def _summary_table(sel: list[dict]) -> str:
    return tables.html(
        ("task", "graph cell", "machines", "median", "min", "max", "flagged"),
        [
            (
                s["task"],
                s["cell"],
                s["machines"],
                fmt_number(s.get("median")),
                fmt_number(s.get("min")),
                fmt_number(s.get("max")),
                s["flagged"],
            )
            for s in speedup_summary(sel)
        ],
    )


def explorer(db: str | os.PathLike = "class.duckdb"):
    """Widgets over the class database: filter by framework, task, precision and machine; the
    speedup figure and the summary table follow. Returns the widget box (``.filters`` holds the
    dropdowns by name, so a notebook cell can set them)."""
    import ipywidgets as w
    from IPython.display import HTML, display

    con = connect(db, read_only=True)
    try:
        opts = choices(con)
        all_ratios = ratios(con)
    finally:
        con.close()
    filters = _dropdowns(opts)
    out = w.Output()

    def show(_=None) -> None:
        sel = [
            r
            for r in all_ratios
            if all(
                v.value is None or r[k if k != "machine" else "machine_id"] == v.value
                for k, v in filters.items()
            )
        ]
        out.clear_output(wait=True)
        with out:
            if not sel:
                print("no graph-vs-eager ratio matches these filters")
                return
            display(speedup_figure(sel))
            display(HTML(_summary_table(sel)))

    for f in filters.values():
        f.observe(show, names="value")

    class Explorer(w.VBox):
        def __repr__(self) -> str:  # what a page without a kernel (the course site) shows
            return "[the class explorer: filters and a figure; run the notebook to use them]"

    box = Explorer([w.HBox(list(filters.values())[:2]), w.HBox(list(filters.values())[2:]), out])
    box.filters = filters
    show()
    return box
