"""Shared test setup. The protobuf setting must precede any framework import (see labkit/__init__)."""

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
os.environ.setdefault("LABKIT_PROFILE", "smoke")
# exercise progress of test runs (and of the notebooks nbval runs in this session) goes to a
# temporary file, never the home folder of whoever runs the tests
_PROGRESS_DIR = tempfile.TemporaryDirectory(prefix="graphlab-test-progress-")
os.environ.setdefault("LABKIT_PROGRESS", os.path.join(_PROGRESS_DIR.name, "progress.json"))
# the measured matrix-multiply peaks (labkit.hardware.measured) of test runs are cached in this
# user's own temporary folder, shared by the test runs on this machine, never the home folder;
# a test that needs an empty cache sets LABKIT_CACHE_DIR itself
if "LABKIT_CACHE_DIR" not in os.environ:
    from labkit.util import tempdirs

    os.environ["LABKIT_CACHE_DIR"] = str(tempdirs.private_dir("labkit-test-cache"))

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: the fields of a record as schema 1 wrote it (those of its fixture file, and no others)
SCHEMA_1_FIELDS = frozenset(
    json.loads((ROOT / "tests/data/results-v1.jsonl").read_text().partition("\n")[0])
)


def write_notebook(path: Path, code: list[str], markdown: str | None = None) -> None:
    """A notebook file of these code cells (ids c0, c1, ...), after one markdown cell if given."""
    import json

    cells = [{"cell_type": "markdown", "id": "md", "metadata": {}, "source": markdown}] * bool(
        markdown
    )
    cells += [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": f"c{i}",
            "metadata": {},
            "outputs": [],
            "source": src,
        }
        for i, src in enumerate(code)
    ]
    nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


def notebook_key(path: Path) -> str:
    """A notebook's number as its exercises and options name it: "04", "04b" (before the "_")."""
    return path.stem.split("_")[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_labkit(
    *args: str, env: dict | None = None, timeout: float = 600, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """Run ``python -m labkit ...`` in a real subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "labkit", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=cwd or ROOT,
        check=False,
    )


#: under CI a framework or tool that is missing fails the run instead of skipping its tests
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def notebook_script(name: str):
    """The module ``notebooks/<name>.py``, a lesson's code beside its notebook (imported once)."""
    import importlib.util

    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "notebooks" / f"{name}.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def skip_or_fail(reason: str) -> None:
    """Skip (on a learner's machine: the lesson says what is missing) or, under ``CI=true``, fail:
    CI must never turn green because a framework or Chromium silently went missing."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: a missing dependency fails the run)", pytrace=False)
    pytest.skip(reason)


#: a kernel launch in the ``call()`` of Inductor's generated program (notebook 05 reads it alike)
INDUCTOR_LAUNCH = re.compile(
    r"^\s+(?:\w+ = )?((?:extern_kernels|torch\.ops)\.[\w.]+|cpp_fused_\w+)\(", re.MULTILINE
)


def inductor_launches(code: str) -> list[str]:
    """What the program ``torch.compile`` generated launches per call, in order: its generated
    kernels (``cpp_fused_*``) and the library calls it kept."""
    assert "def call(" in code, "not Inductor output code"
    return INDUCTOR_LAUNCH.findall(code[code.index("def call(") :])


def require(name: str):
    """The adapter of ``name``; skips (fails under CI) when the framework does not import here."""
    from labkit import frameworks

    probe = frameworks.probe_all()[frameworks.PACKAGES[name]]
    if not probe.importable:
        skip_or_fail(f"{name} is not importable here: {probe.error}")
    return frameworks.get(name)


_REFERENCES: dict = {}


def assert_float32_close(got, weights: dict, images, what: str = "") -> None:
    """``got`` (float32 logits of ``weights`` on ``images``) is as close to the float64 reference
    as PyTorch's own float32 logits allow (labkit.frameworks.crosscheck: FP32_SPREAD times
    PyTorch's error).

    The reference is computed once per weights object and batch (the callers' fixtures keep
    both alive for the module)."""
    from labkit.frameworks import crosscheck

    import numpy as np

    images = np.asarray(images)
    key = (id(weights), images.shape, hash(images.tobytes()))
    if key not in _REFERENCES:
        _REFERENCES[key] = crosscheck.reference_logits(weights, images)
    exact, limit = _REFERENCES[key]
    err = crosscheck.max_rel_diff(got, exact)
    assert err <= limit, (
        f"{what}: {err:.2e} of the logit scale from float64, beyond {limit:.2e} "
        f"({crosscheck.FP32_SPREAD:g} x PyTorch's own float32 error)"
    )


def _names(item) -> set[str]:
    """The words of a test's id (its file, function and parameters: ``[paddle]`` gives paddle)."""
    return set(re.split(r"[^a-z0-9]+", item.nodeid.lower()))


def _code_exercises(framework: str) -> set[str]:
    """The ids of the code exercises whose checks run ``framework`` ("04.no_list_index")."""
    from labkit import exercises

    return {
        i
        for i in exercises.ids()
        if exercises.entry(i)["type"] == "code"
        and exercises.entry(i)["check"]["framework"] == framework
    }


def _uses(item, framework: str, exercises: set[str]) -> bool:
    """Whether a test runs ``framework`` in this process: its id names it (test_paddle_adapter,
    a ``[paddle]`` parameter) or one of its code exercises; notebook cells run in kernels."""
    if hasattr(item, "cell_num"):
        return False
    return framework in _names(item) or any(f"[{e}]" in item.nodeid for e in exercises)


def import_first(items) -> None:
    """Import now, before any test runs, each framework whose spec says it must be imported
    before other packages (``import_before``: PaddlePaddle before TensorFlow, the other order
    crashes the process), when a selected test uses it in this process.

    pytest runs every test file in this one process, in alphabetical order, and TensorFlow
    loads in the tests of test_explore.py and test_graph_optimization.py long before
    test_registry.py reaches its ``[paddle]`` cases; importing PaddlePaddle here, after
    collection (which imports no framework), makes every order safe. Which tests use it:
    :func:`_uses`. Skipped when the framework is not installed (its tests then skip, or fail
    under CI, through :func:`require`).
    """
    from labkit import frameworks

    for s in frameworks.specs():
        if not s.import_before or frameworks.installed_version(s.import_name) is None:
            continue
        exercises = _code_exercises(s.name)
        if not any(_uses(i, s.name, exercises) for i in items):
            continue
        try:
            frameworks.check_import_order(s.name)
        except frameworks.FrameworkUnavailable as exc:
            raise pytest.UsageError(
                f"the selected tests use {s.display} in this process, and it cannot be "
                f"imported first: {exc} (a test module imports it at collection: move that "
                "import into the test)"
            ) from exc
        with contextlib.suppress(frameworks.FrameworkUnavailable):
            frameworks.get(s.name)  # one that does not import: its tests say so (require)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``costly`` (another compiled graph, another export) are skipped under the
    smoke profile (``make test``, CI) and run by ``make test-standard`` (LABKIT_PROFILE=standard,
    ``-m costly``): the release check. Frameworks that must be imported first are imported
    (:func:`import_first`)."""
    from labkit import profiles

    import_first(items)
    if profiles.current().name != "smoke":
        return
    skip = pytest.mark.skip(reason="costly under the smoke profile: `make test-standard` runs it")
    for item in items:
        if item.get_closest_marker("costly") is not None:
            item.add_marker(skip)


# ---- executed notebooks for the course site (make book) ----------------------------------------


def pytest_addoption(parser):
    parser.addoption(
        "--save-executed",
        metavar="DIR",
        help="write every notebook that nbval ran without a failure, outputs included, into DIR "
        "(`make book` builds the course site from them instead of executing them again)",
    )


class ExecutedNotebooks:
    """Collects the outputs nbval received for each cell and writes each fully passed notebook,
    with its outputs, the profile and the sha256 of the source file in its metadata."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.outputs: dict[Path, dict[int, list]] = {}
        self.failed: set[Path] = set()
        self.files: dict[Path, object] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if not hasattr(item, "cell_num") or not hasattr(item, "test_outputs"):
            return  # not an nbval cell
        report = outcome.get_result()
        path = Path(str(item.parent.fspath))
        self.files[path] = item.parent
        if report.failed or report.skipped:
            self.failed.add(path)
        elif call.when == "call":
            self.outputs.setdefault(path, {})[item.cell_num] = item.test_outputs or []

    def pytest_sessionfinish(self, session):
        import copy
        import hashlib

        import nbformat

        for path, collector in self.files.items():
            target = self.folder / path.name
            if path in self.failed:
                target.unlink(missing_ok=True)  # never publish a notebook that did not pass
                continue
            nb = copy.deepcopy(collector.nb)
            outs = self.outputs.get(path, {})
            code_cells = [c for c in nb.cells if c.cell_type == "code"]
            if len(outs) != len(code_cells):
                target.unlink(missing_ok=True)
                continue
            for n, cell in enumerate(code_cells):
                cell.outputs = [nbformat.from_dict(dict(o)) for o in outs[n]]
                cell.execution_count = n + 1
                for o in cell.outputs:
                    if o.get("output_type") == "execute_result":
                        o["execution_count"] = n + 1
            nb.metadata["labkit"] = {
                "profile": os.environ.get("LABKIT_PROFILE", ""),
                "source_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "executed_by": "nbval",
            }
            self.folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)


# ---- what a notebook leaves: stderr boxes it did not mean to show, files in the temp folder ----


class NotebookHygiene:
    """For every notebook nbval runs: the stderr outputs the lesson does not mean to show (a cell
    tagged ``shows-stderr`` means to; more than one is a finding), and what it left in the temp
    folder once its kernel has shut down as JupyterLab shuts it down (a shutdown request, then
    its exit handlers) and everything it started has stopped. A file or folder left fails the
    notebook, and so do stderr boxes past the one allowed (``LABKIT_NOTEBOOK_HYGIENE=warn`` lists
    those as warnings in pytest's summary instead).

    The kernels get a temp folder of their own (``graphlab-notebooks-UID`` in the system's), so
    that what other processes on the machine write is not counted; it persists, like the system's,
    so the caches kept on purpose (``KEPT``, each bounded by its owner) stay warm between runs."""

    STDERR_ALLOWED = 1
    SETTLE_S = 10.0
    KEPT = ("labkit-compile-cache-", "labkit-onnx-cache-", "graphlab-", "torchinductor_")

    def __init__(self):
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # one folder per xdist worker
        self.root = Path(tempfile.gettempdir()) / f"graphlab-notebooks-{os.getuid()}{worker}"
        self.root.mkdir(mode=0o700, exist_ok=True)
        self.before: dict = {}
        self.stderr: dict = {}
        self.saved_tmpdir: str | None = None
        self.fail = os.environ.get("LABKIT_NOTEBOOK_HYGIENE", "") != "warn"

    def _listing(self) -> set[str]:
        return {p.name for p in self.root.iterdir() if not p.name.startswith(self.KEPT)}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        if hasattr(item, "cell_num") and item.parent not in self.before:
            self.saved_tmpdir = os.environ.get("TMPDIR")
            os.environ["TMPDIR"] = str(self.root)  # before nbval starts the notebook's kernel
            self.before[item.parent] = self._listing()
            self.stderr[item.parent] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        yield
        if call.when != "call" or item.parent not in self.stderr:
            return
        tags = item.cell.get("metadata", {}).get("tags", []) if hasattr(item, "cell") else []
        if "shows-stderr" in tags:
            return
        for out in getattr(item, "test_outputs", None) or []:
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                self.stderr[item.parent].append((item.cell_num, str(out.get("text", ""))))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        notebook = item.parent
        if notebook not in self.before or (nextitem is not None and nextitem.parent is notebook):
            return (yield)
        kernel = getattr(notebook, "kernel", None)
        if kernel is not None and kernel.is_alive():
            kernel.km.shutdown_kernel(now=False)  # JupyterLab's shutdown: exit handlers run
            kernel.kc.stop_channels()  # what nbval's own stop does, which now finds it stopped
        result = yield
        if self.saved_tmpdir is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = self.saved_tmpdir
        name = Path(str(notebook.fspath)).name
        before = self.before.pop(notebook)
        deadline = time.monotonic() + self.SETTLE_S
        while (left := self._listing() - before) and time.monotonic() < deadline:
            time.sleep(0.5)  # processes the notebook started finish their own clean-up
        problems = []
        if left:
            problems.append(f"left in the temp folder: {sorted(left)[:12]} ({len(left)} in all)")
        boxes = self.stderr.pop(notebook)
        if len(boxes) > self.STDERR_ALLOWED:
            shown = "; ".join(f"cell {n}: {t.strip()[:120]!r}" for n, t in boxes)
            problems.append(
                f"{len(boxes)} stderr outputs the lesson does not mean to show (at most "
                f"{self.STDERR_ALLOWED}; silence a log at its source, or tag a cell that means "
                f"to show one 'shows-stderr'): {shown}"
            )
        if left or (problems and self.fail):
            pytest.fail(f"{name}: " + " | ".join(problems), pytrace=False)
        if problems:  # a warning: pytest's summary lists it, from xdist's workers too
            warnings.warn(f"notebook hygiene: {name}: " + " | ".join(problems), stacklevel=1)
        return result


# ---- the memory each notebook takes under nbval (Binder's 2 GB under smoke) ------------------


class NotebookMemory:
    """Samples the process tree of every notebook's nbval kernel while its cells run (the kernel
    with everything it starts, as if alone on the machine: the figure of
    ``benchmarks/notebook_costs.py``, whose sampler this is) and lists the peaks at the end of
    the session. Under the smoke profile a notebook whose peak passes Binder's limit (2 GB) fails:
    the teardown of its last cell reports the peak and the limit (``LABKIT_NOTEBOOK_MEMORY_MB``
    sets another limit, 0 none). Each notebook still runs once;
    the sampler reads a few ``/proc`` files every quarter of a second. This environment's files
    are dropped from the page cache first (``settle_page_cache``: right after an install they
    read about 200 MB high per process; see benchmarks/notebook_costs.py)."""

    INTERVAL_S = 0.25

    def __init__(self, limit_mb: int | None):
        self.limit_mb = limit_mb
        self.samplers: dict = {}
        self.peaks: dict[str, tuple[int, int]] = {}  # notebook -> (peak MB, processes)

    @staticmethod
    def _costs():
        import importlib.util

        name = "graphlab_notebook_costs"
        if name not in sys.modules:
            path = ROOT / "benchmarks" / "notebook_costs.py"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[name] = module
        return sys.modules[name]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        notebook = item.parent
        kernel = getattr(notebook, "kernel", None)
        if not hasattr(item, "cell_num") or kernel is None or notebook in self.samplers:
            return
        pid = getattr(getattr(kernel.km, "provisioner", None), "pid", None)
        if pid is None:
            return
        sampler = self._costs().TreeSampler(self.INTERVAL_S, lambda: pid)
        sampler.start()
        self.samplers[notebook] = sampler

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        notebook = item.parent
        if notebook not in self.samplers or (nextitem is not None and nextitem.parent is notebook):
            return (yield)
        sampler = self.samplers.pop(notebook)
        sampler.stop()  # before the kernel is stopped with the notebook's teardown
        mib = self._costs().MIB
        peak = round(sampler.peak_alone / mib)
        self.peaks[Path(str(notebook.fspath)).name] = (peak, sampler.peak_processes)
        result = yield
        if self.limit_mb is not None and peak > self.limit_mb:
            pytest.fail(
                f"{Path(str(notebook.fspath)).name} peaked at {peak} MB under the smoke profile "
                f"(its kernel with everything it started, {sampler.peak_processes} processes at "
                f"most), over the limit of {self.limit_mb} MB (Binder gives a user 2048 MB): "
                "release what a section no longer needs or run less at once "
                "(benchmarks/notebook_costs.py shows where)",
                pytrace=False,
            )
        return result

    def pytest_terminal_summary(self, terminalreporter):
        if not self.peaks:
            return
        limit = f", limit {self.limit_mb} MB" if self.limit_mb is not None else ""
        terminalreporter.section(f"notebook memory (kernel with what it starts{limit})")
        for name, (peak, procs) in sorted(self.peaks.items()):
            terminalreporter.write_line(f"{name}: {peak} MB peak, {procs} processes at most")


def pytest_configure(config):
    # A shell without job control starts background commands with Ctrl-C (SIGINT) ignored, and
    # every process inherits that: then the tests of what Ctrl-C does (the runner finishing its
    # record, the launcher stopping its workers) would test nothing. Restore Python's own
    # handler here; the processes the tests start get the default action back at exec.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    folder = config.getoption("--save-executed", default=None)
    if folder:
        config.pluginmanager.register(
            ExecutedNotebooks(Path(folder).resolve()), "executed-notebooks"
        )
    if config.pluginmanager.hasplugin("nbval"):
        from labkit import profiles

        # LABKIT_NOTEBOOK_MEMORY_MB sets another limit (0: none); by default Binder's, under smoke
        limit = os.environ.get("LABKIT_NOTEBOOK_MEMORY_MB", "").strip()
        if limit:
            limit = int(limit) or None
        elif profiles.current().name == "smoke":
            limit = NotebookMemory._costs().BINDER_MB
        else:
            limit = None
        NotebookMemory._costs().settle_page_cache()  # as benchmarks/notebook_costs.py measures
        config.pluginmanager.register(NotebookMemory(limit), "notebook-memory")
        config.pluginmanager.register(NotebookHygiene(), "notebook-hygiene")


#: a process that appends N records to a results file once it is let go (start_together)
WRITER = """
import sys
import time
from labkit import results
path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
base = results.make(framework="torch", mode="eager", task="latency", batch_size=1,
    precision="fp32", image_size=32, device="cpu", threads=1, profile="smoke",
    status="failed", error="boom")
print("ready", flush=True)
sys.stdin.readline()  # all writers start at once
for i in range(n):
    results.append(path, {**base, "notes": f"{who} {i}"})
"""


def start_together(*commands: list[str]) -> list[subprocess.Popen]:
    """Start each command (a list), wait until each says it is ready, then let all go."""
    procs = [
        subprocess.Popen(c, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        for c in commands
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    return procs
