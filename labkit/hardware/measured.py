"""The measured ceiling: the matrix-multiply rate this machine attains with the frameworks' kernels.

The estimate (:mod:`~labkit.hardware.peak`) multiplies cores, clock and FLOPs per cycle; on a
virtual machine the maximum clock is often unknown, and then so is the estimate. This module
measures what the machine does instead. For each precision the CPU has arithmetic for (fp32
always; bf16 with AVX-512 BF16, AMX or Arm's BF16; int8 with VNNI, AMX or Arm's dot products)
every *probe* (:class:`Probe`: a framework package's ``peak`` module, run in a subprocess so
that this module and ``import labkit`` stay framework-free) times a large square GEMM with each
of its framework's kernels, pre-packed weights included (:mod:`labkit.frameworks.torch.peak`).
:class:`MeasuredPeak` holds the best kernel's median rate with its spread (IQR) and the threads
used, how far it sits from the spec-sheet estimate, the clock it implies, and a flag when it is
above the estimate (the estimate's inputs, usually the clock, are then off, or the timing is).
A peak is judged as a record is (:func:`labkit.bench.verdict`'s limits): its best kernel's spread
at most :data:`labkit.bench.MAX_REL_IQR` of the median, on a quiet machine. An invalid peak
says why, offers no images/s to share a record against, and is never cached: :func:`measure`
measures again once, then returns it unjudged-against.

The peaks are measured once per machine type, thread count and library versions and cached as
JSON in this user's cache folder (:func:`cache_dir`: ``$LABKIT_CACHE_DIR``, else
``~/.cache/graphlab``; never the course folder); ``refresh=True`` measures again (``python -m
labkit doctor --remeasure``). A fixture tree holds its machine's probe output in
``peak-probes.json`` (:func:`recorded`), so the judgement is tested without the machine.

Reading a benchmark figure against it: a ResNet-50 step is more than GEMMs, so at fp32 a figure
above the measured peak is almost surely a timing error; at bf16 and int8 the plain GEMM is not
always the libraries' fastest kernel (oneDNN's convolutions on AMX or VNNI can beat it), so a
figure above it is flagged with that explanation (:meth:`MeasuredPeak.explain_above`).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import bench, resnet
from ..util import jsonio, proc, stats
from .files import ROOT, read
from .machines import machine_of
from .peak import CEILING_PRECISIONS, ceiling, per_cycle
from .summary import fingerprint
from .topology import default_threads

__all__ = [
    "CACHE_ENV",
    "FIXTURE_FILE",
    "KernelRate",
    "MeasuredPeak",
    "MeasuredPeaks",
    "Probe",
    "cache_dir",
    "cached",
    "judge",
    "measure",
    "recorded",
    "to_measure",
]

#: environment variable: the folder that holds the cached peaks (default ~/.cache/graphlab)
CACHE_ENV = "LABKIT_CACHE_DIR"
#: timed seconds per kernel (each probe times a few kernels per precision)
SECONDS = 0.4
PROBE_TIMEOUT_S = 300.0
#: a clock no CPU core sustains: a measurement that implies more is flagged
MAX_PLAUSIBLE_GHZ = 6.0
#: a fixture tree's recorded probe output (the shape of a cache file)
FIXTURE_FILE = "peak-probes.json"
_FORMAT = 1  # the cache file's format


@dataclass(frozen=True)
class Probe:
    """A framework's matrix-multiply probe: the module run as ``python -m``, the precisions it
    measures, and the versions of the libraries its kernels come from (part of the cache key)."""

    module: str
    precisions: tuple[str, ...]
    versions: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class KernelRate:
    """One kernel's rate: the median over its timed calls, and their spread."""

    precision: str
    kernel: str  #: the kernel, in words ("torch.mm", "MatMul, pre-packed weight")
    probe: str  #: the probe's module
    n: int  #: the GEMM's side (n x n times n x n)
    prepacked: bool
    gflops: float | None  #: 2 n^3 / the median seconds, in G(FL)OP/s; None when it failed
    iqr_gflops: float | None  #: the interquartile range of the per-call rates
    calls: int
    error: str = ""  #: why the kernel could not run here

    @classmethod
    def of(cls, row: dict, probe: str) -> KernelRate:
        """The rate of one kernel a probe reported (:func:`labkit.frameworks.torch.peak.main`)."""
        times = [t for t in row.get("times_s") or [] if isinstance(t, int | float) and t > 0]
        ops = row.get("ops") or 0
        rates = [ops / t / 1e9 for t in times]
        ok = bool(rates) and not row.get("error")
        return cls(
            str(row.get("precision", "")),
            str(row.get("kernel", "?")),
            probe,
            int(row.get("n") or 0),
            bool(row.get("prepacked")),
            stats.median(rates) if ok else None,
            stats.iqr(rates) if ok else None,
            len(times),
            str(row.get("error") or ("" if ok else "no timed calls")),
        )

    def __str__(self) -> str:
        where = f"{self.kernel} ({self.probe.rsplit('.', 2)[-2]}, {self.n}^3)"
        if self.gflops is None:
            return f"{where}: failed ({self.error})"
        return f"{where}: {self.gflops:,.0f} ± {self.iqr_gflops:,.0f} GFLOP/s"


@dataclass(frozen=True)
class MeasuredPeak:
    """The attainable matrix-multiply rate at one precision, beside the spec-sheet estimate."""

    precision: str
    gflops: float | None  #: the best kernel's median rate; None when not measured
    iqr_gflops: float | None  #: its spread (interquartile range of the per-call rates)
    threads: int  #: the intra-op threads it was measured with
    kernel: str  #: the best kernel, in words
    estimate_gflops: float | None  #: the spec-sheet estimate for ``threads`` cores, if known
    implied_clock_ghz: float | None  #: gflops / (cores used x FLOPs per cycle per core)
    #: the measured rate beats the estimate (or implies an impossible clock): an input is off
    above_estimate: bool
    note: str  #: how far it sits from the estimate; why it is flagged or not measured
    kernels: tuple[KernelRate, ...] = ()
    #: why it is not a valid peak (a wide spread, a busy machine); empty when valid
    invalid: tuple[str, ...] = ()

    @property
    def measured(self) -> bool:
        return self.gflops is not None

    @property
    def valid(self) -> bool:
        """Measured, with a spread under the record's limit on a quiet machine."""
        return self.measured and not self.invalid

    @property
    def of_estimate(self) -> float | None:
        """The measured rate as a share of the estimate (None without both)."""
        if self.gflops is None or not self.estimate_gflops:
            return None
        return self.gflops / self.estimate_gflops

    def images_per_s_at(self, image_size: int, training: bool = False) -> float | None:
        """ResNet-50 images/s at ``image_size`` if it ran at this rate (None: not measured or
        not valid, so no record is judged against it)."""
        if not self.valid:
            return None
        return self.gflops * 1e9 / resnet.flops(image_size, training=training)

    def explain_above(self) -> str:
        """Why a benchmark figure may sit above this peak, in words ("" when not valid)."""
        if not self.valid:
            return ""
        head = (
            f"above the measured {self.precision} matrix-multiply peak ({self.gflops:,.0f} "
            f"GFLOP/s with {self.threads} threads)"
        )
        remeasure = "measure the peak again when the machine is quiet: python -m labkit doctor "
        remeasure += "--remeasure"
        if self.precision == "fp32":
            return (
                f"{head}: a ResNet-50 step is more than matrix multiplies, so this is almost "
                f"surely a timing error (a step that returns before its work is done), or the "
                f"machine was busier when the peak was measured ({remeasure})"
            )
        return (
            f"{head}: possible with a better kernel than the plain GEMM the peak was measured "
            f"with (the libraries' {self.precision} convolutions can use AMX or VNNI better), "
            f"else a timing error or a peak measured on a busy machine ({remeasure})"
        )

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class MeasuredPeaks:
    """The measured peak of every precision for one thread count, and where it comes from."""

    threads: int
    peaks: dict[str, MeasuredPeak]
    measured_at: str  #: ISO 8601 UTC
    versions: dict[str, str] = field(default_factory=dict)  #: the probes' libraries
    problems: tuple[str, ...] = ()  #: probes that did not run, and why
    source: str = ""  #: the cache file or fixture it was read from ("" when just measured)
    #: CPUs other processes kept busy while the probes ran (None: not known)
    others_cpus: float | None = None
    #: why the machine was too busy for a trustworthy peak ("" when quiet or not known)
    busy: str = ""

    def __getitem__(self, precision: str) -> MeasuredPeak:
        return self.peaks["int8" if precision.startswith("int8") else precision]

    @property
    def valid(self) -> bool:
        """Every measured peak is valid (and one was measured): only such peaks are cached."""
        measured = [p for p in self.peaks.values() if p.measured]
        return bool(measured) and all(p.valid for p in measured)

    def as_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# judging


def to_measure(root: str | os.PathLike = ROOT) -> dict[str, str]:
    """precision -> "" when this CPU has arithmetic of its own for it (it is measured), else why
    it is not measured. fp32 is always measured."""
    rates = per_cycle(root)
    out = {}
    for precision in CEILING_PRECISIONS:
        rate = rates[precision]
        out[precision] = (
            ""
            if precision == "fp32" or rate.native
            else f"not measured: {rate.how} (this CPU has no {precision} unit to measure)"
        )
    return out


def _versus_estimate(precision: str, best: KernelRate, threads: int, root) -> dict:
    """The fields of a measured peak that compare it with the spec-sheet estimate."""
    c = ceiling(precision, root)
    used = min(float(threads), c.cores) if c.cores else float(threads)
    fpc = c.flops_per_cycle
    clock = best.gflops / (used * fpc) if fpc and not math.isnan(fpc) and used else None
    if c.peak_gflops is None:
        implied = f"; it implies at least {clock:.2f} GHz at {fpc:g} {precision} " if clock else ""
        implied += "FLOP/cycle per core" if clock else ""
        note = f"no spec-sheet estimate (the clock is unknown){implied}"
        fast = clock is not None and clock > MAX_PLAUSIBLE_GHZ
        if fast:
            note += (
                f": no CPU runs that fast (above {MAX_PLAUSIBLE_GHZ:g} GHz), so labkit's FLOPs "
                "per cycle for this CPU are too low, or the timing is wrong"
            )
        return {"estimate_gflops": None, "implied_clock_ghz": clock, "above": fast, "note": note}
    estimate = c.peak_gflops * used / c.cores
    share = best.gflops / estimate
    note = f"{share:.0%} of the spec-sheet estimate ({estimate:,.0f} GFLOP/s)"
    if share > 1:
        causes = list(c.caveats) or ["the clock or the FLOPs per cycle it assumes are too low"]
        note += (
            ": above it, so the estimate's inputs are off ("
            + "; ".join(causes)
            + ") or the timing is wrong"
            + (" (a GEMM cannot outrun the FMA units)" if precision == "fp32" else "")
        )
    elif precision != "fp32" and share < 0.5:
        note += (
            f": the libraries' plain {precision} GEMM does not reach what the "
            f"{'matrix' if fpc >= 1024 else 'vector'} units promise (tuned kernels, such as "
            "MLPerf submissions', get closer)"
        )
    return {
        "estimate_gflops": estimate,
        "implied_clock_ghz": clock,
        "above": share > 1,
        "note": note,
    }


def judge(
    precision: str,
    rates: Sequence[KernelRate],
    threads: int,
    root: str | os.PathLike = ROOT,
    why_not: str = "",
    busy: str = "",
) -> MeasuredPeak:
    """The measured peak at ``precision`` from its kernels' rates: the best kernel's, compared
    with the estimate of ``root``'s machine for ``threads`` cores (``why_not``: the reason it
    was not measured, when it was not), with its verdict: invalid when the best kernel's spread
    is over :data:`labkit.bench.MAX_REL_IQR` or the machine was ``busy`` (why, in words)."""
    rates = tuple(r for r in rates if r.precision == precision)
    good = [r for r in rates if r.gflops is not None]
    if not good:
        failed = "; ".join(str(r) for r in rates)
        note = why_not or (f"every kernel failed: {failed}" if rates else "not measured")
        return MeasuredPeak(precision, None, None, threads, "", None, None, False, note, rates)
    best = max(good, key=lambda r: r.gflops)
    vs = _versus_estimate(precision, best, threads, root)
    invalid = [busy] if busy else []
    spread = (best.iqr_gflops or 0.0) / best.gflops
    if spread > bench.MAX_REL_IQR:
        invalid.insert(0, f"spread too wide: IQR/median {spread:.0%} > {bench.MAX_REL_IQR:.0%}")
    if invalid:  # the busy reason says already how to measure again
        again = "" if busy else ": measure it again (python -m labkit doctor --remeasure)"
        vs["note"] = f"not a valid peak ({'; '.join(invalid)}){again}; {vs['note']}"
    return MeasuredPeak(
        precision,
        best.gflops,
        best.iqr_gflops,
        threads,
        str(best).split(":")[0],
        vs["estimate_gflops"],
        vs["implied_clock_ghz"],
        vs["above"],
        vs["note"],
        rates,
        tuple(invalid),
    )


def _busy(outputs: list[dict], threads: int) -> tuple[float | None, str]:
    """The most CPUs other processes kept busy during a probe, and why that is too many for a
    trustworthy peak (the limit of :func:`labkit.bench.verdict`)."""
    seen = [o["others_cpus"] for o in outputs if isinstance(o.get("others_cpus"), int | float)]
    if not seen:
        return None, ""
    worst, cpus = max(seen), os.cpu_count() or 1
    limit = max(0, cpus - threads) + bench.MAX_STOLEN * threads
    if worst <= limit:
        return worst, ""
    return worst, (
        f"measured on a busy machine: other processes kept {worst:.2f} CPUs busy (at most "
        f"{limit:.2f} with {threads} threads on {cpus} CPUs), so the peaks are likely low; "
        "measure again when the machine is quiet (python -m labkit doctor --remeasure)"
    )


def _peaks(outputs: list[dict], threads: int, root, measured_at: str, source: str):
    """:class:`MeasuredPeaks` from the probes' outputs (``{"module", "output" | "error"}``)."""
    rates, versions, problems = [], {}, []
    for item in outputs:
        if item.get("error"):
            problems.append(f"{item.get('module')}: {item['error']}")
            continue
        out = item.get("output") or {}
        versions.update(out.get("versions") or {})
        rates += [KernelRate.of(row, str(item.get("module"))) for row in out.get("kernels") or []]
    reasons = to_measure(root)
    if not outputs:
        reasons = {p: reasons[p] or "not measured: no framework here has a probe" for p in reasons}
    others, busy = _busy(outputs, threads)
    peaks = {p: judge(p, rates, threads, root, reasons[p], busy) for p in CEILING_PRECISIONS}
    return MeasuredPeaks(
        threads, peaks, measured_at, versions, tuple(problems), source, others, busy
    )


# ---------------------------------------------------------------------------------------------
# measuring and the cache


def cache_dir() -> Path:
    """This user's cache folder for labkit (``$LABKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME`` or
    ``~/.cache``, then ``graphlab``), created (mode 0700) when missing."""
    env = os.environ.get(CACHE_ENV, "").strip()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "graphlab"
    path = Path(env).expanduser() if env else base
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def cache_file(probes: Sequence[Probe], threads: int) -> Path:
    """The cache file of these probes at ``threads`` threads on this machine type."""
    machine = machine_of(fingerprint())["machine_id"]
    key = json.dumps([asdict(p) for p in probes], sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_dir() / f"peaks-{machine}-t{threads}-{digest}.json"


def _load(path: Path, root, threads: int | None = None) -> MeasuredPeaks | None:
    text = read(path.parent, path.name)
    try:
        data = jsonio.loads(text) if text is not None else None
    except ValueError:
        return None  # a damaged cache file is measured again
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return None
    n = data.get("threads")
    if not isinstance(n, int) or (threads is not None and n != threads):
        return None
    return _peaks(data.get("outputs") or [], n, root, str(data.get("measured_at")), str(path))


def recorded(root: str | os.PathLike) -> MeasuredPeaks | None:
    """The peaks recorded in a fixture tree (its ``peak-probes.json``), judged against that
    machine's estimate; None when the tree holds none."""
    return _load(Path(root) / FIXTURE_FILE, root)


def cached(probes: Sequence[Probe], threads: int | None = None) -> MeasuredPeaks | None:
    """The peaks measured before on this machine type with these probes and threads, else
    None (nothing is measured)."""
    threads = threads or default_threads()
    try:
        return _load(cache_file(probes, threads), ROOT, threads)
    except OSError:
        return None


def _children_cpu_s() -> float:
    t = os.times()
    return t.children_user + t.children_system


def _run(probe: Probe, threads: int, precisions: list[str], seconds: float) -> dict:
    """One probe's output (``{"module", "output", "others_cpus"}``: the CPUs other processes
    kept busy meanwhile), or why it gave none (``"error"``)."""
    cmd = [sys.executable, "-m", probe.module, "--threads", str(threads)]
    cmd += ["--precisions", ",".join(precisions), "--seconds", str(seconds)]
    before, children = bench.cpu_sample(), _children_cpu_s()
    try:
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            env=proc.child_env(threads),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"module": probe.module, "error": f"no result within {PROBE_TIMEOUT_S:.0f} s"}
    after, probe_cpu = bench.cpu_sample(), _children_cpu_s() - children
    others = bench.busy_elsewhere(before, after)  # the probe counts as another process here
    wall = after[0] - before[0] if before and after else 0.0
    others = max(0.0, others - probe_cpu / wall) if others is not None and wall > 0 else None
    lines = done.stdout.strip().splitlines()
    try:
        return {"module": probe.module, "output": json.loads(lines[-1]), "others_cpus": others}
    except (IndexError, ValueError):
        why = proc.crash_reason(done.returncode, done.stderr, f"python -m {probe.module}")
        return {"module": probe.module, "error": why}


def measure(
    probes: Sequence[Probe],
    threads: int | None = None,
    refresh: bool = False,
    seconds: float = SECONDS,
    attempts: int = 2,
) -> MeasuredPeaks:
    """The measured peaks with ``threads`` threads (default: :func:`default_threads`): from the
    cache, or (``refresh=True``, or no valid one cached) measured now by every probe in turn, a
    few seconds each. A valid measurement is cached; an invalid one (a spread over the record's
    limit, a busy machine: :func:`judge`) is measured again, ``attempts`` times in all, and
    never cached: the last is returned, each peak saying why it is not valid. A probe that
    fails is named in ``problems``; the others count."""
    threads = threads or default_threads()
    found = None if refresh else cached(probes, threads)
    if found is not None and found.valid:
        return found  # a file cached before peaks were judged may be invalid: measured again
    wanted = [p for p, why in to_measure().items() if not why]
    for _ in range(max(1, attempts)):
        outputs = [
            _run(probe, threads, asked, seconds)
            for probe in probes
            if (asked := [p for p in wanted if p in probe.precisions])
        ]
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        peaks = _peaks(outputs, threads, ROOT, now, "")
        if peaks.valid:
            break
    else:
        return peaks  # refused: not the machine's peak
    data = {"format": _FORMAT, "threads": threads, "measured_at": now, "outputs": outputs}
    data["probes"] = [asdict(p) for p in probes]
    try:
        path = cache_file(probes, threads)
        jsonio.write_atomic(path, json.dumps(data, indent=1))
    except OSError:
        return peaks  # an unwritable cache: measured again next time
    return _peaks(outputs, threads, ROOT, now, str(path))
