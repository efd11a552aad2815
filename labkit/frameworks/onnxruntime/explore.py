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


class Session:
    """The file, its example inputs, and the unoptimised graph's outputs per input."""

    def __init__(self, path: Path, arrays: list[np.ndarray]):
        self.path = Path(path)
        self.arrays = arrays
        self._reference: dict[str, list[np.ndarray]] = {}
        self._plain: ort.InferenceSession | None = None

    def reference(self, key: str, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        if key not in self._reference:
            if self._plain is None:
                self._plain = session_for(self.path, "disabled")
            self._reference[key] = run(self._plain, arrays)
        return self._reference[key]

    def cases(self) -> list[tuple[str, list[np.ndarray]]]:
        return [("example", self.arrays), *ex.probes(self.arrays)]


def session(model: Path, arrays: list[np.ndarray]) -> Session:
    return Session(model, arrays)


def _inputs_text(path: Path) -> str:
    graph = onnx.load(str(path)).graph
    inits = {i.name for i in graph.initializer}
    out = []
    for i in graph.input:
        if i.name in inits:
            continue
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
    return ex.result(
        path,
        "works",
        f"a valid file (opset {opsets}; {nodes} nodes; inputs {_inputs_text(s.path)}); runs "
        f"unoptimised: {len(outs)} output(s) of shape {shapes}",
        nodes=nodes,
    )


def _level(s: Session, level: str) -> dict:
    path = f"onnxruntime({level})"
    with tempfile.TemporaryDirectory(prefix="labkit-ort-") as tmp:
        nodes = counts(optimize(s.path, level, Path(tmp) / f"{level}.onnx")).total
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
    fixed, taken = [], []
    for v in ex.variations(s.arrays):
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
