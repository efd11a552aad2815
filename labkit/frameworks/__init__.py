"""One adapter per framework behind one small interface (d2l-style: read only the one you use).

``labkit.frameworks.get(name)`` imports and returns the adapter module for ``name``; the
framework itself is imported then, never by ``import labkit``. Static facts (modes, packages)
live here so that the command line can validate choices without importing any framework.

The adapter contract, which every module ``labkit/frameworks/<name>.py`` fulfils
(images are host numpy arrays, NCHW float32; labels int64; weights are canonical
``labkit.resnet`` dicts):

- ``NAME``, ``MODES`` (tuple, the eager mode first)
- ``version() -> str``
- ``build_resnet50(weights) -> native eval-mode model``
- ``to_canonical(model) -> dict[str, np.ndarray]``  (the weights written back out)
- ``predict(model, images) -> np.ndarray`` logits
- ``train_step(weights, images, labels, lr=0.1, momentum=0.9) -> (loss, new_weights)``
- ``export(model, directory) -> Path`` and ``load_exported(path)`` (a callable: images -> logits)
- ``prepare(weights, mode, task, batch_size, precision, image_size, device)``: the benchmark
  callable (see :mod:`labkit.bench`)
"""
from __future__ import annotations

import concurrent.futures
import functools
import importlib
import importlib.metadata
import subprocess
import sys
from dataclasses import dataclass
from types import ModuleType

from .. import _pins

NAMES: tuple[str, ...] = ("torch", "tensorflow", "mindspore", "onnxruntime")

#: the import name of each framework
PACKAGES: dict[str, str] = {"torch": "torch", "tensorflow": "tensorflow",
                            "mindspore": "mindspore", "onnxruntime": "onnxruntime"}

#: the execution modes of each framework, eager (or the only mode) first
MODES: dict[str, tuple[str, ...]] = {
    "torch": ("eager", "torchscript", "compile"),
    "tensorflow": ("eager", "function", "xla"),
    "mindspore": ("pynative", "graph"),
    "onnxruntime": ("ort",),
}

#: packages the doctor reports besides the frameworks
EXTRA_PACKAGES: tuple[str, ...] = ("onnx",)


class FrameworkUnavailable(RuntimeError):
    """A framework that is not installed or fails to import; the message says how to fix it."""


def check_name(name: str) -> str:
    if name not in NAMES:
        raise ValueError(f"unknown framework {name!r}: valid frameworks are {', '.join(NAMES)}")
    return name


def install_hint(package: str) -> str:
    return f"run `make install` (or: pip install {_pins.requirement(package)!r}) and restart the kernel"


@dataclass(frozen=True)
class Probe:
    """Whether a package imports, found in a fresh subprocess so that a crash cannot hurt us."""

    name: str
    version: str | None  # installed distribution version, None if not installed
    importable: bool
    error: str  # the last line of the import error, "" when it imports
    fix: str  # what to do about it, "" when it imports

    @property
    def status(self) -> str:
        return "ok" if self.importable else ("not installed" if self.version is None else "import fails")


def installed_version(package: str) -> str | None:
    for dist in _pins.distributions(package):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _probe(package: str, timeout: float = 120.0) -> Probe:
    version = installed_version(package)
    code = f"import labkit, {package}"
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout)
        ok, err = proc.returncode == 0, proc.stderr
    except subprocess.TimeoutExpired:
        ok, err = False, f"import did not finish within {timeout:.0f} s"
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    error = "" if ok else (lines[-1] if lines else f"the interpreter exited abnormally")
    return Probe(package, version, ok, error, "" if ok else install_hint(package))


@functools.lru_cache(maxsize=1)
def probe_all() -> dict[str, Probe]:
    """Import each framework (and onnx) in its own subprocess, in parallel; cached per process."""
    packages = [PACKAGES[n] for n in NAMES] + list(EXTRA_PACKAGES)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(packages)) as pool:
        return dict(zip(packages, pool.map(_probe, packages)))


def available() -> list[str]:
    """The frameworks that are installed and import cleanly here."""
    probes = probe_all()
    return [n for n in NAMES if probes[PACKAGES[n]].importable]


def get(name: str) -> ModuleType:
    """The adapter module for ``name``; raises ``FrameworkUnavailable`` with the fix if missing."""
    check_name(name)
    package = PACKAGES[name]
    try:
        importlib.import_module(package)
    except Exception as exc:  # ImportError, or a broken binary's RuntimeError
        raise FrameworkUnavailable(
            f"{name} is not available here ({type(exc).__name__}: {exc}); {install_hint(package)}"
        ) from exc
    return importlib.import_module(f"{__name__}.{name}")
