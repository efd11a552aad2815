"""What the lab knows about a framework, and what its adapter must offer (framework-free).

Each framework package declares one :class:`FrameworkSpec` as ``SPEC``, and every table of the
lab reads these fields instead of naming frameworks. :class:`Adapter` is the interface of its
``adapter.py`` (the one module that imports the framework), the other protocols those of its
optional modules; ``tests/test_registry.py`` checks every registered module against them, by
name. The words of a benchmark cell (:data:`TASKS`, :data:`PRECISIONS`, :data:`DEVICES`) are here,
with what ``prepare`` returns (:class:`Prepared`) or raises (:class:`Unsupported`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEVICES",
    "PRECISIONS",
    "TASKS",
    "Adapter",
    "Checks",
    "Explorer",
    "Exporter",
    "FrameworkSpec",
    "Launch",
    "ModelBencher",
    "PeakProbe",
    "Prepared",
    "Trainer",
    "Unsupported",
]

#: the benchmark tasks: one-image inference, batched inference, a training step
TASKS: tuple[str, ...] = ("latency", "throughput", "train")
#: the arithmetic of a cell: float32; bfloat16 (autocast, a mixed-precision policy); int8
#: (static quantisation). A framework offers those of its spec's ``precisions``.
PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")
DEVICES: tuple[str, ...] = ("cpu", "gpu")


class Unsupported(Exception):
    """This framework x mode x task x precision x device does not exist here; says why."""


@dataclass
class Prepared:
    """What an adapter's ``prepare`` returns: one benchmark step, ready to time
    (:func:`labkit.bench.measure`)."""

    step: Callable[[], object]  # one inference batch or one training step, synchronised
    batch_size: int
    notes: str = ""  # how the mode/precision is realised, e.g. "torch.autocast(cpu, bfloat16)"
    #: seconds of exporting the model to another format before the step could exist (ONNX)
    export_s: float | None = None
    #: training only: the hyper-parameters the framework applied, read back from its optimizer
    #: objects (compare with :data:`labkit.recipe.TRAIN`)
    recipe: dict | None = None
    #: low-precision inference only: called once after timing, it returns the accuracy cost
    #: against the framework's fp32 model (:func:`labkit.frameworks._kit.accuracy.cost`)
    accuracy: Callable[[], dict] | None = None


@dataclass(frozen=True)
class FrameworkSpec:
    """One framework, as data: reading it imports nothing but this module."""

    name: str  #: registry key and the ``framework`` field of every result record
    display: str  #: the name a learner reads ("PyTorch")
    import_name: str  #: the package imported to use it, probed by ``labkit doctor``
    modes: tuple[str, ...]  #: execution modes, the eager mode first where there is one
    eager: str | None  #: the eager mode; None for a runtime of exported graphs only
    color: str  #: its colour in every figure
    tasks: tuple[str, ...] = TASKS  #: the benchmark tasks its adapter offers
    #: the precisions its adapter's ``prepare`` offers (a device may still refuse one, saying
    #: why); the others of :data:`PRECISIONS` raise :class:`Unsupported` with the reason
    precisions: tuple[str, ...] = ("fp32", "bf16")
    #: the precisions whose matrix-multiply rate its ``peak`` module measures with the
    #: framework's own kernels (:class:`PeakProbe`); empty when it has none
    peak_precisions: tuple[str, ...] = ()
    #: deployment formats the lab writes with it (keys of labkit.lessons.deploy.FORMATS), the
    #: one that ``adapter.export`` writes first
    formats: tuple[str, ...] = ()
    exported_from: str | None = None  #: the framework whose export it runs (ONNX Runtime: torch)
    launcher: str | None = None  #: its data-parallel launcher, None when the lab has none
    extra_packages: tuple[str, ...] = ()  #: packages whose versions its records also carry
    #: the pip distributions that provide ``import_name``, preferred first (default: that name)
    distributions: tuple[str, ...] = ()
    summary: str = ""  #: one line: what it is and how the lab uses it
    #: top-level packages whose objects (models, functions) belong to it: ``labkit.explore``
    #: finds a model's framework from the first class in its MRO defined in one of them
    model_packages: tuple[str, ...] = ()
    #: file suffixes of saved models it runs (".onnx"): ``labkit.explore`` takes such a file
    model_files: tuple[str, ...] = ()
    #: the properties its ``checks`` module verifies in code exercises (labkit.exercises.Code),
    #: as (name, what it means to the learner) pairs; empty when it has no checks module
    code_checks: tuple[tuple[str, str], ...] = ()
    #: packages that must not be loaded before this framework in one process (importing it
    #: after them crashes the process): :func:`labkit.frameworks.get` refuses to import it then
    import_before: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.modes:
            raise ValueError(f"framework spec {self.name!r} declares no modes")
        if self.eager is not None and self.modes[0] != self.eager:
            raise ValueError(
                f"framework spec {self.name!r}: the eager mode {self.eager!r} must come first "
                f"in modes {self.modes}"
            )
        if self.eager is None and self.exported_from is None:
            raise ValueError(
                f"framework spec {self.name!r} has no eager mode: name the framework it runs "
                "exports of (exported_from), whose eager mode is its speedup baseline"
            )
        unknown = [t for t in self.tasks if t not in TASKS]
        if unknown:
            raise ValueError(f"framework spec {self.name!r}: unknown tasks {unknown}")
        unknown = [p for p in (*self.precisions, *self.peak_precisions) if p not in PRECISIONS]
        if unknown:
            raise ValueError(f"framework spec {self.name!r}: unknown precisions {unknown}")

    @property
    def graph_modes(self) -> tuple[str, ...]:
        """Every mode but the eager one (a runtime of exported graphs: all of its modes)."""
        return tuple(m for m in self.modes if m != self.eager)

    @property
    def adapter_module(self) -> str:
        return f"labkit.frameworks.{self.name}.adapter"

    @property
    def checks_module(self) -> str | None:
        """The module that verifies code exercises' properties, None without ``code_checks``."""
        return f"labkit.frameworks.{self.name}.checks" if self.code_checks else None

    @property
    def explore_module(self) -> str:
        """Its graph-readiness checks of a learner's model (see :class:`Explorer`)."""
        return f"labkit.frameworks.{self.name}.explore"

    @property
    def explores(self) -> bool:
        """Whether ``labkit.explore`` can check and benchmark a learner's model of it."""
        return (self.folder / "explore.py").is_file()

    @property
    def peak_module(self) -> str | None:
        """The module that measures its matrix-multiply rates (run with ``python -m``), None
        without ``peak_precisions``."""
        return f"labkit.frameworks.{self.name}.peak" if self.peak_precisions else None

    @property
    def launch_module(self) -> str | None:
        """The framework-free module that builds its launcher's command lines (a
        :class:`Launch`), None without a launcher."""
        return f"labkit.frameworks.{self.name}.launch" if self.launcher else None

    @property
    def folder(self) -> Path:
        """This framework's package folder (its files can be read without importing them)."""
        return Path(__file__).resolve().parent / self.name


@runtime_checkable
class Adapter(Protocol):
    """The module ``labkit/frameworks/<name>/adapter.py``: the only place that imports a framework.

    Images are host numpy arrays, NCHW float32; labels int64; weights are canonical
    :mod:`labkit.resnet` dicts. A framework whose spec lists ``train`` among its tasks also
    provides ``train_step``; one whose spec lists ``formats`` also provides ``export`` and
    ``load_exported`` (see :class:`Trainer`, :class:`Exporter`).
    """

    SPEC: FrameworkSpec

    def version(self) -> str:
        """The installed framework's version string."""

    def set_threads(self, n: int) -> None:
        """Use ``n`` intra-op threads and one inter-op thread from now on; idempotent.

        The lab's one thread policy, the same in every framework; the runner calls it first
        thing in each cell's fresh process, where every framework can still size its pools.
        """

    def threads(self) -> dict[str, int | None]:
        """The thread counts in effect, read back from the framework where it can tell:
        ``{"intra": N, "inter": M}`` (stored with every benchmark record)."""

    def build_resnet50(self, weights: dict[str, np.ndarray]) -> Any:
        """The native eval-mode model holding ``weights`` (ValueError names a bad tensor)."""

    def to_canonical(self, model: Any) -> dict[str, np.ndarray]:
        """The model's weights written back out as canonical float32 arrays."""

    def predict(self, model: Any, images: np.ndarray) -> np.ndarray:
        """Eval-mode logits for a host batch."""

    def prepare(
        self,
        weights: dict[str, np.ndarray],
        mode: str,
        task: str,
        batch_size: int,
        precision: str = "fp32",
        image_size: int = 224,
        device: str = "cpu",
    ) -> Any:
        """The benchmark step (a :class:`Prepared`); ``Unsupported`` says why not.

        A training step follows :data:`labkit.recipe.TRAIN` and reports the hyper-parameters
        it applied, read back from its optimizer and loss objects, in ``Prepared.recipe``; an
        export before the step is timed apart in ``Prepared.export_s``.
        """


@runtime_checkable
class Checks(Protocol):
    """The module ``labkit/frameworks/<name>/checks.py`` of a framework with ``code_checks``."""

    def namespace(self) -> dict[str, Any]:
        """The names an exercise's starter and solution code may use (the framework's modules)."""

    def verify(self, prop: str, fn: Callable, cases: list[tuple], **given: Any) -> tuple[bool, str]:
        """Whether ``fn`` has the property ``prop`` over ``cases`` (argument tuples of NumPy
        arrays and Python values), and a one-line detail: what held, or what broke. ``given``:
        ``reference`` (the function whose eager outputs "matches eager" compares with), ``rtol``,
        ``atol`` and the exercise's options (:func:`labkit.frameworks._kit.checks.verify`)."""


@runtime_checkable
class Trainer(Protocol):
    def train_step(
        self,
        weights: dict[str, np.ndarray],
        images: np.ndarray,
        labels: np.ndarray,
        lr: float = ...,
        momentum: float = ...,
    ) -> tuple[float, dict[str, np.ndarray]]:
        """One SGD-with-momentum step: the loss before it and the updated canonical weights.

        ``lr`` and ``momentum`` default to :data:`labkit.recipe.TRAIN`'s."""


@runtime_checkable
class Exporter(Protocol):
    def export(self, model: Any, directory: str | Path) -> Path:
        """Write the model in the framework's deployment format; return the file."""

    def load_exported(self, path: str | Path) -> Callable[[np.ndarray], np.ndarray]:
        """The exported model as a callable ``images -> logits``."""


@runtime_checkable
class ModelBencher(Protocol):
    """The adapter of a framework that ``labkit.explore`` serves: it benchmarks any model."""

    def prepare_model(
        self,
        model: Any,
        inputs: list[np.ndarray],
        mode: str,
        task: str,
        precision: str = "fp32",
        device: str = "cpu",
    ) -> Any:
        """The benchmark step (a :class:`Prepared`) of a learner's model.

        ``model`` is what the learner's builder returned; ``inputs`` are host arrays whose first
        dimension is the batch. ``Unsupported`` says why a combination does not exist.
        """


@runtime_checkable
class Explorer(Protocol):
    """The module ``labkit/frameworks/<name>/explore.py``: graph-readiness checks of any model.

    :mod:`labkit.explore` runs each check in a worker process (``Session(model, arrays, call)``,
    then ``run_check`` per name) and joins the results into one report. ``CHECKS`` are the
    capture paths in order, each a report row; the first one gates the others (when the model
    does not even run there, nothing else is tried). Optional: ``accepts(model)`` (default
    ``callable``), ``pack(model, path)``/``unpack(path)`` (default cloudpickle), and
    ``bind(model, call)`` where a builder's example inputs reach a benchmark cell.
    """

    SPEC: FrameworkSpec
    CHECKS: tuple[str, ...]
    ACCEPTS: str  #: what the checks take, in words (for the error when a model is not that)
    #: ``Session(model, arrays, call)``: the state the checks share in one process
    Session: type

    def versions(self) -> dict[str, str]:
        """The versions of the packages the checks use."""

    def run_check(self, name: str, session: Any) -> dict:
        """Run one check: ``{"path": {...}, "graph_breaks": [...], "recompiles": [...]}``."""


@runtime_checkable
class PeakProbe(Protocol):
    """The module ``labkit/frameworks/<name>/peak.py`` of a framework with ``peak_precisions``:
    the attainable matrix-multiply rate with the framework's own kernels.

    Run as ``python -m labkit.frameworks.<name>.peak --threads N --precisions fp32,int8
    --seconds S`` (:mod:`labkit.hardware.measured` starts it and reads the one JSON line it
    prints: :func:`labkit.frameworks._kit.peak.main`); each kernel is a large square GEMM sized
    to take a few hundredths of a second per call, timed for about ``S`` seconds.
    """

    #: the kernels it times per precision, in words (the fast paths of the library)
    KERNELS: dict[str, tuple[str, ...]]

    def versions(self) -> dict[str, str]:
        """The versions of the libraries whose kernels it times."""

    def set_threads(self, n: int) -> None:
        """Use ``n`` intra-op threads (the lab's thread policy)."""

    def kernels(self, precision: str) -> list[tuple[str, bool, Callable[[int], Callable]]]:
        """``(kernel, prepacked, make)`` per kernel at ``precision``: ``make(n)`` builds an
        ``n x n x n`` GEMM and returns the call to time (it computes ``2 n^3`` operations)."""


#: one process to start: its command line and what it gets on top of the launcher's environment
Command = tuple[list[str], dict[str, str]]


@runtime_checkable
class Launch(Protocol):
    """The module ``labkit/frameworks/<name>/launch.py`` of a framework whose spec names a
    ``launcher``: how its data-parallel workers are started, as command lines.

    Framework-free (it builds commands and imports nothing of the framework), so that
    :mod:`labkit.distributed` starts, watches and stops any registered framework's workers
    without naming one. ``args`` are the worker script's path and its arguments (notebook 08's
    scripts in ``notebooks/distributed/``).
    """

    #: environment variables the launcher hands its workers (ranks, addresses): removed from
    #: the launching process's environment first, so that a stale cluster description cannot leak
    CLUSTER_VARIABLES: tuple[str, ...]
    #: settings every worker of this framework gets (log levels, ...)
    ENVIRONMENT: dict[str, str]
    #: None when every process of a one-machine job listens on ``host`` only; else why some
    #: listen on every interface (the framework offers no way to bind them), for the docs and
    #: the tests (``tests/test_loopback.py`` reads the sockets of a running job)
    EVERY_INTERFACE: str | None

    def ports_needed(self, workers: int) -> int:
        """How many consecutive ports one machine's ``workers`` use (rendezvous, servers)."""

    def local_commands(
        self, workers: int, ports: Sequence[int], args: list[str], out_dir: Path, host: str
    ) -> list[Command]:
        """The processes that run ``workers`` workers on this machine, meeting at ``host``."""

    def cluster_commands(
        self, workers: int, hosts: Sequence[str], port: int, args: list[str], out_dir: str
    ) -> list[tuple[str, str]]:
        """``(host, shell command)`` pairs that run ``workers`` workers on each of ``hosts``
        (the first coordinates), to type in a terminal on that host."""
