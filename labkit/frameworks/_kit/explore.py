"""The toolkit of the graph-readiness checks (``labkit/frameworks/<name>/explore.py``), numpy
only: a check's answer (:func:`result`: a :class:`PathResult` row, its :class:`GraphBreak` and
:class:`Recompile` findings, notes), the framework's message condensed (:func:`first_lines`) or
in plain words (:func:`plain`), where the learner's code is in a traceback
(:func:`user_location`), agreement with eager (:func:`agreement`), and the eager session the
checks share (:class:`EagerSession`). How the model is called and which axes vary are
:mod:`labkit.frameworks._kit.layout`, re-exported here. Not for: running the checks in worker
processes, or the report (:mod:`labkit.explore`).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import sysconfig
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ...util.numeric import difference
from .layout import (
    Axes,
    Call,
    Variation,
    axes,
    describe_arrays,
    is_mask,
    probe_notes,
    probes,
    random_array,
    variations,
)

__all__ = [
    "RTOL",
    "STATUSES",
    "Axes",
    "Call",
    "EagerSession",
    "GraphBreak",
    "PathResult",
    "Recompile",
    "Variation",
    "agreement",
    "agrees",
    "axes",
    "describe_arrays",
    "first_lines",
    "is_mask",
    "plain",
    "probe_notes",
    "probes",
    "quiet",
    "random_array",
    "recompiles_in_words",
    "result",
    "slowdown",
    "user_code",
    "user_location",
    "variations",
    "write_pickle",
]

STATUSES: tuple[str, ...] = ("works", "caveats", "fails", "crashed")
#: relative tolerance of "agrees with eager" (float32 graphs reorder sums; bigger gaps are bugs)
RTOL = 1e-3


# ---------------------------------------------------------------------------------------------
# a check's answer


@dataclass
class PathResult:
    """One capture path: does the model get through it, why (plain words), and the framework's
    own message (condensed; empty when there is nothing to say)."""

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
    varied: str  #: what changed: ``batch size``, ``sequence length``, ``image size``
    shapes: list[str]  #: the input shapes called, in order
    compiles: list[int]  #: graphs compiled (traced) during each call
    reasons: list[str] = field(default_factory=list)  #: the framework's reasons, condensed

    @property
    def total(self) -> int:
        return sum(self.compiles)

    @property
    def every_call(self) -> bool:
        """True when every new shape compiled again (no generalisation)."""
        return all(c > 0 for c in self.compiles)


# ---------------------------------------------------------------------------------------------
# helpers for the checks (numpy only)


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
    """One check's answer as plain data (what a worker sends back); ``notes`` are lines for
    the report's end (a warning that holds for every path)."""
    return {
        "path": asdict(PathResult(path, status, reason, message, details)),
        "graph_breaks": [asdict(b) for b in graph_breaks],
        "recompiles": [asdict(r) for r in recompiles],
        "notes": list(notes),
    }


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def first_lines(message: object, lines: int = 2, limit: int = 400) -> str:
    """The first ``lines`` non-empty lines of an error message, at most ``limit`` characters."""
    if isinstance(message, BaseException):
        text = str(message).strip()
        message = f"{type(message).__name__}: {text}" if text else type(message).__name__
    text = _ANSI.sub("", str(message))
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][:lines]
    out = " / ".join(kept)
    return out if len(out) <= limit else out[: limit - 3] + "..."


_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)(?:, in (\w+))?')
#: where the standard library lives: never the learner's code
_STDLIB = tuple(
    {
        str(Path(p).resolve())
        for k in ("stdlib", "platstdlib")
        if (p := sysconfig.get_paths().get(k))
    }
)
#: packages of the frameworks and their machinery: a frame there is not the model's code
_MACHINERY_NAMES = (
    "torch functorch torchgen triton onnx onnxruntime onnxscript tensorflow keras tf_keras "
    "tensorboard absl tree optree ml_dtypes mindspore numpy sympy google cloudpickle _pytest "
    "pluggy IPython ipykernel tornado"
)
_MACHINERY = frozenset(_MACHINERY_NAMES.split())
_LABKIT = Path(__file__).resolve().parents[2]


def _tier(filename: str) -> int:
    """0: the learner's code; 1: a model library's (``transformers``, ``torchvision``);
    2: not the model's (the standard library, a framework, labkit's own plumbing)."""
    if filename.startswith("<"):
        return 2
    path = Path(filename)
    resolved = str(path.resolve()) if path.is_absolute() else filename
    parts = path.parts
    if "site-packages" in parts or "dist-packages" in parts:
        where = "site-packages" if "site-packages" in parts else "dist-packages"
        package = parts[parts.index(where) + 1] if parts.index(where) + 1 < len(parts) else ""
        return 2 if package.split(".")[0] in _MACHINERY else 1
    if resolved.startswith(_STDLIB) or resolved.startswith(sys.base_prefix + "/lib"):
        return 2
    if resolved.startswith(str(_LABKIT)) and path.name != "examples.py":  # the course's models
        return 2
    return 0


def _user_frame(text: str) -> re.Match | None:
    """The last frame of the learner's code in ``text``, else of a model library's."""
    found = list(_FILE_LINE.finditer(text))
    for tier in (0, 1):
        mine = [m for m in found if _tier(m.group(1)) == tier]
        if mine:
            return mine[-1]
    return None


def user_location(text: str) -> str:
    """``file.py:12 in forward``: the last place in ``text`` (an error message or traceback)
    that is the learner's code (else a model library's, never the standard library's or a
    framework's); "" when there is none."""
    m = _user_frame(text)
    if m is None:
        return ""
    return f"{Path(m.group(1)).name}:{m.group(2)}" + (f" in {m.group(3)}" if m.group(3) else "")


def user_code(text: str) -> str:
    """The source line at :func:`user_location` (read from the file), or ""."""
    import linecache

    m = _user_frame(text)
    return linecache.getline(m.group(1), int(m.group(2))).strip() if m else ""


def agreement(
    outputs: Sequence[np.ndarray], references: Sequence[np.ndarray], rtol: float = RTOL
) -> tuple[bool, float, str]:
    """Whether ``outputs`` match ``references`` (count, shapes, values within ``rtol`` of the
    references' scale); the largest absolute difference; what differs, in words."""
    if len(outputs) != len(references):
        return False, float("inf"), f"{len(outputs)} outputs instead of {len(references)}"
    worst = 0.0
    for i, (out, ref) in enumerate(zip(outputs, references)):
        out, ref = np.asarray(out), np.asarray(ref)
        if out.shape != ref.shape:
            return False, float("inf"), f"output {i} has shape {out.shape}, eager {ref.shape}"
        if ref.size == 0:
            continue
        a, b = out.astype(np.float64), ref.astype(np.float64)
        if np.any(np.isnan(a) != np.isnan(b)):
            return False, float("inf"), f"output {i} has NaN where eager has none (or the reverse)"
        d = difference(a, b, skip_nan=True)
        worst = max(worst, d.largest)
        if d.exceeds(rtol, floor=1e-6):
            return (
                False,
                worst,
                f"output {i} differs by up to {d.largest:.3g} (scale {d.scale:.3g})",
            )
    return True, worst, ""


def write_pickle(obj: object, path: Path) -> None:
    """Write ``obj`` with cloudpickle (classes and functions defined in a notebook travel by
    value, those of importable modules by reference); ``ValueError`` when it cannot be pickled."""
    import cloudpickle

    try:
        data = cloudpickle.dumps(obj)
    except Exception as exc:
        raise ValueError(f"pickling it failed: {type(exc).__name__}: {exc}") from exc
    Path(path).write_bytes(data)


#: how much slower than eager a compiled call must be to be reported, and by how many
#: milliseconds at least; only between valid timings (a spread under 10%, enough calls)
SLOWDOWN = 3.0
SLOWDOWN_MS = 0.5


def slowdown(ms: dict[str, dict[str, dict]]) -> str:
    """A compiled path timed against eager, in words, with the timings' validity: ``ms`` holds,
    per grad mode a learner serves in (``no_grad``, ``inference_mode``), ``eager`` and
    ``compiled`` timings (``ms``: median ms a call, ``iqr_ms``, ``calls``, ``invalid``: why the
    timing is not valid). A ratio is claimed only between valid timings; past
    :data:`SLOWDOWN` times eager (and :data:`SLOWDOWN_MS` more) it is a finding."""
    if not ms:
        return ""
    said = "; ".join(
        f"under torch.{m}: {t['compiled']['ms']:.3g} ms (IQR {t['compiled']['iqr_ms']:.2g}) "
        f"compiled vs {t['eager']['ms']:.3g} ms (IQR {t['eager']['iqr_ms']:.2g}) eager, medians "
        f"of {t['compiled']['calls']} and {t['eager']['calls']} calls"
        for m, t in ms.items()
    )
    invalid = [x["invalid"] for t in ms.values() for x in t.values() if x["invalid"]]
    if invalid:
        n, first = len(invalid), invalid[0][0]
        why = f"{n} of {2 * len(ms)} timings invalid, e.g. {first}"
        return f"a call {said}: timing INVALID ({why}), so no ratio is claimed"
    mode, worst = max(ms.items(), key=lambda kv: kv[1]["compiled"]["ms"] / kv[1]["eager"]["ms"])
    ratio = worst["compiled"]["ms"] / worst["eager"]["ms"]
    if ratio < SLOWDOWN or worst["compiled"]["ms"] - worst["eager"]["ms"] < SLOWDOWN_MS:
        return f"a call {said} (valid timings)"
    return (
        f"**{ratio:.1f}x slower than eager** under torch.{mode} (valid timings: {said}); "
        "measure it in the mode you serve in before deploying it compiled"
    )


def recompiles_in_words(r: Recompile) -> str:
    """What a :class:`Recompile`'s counts show: at which calls a graph was compiled, and whether
    the sizes after the second reused one."""
    at = [i + 1 for i, c in enumerate(r.compiles) if c]
    calls = ", ".join(map(str, at))
    text = (
        f"{r.varied} over {len(r.compiles)} sizes: {r.total} graph(s) compiled, at call(s) {calls}"
    )
    later = [i for i in at if i > 2]
    if later:
        return (
            text
            + f": compiled again at call(s) {', '.join(map(str, later))}, so later sizes do not all reuse a graph"
        )
    if at == [1]:
        return text + ": every size reused the first graph"
    return (
        text
        + ": the second size made the dimension dynamic, and every later size reused that graph"
    )


def agrees(worst: float) -> str:
    """How a check that passed says so."""
    return f"agrees with eager (largest difference {worst:.1g})"


def plain(message: str, table: Sequence[tuple[tuple[str, ...], str]], default: str) -> str:
    """A framework's message in plain words: the meaning of the first entry of ``table``
    (substrings of the message, what it means) that matches, else ``default``."""
    for keys, meaning in table:
        if any(k in message for k in keys):
            return meaning
    return default


@contextlib.contextmanager
def quiet():
    """Frameworks warn (graph breaks, retracing, deprecations) and models print: keep the
    report readable."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


class EagerSession:
    """What an eager framework's checks share: the example inputs and how the model takes them
    (:class:`Call`), which axes vary (:class:`Axes`), eager outputs computed once per input,
    agreement with them, and which input sizes eager itself accepts. A framework's session
    gives ``run(fn, arrays)`` (NumPy in, NumPy out), ``eager_fn`` (the model's eager callable)
    and, after a run, ``uncompared``: what the output held besides arrays (a cache object)."""

    eager_fn: Callable

    def __init__(
        self, arrays: Sequence[np.ndarray], call: Call | None = None, layout: Axes | None = None
    ):
        self.arrays = [np.ascontiguousarray(a) for a in arrays]
        self.call = call or Call()
        self.layout = layout or axes(self.arrays, channels=self.call.channels)
        self.uncompared: list[str] = []
        self._eager: dict[str, list[np.ndarray] | BaseException] = {}
        self._accepted: list[tuple[Variation, str]] | None = None

    def run(self, fn: Callable, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError

    def eager(self, key: str, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Eager outputs for ``arrays`` (cached under ``key``); raises what eager raised."""
        if key not in self._eager:
            try:
                self._eager[key] = self.run(self.eager_fn, arrays)
            except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
                self._eager[key] = exc
        found = self._eager[key]
        if isinstance(found, BaseException):
            raise found
        return found

    def cases(self) -> list[tuple[str, list[np.ndarray]]]:
        """The example and the probes that eager itself runs."""
        out = [("example", self.arrays)]
        for label, arrays in probes(self.arrays):
            with contextlib.suppress(Exception):
                self.eager(label, arrays)
                out.append((label, arrays))
        return out

    def compare(
        self,
        fn: Callable | None,
        extra: Sequence[tuple[str, list]] = (),
        run: Callable | None = None,
    ) -> tuple[bool, float, str]:
        """Whether ``fn`` (called through ``run``, by default this session's) agrees with eager
        on every case and on ``extra``; the largest difference; what differs."""
        run = run or self.run
        worst = 0.0
        for label, arrays in [*self.cases(), *extra]:
            ok, diff, why = agreement(run(fn, arrays), self.eager(label, arrays))
            worst = max(worst, diff)
            if not ok:
                return False, worst, f"on the {label} input: {why}"
        return True, worst, ""

    #: what the outputs are compared with, in the rows' words
    reference = "eager"

    def agreed(self, path: str, fn: Callable, done: str, **details) -> dict:
        """The row of a path that ran ``fn``: what it did (``done``) and that it agrees with
        eager, else where it differs."""
        with quiet():
            ok, worst, why = self.compare(fn)
        if not ok:
            why = f"{done}, but it computes different numbers than {self.reference} {why}"
            return result(path, "fails", why, **details)
        done += f"; agrees with {self.reference} (largest difference {worst:.1g})"
        return result(path, "works", done, **details)

    def constant(self) -> bool:
        """Whether eager's outputs on new random values agree with those on the example within
        :data:`RTOL` (the tolerance of "agrees with eager"): the output (nearly) does not depend
        on the input, and "agrees with eager" then proves nothing."""
        cases = dict(self.cases())
        example = self.eager("example", self.arrays)
        if "new values" not in cases or not example:
            return False
        same, _, _ = agreement(self.eager("new values", cases["new values"]), example)
        return same

    def eager_check(self, framework: str, message: Callable[[BaseException], str]) -> dict:
        """The eager row: :meth:`works` when the model runs on the example, else a failure
        with the framework's ``message`` of the error."""
        try:
            outs = self.eager("example", self.arrays)
        except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
            return result(
                "eager",
                "fails",
                f"the model does not run on these inputs in {framework}: give inputs of the "
                "shape it takes (batch first), or fix the model",
                message(exc),
            )
        return self.works(outs)

    def usable(self, path: str) -> tuple[list[Variation], dict | None]:
        """The variations eager takes, or (none) the new-shape row that says none was tried."""
        tried = self.accepted()
        usable = [v for v, why in tried if not why]
        if usable:
            return usable, None
        why = "; ".join(f"{v.name}: {w}" for v, w in tried) or "the inputs have no batch dimension"
        return [], result(
            path, "works", f"eager takes no other input sizes, so none was tried ({why})"
        )

    def works(self, outs: Sequence[np.ndarray]) -> dict:
        """The eager check's answer when the model ran on the example (``outs``): the shapes of
        its outputs, which other input sizes eager takes (:meth:`accepted`), what the output
        holds that no path compares, and the notes every path shares."""
        if not outs:
            what = f" (a {self.output_type})" if getattr(self, "output_type", "") else ""
            return result(
                "eager",
                "caveats",
                f"runs, but its output{what} holds no tensor labkit can find, so no path can be "
                "compared with eager; return tensors, or a tuple, dict or dataclass of them",
                outputs=[],
                constant_output=False,
                call=self.call.text(self.arrays),
            )
        shapes = ", ".join("x".join(map(str, o.shape)) or "scalar" for o in outs)
        takes = [v.name for v, why in self.accepted() if not why]
        refuses = [f"{v.name} ({why})" for v, why in self.accepted() if why]
        reason = f"runs: {len(outs)} output(s) of shape {shapes}"
        if self.uncompared:
            reason += (
                f"; its output also holds {', '.join(self.uncompared)}: not an array, so no path "
                "compares it (use_cache=False in the example's keyword arguments leaves a cache "
                "out)"
            )
        if takes:
            reason += f"; also takes other {' and '.join(n + 's' for n in takes)}"
        if refuses:
            reason += f"; not another {', '.join(refuses)}"
        if self.layout.fixed:
            reason += "; not varied: " + "; ".join(
                f"{role} ({why})" for role, why in self.layout.fixed.items()
            )
        notes = [*self.layout.notes, *probe_notes(self.arrays, self.call)]
        constant = self.constant()
        if constant:
            warning = (
                "**the output (nearly) does not depend on the input**: eager's outputs on new "
                f"random values agree with those on the example within {RTOL:g}, the tolerance "
                "of 'agrees with eager', so every 'agrees with eager' below holds for any input "
                "and proves nothing (random weights that saturate, a constant head); check with "
                "trained weights or other inputs"
            )
            reason += "; " + warning
            notes.insert(0, warning)
        return result(
            "eager",
            "works",
            reason,
            notes=notes,
            outputs=[list(o.shape) for o in outs],
            constant_output=constant,
            call=self.call.text(self.arrays),
        )

    def _refused(self, v: Variation) -> str:
        """Why eager refuses a size in ``v`` ("" when it runs every one)."""
        for xs in v.inputs[1:]:
            try:
                self.eager(f"{v.name} {describe_arrays(xs)}", xs)
            except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
                return first_lines(exc, lines=1, limit=160)
        return ""

    def _time_last(self) -> Axes | None:
        """The layout with the sequence length of each (batch, x, y) float input on its last
        axis, as in (batch, features, time): a spectrogram's mel bins are not a length."""
        pairs = self.layout.roles.get("sequence length", [])
        moved = [(k, 2) if self.arrays[k].ndim == 3 and d == 1 else (k, d) for k, d in pairs]
        if moved == pairs:
            return None
        return Axes({**self.layout.roles, "sequence length": moved}, dict(self.layout.fixed),
                    self.layout.source, list(self.layout.notes))  # fmt: skip

    def accepted(self) -> list[tuple[Variation, str]]:
        """Each variation of the inputs, with "" when eager runs every size in it, else why
        not. A sequence length that eager refuses on axis 1 of a (batch, x, y) input is tried
        on its last axis (a spectrogram's (batch, mel bins, frames)) and kept there if eager
        takes it, with a note."""
        if self._accepted is None:
            self._accepted = []
            for v in variations(self.arrays, self.layout):
                why = self._refused(v)
                other = self._time_last() if why and v.name == "sequence length" else None
                if other is not None:
                    alt = next(x for x in variations(self.arrays, other) if x.name == v.name)
                    if not self._refused(alt):
                        other.notes.append(
                            f"the sequence length is read on the last axis of {', '.join(self.call.name(k) for k, _ in alt.dims)} "
                            f"(batch, features, time): eager refuses a new size on axis 1 ({why})"
                        )
                        self.layout, v, why = other, alt, ""
                self._accepted.append((v, why))
        return self._accepted
