"""The class's results in one place: hand-ins collected into a DuckDB file, and the class report.

For an instructor: :func:`collect` reads what learners hand in (result cards and results files,
in folders or zips: untrusted input, read within limits and judged again from the raw times,
:mod:`~labkit.classroom.handins`) into one database (:mod:`~labkit.classroom.ingest`), once
each; :func:`report` writes the figures (:mod:`~labkit.classroom.figures`) and a page with the
tables behind them (:mod:`~labkit.classroom.page`). Fixture cards (synthetic, shipped for a class
that lacks some machine types) are marked as such in every table and figure, never pooled with
measurements. A *machine* is a machine type (:mod:`labkit.hardware.machines`), never a host. Not
for: measuring (:mod:`labkit.results.cards` makes the cards). DuckDB is imported only when a
database is opened.
"""

from ..util.tables import html as html_table
from .figures import (
    FIGURES,
    FIXTURE,
    ceiling_figure,
    machines,
    ratios,
    rows,
    speedup_figure,
    speedup_summary,
    spread,
)
from .handins import Skip
from .ingest import Collected, collect, connect, fixture_cards
from .page import report

__all__ = ["FIGURES", "FIXTURE", "Collected", "Skip", "ceiling_figure", "collect", "connect"]
__all__ += ["fixture_cards", "html_table", "machines", "ratios", "report"]
__all__ += ["rows", "speedup_figure", "speedup_summary", "spread"]
