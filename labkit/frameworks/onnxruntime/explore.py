"""ONNX Runtime's view of a learner's ONNX file (``labkit.explore``): the file checked and run
unoptimised (the reference), each optimisation level against it, other input sizes."""

from __future__ import annotations

import contextlib
import functools
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from .._kit import explore as ex
from .._kit.layout import Call, axes, probe_notes
from . import SPEC
from .adapter import feed
from .graphs import LEVELS, session_options

__all__ = ["ACCEPTS", "CHECKS", "Session", "accepts", "run_check", "versions"]

CHECKS: tuple[str, ...] = (
    "onnx",
    *(f"onnxruntime({lv})" for lv in LEVELS),
    "onnxruntime(new shapes)",
)
ACCEPTS = "an ONNX file (its path)"


def versions() -> dict[str, str]:
    return {SPEC.name: ort.__version__, "onnx": onnx.__version__}


def accepts(model: object) -> bool:
    return isinstance(model, str | Path) and str(model).lower().endswith(SPEC.model_files)


def _session(path: Path, level: str, saved: Path | None = None) -> ort.InferenceSession:
    """A CPU session on ``path`` at an optimisation level; it writes the graph it runs to
    ``saved``."""
    options = session_options(level)
    options.optimized_model_filepath = str(saved or "")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class Session(ex.EagerSession):
    """The file, its example inputs, the axes its declared dimensions leave open, and the
    unoptimised graph as "eager"."""

    reference = "the unoptimised graph"

    def __init__(self, path: Path, arrays: list[np.ndarray], call: Call | None = None):
        self.path, call = Path(path), call or Call()
        self.model = onnx.load(str(path))
        inits = {i.name for i in self.model.graph.initializer}
        #: (name, element type, dimensions: a size, a symbol's name or 0 where open) per input
        self.declared = [
            (i.name, i.type.tensor_type.elem_type, i.type.tensor_type.shape.dim)
            for i in self.model.graph.input
            if i.name not in inits
        ]
        self.declared = [
            (n, t, [d.dim_param or d.dim_value for d in ds]) for n, t, ds in self.declared
        ]
        dims = [[d if isinstance(d, int) and d else None for d in ds] for *_, ds in self.declared]
        layout = axes(
            arrays,
            dims if len(dims) == len(arrays) else None,
            call.channels,
            "the ONNX file's declared inputs",
            "the layout given (layout=, --layout)",
        )
        super().__init__(arrays, call, layout)
        self.refused, self.casts = [], []
        for (name, elem, _), a in zip(self.declared, self.arrays):
            with contextlib.suppress(Exception):  # a type numpy does not have: fed as it is
                want = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem))
                if want != a.dtype and (want.kind in "iub") != (a.dtype.kind in "iub"):
                    self.refused.append(
                        f"{name} is {want} in the file, but the example gives {a.dtype}"
                    )
                elif want != a.dtype:
                    self.casts.append(f"{name}: {a.dtype} cast to {want}, as the file declares")

    @functools.cached_property
    def eager_fn(self) -> ort.InferenceSession:
        return _session(self.path, "disabled")

    def run(self, fn, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(o) for o in fn.run(None, feed(fn, arrays))]

    def inputs_text(self) -> str:
        return ", ".join(f"{n} {'x'.join(map(str, ds)) or 'scalar'}" for n, _, ds in self.declared)


def _check_file(s: Session) -> dict:
    path = "onnx"
    try:
        onnx.checker.check_model(s.model)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        return ex.result(path, "fails", "not a valid ONNX file", ex.first_lines(exc, lines=2))
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in s.model.opset_import)
    nodes = len(s.model.graph.node)
    declares = f"it declares: {s.inputs_text()}"
    if s.refused:
        why = f"the example's types are not the file's ({'; '.join(s.refused)}): give inputs of "
        why += f"the types it declares ({declares}), e.g. --input 2x16:int64 for token ids"
        return ex.result(path, "fails", why, nodes=nodes)
    try:
        outs = s.eager("example", s.arrays)
    except Exception as exc:  # noqa: BLE001 - a framework error is the check's finding
        why = f"valid, but it does not run on these inputs ({declares})"
        return ex.result(path, "fails", why, ex.first_lines(exc, lines=2), nodes=nodes)
    shapes = ", ".join("x".join(map(str, o.shape)) or "scalar" for o in outs)
    said = [f"not varied: {r} ({why})" for r, why in s.layout.fixed.items()]
    head = f"a valid file (opset {opsets}; {nodes} nodes; inputs {s.inputs_text()}); runs "
    head += f"unoptimised: {len(outs)} output(s) of shape {shapes}"
    notes = [*s.layout.notes, *probe_notes(s.arrays)]
    return ex.result(path, "works", "; ".join([head, *s.casts, *said]), nodes=nodes, notes=notes)


def _level(s: Session, level: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="labkit-ort-") as tmp:
        session = _session(s.path, level, Path(tmp) / f"{level}.onnx")
        nodes = len(onnx.load(Path(tmp) / f"{level}.onnx").graph.node)
    done = f"{nodes} nodes after ONNX Runtime's {level!r} rewrites (the file has "
    done += f"{len(s.model.graph.node)})"
    done = f"runs the file as stored ({nodes} nodes)" if level == "disabled" else done
    return s.agreed(f"onnxruntime({level})", session, done, nodes=nodes)


def _new_shapes(s: Session) -> dict:
    path = "onnxruntime(new shapes)"
    fixed = [f"{role} ({why})" for role, why in s.layout.fixed.items()]
    fixed += [f"{v.name} ({why})" for v, why in s.accepted() if why]
    taken = [v.name for v, why in s.accepted() if not why]
    if not fixed:
        takes = f"takes other {' and '.join(n + 's' for n in taken)} (symbolic dimensions)"
        return ex.result(path, "works", takes if taken else "the inputs have no dimension to vary")
    why = f"the file fixes the {' and '.join(f.split(' (')[0] for f in fixed)}: it was exported "
    why += "with static shapes; export again with dynamic shapes (torch.onnx.export(..., "
    why += "dynamic_shapes=...)) to serve other sizes"
    return ex.result(path, "caveats", why, "; ".join(fixed))


def run_check(name: str, s: Session) -> dict:
    if name == "onnx":
        return _check_file(s)
    if name == "onnxruntime(new shapes)":
        return _new_shapes(s)
    return _level(s, name[len("onnxruntime(") : -1])
