"""The measured peaks every record stands against: the installed frameworks' probes, run once.

:func:`measured_peaks` gives this machine's matrix-multiply peak per precision for a thread
count, measured by the probes of the installed frameworks (:func:`labkit.frameworks.peak_probes`,
:mod:`labkit.hardware.measured`) the first time and read from the cache after that;
:func:`run <labkit.runner.loop.run>` calls it before the first cell, so that each cell's process
only reads the cache (:func:`cached_peaks`) and never measures while another cell is timed.
Not for: the judgement of a peak (:mod:`labkit.hardware.measured`) or of a record
(:func:`labkit.runner.cell.ceiling_fields`).
"""

from __future__ import annotations

from .. import frameworks as fw_registry
from .. import hardware

__all__ = ["cached_peaks", "measured_peaks"]


def measured_peaks(threads: int | None = None, refresh: bool = False) -> hardware.MeasuredPeaks:
    """The peaks with ``threads`` intra-op threads (default: the lab's thread count): cached,
    or measured now (a few seconds per framework; ``refresh=True`` always measures)."""
    return hardware.measure(fw_registry.peak_probes(), threads, refresh)


def cached_peaks(threads: int | None = None) -> hardware.MeasuredPeaks | None:
    """The peaks measured before with ``threads`` threads and today's framework versions, or
    None (nothing is measured)."""
    return hardware.cached(fw_registry.peak_probes(), threads)
