"""The class's results in one place: hand-ins collected into a DuckDB file, and the class report.

:func:`collect` reads learners' cards and results files (untrusted: :mod:`.handins`) into one
database (:mod:`.ingest`); :func:`report` writes the figures and a page of the tables behind them
(:mod:`.page`). Fixture (synthetic) machines are marked everywhere, never pooled with measured
ones. A *machine* is a machine type (:mod:`labkit.hardware.machines`), never a host.
"""

from ..util.tables import html as html_table
from .handins import Skip
from .ingest import FIXTURE, Collected, collect, connect, fixture_cards, machines, ratios, rows
from .page import FIGURES, ceiling_figure, report, speedup_figure, speedup_summary, spread

__all__ = ["FIGURES", "FIXTURE", "Collected", "Skip", "ceiling_figure", "collect", "connect"]
__all__ += ["fixture_cards", "html_table", "machines", "ratios", "report", "rows"]
__all__ += ["speedup_figure", "speedup_summary", "spread"]
