"""The framework registry: one package per framework, one adapter behind one small interface.

``labkit/frameworks/<name>/`` (read only the one you use): ``__init__.py`` declares its
:class:`~labkit.frameworks.contract.FrameworkSpec` (framework-free), ``adapter.py`` imports the
framework and implements :class:`~labkit.frameworks.contract.Adapter`; optional modules read its
graphs, check code exercises, time its kernels or launch its workers. Shared code is in
:mod:`labkit.frameworks._kit`; whether they all compute the same ResNet-50 is
:mod:`labkit.frameworks.crosscheck`.

:func:`specs` reads the specs without importing any framework; :func:`get` imports an adapter
when it is needed; :func:`kernel_support` says whether this machine's kernels run a precision (a
tiny probe, cached). Adding a framework: write its package, add its name to :data:`REGISTRY`,
run ``tests/test_registry.py`` (README, "Add a framework").
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType

from .. import _pins, hardware
from ..util import jsonio, proc
from .contract import FrameworkSpec, ModelBencher

__all__ = [
    "ISA_ENV",
    "MODES",
    "NAMES",
    "PACKAGES",
    "REGISTRY",
    "FrameworkUnavailable",
    "ModelBencher",
    "available",
    "check_import_order",
    "checks",
    "explorer",
    "framework_of",
    "get",
    "import_order",
    "kernel_support",
    "launch_module",
    "peak_probes",
    "probe_all",
    "spec",
    "specs",
]

#: the registered frameworks, in the order tables and figures list them: each is a package
#: ``labkit.frameworks.<name>`` whose ``SPEC`` describes it
REGISTRY: tuple[str, ...] = (
    "torch",
    "tensorflow",
    "mindspore",
    "paddle",
    "onnxruntime",
    "tvm",
)
#: the framework every other one's logits are compared with (labkit.frameworks.crosscheck)
REFERENCE = "torch"


@functools.cache
def specs() -> tuple[FrameworkSpec, ...]:
    """Every registered framework's spec, in registry order (imports no framework)."""
    found = []
    for name in REGISTRY:
        declared = importlib.import_module(f"{__name__}.{name}").SPEC
        if declared.name != name:
            raise ValueError(f"labkit.frameworks.{name} declares a spec named {declared.name!r}")
        found.append(declared)
    return tuple(found)


def spec(name: str) -> FrameworkSpec:
    """The spec of ``name``; an unknown name raises ``ValueError`` listing the valid ones."""
    for s in specs():
        if s.name == name:
            return s
    raise ValueError(f"unknown framework {name!r}: valid frameworks are {', '.join(NAMES)}")


#: derived views of the specs, for the many places that need only one field
NAMES: tuple[str, ...] = tuple(s.name for s in specs())
PACKAGES: dict[str, str] = {s.name: s.import_name for s in specs()}
MODES: dict[str, tuple[str, ...]] = {s.name: s.modes for s in specs()}
#: packages the doctor reports besides the frameworks (e.g. onnx, which ONNX Runtime's model needs)
EXTRA_PACKAGES: tuple[str, ...] = tuple(
    dict.fromkeys(p for s in specs() for p in s.extra_packages if p not in PACKAGES.values())
)


class FrameworkUnavailable(RuntimeError):
    """A framework that is not installed or fails to import; the message says how to fix it."""


def check_name(name: str) -> str:
    return spec(name).name


def distributions(package: str) -> tuple[str, ...]:
    """The pip distributions that provide the import name ``package``, preferred first."""
    declared = next((s.distributions for s in specs() if s.import_name == package), ())
    return declared or (package,)


def requirement(package: str) -> str:
    """The pinned requirement that installs ``package``, e.g. 'tensorflow-cpu==2.21.0'."""
    return _pins.requirement(*distributions(package))


def install_hint(package: str) -> str:
    return f"run `make install` (or: pip install {requirement(package)!r}) and restart the kernel"


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
        return (
            "ok"
            if self.importable
            else ("not installed" if self.version is None else "import fails")
        )


def installed_version(package: str) -> str | None:
    for dist in distributions(package):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _probe(package: str, timeout: float = 120.0) -> Probe:
    version = installed_version(package)
    code = f"import labkit, {package}"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        ok, err = proc.returncode == 0, proc.stderr
    except subprocess.TimeoutExpired:
        ok, err = False, f"import did not finish within {timeout:.0f} s"
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    error = "" if ok else (lines[-1] if lines else "the interpreter exited abnormally")
    return Probe(package, version, ok, error, "" if ok else install_hint(package))


@functools.lru_cache(maxsize=1)
def probe_all(fresh: bool = False) -> dict[str, Probe]:
    """Import each framework (and onnx) in its own subprocess, in parallel. Cached in this
    process, and on disk while this interpreter, its installed distributions and PYTHONPATH stay
    the same (every notebook asks; ``fresh=True``, as ``labkit doctor`` does: import again)."""
    dists = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    key = json.dumps([sys.executable, sys.version, os.environ.get("PYTHONPATH", ""), dists])
    path = hardware.cache_dir() / f"probes-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    packages = [PACKAGES[n] for n in NAMES] + list(EXTRA_PACKAGES)
    try:
        cached = {p: Probe(**v) for p, v in json.loads(path.read_text()).items()}
        if not fresh and sorted(cached) == sorted(packages):
            return cached
    except (OSError, ValueError, TypeError):
        pass  # missing or unreadable: import again
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(packages)) as pool:
        probes = dict(zip(packages, pool.map(_probe, packages)))
    jsonio.write_atomic(path, json.dumps({p: vars(v) for p, v in probes.items()}))
    return probes


def available() -> list[str]:
    """The frameworks that are installed and import cleanly here."""
    probes = probe_all()
    return [n for n in NAMES if probes[PACKAGES[n]].importable]


def check_import_order(name: str) -> None:
    """``FrameworkUnavailable`` when importing ``name`` now would crash this process: a package
    its spec must be imported before (``import_before``) is loaded already, and it is not."""
    s = spec(name)
    loaded = [p for p in s.import_before if p in sys.modules]
    if loaded and s.import_name not in sys.modules:
        raise FrameworkUnavailable(
            f"{s.display} cannot be imported in this process: {', '.join(loaded)} is loaded "
            f"already, and importing {s.import_name} after it crashes the process (a "
            f"segmentation fault in {s.import_name}'s native library). Run {s.display} in a "
            f"fresh process (the benchmark runner does: each cell has its own), or import it "
            f"first: restart the kernel and call labkit.frameworks.get({name!r}) before "
            f"anything loads {loaded[0]}"
        )


def import_order(names: Iterable[str]) -> list[str]:
    """``names`` in an order that imports safely in one process: each framework before the
    packages its spec must be imported before (PaddlePaddle before TensorFlow), the rest kept
    in their order."""
    names = [check_name(n) for n in names]
    first = [n for n in names if spec(n).import_before]
    return first + [n for n in names if n not in first]


def get(name: str) -> ModuleType:
    """The adapter module for ``name``; raises ``FrameworkUnavailable`` with the fix if missing
    (or if importing it here would crash the process: :func:`check_import_order`)."""
    s = spec(name)
    check_import_order(name)
    threads = {k: os.environ.get(k) for k in proc.THREAD_ENV}
    try:
        importlib.import_module(s.import_name)
    except Exception as exc:  # ImportError, or a broken binary's RuntimeError
        raise FrameworkUnavailable(
            f"{name} is not available here ({type(exc).__name__}: {exc}); "
            f"{install_hint(s.import_name)}"
        ) from exc
    finally:
        _restore(threads)
    return importlib.import_module(s.adapter_module)


def _restore(variables: dict[str, str | None]) -> None:
    """Put the thread variables back as they were: the thread policy is the lab's (PaddlePaddle
    sets OMP_NUM_THREADS=1 as it loads, which every later child process would inherit)."""
    for key, value in variables.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def explorer(name: str) -> ModuleType:
    """The graph-readiness checks of ``name`` (:class:`Explorer`); imports the framework.

    ``ValueError`` when the lab has no such checks for it, ``FrameworkUnavailable`` when it is
    not installed.
    """
    s = spec(name)
    if not s.explores:
        offered = ", ".join(x.display for x in specs() if x.explores)
        raise ValueError(
            f"labkit.explore has no checks for {s.display} models yet: it checks models of "
            f"{offered}"
        )
    get(name)  # a clear FrameworkUnavailable when it does not import
    return importlib.import_module(s.explore_module)


def framework_of(model: object) -> str | None:
    """The registered framework a model belongs to, without importing any framework.

    A path (``str`` or ``os.PathLike``) ending in a suffix of a spec's ``model_files`` is that
    framework's saved model; any other object belongs to the framework whose ``model_packages``
    define the first class of its MRO that one of them defines. None when no spec claims it.
    """
    if isinstance(model, str | os.PathLike):
        path = os.fspath(model).lower()
        return next((s.name for s in specs() for x in s.model_files if path.endswith(x)), None)
    for cls in type(model).__mro__:
        package = (cls.__module__ or "").split(".")[0]
        for s in specs():
            if package in s.model_packages:
                return s.name
    return None


def launch_module(name: str) -> ModuleType:
    """The framework-free launch module of ``name`` (how its workers are started; imports no
    framework); ``ValueError`` for a framework without a data-parallel launcher."""
    s = spec(name)
    if s.launch_module is None:
        with_launcher = ", ".join(x.name for x in specs() if x.launcher)
        raise ValueError(
            f"{name} has no data-parallel launcher in the lab: frameworks with one are "
            f"{with_launcher}"
        )
    return importlib.import_module(s.launch_module)


def checks(name: str) -> ModuleType:
    """The module that checks code exercises for ``name`` (``labkit.frameworks.<name>.checks``).

    Raises ``ValueError`` for a framework without code checks and ``FrameworkUnavailable``
    (with the fix) when the framework does not import here.
    """
    s = spec(name)
    if s.checks_module is None:
        with_checks = [x.name for x in specs() if x.code_checks]
        raise ValueError(
            f"{name} has no code-exercise checks; frameworks with checks: {', '.join(with_checks)}"
        )
    get(name)
    return importlib.import_module(s.checks_module)


def peak_probes() -> list[hardware.Probe]:
    """The matrix-multiply probes of the installed frameworks that have one (spec
    ``peak_precisions``), in registry order, each with its framework's version (a new version
    is measured anew: :mod:`labkit.hardware.measured`). Imports no framework."""
    return [
        hardware.Probe(s.peak_module, s.peak_precisions, ((s.import_name, version),))
        for s in specs()
        if s.peak_module and (version := installed_version(s.import_name))
    ]


#: environment variables that cap the instructions oneDNN may use (part of a probe's key)
ISA_ENV: tuple[str, ...] = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")


def kernel_support(
    framework: str, version: str, precision: str, probe: Callable[[], str | None]
) -> str:
    """Empty when this machine's kernels run ``precision`` for ``framework`` ``version``, else why
    not, in words. ``probe`` runs one tiny operation at that precision: it raises where the
    kernels cannot (oneDNN's "could not create a primitive descriptor"), or returns why the
    operation ran in another precision. The answer is cached per machine type, library version
    and oneDNN ISA cap (:data:`ISA_ENV`) in :func:`labkit.hardware.cache_dir`."""
    isa = {k: os.environ[k] for k in ISA_ENV if os.environ.get(k)}
    machine = hardware.machine_of(hardware.fingerprint())["machine_id"]
    key = json.dumps([framework, version, precision, isa, machine], sort_keys=True)
    path = hardware.cache_dir() / f"kernels-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    try:
        return str(json.loads(path.read_text())["why_not"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # not probed yet (or a damaged file): probe now
    try:
        why = probe() or ""
    except Exception as exc:  # noqa: BLE001 - the framework's own error is the reason
        why = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    if why:
        why = f"{framework} {version} cannot run {precision} kernels on this CPU: {why}"
        if isa:
            why += f" (with {', '.join(f'{k}={v}' for k, v in isa.items())})"
    try:
        jsonio.write_atomic(path, json.dumps({"key": json.loads(key), "why_not": why}))
    except OSError:
        pass  # an unwritable cache: probed again next time
    return why
