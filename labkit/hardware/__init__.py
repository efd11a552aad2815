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

from .clock import APPLE_MAX_GHZ, MAX_GHZ_ENV, max_clock_ghz
from .files import ROOT, cpuinfo, parse_cpu_list, sysctl
from .machines import MACHINE_FIELDS, cpu_family, isa_tier, machine_of
from .measured import (
    CACHE_ENV,
    FIXTURE_FILE,
    KernelRate,
    MeasuredPeak,
    MeasuredPeaks,
    Probe,
    cache_dir,
    cached,
    measure,
    recorded,
    to_measure,
)
from .peak import (
    APPLE_IMPLEMENTER,
    ARM_PARTS,
    CEILING_PRECISIONS,
    VECTOR_FLAGS,
    Ceiling,
    PerCycle,
    ceiling,
    ceilings,
    per_cycle,
    vector_extensions,
)
from .summary import MachineReport, fingerprint, gpus, memory_gb, report
from .topology import cores, cpu_quota, default_threads, physical_cores, usable_cpus

__all__ = [
    "APPLE_IMPLEMENTER",
    "APPLE_MAX_GHZ",
    "ARM_PARTS",
    "CACHE_ENV",
    "CEILING_PRECISIONS",
    "FIXTURE_FILE",
    "MACHINE_FIELDS",
    "MAX_GHZ_ENV",
    "ROOT",
    "VECTOR_FLAGS",
    "Ceiling",
    "KernelRate",
    "MachineReport",
    "MeasuredPeak",
    "MeasuredPeaks",
    "PerCycle",
    "Probe",
    "cache_dir",
    "cached",
    "ceiling",
    "ceilings",
    "cores",
    "cpu_family",
    "cpu_quota",
    "cpuinfo",
    "default_threads",
    "fingerprint",
    "gpus",
    "isa_tier",
    "machine_of",
    "max_clock_ghz",
    "measure",
    "memory_gb",
    "parse_cpu_list",
    "per_cycle",
    "physical_cores",
    "recorded",
    "report",
    "sysctl",
    "to_measure",
    "usable_cpus",
    "vector_extensions",
]
