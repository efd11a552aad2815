"""The class's results in one place: hand-ins collected into a DuckDB file, and the class report.

For an instructor: :func:`collect` reads what learners hand in (result cards and results files,
in folders or zips: untrusted input, read within limits and judged again from the raw times,
:mod:`~labkit.classroom.handins`, :mod:`~labkit.classroom.ingest`) into one database
(:mod:`~labkit.classroom.db`), once each; :func:`report` writes the figures
(:mod:`~labkit.classroom.figures`: each graph mode's speedup over eager across machine types,
per CPU family, against each machine's ceiling, the spread between machines against within one)
and a page with the tables behind them (:mod:`~labkit.classroom.page`); :func:`explorer` is the
notebook's widget over the same data. A *machine* here is a machine type
(:mod:`labkit.hardware.machines`), never a host. Not for: measuring (learners' runs make the
records, :mod:`labkit.results.cards` the cards), or one learner's own results
(:mod:`labkit.results`, :mod:`labkit.plots`). DuckDB is imported only when a database is opened.
"""

from ..util.tables import html as html_table
from .db import connect, machines, ratios, rows, speedup_summary, spread
from .figures import FIGURES, ceiling_figure, family_figure, speedup_figure, spread_figure
from .handins import Skip
from .ingest import Collected, collect, fixture_cards
from .page import report
from .widget import explorer

__all__ = [
    "FIGURES",
    "Collected",
    "Skip",
    "ceiling_figure",
    "collect",
    "connect",
    "explorer",
    "family_figure",
    "fixture_cards",
    "html_table",
    "machines",
    "ratios",
    "report",
    "rows",
    "speedup_figure",
    "speedup_summary",
    "spread",
    "spread_figure",
]
