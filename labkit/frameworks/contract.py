"""What the lab knows about a framework (framework-free): its :class:`FrameworkSpec`, read from
``labkit/data/frameworks.toml``; the words of a benchmark cell; what an adapter's ``prepare``
returns (:class:`Prepared`) or raises (:class:`Unsupported`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEVICES", "PRECISIONS", "TASKS", "FrameworkSpec", "Prepared", "Unsupported"]

#: the benchmark tasks: one-image inference, batched inference, a training step
TASKS: tuple[str, ...] = ("latency", "throughput", "train")
#: float32; bfloat16 (autocast, a mixed-precision policy); int8 (static quantisation)
PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")
DEVICES: tuple[str, ...] = ("cpu", "gpu")


class Unsupported(Exception):
    """This framework x mode x task x precision x device does not exist here; says why."""


@dataclass
class Prepared:
    """One benchmark step, ready to time."""

    step: Callable[[], object]  # one inference batch or one training step, synchronised
    batch_size: int
    notes: str = ""  # how the mode/precision is realised, e.g. "torch.autocast(cpu, bfloat16)"
    export_s: float | None = None  #: seconds of exporting the model first (ONNX)
    #: training only: the hyper-parameters read back from the framework's optimizer objects
    recipe: dict | None = None
    #: low-precision inference only: called after timing, the accuracy cost against fp32
    accuracy: Callable[[], dict] | None = None


@dataclass(frozen=True)
class FrameworkSpec:
    """One framework, as data."""

    name: str  #: registry key and the ``framework`` field of every result record
    display: str  #: the name a learner reads ("PyTorch")
    import_name: str  #: the package imported to use it, probed by ``labkit doctor``
    modes: tuple[str, ...]  #: execution modes, the eager mode first where there is one
    color: str  #: its colour in every figure
    #: the eager mode (the first); None for a runtime of exported graphs only (``exported_from``)
    eager: str | None = None
    tasks: tuple[str, ...] = TASKS
    #: the precisions ``prepare`` offers; the others raise :class:`Unsupported` saying why
    precisions: tuple[str, ...] = ("fp32", "bf16")
    #: the precisions its ``peak`` module times with the framework's own GEMM kernels
    peak_precisions: tuple[str, ...] = ()
    exported_from: str | None = None  #: the framework whose export it runs (ONNX Runtime: torch)
    launcher: str | None = None  #: its data-parallel launcher (a ``launch`` module)
    extra_packages: tuple[str, ...] = ()  #: packages whose versions its records also carry
    distributions: tuple[str, ...] = ()  #: pip distributions of ``import_name``, preferred first
    #: top-level packages whose objects belong to it (``labkit.explore`` reads a model's MRO)
    model_packages: tuple[str, ...] = ()
    model_files: tuple[str, ...] = ()  #: file suffixes of saved models it runs (".onnx")
    #: (property, meaning) pairs its ``checks`` module verifies in code exercises
    code_checks: tuple[tuple[str, str], ...] = ()
    #: where it has no ``checks`` module, those checks as data (``_kit.checks.from_spec``)
    exercise: tuple[tuple[str, object], ...] = ()
    #: (mode, how ``prepare`` runs it) pairs, the start of a cell's notes
    mode_notes: tuple[tuple[str, str], ...] = ()
    #: (task, precision or "gpu", why not) pairs: why ``prepare`` refuses what it cannot run
    why_not: tuple[tuple[str, str], ...] = ()
    #: packages that crash the process when loaded before this framework
    import_before: tuple[str, ...] = ()

    @property
    def graph_modes(self) -> tuple[str, ...]:
        """Every mode but the eager one (a runtime of exported graphs: all of its modes)."""
        return tuple(m for m in self.modes if m != self.eager)

    @property
    def explores(self) -> bool:
        """Whether ``labkit.explore`` can check a learner's model of it."""
        return (self.folder / "explore.py").is_file()

    @property
    def peak_module(self) -> str | None:
        return f"labkit.frameworks.{self.name}.peak" if self.peak_precisions else None

    @property
    def folder(self) -> Path:
        return Path(__file__).resolve().parent / self.name
