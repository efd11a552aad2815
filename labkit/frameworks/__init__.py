"""The framework registry: each framework's spec is a table of ``labkit/data/frameworks.toml``
(:class:`~labkit.frameworks.contract.FrameworkSpec`, framework-free), its package
``labkit/frameworks/<name>/``, whose ``adapter.py`` imports the framework (:func:`get`). Adding a
framework: its table and its package, then ``tests/test_registry.py`` says what is missing.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
from collections import namedtuple
from collections.abc import Callable, Iterable
from types import ModuleType, SimpleNamespace

from .. import hardware
from ..util import data_file, jsonio, proc
from ._kit import checks as kit_checks
from .contract import FrameworkSpec

__all__ = [
    "MODES",
    "NAMES",
    "PACKAGES",
    "FrameworkUnavailable",
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


def _field(value: object) -> object:
    """A TOML value as a (hashable) spec holds it: an array as a tuple, a table as a tuple of
    pairs."""
    if isinstance(value, dict):
        return tuple((k, _field(v)) for k, v in value.items())
    return tuple(value) if isinstance(value, list) else value


@functools.cache
def specs() -> tuple[FrameworkSpec, ...]:
    """Every registered framework's spec, in registry order (imports no framework)."""
    return tuple(
        FrameworkSpec(name, **{k: _field(v) for k, v in fields.items()})
        for name, fields in data_file("frameworks").items()
    )


def spec(name: str) -> FrameworkSpec:
    """The spec of ``name``; an unknown name raises ``ValueError`` listing the valid ones."""
    for s in specs():
        if s.name == name:
            return s
    raise ValueError(f"unknown framework {name!r}: valid frameworks are {', '.join(NAMES)}")


#: the registered frameworks, in the order tables and figures list them
NAMES: tuple[str, ...] = tuple(s.name for s in specs())
PACKAGES: dict[str, str] = {s.name: s.import_name for s in specs()}
MODES: dict[str, tuple[str, ...]] = {s.name: s.modes for s in specs()}
#: the pip distributions of each framework's import name, preferred first (none: the name itself)
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {s.import_name: s.distributions for s in specs()}
#: packages the doctor reports besides the frameworks (onnx, which ONNX Runtime's model needs)
EXTRA_PACKAGES: tuple[str, ...] = tuple(
    dict.fromkeys(p for s in specs() for p in s.extra_packages if p not in PACKAGES.values())
)


class FrameworkUnavailable(RuntimeError):
    """A framework that is not installed or fails to import; the message says how to fix it."""


def requirement(package: str) -> str:
    """The requirement labkit pins on this machine for the first of ``package``'s
    :data:`DISTRIBUTIONS` it pins (read from labkit's installed metadata), e.g.
    'tensorflow-cpu==2.21.0'."""
    from packaging.requirements import Requirement  # matplotlib's dependency: always installed

    names, pins = DISTRIBUTIONS.get(package) or (package,), {}
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        for req in map(Requirement, importlib.metadata.requires("labkit") or []):
            if not req.marker or req.marker.evaluate():  # this machine's, no extra's
                pins[req.name.lower()] = f"{req.name}{req.specifier}"
    return next((pins[d] for d in names if d in pins), names[0])


def install_hint(package: str) -> str:
    return f"run `make install` (or: pip install {requirement(package)!r}) and restart the kernel"


#: whether a package imports, found in a fresh subprocess: its distribution's version (None: not
#: installed), "ok", "not installed" or "import fails", the import error's last line and the fix
Probe = namedtuple("Probe", ["name", "version", "importable", "status", "error", "fix"])


def installed_version(package: str) -> str | None:
    for dist in DISTRIBUTIONS.get(package) or (package,):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(dist)
    return None


def _probe(package: str, timeout: float = 120.0) -> Probe:
    code = [sys.executable, "-c", f"import labkit, {package}"]
    try:
        done = subprocess.run(code, capture_output=True, text=True, timeout=timeout, check=False)
        last = proc.last_lines(done.stderr, 1) or ["the interpreter exited abnormally"]
        error = "" if done.returncode == 0 else last[0].strip()
    except subprocess.TimeoutExpired:
        error = f"import did not finish within {timeout:.0f} s"
    version = installed_version(package)
    status = "ok" if not error else "import fails" if version else "not installed"
    return Probe(package, version, not error, status, error, install_hint(package) if error else "")


@functools.lru_cache(maxsize=1)
def probe_all(fresh: bool = False) -> dict[str, Probe]:
    """Import each package in its own subprocess, in parallel; cached while the interpreter, its
    distributions and PYTHONPATH stay the same (``fresh=True``: import again)."""
    dists = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    key = [sys.executable, sys.version, os.environ.get("PYTHONPATH", ""), dists]
    path = hardware.measured.cache_file("probes", key)
    packages = [PACKAGES[n] for n in NAMES] + list(EXTRA_PACKAGES)
    try:
        cached = {p: Probe(**v) for p, v in json.loads(path.read_text()).items()}
        if not fresh and sorted(cached) == sorted(packages):
            return cached
    except (OSError, ValueError, TypeError):
        pass  # missing or unreadable: import again
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(packages)) as pool:
        probes = dict(zip(packages, pool.map(_probe, packages)))
    jsonio.write_atomic(path, json.dumps({p: v._asdict() for p, v in probes.items()}))
    return probes


def available() -> list[str]:
    """The frameworks that are installed and import cleanly here."""
    probes = probe_all()
    return [n for n in NAMES if probes[PACKAGES[n]].importable]


def check_import_order(name: str) -> None:
    """``FrameworkUnavailable`` when importing ``name`` now would crash this process (a package
    of its spec's ``import_before`` is loaded already)."""
    s = spec(name)
    loaded = [p for p in s.import_before if p in sys.modules]
    if loaded and s.import_name not in sys.modules:
        raise FrameworkUnavailable(
            f"{s.display} cannot be imported in this process: {', '.join(loaded)} is loaded "
            f"already, and importing {s.import_name} after it is a segmentation fault. Run it "
            f"in a fresh process (the benchmark runner gives each cell one), or restart the "
            f"kernel and call labkit.frameworks.get({name!r}) before anything loads {loaded[0]}"
        )


def import_order(names: Iterable[str]) -> list[str]:
    """``names`` in an order that imports safely in one process (PaddlePaddle first)."""
    return sorted((spec(n).name for n in names), key=lambda n: not spec(n).import_before)


def get(name: str) -> ModuleType:
    """The adapter module for ``name``; ``FrameworkUnavailable`` with the fix if it is missing
    (or if importing it here would crash the process)."""
    s = spec(name)
    check_import_order(name)
    # PaddlePaddle sets OMP_NUM_THREADS=1 as it loads, which every later child would inherit
    saved = {k: os.environ[k] for k in proc.THREAD_ENV if k in os.environ}
    try:
        importlib.import_module(s.import_name)
    except Exception as exc:  # ImportError, or a broken binary's RuntimeError
        raise FrameworkUnavailable(
            f"{name} is not available here ({type(exc).__name__}: {exc}); "
            f"{install_hint(s.import_name)}"
        ) from exc
    finally:
        for key in proc.THREAD_ENV:
            os.environ.pop(key, None)
        os.environ.update(saved)
    return importlib.import_module(f".{name}.adapter", __name__)


def _part(name: str, part: str, has: Callable, what: str, framework: bool = True) -> ModuleType:
    """The module ``part`` of ``name``'s package (``framework``: through :func:`get`)."""
    s = spec(name)
    if not has(s):
        offered = ", ".join(x.display for x in specs() if has(x))
        raise ValueError(f"{name} has no {what} yet in the lab: it has them for {offered}")
    if framework:
        get(name)
    return importlib.import_module(f".{s.name}.{part}", __name__)


def explorer(name: str) -> ModuleType:
    """The graph-readiness checks of ``name`` (its ``explore`` module); imports the framework."""
    return _part(name, "explore", lambda s: s.explores, f"checks for {spec(name).display} models")


def launch_module(name: str) -> ModuleType:
    """The framework-free module that starts ``name``'s data-parallel workers."""
    return _part(name, "launch", lambda s: s.launcher, "data-parallel launcher", framework=False)


def checks(name: str) -> ModuleType | SimpleNamespace:
    """The checks of code exercises for ``name``: its ``checks`` module, or those its spec's
    ``exercise`` table describes (imports the framework)."""
    if spec(name).exercise:
        get(name)
        return kit_checks.from_spec(spec(name))
    return _part(name, "checks", lambda s: s.code_checks, "code-exercise checks")


def framework_of(model: object) -> str | None:
    """The framework a model (or a saved model's path) belongs to, None when no spec claims it."""
    if isinstance(model, str | os.PathLike):
        path = os.fspath(model).lower()
        return next((s.name for s in specs() for x in s.model_files if path.endswith(x)), None)
    packages = [(cls.__module__ or "").split(".")[0] for cls in type(model).__mro__]
    return next((s.name for p in packages for s in specs() if p in s.model_packages), None)


def peak_probes() -> list[hardware.Probe]:
    """The matrix-multiply probes of the installed frameworks that have one, with its version."""
    return [
        hardware.Probe(s.peak_module, ((s.import_name, version),))
        for s in specs()
        if s.peak_module and (version := installed_version(s.import_name))
    ]


def kernel_support(
    framework: str, version: str, precision: str, probe: Callable[[], str | None]
) -> str:
    """Empty when this machine's kernels run ``precision`` for ``framework`` ``version``, else why
    not. ``probe`` runs one tiny operation at that precision: it raises where the kernels cannot,
    or returns why it ran in another precision. Cached per machine type, version and the cap on
    the instructions oneDNN may use."""
    isa = {k: v for k in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA") if (v := os.environ.get(k))}
    key = [framework, version, precision, isa]
    path = hardware.measured.cache_file("kernels", key)
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):  # not probed yet: probe
        return str(json.loads(path.read_text())["why_not"])
    try:
        why = probe() or ""
    except Exception as exc:  # noqa: BLE001 - the framework's own error is the reason
        why = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    if why:
        why = f"{framework} {version} cannot run {precision} kernels on this CPU: {why}"
        if isa:
            why += f" (with {', '.join(f'{k}={v}' for k, v in isa.items())})"
    with contextlib.suppress(OSError):  # an unwritable cache: probed again next time
        jsonio.write_atomic(path, json.dumps({"key": key, "why_not": why}))
    return why
