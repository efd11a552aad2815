"""The toolkit of the graph-readiness checks (``frameworks/<name>/explore.py``), numpy only: a
check's answer, the learner's line in a traceback, agreement with eager, the eager session; what
the checks say, in ``labkit/data/explore_messages.toml`` (:data:`MESSAGES`)."""

from __future__ import annotations

import contextlib
import functools
import io
import linecache
import re
import sys
import sysconfig
import traceback
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ...util import data_file
from ...util.numeric import difference
from .layout import Axes, Call, Variation, describe_arrays, probe_notes, probes, variations

STATUSES: tuple[str, ...] = ("works", "caveats", "fails", "crashed")
#: relative tolerance of "agrees with eager" (float32 graphs reorder sums; bigger gaps are bugs)
RTOL = 1e-3
#: the sentences of the checks' verdicts, per framework ("kit": every framework's)
MESSAGES: dict[str, dict] = data_file("explore_messages")
_SAID = MESSAGES["kit"]


@dataclass
class PathResult:
    """One capture path: its status, why in plain words, the framework's message."""

    path: str
    status: str
    reason: str
    message: str = ""
    details: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {', '.join(STATUSES)}")


@dataclass
class GraphBreak:
    """Where a graph capture stopped and handed control back to Python, and why."""

    reason: str  #: in plain words
    location: str  #: ``file.py:12 in forward``
    code: str = ""  #: the source line
    message: str = ""  #: the framework's own words, condensed
    count: int = 1  #: how many times the capture stopped there
    path: str = ""  #: the capture path that reported it


@dataclass
class Recompile:
    """How often a capture path compiled (traced) again while one dimension of the input changed."""

    path: str  #: e.g. ``torch.compile``, ``tf.function(reduce_retracing=True)``
    varied: str  #: ``batch size``, ``sequence length``, ``image size``
    shapes: list[str]  #: the input shapes called, in order
    compiles: list[int]  #: graphs compiled (traced) during each call
    reasons: list[str] = field(default_factory=list)  #: the framework's reasons, condensed

    @property
    def total(self) -> int:
        return sum(self.compiles)

    @property
    def every_call(self) -> bool:
        return all(c > 0 for c in self.compiles)


def result(
    path: str,
    status: str,
    reason: str,
    message: str = "",
    graph_breaks: Iterable[GraphBreak] = (),
    recompiles: Iterable[Recompile] = (),
    notes: Iterable[str] = (),
    **details,
) -> dict:
    """One check's answer as plain data; ``notes`` go to the report's end."""
    return {
        "path": asdict(PathResult(path, status, reason, message, details)),
        "graph_breaks": [asdict(b) for b in graph_breaks],
        "recompiles": [asdict(r) for r in recompiles],
        "notes": list(notes),
    }


def first_lines(message: object, lines: int = 2, limit: int = 400) -> str:
    """The first ``lines`` non-empty lines of an error message, at most ``limit`` characters."""
    if isinstance(message, BaseException):
        text = str(message).strip()
        message = f"{type(message).__name__}: {text}" if text else type(message).__name__
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(message))
    out = " / ".join([ln.strip() for ln in text.splitlines() if ln.strip()][:lines])
    return out if len(out) <= limit else out[: limit - 3] + "..."


_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)(?:, in (\w+))?')
_STDLIB = tuple(str(Path(sysconfig.get_paths()[k]).resolve()) for k in ("stdlib", "platstdlib"))
#: where code is not the model's: the standard library, labkit's plumbing
_NOT_MODEL = (*_STDLIB, sys.base_prefix + "/lib", str(Path(__file__).resolve().parents[2]))
#: packages of the frameworks and their machinery: a frame there is not the model's code
_MACHINERY = set(_SAID["machinery"])


def _tier(filename: str) -> int:
    """0: the learner's code; 1: a model library's (``transformers``); 2: not the model's (the
    standard library, a framework, labkit's plumbing)."""
    parts = Path(filename).parts
    if "site-packages" in parts[:-1]:
        return 2 if parts[parts.index("site-packages") + 1].split(".")[0] in _MACHINERY else 1
    resolved = str(Path(filename).resolve())
    return 2 if filename.startswith("<") or resolved.startswith(_NOT_MODEL) else 0


def user_location(text: str, code: bool = False) -> str:
    """``file.py:12 in forward``: the learner's last frame in a traceback, else a model
    library's, never a framework's; with ``code``, the source line there; "" when there is none."""
    found = [m for m in _FILE_LINE.finditer(text) if _tier(m.group(1)) < 2]
    m = min(reversed(found), key=lambda m: _tier(m.group(1)), default=None)
    if m is None:
        return ""
    if code:
        return linecache.getline(m.group(1), int(m.group(2))).strip()
    return f"{Path(m.group(1)).name}:{m.group(2)}" + (f" in {m.group(3)}" if m.group(3) else "")


def at_line(found: str | BaseException) -> str:
    """`` (at file.py:12 in forward)``: :func:`user_location` in a traceback (an exception's),
    else ""."""
    if isinstance(found, BaseException):
        found = "".join(traceback.format_exception(found))
    where = user_location(found)
    return f" (at {where})" if where else ""


def agreement(outputs, references, rtol: float = RTOL) -> tuple[bool, float, str]:
    """Whether ``outputs`` match ``references`` (count, shapes, values within ``rtol`` of the
    references' scale); the largest absolute difference; what differs, in words."""
    if len(outputs) != len(references):
        return False, float("inf"), f"{len(outputs)} outputs instead of {len(references)}"
    worst = 0.0
    for i, (out, ref) in enumerate(zip(outputs, references)):
        a, b = np.asarray(out, np.float64), np.asarray(ref, np.float64)
        if a.shape != b.shape:
            return False, float("inf"), f"output {i} has shape {a.shape}, eager {b.shape}"
        if np.any(np.isnan(a) != np.isnan(b)):
            return False, float("inf"), f"output {i} has NaN where eager has none (or the reverse)"
        d = difference(a, b, skip_nan=True)
        worst = max(worst, d.largest)
        if d.exceeds(rtol, floor=1e-6):
            why = f"output {i} differs by up to {d.largest:.3g} (scale {d.scale:.3g})"
            return False, worst, why
    return True, worst, ""


def agrees(worst: float) -> str:
    return f"agrees with eager (largest difference {worst:.1g})"


@contextlib.contextmanager
def quiet():
    """Frameworks warn and models print: keep the report readable."""
    with warnings.catch_warnings(action="ignore"), contextlib.redirect_stdout(io.StringIO()):
        yield


class EagerSession:
    """What a framework's checks share: the inputs, their :class:`Call` and :class:`Axes`, eager
    outputs once per input, the sizes eager takes. A framework gives ``run(fn, arrays)`` (NumPy
    in and out) and ``eager_fn``."""

    eager_fn: Callable
    run: Callable[[Callable, Sequence[np.ndarray]], list[np.ndarray]]

    def __init__(self, arrays: Sequence[np.ndarray], call: Call, layout: Axes):
        self.arrays = [np.ascontiguousarray(a) for a in arrays]
        self.call, self.layout = call, layout
        self.uncompared: list[str] = []
        self.output_type = ""
        self._eager: dict[str, list[np.ndarray] | BaseException] = {}

    def eager(self, key: str, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Eager outputs for ``arrays`` (cached under ``key``); raises what eager raised."""
        if key not in self._eager:
            try:
                self._eager[key] = self.run(self.eager_fn, arrays)
            except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
                self._eager[key] = exc
        if isinstance(self._eager[key], BaseException):
            raise self._eager[key]
        return self._eager[key]

    def cases(self) -> list[tuple[str, list[np.ndarray]]]:
        """The example and the probes that eager itself runs."""
        out = [("example", self.arrays)]
        for label, arrays in probes(self.arrays):
            with contextlib.suppress(Exception):
                self.eager(label, arrays)
                out.append((label, arrays))
        return out

    def compare(self, fn, extra=()) -> tuple[bool, float, str]:
        """Whether ``fn`` agrees with eager on every case and ``extra`` (and runs on each); the
        largest difference; what differs."""
        worst = 0.0
        for label, arrays in [*self.cases(), *extra]:
            try:
                ok, diff, why = agreement(self.run(fn, arrays), self.eager(label, arrays))
            except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
                ok, diff, why = False, float("inf"), f"it raised {first_lines(exc, 1)}"
            worst = max(worst, diff)
            if not ok:
                return False, worst, f"on the {label} input: {why}"
        return True, worst, ""

    def agreed(self, path: str, fn: Callable, done: str, **details) -> dict:
        """The row of a path that ran ``fn``: what it did (``done``), and whether it agrees."""
        with quiet():
            ok, worst, why = self.compare(fn)
        if not ok:
            why = f"{done}, but it computes different numbers than eager {why}"
            return result(path, "fails", why, **details)
        done += f"; {agrees(worst)}"
        return result(path, "works", done, **details)

    def eager_check(self, framework: str, message: Callable | None = None) -> dict:
        """The eager row: what the model gives on the example, else why it does not run (the
        framework's ``message(exc)``, by default its first lines and the learner's line)."""
        try:
            outs = self.eager("example", self.arrays)
        except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
            said = message(exc) if message else first_lines(exc) + at_line(exc)
            return result("eager", "fails", _SAID["eager_fails"].format(framework=framework), said)
        details = {"outputs": [list(o.shape) for o in outs], "call": self.call.text(self.arrays)}
        if not outs:
            why = _SAID["no_tensor"].format(
                what=f" (a {self.output_type})" * bool(self.output_type)
            )
            return result("eager", "caveats", why, constant_output=False, **details)
        shapes = ", ".join("x".join(map(str, o.shape)) or "scalar" for o in outs)
        reason = f"runs: {len(outs)} output(s) of shape {shapes}"
        if self.uncompared:
            reason += _SAID["uncompared"].format(held=", ".join(self.uncompared))
        takes = [v.name + "s" for v, why in self.accepted if not why]
        refuses = [f"{v.name} ({why})" for v, why in self.accepted if why]
        reason += f"; also takes other {' and '.join(takes)}" if takes else ""
        reason += f"; not another {', '.join(refuses)}" if refuses else ""
        fixed = [f"{role} ({why})" for role, why in self.layout.fixed.items()]
        reason += "; not varied: " + "; ".join(fixed) if fixed else ""
        notes = [*self.layout.notes, *probe_notes(self.arrays, self.call)]
        new = dict(self.cases()).get("new values")  # outputs that agree on them: constant
        constant = bool(new) and agreement(self.eager("new values", new), outs)[0]
        if constant:
            warning = _SAID["constant"].format(rtol=RTOL)
            reason += "; " + warning
            notes.insert(0, warning)
        return result("eager", "works", reason, notes=notes, constant_output=constant, **details)

    def usable(self, path: str) -> tuple[list[Variation], dict | None]:
        """The variations eager takes, or (none) the new-shape row that says none was tried."""
        usable = [v for v, why in self.accepted if not why]
        if usable:
            return usable, None
        why = "; ".join(f"{v.name}: {w}" for v, w in self.accepted)
        why = why or "the inputs have no batch dimension"
        why = f"eager takes no other input sizes, so none was tried ({why})"
        return [], result(path, "works", why)

    def _refused(self, v: Variation) -> str:
        """Why eager refuses a size in ``v`` ("" when it runs every one)."""
        for xs in v.inputs[1:]:
            try:
                self.eager(f"{v.name} {describe_arrays(xs)}", xs)
            except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
                return first_lines(exc, lines=1, limit=160)
        return ""

    @functools.cached_property
    def accepted(self) -> list[tuple[Variation, str]]:
        """Each variation, with why eager refuses a size in it (""). A sequence length refused
        on axis 1 of a 3-D input is tried on its last axis (a spectrogram's frames)."""
        accepted = []
        for v in variations(self.arrays, self.layout):
            why = self._refused(v)
            pairs = self.layout.roles["sequence length"]
            moved = [(k, 2) if self.arrays[k].ndim == 3 else (k, d) for k, d in pairs]
            if why and v.name == "sequence length" and moved != pairs:
                other = Axes({**self.layout.roles, "sequence length": moved}, self.layout.fixed)
                alt = next(x for x in variations(self.arrays, other) if x.name == v.name)
                if not self._refused(alt):
                    names = ", ".join(self.call.name(k) for k, _ in alt.dims)
                    note = _SAID["last_axis"].format(names=names, why=why)
                    other.notes = [*self.layout.notes, note]
                    self.layout, v, why = other, alt, ""
            accepted.append((v, why))
        return accepted
