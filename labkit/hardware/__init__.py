"""What machine is this, what may this process use of it, and how fast could ResNet-50 run on it?

For: the CPUs, physical cores and CPU quota this process may use and the thread count they give
(:mod:`~labkit.hardware.topology`), the maximum clock (:mod:`~labkit.hardware.clock`), FLOPs per
cycle and the compute ceiling per precision (:mod:`~labkit.hardware.peak`), the matrix-multiply
rate the machine attains per precision, measured with the frameworks' kernels in a subprocess
and cached (:mod:`~labkit.hardware.measured`), the machine report
and the fingerprint stored with every result (:mod:`~labkit.hardware.summary`), and machine
types for comparing results across machines (:mod:`~labkit.hardware.machines`). Every reading
takes ``root``: the folder that stands for the filesystem root (``"/"`` on a real machine), so
the tests read fixture trees (:mod:`~labkit.hardware.files`) instead of the machine they run on.
Not for: benchmarking (that is the runner's), or importing a framework (it asks ``nvidia-smi``
for GPUs, and the measured peak comes from the frameworks' probes, started as processes); the
ceiling is an estimate that flags a figure above it, never an error.
"""

from .files import ROOT
from .machines import machine_of
from .measured import FIXTURE_FILE, MeasuredPeaks, Probe, cache_dir, cached, measure, recorded
from .peak import CEILING_PRECISIONS, ceiling, per_cycle, vector_extensions
from .summary import fingerprint, report
from .topology import default_threads

__all__ = [
    "CEILING_PRECISIONS",
    "FIXTURE_FILE",
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
    "vector_extensions",
]
