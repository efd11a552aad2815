"""What machine is this, what may this process use of it, and how fast could ResNet-50 run on it?

The CPUs, cores, quota and maximum clock (:mod:`.machine`), the ceiling per precision
(:mod:`.peak`), the measured matrix-multiply peak (:mod:`.measured`), the report, fingerprint and
machine type (:mod:`.summary`). Every reading takes ``root``, the folder standing for ``/``, so
the tests read fixture trees.
"""

from .machine import MAX_GHZ_ENV, ROOT, default_threads
from .measured import FIXTURE_FILE, MeasuredPeaks, Probe, cache_dir, cached, measure, recorded
from .peak import ceiling, per_cycle
from .summary import fingerprint, machine_of, report

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
