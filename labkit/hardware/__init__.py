"""What machine is this, what may this process use of it, and how fast could ResNet-50 run on it?

The CPUs, cores, quota and maximum clock, the ceiling per precision, the report, fingerprint and
machine type (:mod:`.machine`); the measured matrix-multiply peak (:mod:`.measured`). Every
reading takes ``root``, the folder standing for ``/``, so the tests read fixture trees.
"""

from .machine import (
    MAX_GHZ_ENV,
    ROOT,
    ceiling,
    default_threads,
    fingerprint,
    machine_of,
    per_cycle,
    report,
)
from .measured import FIXTURE_FILE, MeasuredPeaks, Probe, cache_dir, cached, measure, recorded

__all__ = [
    "FIXTURE_FILE",
    "MAX_GHZ_ENV",
    "ROOT",
    "MeasuredPeaks",
    "Probe",
    "cache_dir",
    "cached",
    "ceiling",
    "default_threads",
    "fingerprint",
    "machine_of",
    "measure",
    "per_cycle",
    "recorded",
    "report",
]
