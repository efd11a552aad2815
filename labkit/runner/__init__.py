"""Run a benchmark plan: every cell in a fresh subprocess, every result appended as it exists.

A :class:`Plan` is frameworks x modes x tasks x batch sizes x precisions on one device, sized
by a profile. :func:`run` measures each :class:`Cell` in its own Python process (``python -m
labkit.runner --cell ...``), the path every figure of the lab takes (``benchmarks/overhead.py``
checks it against a bare loop):

- one thread policy: ``threads`` intra-op threads (default :func:`labkit.hardware.
  default_threads`) and one inter-op thread in every framework, set first thing in the fresh
  process and read back into the record;
- cold compile caches: each cell's caches start empty in its own folder (:func:`cache_env`),
  so a first call includes the whole compilation unless the record says ``cache: "warm"``;
- a timeout, after which the cell's whole process group is killed; a cell whose runner dies
  (even by SIGKILL) ends its own process group.

A cell that fails, hangs or runs out of memory, or whose result makes no valid record, becomes
a recorded failure and the plan goes on. Each record is appended to the JSONL results file
(:mod:`labkit.results`) the moment it exists, so an interrupted run (Ctrl-C, SIGTERM, a crash)
keeps everything measured (a Ctrl-C during a write waits for it), and ``resume=True`` measures
only what is missing. Before it starts, a run says how long it should take (:func:`forecast`);
``on_record`` shows each result as it arrives (:class:`labkit.live.LiveTable`).

Test hook: ``LABKIT_TEST_FAULT=KIND[:FRAMEWORK/MODE/TASK][,...]`` makes matching cells (all
cells when no selector is given) misbehave inside their subprocess before any framework loads:
``fail`` raises, ``hang`` sleeps forever (in a grandchild process too, so that killing the
whole process group is tested), ``oom`` allocates until ``MemoryError`` (only under a cell
memory limit, ``run(..., memory_limit_mb=...)``, so that it can never hurt the machine).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import bench, hardware, profiles, results
from .. import frameworks as fw_registry
from ..frameworks.contract import DEVICES, PRECISIONS, TASKS, Prepared, Unsupported
from ..util import jsonio, proc, stats, tempdirs

FAULT_ENV = "LABKIT_TEST_FAULT"
FAULTS = ("fail", "hang", "oom")
#: thread-related variables a cell records (the user's own settings pass through unchanged)
RECORDED_ENV = (
    *proc.THREAD_ENV,
    "TF_NUM_INTEROP_THREADS",
    "OMP_WAIT_POLICY",
    "GOMP_SPINCOUNT",
    "KMP_BLOCKTIME",
    "KMP_AFFINITY",
    "OMP_PROC_BIND",
)
LOG_TAIL_CHARS = 2000


@dataclass(frozen=True)
class Cell:
    """One measurement: a framework's mode on a task at a batch size, precision and device."""

    framework: str
    mode: str
    task: str
    batch_size: int
    precision: str
    image_size: int
    device: str
    profile: str
    #: the model: ResNet-50, or a learner's spec (labkit.explore.bench) with its input shapes
    model: str = results.DEFAULT_MODEL
    input_shape: str = ""

    @property
    def custom(self) -> bool:
        return self.model != results.DEFAULT_MODEL

    def label(self) -> str:
        if self.custom:
            return (
                f"{results.model_name(self.model)} {self.framework} {self.mode} {self.task} "
                f"{self.input_shape} {self.precision} {self.device}"
            )
        return (
            f"{self.framework} {self.mode} {self.task} b{self.batch_size} {self.precision} "
            f"{self.image_size}px {self.device}"
        )

    def key(self) -> tuple:
        return tuple(getattr(self, k) for k in results.KEY)


# ---------------------------------------------------------------------------------------------
# the plan


def _unknown(kind: str, bad: Sequence[str], valid: Iterable[str]) -> ValueError:
    return ValueError(
        f"unknown {kind} {', '.join(map(repr, bad))}: valid {kind}s are {', '.join(valid)}"
    )


def _pick(kind: str, given: Sequence[str] | None, valid: Sequence[str]) -> list[str]:
    if given is None:
        return list(valid)
    given = [g.strip() for g in given if g.strip()]
    if not given:
        raise ValueError(f"no {kind} given: choose from {', '.join(valid)}")
    bad = [g for g in given if g not in valid]
    if bad:
        raise _unknown(kind, bad, valid)
    return list(dict.fromkeys(given))


def mode_names() -> list[str]:
    """Every word ``--modes`` accepts: eager, graph, and each framework's own mode names."""
    own = [m for fw in fw_registry.NAMES for m in fw_registry.MODES[fw]]
    return list(dict.fromkeys(["eager", "graph", *own]))


def resolve_modes(framework: str, modes: Sequence[str] | None) -> list[str]:
    """The modes of ``framework`` that ``modes`` selects (None: all of them).

    ``eager`` is the framework's eager mode (MindSpore: pynative), ``graph`` every other mode
    (ONNX Runtime's only mode is a graph), and a mode's own name selects it.
    """
    spec = fw_registry.spec(framework)
    if modes is None:
        return list(spec.modes)
    out: list[str] = []
    for m in modes:
        if m == "eager":
            out += [spec.eager] if spec.eager else []
        elif m == "graph":
            out += spec.graph_modes
        elif m in spec.modes:
            out.append(m)
    return list(dict.fromkeys(x for x in spec.modes if x in out))  # the framework's order


def _batches(sizes: Sequence[int] | None) -> list[int] | None:
    if sizes is None:
        return None
    bad = [b for b in sizes if isinstance(b, bool) or not isinstance(b, int) or b < 1]
    if bad or not sizes:
        raise ValueError(
            f"batch sizes must be whole numbers >= 1, got {list(sizes)}: e.g. --batch-sizes 1,8"
        )
    return list(dict.fromkeys(sizes))


@dataclass
class Plan:
    """The cells to measure, in order, and the profile that sizes them."""

    cells: list[Cell]
    profile: profiles.Profile

    def __len__(self) -> int:
        return len(self.cells)

    def __iter__(self):
        return iter(self.cells)

    @classmethod
    def build(
        cls,
        frameworks: Sequence[str] | None = None,
        modes: Sequence[str] | None = None,
        tasks: Sequence[str] | None = None,
        batch_sizes: Sequence[int] | None = None,
        precisions: Sequence[str] | None = None,
        device: str = "cpu",
        profile: str | profiles.Profile | None = None,
    ) -> Plan:
        """Validate every choice (``ValueError`` names the valid ones) and list the cells.

        Defaults: every framework, every mode, every task, fp32, the CPU, the current profile.
        ``latency`` always runs one image per call (``profile.latency_batch``); ``throughput``
        and ``train`` run ``batch_sizes`` when given, else the profile's batch for that task.
        """
        prof = profile if isinstance(profile, profiles.Profile) else profiles.get(profile)
        fws = _pick("framework", frameworks, fw_registry.NAMES)
        if modes is not None:
            _pick("mode", modes, mode_names())
            modes = [m.strip() for m in modes if m.strip()]
        tks = _pick("task", tasks, TASKS)
        precs = _pick("precision", precisions if precisions is not None else ["fp32"], PRECISIONS)
        (dev,) = _pick("device", [device], DEVICES)
        sizes = _batches(batch_sizes)
        default_batch = {
            "latency": prof.latency_batch,
            "throughput": prof.throughput_batch,
            "train": prof.train_batch,
        }
        cells = []
        for fw in fws:
            for mode in resolve_modes(fw, modes):
                for task in tks:
                    batched = sizes or [default_batch[task]]
                    for b in [prof.latency_batch] if task == "latency" else batched:
                        for prec in precs:
                            cells.append(
                                Cell(fw, mode, task, b, prec, prof.image_size, dev, prof.name)
                            )
        if not cells:
            offered = "; ".join(f"{fw}: {', '.join(fw_registry.MODES[fw])}" for fw in fws)
            raise ValueError(
                f"the plan is empty: none of the modes {', '.join(modes or [])} "
                f"belongs to {', '.join(fws)} (their modes: {offered}; "
                f"eager and graph work for every framework)"
            )
        return cls(list(dict.fromkeys(cells)), prof)


# ---------------------------------------------------------------------------------------------
# one cell, inside its own subprocess


def _faults(cell: Cell) -> list[str]:
    """The test faults that ``LABKIT_TEST_FAULT`` asks of ``cell``."""
    spec = os.environ.get(FAULT_ENV, "").strip()
    found = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        kind, _, where = item.partition(":")
        if kind not in FAULTS:
            raise ValueError(
                f"{FAULT_ENV}: unknown fault {kind!r}: valid faults are "
                f"{', '.join(FAULTS)} (format KIND[:FRAMEWORK/MODE/TASK])"
            )
        if not where or where == f"{cell.framework}/{cell.mode}/{cell.task}":
            found.append(kind)
    return found


def _inject(kind: str, memory_limited: bool) -> None:
    if kind == "fail":
        raise RuntimeError(f"test fault injected by {FAULT_ENV}")
    if kind == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        print(f"test fault: hanging, grandchild pid {child.pid}", file=sys.stderr, flush=True)
        time.sleep(3600)
    if kind == "oom":
        if not memory_limited:
            raise RuntimeError(
                f"{FAULT_ENV}=oom needs a cell memory limit (memory_limit_mb) "
                "so that it cannot exhaust the machine"
            )
        hog = []
        while True:  # calloc'd zero pages: address space runs out, resident memory does not grow
            hog.append(bytes(64 * 2**20))


def _versions(framework: str, adapter) -> dict:
    import labkit

    import numpy

    out = {
        framework: adapter.version() if adapter is not None else None,
        "numpy": numpy.__version__,
        "labkit": labkit.__version__,
    }
    extra = fw_registry.spec(framework).extra_packages  # e.g. the exporter of ONNX Runtime's model
    out.update({p: fw_registry.installed_version(p) for p in extra})
    return out


def measure_cell(cell: Cell, threads: int, memory_limit_mb: float | None = None) -> dict:
    """Measure ``cell`` in this process and return the record's fields (run in a fresh process).

    Sets the lab's thread policy first (``threads`` intra-op, one inter-op) and stores what each
    framework reports back; times an export apart (``export_s``) from the rest of the
    preparation; compares the result with the ceiling of its precision. Never raises for a
    framework problem: the fields then say ``status: failed`` and why.
    """
    if memory_limit_mb:
        import resource

        limit = int(memory_limit_mb * 2**20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    prof = profiles.get(cell.profile)
    out: dict = {
        "status": "failed",
        "versions": {},
        "load_1min": bench.load_1min(),
        "threads": {"intra": None, "inter": None},
    }
    adapter = None
    try:
        for kind in _faults(cell):
            _inject(kind, bool(memory_limit_mb))
        adapter = fw_registry.get(cell.framework)
        adapter.set_threads(threads)
        t0 = time.perf_counter()
        if cell.custom:
            prepared = _prepare_model(adapter, cell)
        else:
            from .. import resnet

            weights = resnet.init_weights(0)
            prepared = adapter.prepare(
                weights,
                cell.mode,
                cell.task,
                cell.batch_size,
                cell.precision,
                cell.image_size,
                cell.device,
            )
            del weights
        prepare_s = time.perf_counter() - t0 - (prepared.export_s or 0.0)
        out["threads"] = adapter.threads()
        m = bench.measure(
            prepared,
            prof.warmup,
            prof.min_repeats,
            prof.min_time_s,
            prof.max_repeats,
            label=cell.label(),
        )
        out.update(
            m.as_dict(),
            status="ok",
            prepare_s=prepare_s,
            export_s=prepared.export_s,
            notes=prepared.notes,
            recipe=prepared.recipe,
        )
        out.update(ceiling_fields(m.images_per_s, cell))
    except Unsupported as exc:
        out["error"] = f"unsupported: {exc}"
    except MemoryError:
        out["error"] = (
            "out of memory: MemoryError while measuring (the cell needs more memory "
            "than it may use here: try a smaller batch size or the smoke profile)"
        )
    except Exception as exc:  # noqa: BLE001 - a framework error is a result, not a crash
        out["error"] = f"{type(exc).__name__}: {exc}".strip()
        out["log"] = traceback.format_exc()[-LOG_TAIL_CHARS:]
    out["peak_rss_mb"] = bench.peak_rss_mb()
    with contextlib.suppress(Exception):
        out["versions"] = _versions(cell.framework, adapter)
    return out


def ceiling_fields(images_per_s: float, cell: Cell) -> dict:
    """``ceiling_images_per_s``, ``ceiling_share``, ``above_ceiling`` and ``ceiling_note`` of a
    measured cell: its figure against this machine's ceiling at its precision (the CPU only;
    null where the ceiling is unknown)."""
    none = {
        "ceiling_images_per_s": None,
        "ceiling_share": None,
        "above_ceiling": False,
        "ceiling_note": "",
    }
    if cell.device != "cpu" or cell.custom:  # the CPU's ceiling, for the ResNet-50 only
        return none
    c = hardware.ceiling(cell.precision)
    top = c.images_per_s_at(cell.image_size, training=(cell.task == "train"))
    if top is None:
        return none
    above = images_per_s > top
    return {
        "ceiling_images_per_s": top,
        "ceiling_share": images_per_s / top,
        "above_ceiling": above,
        "ceiling_note": c.explain_above() if above else "",
    }


def _prepare_model(adapter, cell: Cell) -> Prepared:
    """Build a learner's model from its spec and prepare its step (labkit.explore.bench)."""
    from . import inputs as models

    if not isinstance(adapter, fw_registry.ModelBencher):
        raise Unsupported(f"labkit cannot benchmark other models with {cell.framework}")
    model = models.build(cell.model)
    inputs = models.example_arrays(models.parse_inputs(cell.input_shape))
    return adapter.prepare_model(model, inputs, cell.mode, cell.task, cell.precision, cell.device)


def _cell_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m labkit.runner", description="measure one benchmark cell (used by run())"
    )
    parser.add_argument("--cell", required=True, help="the Cell as JSON")
    parser.add_argument("--result", required=True, help="write the record's fields here (JSON)")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--memory-limit-mb", type=float, default=None)
    parser.add_argument("--parent", type=int, default=0, help="exit when this process is gone")
    args = parser.parse_args(argv)
    if args.parent:
        # the runner died (even by SIGKILL): no orphan keeps running, and the cell's temporary
        # folder goes too; the cell leads its own process group, so what it started goes with it
        proc.exit_with_parent(args.parent, remove=Path(args.result).parent)
    cell = Cell(**json.loads(args.cell))
    fields = measure_cell(cell, args.threads, args.memory_limit_mb)
    jsonio.write_atomic(args.result, json.dumps(fields))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip framework teardown (MindSpore and thread pools can hang or abort at exit)


# ---------------------------------------------------------------------------------------------
# the parent: subprocesses, timeouts, the results file


@dataclass
class RunResult:
    """What :func:`run` did: the records it appended, the cells it skipped, whether it finished."""

    out: Path
    records: list[dict] = field(default_factory=list)
    skipped: list[Cell] = field(default_factory=list)
    interrupted: bool = False
    wall_s: float = 0.0
    forecast: Forecast | None = None  #: what the run expected before it started
    #: records measured but not (yet) written to ``out``: a write failed (see :func:`run`)
    unsaved: list[dict] = field(default_factory=list)
    write_error: str = ""  #: why the last write that failed did

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.records if r["status"] != "ok"]

    def __repr__(self) -> str:
        state = "interrupted (rerun with resume=True)" if self.interrupted else "complete"
        unsaved = (
            f"; {len(self.unsaved)} NOT written ({self.write_error}), kept in .unsaved"
            if self.unsaved
            else ""
        )
        return (
            f"<RunResult {state}: {len(self.records)} cells measured ({len(self.failed)} "
            f"failed or unsupported), {len(self.skipped)} skipped, {self.wall_s:.0f} s, "
            f"appended to {self.out}{unsaved}>"
        )


#: TensorFlow's XLA flag that keeps compiled executables on disk between processes
XLA_CACHE_FLAG = "--tf_xla_persistent_cache_directory"


def shared_cache_dir() -> Path:
    """Where cells run with ``cache="warm"`` share their compile caches: this user's own folder
    (``labkit-compile-cache-<uid>`` in the temp directory;
    :func:`labkit.util.tempdirs.private_dir` refuses one that someone else could write to, as
    Inductor loads compiled libraries from it)."""
    return tempdirs.private_dir("labkit-compile-cache")


def check_cache(cache: str) -> str:
    """``cache`` if it is ``"cold"`` or ``"warm"``; for ``"warm"`` the shared folder must also be
    this user's own (:func:`shared_cache_dir`), else ``ValueError`` with the fix."""
    if cache not in ("cold", "warm"):
        raise ValueError(f"cache must be 'cold' or 'warm', got {cache!r}")
    if cache == "warm":
        shared_cache_dir()
    return cache


def cache_env(cache: str, cell_dir: Path) -> dict[str, str]:
    """The environment that gives a cell's compile caches their folders.

    ``cold``: every cache starts empty in the cell's own folder ``cell_dir``: the temporary
    directory (Inductor's default cache and the ONNX export cache live there), Inductor's and
    Triton's caches, CUDA's kernel cache; MindSpore's compile cache and XLA's persistent cache
    stay off (a user's ``TF_XLA_FLAGS`` loses only its cache folder). ``warm``: the caches are
    shared with earlier runs under :func:`shared_cache_dir` (MindSpore's and XLA's turned on),
    and the temporary directory is the usual one, so the first call may reuse earlier work.
    """
    check_cache(cache)
    flags = [
        f for f in os.environ.get("TF_XLA_FLAGS", "").split() if not f.startswith(XLA_CACHE_FLAG)
    ]
    if cache == "cold":
        root = cell_dir / "cache"
        env = {"TMPDIR": str(root / "tmp"), "MS_COMPILER_CACHE_ENABLE": "0"}
    else:
        root = shared_cache_dir()
        env = {"MS_COMPILER_CACHE_ENABLE": "1"}
        flags.append(f"{XLA_CACHE_FLAG}={root / 'xla'}")
    env.update(
        TORCHINDUCTOR_CACHE_DIR=str(root / "inductor"),
        TRITON_CACHE_DIR=str(root / "triton"),
        CUDA_CACHE_PATH=str(root / "cuda"),
        MS_COMPILER_CACHE_PATH=str(root / "ms-compile"),
        TF_XLA_FLAGS=" ".join(flags),
    )
    for key in ("TMPDIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        if key in env:
            Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


def cell_env(cell: Cell, threads: int, cell_dir: Path, cache: str = "cold") -> dict[str, str]:
    """The whole environment of a cell's process: this one's, the lab's thread policy at
    ``threads`` (:func:`labkit.util.proc.child_env`), the caches (:func:`cache_env`).

    ``benchmarks/overhead.py`` runs its bare loop in the same environment.
    """
    path: list[str] = []
    if cell.custom:  # the learner's model: its module must import there as it does here
        from . import inputs as models

        path = models.child_pythonpath()
    extra = {
        **cache_env(cache, cell_dir),
        "LABKIT_PROFILE": cell.profile,
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    return proc.child_env(threads, path=path, extra=extra)


def _crash_reason(code: int, log: str) -> str:
    return proc.crash_reason(
        code, log, "the cell's process", "try a smaller batch size or the smoke profile"
    )


def run_cell(
    cell: Cell,
    threads: int,
    timeout_s: float,
    memory_limit_mb: float | None = None,
    tick=None,
    cache: str = "cold",
) -> dict:
    """Measure ``cell`` in a fresh subprocess; return the record's fields (a failure is a result).

    ``tick()`` is called about once a second while waiting (it refreshes the progress bar).
    ``cache`` says where its compile caches live (:func:`cache_env`).
    """
    with tempfile.TemporaryDirectory(prefix="labkit-cell-") as tmp:
        result, log = Path(tmp) / "result.json", Path(tmp) / "log.txt"
        cmd = [
            sys.executable,
            "-m",
            "labkit.runner",
            "--cell",
            json.dumps(asdict(cell)),
            "--result",
            str(result),
            "--threads",
            str(threads),
            "--parent",
            str(os.getpid()),
        ]
        if memory_limit_mb:
            cmd += ["--memory-limit-mb", str(memory_limit_mb)]
        env = cell_env(cell, threads, Path(tmp), cache)
        recorded = {k: env[k] for k in RECORDED_ENV if k in env}
        t0 = time.perf_counter()
        with open(log, "wb") as logf:
            # cwd: the temporary folder, so that files a framework drops there (MindSpore's
            # graph dumps) go with it
            child = subprocess.Popen(
                cmd,
                stdout=logf,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=tmp,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            deadline = t0 + timeout_s
            while True:
                try:
                    code = child.wait(timeout=max(0.01, min(1.0, deadline - time.perf_counter())))
                    break
                except subprocess.TimeoutExpired:
                    if time.perf_counter() >= deadline:
                        proc.kill_group(child)
                        return {
                            "status": "failed",
                            "wall_s": time.perf_counter() - t0,
                            "thread_env": recorded,
                            "cache": cache,
                            "error": (
                                f"timed out after {timeout_s:g} s (the cell's process "
                                "group was killed); raise the profile's cell_timeout_s "
                                "or use a smaller profile"
                            ),
                            "log": proc.tail(log, LOG_TAIL_CHARS),
                        }
                    if tick is not None:
                        tick()
        finally:
            proc.kill_group(child)  # also reaps stragglers (compile workers) of a finished cell
        wall = time.perf_counter() - t0
        base = {"wall_s": wall, "thread_env": recorded, "cache": cache}
        if result.exists():
            try:
                fields = json.loads(result.read_text(encoding="utf-8"))
                if not isinstance(fields, dict):
                    raise ValueError(f"expected a JSON object, got {type(fields).__name__}")
            except (ValueError, OSError) as exc:
                return {
                    **base,
                    "status": "failed",
                    "error": f"the cell's result could not be read: {exc}",
                    "log": proc.tail(log, LOG_TAIL_CHARS),
                }
            if fields.get("status") != "ok" and not fields.get("log"):
                fields["log"] = proc.tail(log, LOG_TAIL_CHARS)
            return {**fields, **base}
        text = proc.tail(log, LOG_TAIL_CHARS)
        return {**base, "status": "failed", "error": _crash_reason(code, text), "log": text}


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """Let SIGTERM stop a run like Ctrl-C does (main thread only), restoring the old handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def _signals_held():
    """Let SIGINT and SIGTERM wait while a record is written, then act on them (main thread).

    Python runs signal handlers in the main thread whichever thread the OS delivered the signal
    to, so swapping the handlers for ones that only take note defers a Ctrl-C reliably, also
    in a notebook kernel full of threads (a signal mask would not: another thread takes the
    signal). Afterwards the first signal that arrived goes to the handler it was meant for.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def note(signum, frame):
        caught.append(signum)

    old = {s: signal.signal(s, note) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    if caught:
        handler = old[caught[0]]
        if callable(handler):
            handler(caught[0], None)
        elif handler == signal.SIG_DFL:
            os.kill(os.getpid(), caught[0])


def _warn_if_busy(threads: int) -> None:
    load, cpus = bench.load_1min(), os.cpu_count() or 1
    if load is not None and load >= cpus:
        passive = "" if "OMP_WAIT_POLICY" in os.environ else " or OMP_WAIT_POLICY=PASSIVE"
        warnings.warn(
            f"this machine is busy (1-minute load {load:.1f} on {cpus} CPUs): timings "
            f"will be slower and noisier than on an idle machine (records will say so: "
            f"valid=False), and runtimes whose {threads} threads spin-wait (OpenMP in PyTorch) "
            f"can slow down many-fold; close other work, or try fewer threads "
            f"(--threads 1){passive}",
            UserWarning,
            stacklevel=3,
        )


def done_keys(records: Iterable[dict]) -> set[tuple]:
    """Cells that need no new measurement: measured, or unsupported here."""
    return {results.key(r) for r in records if r["status"] == "ok" or r["unsupported"]}


# ---------------------------------------------------------------------------------------------
# how long will it take?

#: assumptions of a forecast without earlier records (stated with every such forecast)
STARTUP_S = 10.0  # a fresh process: Python, the framework's import, building ResNet-50
COMPILE_S = 30.0  # a graph mode's (or an export's) one-off work before the first call returns
EFFICIENCY = 0.25  # the share of the compute ceiling a ResNet-50 step reaches on a CPU
UNKNOWN_GFLOPS_PER_THREAD = 10.0  # the rate assumed where the ceiling itself is unknown


@dataclass
class Forecast:
    """How long a plan should take here: each cell's seconds and where the figure comes from."""

    cells: list[tuple[Cell, float, str]]  # (cell, seconds, "earlier run" or "estimate")
    assumptions: str = ""

    @property
    def total_s(self) -> float:
        return sum(s for _, s, _ in self.cells)

    def remaining_s(self, done: int, elapsed_s: float) -> float:
        """Seconds left after ``done`` cells took ``elapsed_s``: the forecast of the rest, scaled
        by how the finished cells compared with theirs."""
        forecast_done = sum(s for _, s, _ in self.cells[:done])
        scale = elapsed_s / forecast_done if done and forecast_done > 0 else 1.0
        return scale * sum(s for _, s, _ in self.cells[done:])

    def __str__(self) -> str:
        known = sum(src == "earlier run" for _, _, src in self.cells)
        parts = []
        if known:
            parts.append(f"{known} from earlier runs of the same cells here")
        if known < len(self.cells):
            parts.append(f"{len(self.cells) - known} estimated ({self.assumptions})")
        return (
            f"{len(self.cells)} cells, about {_minutes(self.total_s)} on this machine: "
            + "; ".join(parts)
        )


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def _same_machine(record: dict, machine: dict) -> bool:
    m = record.get("machine") or {}
    return m.get("cpu") == machine.get("cpu") and m.get("cores") == machine.get("cores")


def forecast(plan: Plan, history: Iterable[dict] = (), threads: int | None = None) -> Forecast:
    """How long ``plan`` should take on this machine, before it starts.

    A cell measured here before (same cell, same CPU) takes what it took then (its ``wall_s``);
    any other cell is estimated: :data:`STARTUP_S` for a fresh process, :data:`COMPILE_S` more
    for a graph mode or an export, and its calls (first, warm-up, the profile's timed minimum)
    at the rate earlier records of its framework reached here, else at :data:`EFFICIENCY` of the
    compute ceiling (an assumed :data:`UNKNOWN_GFLOPS_PER_THREAD` where the ceiling is unknown).
    A learner's model (``labkit.explore.bench``) has no known FLOP count: its estimate counts
    the start-up, the compile and the profile's minimum timed work only.
    """
    from .. import resnet

    machine = hardware.fingerprint()
    threads = threads or hardware.default_threads()
    past = [r for r in history if _same_machine(r, machine) and r.get("wall_s")]
    walls = {results.key(r): float(r["wall_s"]) for r in past}
    rates: dict[tuple, list[float]] = {}  # (framework, training) -> achieved GFLOP/s
    for r in results.ok(past):
        if results.custom(r):  # no FLOP count for a learner's model
            continue
        training = r["task"] == "train"
        gflop = resnet.flops(r["image_size"], training=training) / 1e9
        rates.setdefault((r["framework"], training), []).append(r["images_per_s"] * gflop)
    how = "assumed ResNet-50 at "
    peak = hardware.ceiling("fp32").peak_gflops
    if peak is not None:
        default_rate = EFFICIENCY * peak
        how += f"{EFFICIENCY:.0%} of the {peak:.0f} GFLOP/s ceiling"
    else:
        default_rate = UNKNOWN_GFLOPS_PER_THREAD * threads
        how += f"{UNKNOWN_GFLOPS_PER_THREAD:g} GFLOP/s per thread (the ceiling is unknown)"
    how += f", {STARTUP_S:g} s to start a cell, {COMPILE_S:g} s to compile or export"
    cells = []
    for cell in plan:
        if cell.key() in walls:
            cells.append((cell, walls[cell.key()], "earlier run"))
            continue
        p = plan.profile
        if cell.custom:  # its cost per call is unknown: the profile's minimum timed work
            call, timed = 0.0, p.min_time_s
        else:
            training = cell.task == "train"
            rate = stats.median(rates.get((cell.framework, training), [default_rate]))
            call = cell.batch_size * resnet.flops(cell.image_size, training=training) / 1e9 / rate
            timed = min(max(p.min_repeats * call, p.min_time_s), p.max_repeats * call)
        spec = fw_registry.spec(cell.framework)
        compile_s = COMPILE_S if cell.mode != spec.eager else 0.0
        cells.append((cell, STARTUP_S + compile_s + (2 + p.warmup) * call + timed, "estimate"))
    return Forecast(cells, how)


# ---------------------------------------------------------------------------------------------
# the run


def _record(cell: Cell, fields: dict, machine: dict) -> dict:
    """The record of a cell; a result that does not make a valid record becomes a failed one
    that says why (and the plan goes on)."""
    known = {k: v for k, v in fields.items() if k in results.FIELDS}
    try:
        return results.make(**{**asdict(cell), **known, "machine": machine})
    except (ValueError, TypeError) as exc:
        wall = known.get("wall_s")
        return results.make(
            **asdict(cell),
            status="failed",
            error=f"the cell's result could not be recorded: {exc}",
            log=str(fields.get("log") or "")[-LOG_TAIL_CHARS:],
            wall_s=wall if isinstance(wall, float) and math.isfinite(wall) else None,
            cache=known.get("cache") if known.get("cache") in results.CACHE_STATES else "unknown",
            machine=machine,
        )


def check_out(out: str | os.PathLike) -> None:
    """``ValueError`` naming ``out`` and the fix when the results file cannot be written (its
    folder is read-only or a file, its disk full): found before anything is measured."""
    why = jsonio.unwritable(out)
    if why:
        raise ValueError(
            f"cannot write results to {out}: {why}; fix: choose a results file in a folder you "
            f"can write to (--out FILE.jsonl, out= in Python) or free space on its disk; nothing "
            f"was measured"
        )


def _save(res: RunResult, record: dict) -> None:
    """Append ``record`` to ``res.out`` after any that an earlier write could not; a write that
    fails keeps them in ``res.unsaved`` and says where it could not write, and the run goes on
    (a full disk may have room again after the next cell)."""
    res.unsaved.append(record)
    while res.unsaved:
        try:
            results.append(res.out, res.unsaved[0])
        except OSError as exc:
            from tqdm.auto import tqdm

            res.write_error = f"{type(exc).__name__}: {exc.strerror or exc}"
            tqdm.write(
                f"labkit: could not write to {res.out} ({res.write_error}); {len(res.unsaved)} "
                f"result(s) kept in memory only (RunResult.unsaved), tried again after the next "
                f"cell; free space, then rerun with --resume (resume=True) to measure what is "
                f"missing",
                file=sys.stderr,
            )
            return
        res.unsaved.pop(0)


def run(
    plan: Plan,
    out: str | os.PathLike,
    resume: bool = False,
    progress: bool = True,
    threads: int | None = None,
    timeout_s: float | None = None,
    memory_limit_mb: float | None = None,
    cache: str = "cold",
    history: Iterable[dict] | None = None,
    on_record=None,
) -> RunResult:
    """Measure every cell of ``plan`` and append each record to ``out`` as soon as it exists.

    ``resume=True`` skips cells that ``out`` already holds (measured, or unsupported here).
    ``threads`` defaults to :func:`labkit.hardware.default_threads`; ``timeout_s`` to the
    profile's ``cell_timeout_s``; ``cache`` is ``"cold"`` (every compile cache empty for each
    cell) or ``"warm"`` (shared with earlier runs; see :func:`cache_env`). Before it starts it
    says how long it should take (:func:`forecast` from ``history``, by default the records
    already in ``out``), and it calls ``on_record(record)`` after each record is written (a
    notebook's live table). Ctrl-C or SIGTERM stops the run after killing the running cell; a
    record being written is finished first; everything appended so far stays, and the result
    says ``interrupted``. An existing ``out`` that is not a valid results file, or an ``out`` that
    cannot be written (:func:`check_out`), raises ``ValueError`` before anything runs. A write
    that fails later (a full disk) keeps the record in ``records`` and ``unsaved``, says so, and
    the run goes on; the next append (or the next run with ``resume``) sets aside a partial line.
    """
    out = Path(out)
    threads = threads or hardware.default_threads()
    timeout_s = timeout_s or plan.profile.cell_timeout_s
    check_cache(cache)  # a bad cache value, or an unsafe shared cache, fails before anything runs
    # refuse to append to a corrupt file (ValueError with the fix) before anything runs
    existing = results.load(out) if out.exists() else []
    check_out(out)
    _warn_if_busy(threads)
    done = done_keys(existing) if resume else set()
    todo = [c for c in plan if c.key() not in done]
    res = RunResult(out, skipped=[c for c in plan if c.key() in done])
    res.forecast = forecast(Plan(todo, plan.profile), existing if history is None else history)
    if progress and todo and on_record is None:  # a live table shows it itself
        print(f"labkit: {res.forecast}", file=sys.stderr, flush=True)
    machine = hardware.fingerprint()
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    bar = tqdm(total=len(todo), unit="cell", disable=not progress, dynamic_ncols=True)
    live = sys.stderr.isatty() or "notebook" in type(bar).__module__  # else one line per cell
    try:
        with _sigterm_as_interrupt():
            for cell in todo:
                bar.set_description_str(cell.label())
                fields = run_cell(
                    cell,
                    threads,
                    timeout_s,
                    memory_limit_mb,
                    tick=bar.refresh if live else None,
                    cache=cache,
                )
                with _signals_held():  # a Ctrl-C now waits until the line is whole
                    record = _record(cell, fields, machine)
                    res.records.append(record)
                    _save(res, record)
                bar.set_postfix_str(
                    f"{record['images_per_s']:.2f} images/s"
                    if record["status"] == "ok"
                    else "failed"
                )
                bar.update(1)
                if on_record is not None:
                    on_record(record)
    except KeyboardInterrupt:
        res.interrupted = True
    finally:
        bar.close()
        res.wall_s = time.perf_counter() - t_start
    return res
