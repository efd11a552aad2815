"""The class's results in one place: hand-ins collected into a DuckDB file, and the class report.

:func:`collect` reads what learners hand in (cards and results files, in folders or zips:
untrusted, read within limits and judged again, :mod:`.handins`) into one database, each file
once (:mod:`.ingest`); :func:`report` writes the figures and a page with the tables behind them
(:mod:`.page`). Fixture cards (synthetic, for machine types a class lacks) are marked in every
table and figure, never pooled with measurements. A *machine* is a machine type
(:mod:`labkit.hardware.machines`), never a host. DuckDB is imported only when a database opens.
"""

from ..util.tables import html as html_table
from .handins import Skip
from .ingest import FIXTURE, Collected, collect, connect, fixture_cards, machines, ratios, rows
from .page import FIGURES, ceiling_figure, report, speedup_figure, speedup_summary, spread

__all__ = ["FIGURES", "FIXTURE", "Collected", "Skip", "ceiling_figure", "collect", "connect"]
__all__ += ["fixture_cards", "html_table", "machines", "ratios", "report", "rows"]
__all__ += ["speedup_figure", "speedup_summary", "spread"]
