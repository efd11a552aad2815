"""The measured peak: the matrix-multiply rate this machine attains with the frameworks' kernels.

Each :class:`Probe` (a framework's ``peak`` module, run as a subprocess: ``import labkit`` stays
framework-free) times large GEMMs at each precision the CPU has arithmetic for. A peak is judged
as a record is (:func:`labkit.bench.verdict` on its best kernel's times: the spread, a quiet
machine): an invalid one is measured again once and never cached. Valid peaks are cached per
machine type, thread count and library versions (:func:`cache_file`); a fixture tree records its
probes' output in ``peak-probes.json`` (:func:`recorded`).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from .. import bench, resnet
from ..util import jsonio, proc, stats
from . import machine

__all__ = [
    "CACHE_ENV",
    "FIXTURE_FILE",
    "MeasuredPeaks",
    "Probe",
    "cache_dir",
    "cache_file",
    "cached",
    "measure",
    "recorded",
]

#: environment variable: the folder that holds the cached peaks (default ~/.cache/graphlab)
CACHE_ENV = "LABKIT_CACHE_DIR"
PROBE_TIMEOUT_S = 300.0
#: a fixture tree's recorded probe output (the shape of a cache file)
FIXTURE_FILE = "peak-probes.json"
_FORMAT = 1  # the cache file's format
REMEASURE = "measure it again when the machine is quiet: python -m labkit doctor --remeasure"
SAY = machine.CPUS["say"]  #: what is said of a peak and a figure above it (data/cpus.toml)


class Probe(NamedTuple):
    """A framework's probe: the module run as ``python -m`` (it times the precisions it has
    kernels for), and its libraries' versions (part of the cache key)."""

    module: str
    versions: tuple[tuple[str, str], ...] = ()


class KernelRate(NamedTuple):
    """One kernel's rate: the median over its timed calls, and their spread."""

    precision: str
    #: the kernel, its probe's framework and its GEMM's side n: "torch.mm (torch, 2048^3)"
    kernel: str
    gflops: float | None  #: 2 n^3 / the median seconds, in G(FL)OP/s; None when it failed
    iqr_gflops: float | None  #: the interquartile range of the per-call rates
    times_s: tuple[float, ...] = ()  #: the timed calls
    error: str = ""  #: why the kernel could not run here

    @classmethod
    def of(cls, row: dict, probe: str) -> KernelRate:
        """The rate of one kernel a probe reported."""
        times = [t for t in row.get("times_s") or [] if isinstance(t, int | float) and t > 0]
        rates = [(row.get("ops") or 0) / t / 1e9 for t in times]
        ok = bool(rates) and not row.get("error")
        return cls(
            str(row.get("precision", "")),
            f"{row.get('kernel', '?')} ({probe.rsplit('.', 2)[-2]}, {row.get('n') or 0}^3)",
            stats.median(rates) if ok else None,
            stats.iqr(rates) if ok else None,
            tuple(times),
            str(row.get("error") or ("" if ok else "no timed calls")),
        )


class MeasuredPeak(NamedTuple):
    """The attainable matrix-multiply rate at one precision, beside the spec-sheet estimate."""

    precision: str
    threads: int  #: the intra-op threads it was measured with
    note: str  #: how far it sits from the estimate; why it is flagged or not measured
    kernels: tuple[KernelRate, ...] = ()
    gflops: float | None = None  #: the best kernel's median rate; None when not measured
    iqr_gflops: float | None = None  #: its spread (interquartile range of the per-call rates)
    kernel: str = ""  #: the best kernel, in words
    estimate_gflops: float | None = None  #: the spec-sheet estimate for ``threads`` cores
    #: why it is not a valid peak (:func:`labkit.bench.verdict`); empty when valid
    invalid: tuple[str, ...] = ()

    @property
    def measured(self) -> bool:
        return self.gflops is not None

    @property
    def valid(self) -> bool:
        return self.measured and not self.invalid

    @property
    def of_estimate(self) -> float | None:
        """The measured rate over the estimate (None without both)."""
        return self.gflops / self.estimate_gflops if self.gflops and self.estimate_gflops else None

    @property
    def above_estimate(self) -> bool:
        """The rate beats the estimate: one of the estimate's inputs is off, or the timing."""
        return (self.of_estimate or 0.0) > 1

    def images_per_s_at(self, image_size: int, training: bool = False) -> float | None:
        """ResNet-50 images/s at this rate (None when not valid: no record is judged by it)."""
        if not self.valid:
            return None
        return self.gflops * 1e9 / resnet.flops(image_size, training=training)

    def explain_above(self) -> str:
        """Why a benchmark figure may sit above this peak, in words ("" when not valid)."""
        if not self.valid:
            return ""
        say = SAY["above_peak_fp32" if self.precision == "fp32" else "above_peak"]
        return say.format(**self._asdict(), remeasure=REMEASURE)


@dataclass(frozen=True)
class MeasuredPeaks:
    """The measured peak of every precision for one thread count, and where it comes from."""

    threads: int
    peaks: dict[str, MeasuredPeak]
    measured_at: str  #: ISO 8601 UTC
    problems: tuple[str, ...] = ()  #: probes that did not run, and why
    source: str = ""  #: the cache file or fixture it was read from ("" when just measured)
    #: CPUs other processes kept busy while the probes ran (None: not known)
    others_cpus: float | None = None

    def __getitem__(self, precision: str) -> MeasuredPeak:
        return self.peaks["int8" if precision.startswith("int8") else precision]

    @property
    def valid(self) -> bool:
        """Every measured peak is valid (and one was measured): only such peaks are cached."""
        measured = [p for p in self.peaks.values() if p.measured]
        return bool(measured) and all(p.valid for p in measured)

    @property
    def busy(self) -> str:
        """Why the machine was too busy for a trustworthy peak ("" when quiet or not known)."""
        reasons = (r for p in self.peaks.values() for r in p.invalid if r.startswith("busy"))
        return next(reasons, "")


def to_measure(root: str | os.PathLike = machine.ROOT) -> dict[str, str]:
    """precision -> "" when it is measured (the CPU has units for it), else why not."""
    return {
        p: "" if rate.native else f"not measured: {rate.how} (this CPU has no {p} unit to measure)"
        for p, rate in machine.per_cycle(root).items()
    }


def judge(
    precision: str,
    rates: Sequence[KernelRate],
    threads: int,
    root: str | os.PathLike = machine.ROOT,
    why_not: str = "",
    others: float | None = None,
) -> MeasuredPeak:
    """The peak at ``precision``: the best kernel's rate beside ``root``'s spec-sheet estimate
    for ``threads`` cores, judged by :func:`labkit.bench.verdict` as a record is (its times'
    spread; ``others`` CPUs kept busy by other processes)."""
    rates = tuple(r for r in rates if r.precision == precision)
    good = [r for r in rates if r.gflops is not None]
    if not good:
        failed = "; ".join(f"{r.kernel}: failed ({r.error})" for r in rates)
        note = why_not or (f"every kernel failed: {failed}" if rates else "not measured")
        return MeasuredPeak(precision, threads, note, rates)
    best = max(good, key=lambda r: r.gflops)
    c = machine.ceiling(precision, root)
    estimate = share = None
    note = f"no spec-sheet estimate: the clock is unknown (set {machine.MAX_GHZ_ENV})"
    if c.peak_gflops is not None:
        estimate = c.peak_gflops * min(float(threads), c.cores) / c.cores
        share = best.gflops / estimate
        note = f"{share:.0%} of the spec-sheet estimate ({estimate:,.0f} GFLOP/s)"
    if share and share > 1:
        causes = "; ".join(c.caveats) or "the clock or the FLOPs per cycle it assumes are too low"
        note += f": above it, so the estimate's inputs are off ({causes}) or the timing is wrong"
    elif share and precision != "fp32" and share < 0.5:
        units = "matrix" if c.flops_per_cycle >= 1024 else "vector"
        note += SAY["below_units"].format(precision=precision, units=units)
    flaws = tuple(bench.verdict(best.times_s, 0, 0.0, threads, others, None))
    if flaws:
        note = f"not a valid peak ({'; '.join(flaws)}): {REMEASURE}; {note}"
    return MeasuredPeak(
        precision, threads, note, rates, best.gflops, best.iqr_gflops, best.kernel, estimate, flaws
    )


def _peaks(outputs: list[dict], threads: int, root, measured_at: str, source: str):
    """:class:`MeasuredPeaks` from the probes' outputs (``{"module", "output" | "error"}``)."""
    problems = tuple(f"{o.get('module')}: {o['error']}" for o in outputs if o.get("error"))
    rates = []
    for item in outputs:  # one that failed has no output
        rows = (item.get("output") or {}).get("kernels") or []
        rates += [KernelRate.of(row, str(item.get("module"))) for row in rows]
    seen = [o["others_cpus"] for o in outputs if isinstance(o.get("others_cpus"), int | float)]
    others = max(seen, default=None)
    none = "" if outputs else "not measured: no framework here has a probe"
    why = to_measure(root)
    peaks = {p: judge(p, rates, threads, root, why[p] or none, others) for p in why}
    return MeasuredPeaks(threads, peaks, measured_at, problems, source, others)


def cache_dir() -> Path:
    """``$LABKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/graphlab`` or ``~/.cache/graphlab``,
    created (mode 0700) when missing."""
    env = os.environ.get(CACHE_ENV, "").strip()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "graphlab"
    path = Path(env).expanduser() if env else base
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def cache_file(kind: str, key: object) -> Path:
    """The cache file of ``kind`` ("peaks", "kernels") for ``key`` (JSON) on this machine type."""
    machine_id = machine.machine_of(machine.fingerprint())["machine_id"]
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / f"{kind}-{machine_id}-{digest}.json"


def _load(path: Path, root) -> MeasuredPeaks | None:
    try:
        data = jsonio.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a missing or damaged cache file: measured again
    ours = isinstance(data, dict) and data.get("format") == _FORMAT
    if not ours or not isinstance(n := data.get("threads"), int):
        return None
    return _peaks(data.get("outputs") or [], n, root, str(data.get("measured_at")), str(path))


def recorded(root: str | os.PathLike) -> MeasuredPeaks | None:
    """The peaks a fixture tree records, judged against its estimate; None when it has none."""
    return _load(Path(root) / FIXTURE_FILE, root)


def _peaks_file(probes: Sequence[Probe], threads: int) -> Path:
    return cache_file("peaks", [threads, probes])


def cached(probes: Sequence[Probe], threads: int | None = None) -> MeasuredPeaks | None:
    """The peaks cached for these probes and threads on this machine type, else None."""
    threads = threads or machine.default_threads()
    try:
        return _load(_peaks_file(probes, threads), machine.ROOT)
    except OSError:
        return None


def _run(probe: Probe, threads: int, precisions: list[str]) -> dict:
    """One probe's ``{"module", "output", "others_cpus"}``, or ``{"module", "error"}``."""
    cmd = [sys.executable, "-m", probe.module, "--threads", str(threads)]
    cmd += ["--precisions", ",".join(precisions)]
    env = proc.child_env(threads)
    # this process's CPU time counts its children's (user, system): the probe is not "others"
    before = (*bench.cpu_sample()[:2], sum(os.times()[:4]))
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        return {"module": probe.module, "error": f"no result within {PROBE_TIMEOUT_S:.0f} s"}
    others = bench.busy_elsewhere(before, (*bench.cpu_sample()[:2], sum(os.times()[:4])))
    lines = done.stdout.strip().splitlines()
    try:
        return {"module": probe.module, "output": json.loads(lines[-1]), "others_cpus": others}
    except (IndexError, ValueError):
        why = proc.crash_reason(done.returncode, done.stderr, f"python -m {probe.module}")
        return {"module": probe.module, "error": why}


def measure(
    probes: Sequence[Probe], threads: int | None = None, refresh: bool = False
) -> MeasuredPeaks:
    """The peaks with ``threads`` threads: a valid cached one, else (or ``refresh``) measured
    by every probe, a second time when the first is not valid. Only a valid one is cached; an
    invalid one is returned saying why. A probe that fails is named in ``problems``."""
    threads = threads or machine.default_threads()
    found = None if refresh else cached(probes, threads)
    if found is not None and found.valid:
        return found  # a file cached before peaks were judged may be invalid: measured again
    wanted = [p for p, why in to_measure().items() if not why]
    for _ in range(2):
        outputs = [_run(probe, threads, wanted) for probe in probes]
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        peaks = _peaks(outputs, threads, machine.ROOT, now, "")
        if peaks.valid:
            break
    else:
        return peaks  # refused: not the machine's peak
    data = {"format": _FORMAT, "threads": threads, "measured_at": now, "outputs": outputs}
    try:
        path = jsonio.write_atomic(_peaks_file(probes, threads), json.dumps(data, indent=1))
    except OSError:
        return peaks  # an unwritable cache: measured again next time
    return replace(peaks, source=str(path))
