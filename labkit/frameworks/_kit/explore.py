"""The toolkit of the graph-readiness checks (``labkit/frameworks/<name>/explore.py``).

A framework's checks answer in plain data (:func:`result`: a :class:`PathResult` row, its
:class:`GraphBreak` and :class:`Recompile` findings), which :mod:`labkit.explore` joins into its
report. What several frameworks' checks share lives here, numpy only: the framework's message
condensed (:func:`first_lines`) or put in plain words (:func:`plain`), where the learner's code
is in a traceback (:func:`user_location`, :func:`user_code`), whether outputs agree with eager
(:func:`agreement`, within :data:`RTOL`), other inputs of the same shapes (:func:`probes`) and of
new shapes (:func:`variations`), the eager session a framework's checks share
(:class:`EagerSession`), a model pickled for the worker (:func:`write_pickle`), and seeded
example arrays (:func:`random_array`, :func:`describe_arrays`).

Not for: running the checks, isolating them in worker processes, or the report
(:mod:`labkit.explore`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ...util.numeric import difference

__all__ = [
    "RTOL",
    "STATUSES",
    "EagerSession",
    "GraphBreak",
    "PathResult",
    "Recompile",
    "Variation",
    "agreement",
    "agrees",
    "describe_arrays",
    "first_lines",
    "plain",
    "probes",
    "random_array",
    "result",
    "user_code",
    "user_location",
    "variations",
    "write_pickle",
]

STATUSES: tuple[str, ...] = ("works", "caveats", "fails", "crashed")
#: relative tolerance of "agrees with eager" (float32 graphs reorder sums; bigger gaps are bugs)
RTOL = 1e-3


def describe_arrays(arrays: Sequence[np.ndarray]) -> str:
    """``"8x16x32,8x16:int64"`` for host arrays (a scalar input reads as ``scalar``)."""
    return ",".join(
        ("x".join(map(str, a.shape)) or "scalar") + ("" if a.dtype == np.float32 else f":{a.dtype}")
        for a in arrays
    )


def random_array(shape: Sequence[int], dtype: str | np.dtype, seed: int) -> np.ndarray:
    """Seeded example values: standard normal floats, integers 0..9, random booleans."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(tuple(shape)).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, tuple(shape)).astype(bool)
    return rng.integers(0, 10, tuple(shape)).astype(dt)


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
    **details,
) -> dict:
    """One check's answer as plain data (what a worker sends back)."""
    return {
        "path": asdict(PathResult(path, status, reason, message, details)),
        "graph_breaks": [asdict(b) for b in graph_breaks],
        "recompiles": [asdict(r) for r in recompiles],
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


def _user_frame(text: str) -> re.Match | None:
    found = [
        m
        for m in _FILE_LINE.finditer(text)
        if "site-packages" not in m.group(1)
        and "dist-packages" not in m.group(1)
        and not m.group(1).startswith("<")
    ]
    return found[-1] if found else None


def user_location(text: str) -> str:
    """``file.py:12 in forward``: the last place in ``text`` (an error message or traceback)
    that is the learner's code rather than a library's; "" when there is none."""
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


def probes(arrays: Sequence[np.ndarray]) -> list[tuple[str, list[np.ndarray]]]:
    """Other inputs of the same shapes, to catch a graph that froze a data-dependent decision:
    new random values, and all zeros (padding, an empty sequence)."""
    new = [
        random_array(a.shape, a.dtype, 1000 + k)
        if a.dtype.kind != "i"
        else np.random.default_rng(1000 + k).integers(a.min(), a.max() + 1, a.shape).astype(a.dtype)
        for k, a in enumerate(arrays)
    ]
    return [("new values", new), ("zeros", [np.zeros_like(a) for a in arrays])]


@dataclass(frozen=True)
class Variation:
    """A series of inputs in which one kind of dimension changes at every call."""

    name: str  #: "batch size", "sequence length" or "image size"
    inputs: list[list[np.ndarray]]  #: the example first, then three new sizes

    @property
    def shapes(self) -> list[str]:
        return [describe_arrays(xs) for xs in self.inputs]


def _resized(arrays: Sequence[np.ndarray], dims: dict[int, dict[int, int]], seed: int):
    """``arrays`` with the sizes in ``dims`` (input -> {dim: size}), values drawn anew."""
    out = []
    for k, a in enumerate(arrays):
        shape = list(a.shape)
        for d, size in dims.get(k, {}).items():
            shape[d] = size
        if a.dtype.kind == "i":
            rng = np.random.default_rng(seed + k)
            out.append(rng.integers(a.min(), a.max() + 1, shape).astype(a.dtype))
        else:
            out.append(random_array(shape, a.dtype, seed + k))
    return out


def variations(arrays: Sequence[np.ndarray]) -> list[Variation]:
    """The series the new-shape checks call: the batch (the first dimension of every input)
    and, for a single input, its sequence length (rank 3: batch, time, features) or its image
    size (rank 4 and up: the dimensions after the channels)."""
    out = []
    if arrays and all(a.ndim >= 1 for a in arrays):
        b = arrays[0].shape[0]
        sizes = [b + 1, b + 2, b + 3]
        out.append(
            Variation(
                "batch size",
                [list(arrays)]
                + [
                    _resized(arrays, {k: {0: s} for k in range(len(arrays))}, 10 * s) for s in sizes
                ],
            )
        )
    if len(arrays) == 1 and arrays[0].ndim >= 3:
        a = arrays[0]
        if a.ndim == 3:
            name, dims = "sequence length", (1,)
        else:
            name, dims = "image size", tuple(range(2, a.ndim))
        step = max(1, a.shape[dims[0]] // 4)
        series = [
            _resized(arrays, {0: {d: a.shape[d] + i * step for d in dims}}, 100 + i)
            for i in (1, 2, 3)
        ]
        out.append(Variation(name, [list(arrays)] + series))
    return out


def write_pickle(obj: object, path: Path) -> None:
    """Write ``obj`` with cloudpickle (classes and functions defined in a notebook travel by
    value, those of importable modules by reference); ``ValueError`` when it cannot be pickled."""
    import cloudpickle

    try:
        data = cloudpickle.dumps(obj)
    except Exception as exc:
        raise ValueError(f"pickling it failed: {type(exc).__name__}: {exc}") from exc
    Path(path).write_bytes(data)


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


class EagerSession:
    """What an eager framework's checks share: the example inputs, eager outputs computed once
    per input, agreement with them, and which input sizes eager itself accepts. A framework's
    session gives ``run(fn, arrays)`` (NumPy in, NumPy out) and ``eager_fn`` (the model's
    eager callable)."""

    eager_fn: Callable

    def __init__(self, arrays: Sequence[np.ndarray]):
        self.arrays = [np.ascontiguousarray(a) for a in arrays]
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

    def works(self, outs: Sequence[np.ndarray]) -> dict:
        """The eager check's answer when the model ran on the example (``outs``): the shapes of
        its outputs, and which other input sizes eager takes (:meth:`accepted`)."""
        shapes = ", ".join("x".join(map(str, o.shape)) or "scalar" for o in outs)
        takes = [v.name for v, why in self.accepted() if not why]
        refuses = [f"{v.name} ({why})" for v, why in self.accepted() if why]
        reason = f"runs: {len(outs)} output(s) of shape {shapes}"
        if takes:
            reason += f"; also takes other {' and '.join(n + 's' for n in takes)}"
        if refuses:
            reason += f"; not another {', '.join(refuses)}"
        return result("eager", "works", reason, outputs=[list(o.shape) for o in outs])

    def accepted(self) -> list[tuple[Variation, str]]:
        """Each variation of the inputs, with "" when eager runs every size in it, else why not."""
        if self._accepted is None:
            self._accepted = []
            for v in variations(self.arrays):
                why = ""
                for xs in v.inputs[1:]:
                    try:
                        self.eager(f"{v.name} {describe_arrays(xs)}", xs)
                    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
                        why = first_lines(exc, lines=1, limit=160)
                        break
                self._accepted.append((v, why))
        return self._accepted
