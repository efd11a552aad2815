"""ONNX Runtime's view of a learner's ONNX file (the checks behind ``labkit.explore``).

- ``onnx``: the file loads and passes ``onnx.checker``; its opset, node count and declared
  inputs; it runs on the example inputs with every graph optimisation off (the reference the
  other rows are compared with, since an ONNX file has no eager mode);
- ``onnxruntime(<level>)``: the graph ONNX Runtime runs at each optimisation level (``disabled``
  ... ``all``, see :mod:`.graphs`), its node count, and whether it agrees with the unoptimised
  graph on the example and on two other inputs of the same shapes;
- ``onnxruntime(new shapes)``: whether the file takes other batch sizes (a symbolic first
  dimension) or was exported with every shape fixed.

Also here, for PyTorch's ``onnx`` check and the benchmark: :func:`node_count`,
:func:`session_for` and :func:`run` (several named inputs, cast to the types the file declares).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from .._kit import explore as ex
from . import SPEC
from .adapter import feed
from .graphs import LEVELS, counts, optimize, session_options

__all__ = [
    "ACCEPTS",
    "CHECKS",
    "NAME",
    "Session",
    "accepts",
    "bind",
    "describe",
    "node_count",
    "pack",
    "run",
    "run_check",
    "session",
    "session_for",
    "unpack",
    "versions",
]

NAME = SPEC.name
CHECKS: tuple[str, ...] = (
    "onnx",
    *(f"onnxruntime({lv})" for lv in LEVELS),
    "onnxruntime(new shapes)",
)
ACCEPTS = "an ONNX file (its path) or an onnx.ModelProto"


def versions() -> dict[str, str]:
    return {NAME: ort.__version__, "onnx": onnx.__version__}


def accepts(model: object) -> bool:
    if isinstance(model, onnx.ModelProto):
        return True
    return isinstance(model, str | Path) and str(model).lower().endswith(SPEC.model_files)


def describe(model: object) -> str:
    if isinstance(model, onnx.ModelProto):
        return model.graph.name or "ONNX model"
    return Path(model).name


def pack(model: object, path: Path) -> None:
    if isinstance(model, onnx.ModelProto):
        onnx.save(model, str(path))
    else:
        Path(path).write_bytes(Path(model).read_bytes())


def unpack(path: Path) -> Path:
    return Path(path)


# --------------------------------------------------------------------------------------------
# running a file


def node_count(path: str | Path) -> int:
    return len(onnx.load(str(path)).graph.node)


def session_for(path: str | Path, level: str = "all") -> ort.InferenceSession:
    """A CPU session on ``path`` at an optimisation level (threads do not spin when idle)."""
    return ort.InferenceSession(
        str(path), session_options(level), providers=["CPUExecutionProvider"]
    )


def run(session: ort.InferenceSession, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(o) for o in session.run(None, feed(session, arrays))]


# --------------------------------------------------------------------------------------------
# the checks


def _graph_inputs(path: Path) -> list:
    """The file's declared inputs, initializers (weights stored as inputs) aside."""
    graph = onnx.load(str(path)).graph
    inits = {i.name for i in graph.initializer}
    return [i for i in graph.input if i.name not in inits]


def _declared(path: Path) -> list[tuple[str, np.dtype | None, tuple[int | None, ...]]]:
    """The file's inputs: name, numpy type, dimensions (None: symbolic)."""
    out = []
    for i in _graph_inputs(path):
        t = i.type.tensor_type
        dtype = None
        with contextlib.suppress(Exception):
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type))
        dims = tuple(None if d.dim_param or not d.dim_value else d.dim_value for d in t.shape.dim)
        out.append((i.name, dtype, dims))
    return out


def _kinds(declared, arrays: Sequence[np.ndarray]) -> tuple[list[str], list[str]]:
    """Inputs whose type the file refuses (another kind: a float for an int64), and the casts
    it takes (float64 to float32)."""
    refused, casts = [], []
    for (name, want, _), a in zip(declared, arrays):
        if want is None or want == a.dtype:
            continue
        if (want.kind in "iu") != (a.dtype.kind in "iu") or (want.kind == "b") != (
            a.dtype.kind == "b"
        ):
            refused.append(f"{name} is {want} in the file, but the example gives {a.dtype}")
        else:
            casts.append(f"{name}: {a.dtype} cast to {want}, as the file declares")
    return refused, casts


class Session:
    """The file, its example inputs (in the file's order: keyword ones by name), the axes its
    declared dimensions leave open, and the unoptimised graph's outputs per input."""

    def __init__(self, path: Path, arrays: list[np.ndarray], call: ex.Call | None = None):
        self.path = Path(path)
        call = call or ex.Call()
        self.declared = _declared(self.path)
        self.arrays = self._ordered(list(arrays), call)
        self.refused, self.casts = _kinds(self.declared, self.arrays)
        dims = [d for _, _, d in self.declared] if len(self.declared) == len(arrays) else None
        self.layout = ex.axes(
            self.arrays,
            dims,
            call.channels,
            "the ONNX file's declared inputs",
            "the layout given (layout=, --layout)",
        )
        self._reference: dict[str, list[np.ndarray]] = {}
        self._plain: ort.InferenceSession | None = None

    def _ordered(self, arrays: list[np.ndarray], call: ex.Call) -> list[np.ndarray]:
        """``arrays`` in the file's input order: keyword ones by name, positional ones in the
        places left; ``ValueError`` for a name the file does not have."""
        if not any(call.names):
            return arrays
        args, named = call.split(arrays)
        names = [n for n, _, _ in self.declared]
        unknown = sorted(set(named) - set(names))
        if unknown:
            raise ValueError(
                f"the file has no input {', '.join(map(repr, unknown))}: its inputs are "
                f"{', '.join(names)}"
            )
        rest = iter(args)
        ordered = [named[n] if n in named else next(rest, None) for n in names]
        return [a for a in ordered if a is not None]

    def reference(self, key: str, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        if key not in self._reference:
            if self._plain is None:
                self._plain = session_for(self.path, "disabled")
            self._reference[key] = run(self._plain, arrays)
        return self._reference[key]

    def cases(self) -> list[tuple[str, list[np.ndarray]]]:
        return [("example", self.arrays), *ex.probes(self.arrays)]


def session(model: Path, arrays: list[np.ndarray], call: ex.Call | None = None) -> Session:
    return Session(model, arrays, call)


def bind(model: object, call: ex.Call) -> object:
    """The file itself: ONNX Runtime takes its inputs in the file's order (keyword ones are
    placed by name in :class:`Session`); constants have no meaning for a file."""
    return model


def _inputs_text(path: Path) -> str:
    out = []
    for i in _graph_inputs(path):
        dims = [d.dim_param or str(d.dim_value) for d in i.type.tensor_type.shape.dim]
        out.append(f"{i.name} {'x'.join(dims) or 'scalar'}")
    return ", ".join(out)


def _check_file(s: Session) -> dict:
    path = "onnx"
    try:
        model = onnx.load(str(s.path))
        onnx.checker.check_model(model)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        return ex.result(path, "fails", "not a valid ONNX file", ex.first_lines(exc, lines=2))
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
    nodes = len(model.graph.node)
    if s.refused:
        return ex.result(
            path,
            "fails",
            f"the example's types are not the file's ({'; '.join(s.refused)}): give inputs of "
            f"the types it declares (it declares: {_inputs_text(s.path)}), e.g. --input "
            "2x16:int64 for token ids",
            nodes=nodes,
        )
    try:
        outs = s.reference("example", s.arrays)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        return ex.result(
            path,
            "fails",
            f"valid, but it does not run on these inputs (it declares: {_inputs_text(s.path)})",
            ex.first_lines(exc, lines=2),
            nodes=nodes,
        )
    shapes = ", ".join("x".join(map(str, o.shape)) or "scalar" for o in outs)
    cast = f"; {'; '.join(s.casts)}" if s.casts else ""
    fixed = "; ".join(f"not varied: {r} ({why})" for r, why in s.layout.fixed.items())
    return ex.result(
        path,
        "works",
        f"a valid file (opset {opsets}; {nodes} nodes; inputs {_inputs_text(s.path)}); runs "
        f"unoptimised: {len(outs)} output(s) of shape {shapes}{cast}"
        + (f"; {fixed}" if fixed else ""),
        nodes=nodes,
        notes=[*s.layout.notes, *ex.probe_notes(s.arrays)],
    )


def _level(s: Session, level: str) -> dict:
    path = f"onnxruntime({level})"
    with tempfile.TemporaryDirectory(prefix="labkit-ort-") as tmp:
        nodes = counts(optimize(s.path, level, Path(tmp) / f"{level}.onnx")).total()
    sess = session_for(s.path, level)
    worst = 0.0
    for label, arrays in s.cases():
        ok, diff, why = ex.agreement(run(sess, arrays), s.reference(label, arrays))
        worst = max(worst, diff)
        if not ok:
            return ex.result(
                path,
                "fails",
                f"the graph optimised at level {level} computes different numbers than the "
                f"unoptimised one on the {label} input: {why}",
                nodes=nodes,
            )
    return ex.result(
        path,
        "works",
        (
            f"runs the file as stored ({nodes} nodes)"
            if level == "disabled"
            else f"{nodes} nodes after ONNX Runtime's {level!r} rewrites (the file has "
            f"{node_count(s.path)})"
        )
        + f"; agrees with the unoptimised graph (largest difference {worst:.1g})",
        nodes=nodes,
    )


def _new_shapes(s: Session) -> dict:
    path = "onnxruntime(new shapes)"
    sess = session_for(s.path, "all")
    fixed = [f"{role} ({why})" for role, why in s.layout.fixed.items()]
    taken = []
    for v in ex.variations(s.arrays, s.layout):
        try:
            for xs in v.inputs[1:]:
                run(sess, xs)
            taken.append(v.name)
        except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
            fixed.append(f"{v.name} ({ex.first_lines(exc, lines=1, limit=160)})")
    if not fixed:
        return ex.result(
            path,
            "works",
            f"takes other {' and '.join(n + 's' for n in taken)} (symbolic dimensions)"
            if taken
            else "the inputs have no dimension to vary",
        )
    return ex.result(
        path,
        "caveats",
        f"the file fixes the {' and '.join(f.split(' (')[0] for f in fixed)}: it was exported "
        "with static shapes; export again with dynamic shapes (torch.onnx.export(..., "
        "dynamic_shapes=...)) to serve other sizes",
        "; ".join(fixed),
    )


def run_check(name: str, s: Session) -> dict:
    if name == "onnx":
        return _check_file(s)
    if name == "onnxruntime(new shapes)":
        return _new_shapes(s)
    return _level(s, name[len("onnxruntime(") : -1])
