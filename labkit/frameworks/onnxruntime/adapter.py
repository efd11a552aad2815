"""ONNX Runtime adapter: PyTorch's ResNet-50 export (canonical initializer names), run with every
graph optimisation on (``ORT_ENABLE_ALL``); inference only, int8 by static quantisation. The
export and the weighted copies are cached in this user's own temp folder.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from ... import resnet
from ...util import jsonio, tempdirs
from .. import framework_of, get, installed_version, spec
from .._kit import accuracy as acc
from .._kit.cells import batch_of, check_cell, check_threads, host_batch
from ..contract import Prepared, Unsupported
from . import SPEC, graphs

__all__ = [
    "build_resnet50",
    "feed",
    "model_file",
    "predict",
    "prepare",
    "prepare_model",
    "session_from_file",
    "set_threads",
    "threads",
    "version",
]

WHY_NOT = {
    "train": "ONNX Runtime here is an inference engine; training needs onnxruntime-training",
    "bf16": "ONNX's Conv operator has no bfloat16 type: this model runs in fp32 or int8",
}

_threads: int | None = None  # None: ONNX Runtime's default (one thread per physical core)


def version() -> str:
    return ort.__version__


def set_threads(n: int) -> None:
    """Use ``n`` intra-op threads and one inter-op thread in every session created from now on."""
    global _threads
    _threads = check_threads(n)


def threads() -> dict[str, int | None]:
    """As the next session gets them (None: ONNX Runtime's default)."""
    return {"intra": _threads, "inter": None if _threads is None else 1}


def _options() -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if _threads is not None:
        options.intra_op_num_threads = _threads
        options.inter_op_num_threads = 1
    return options


def _providers(device: str) -> list[str]:
    if device == "gpu" and "CUDAExecutionProvider" not in ort.get_available_providers():
        raise Unsupported("this onnxruntime has no CUDAExecutionProvider: install onnxruntime-gpu")
    return ["CUDAExecutionProvider"] * (device == "gpu") + ["CPUExecutionProvider"]


def session_from_file(path: Path, device: str = "cpu") -> ort.InferenceSession:
    return ort.InferenceSession(str(path), _options(), providers=_providers(device))


def _cached(path: Path) -> Path:
    """``path``, marked as just used; the cache keeps at most 1 GiB, least recently used out."""
    path.touch()
    tempdirs.bound(path.parent, 1 << 30, keep=path)
    return path


def _cache_dir() -> Path:
    """This user's own folder (one others can write to is refused: a planted model would run)."""
    return tempdirs.private_dir("labkit-onnx-cache")


def _exporter_key() -> str:
    """What the exported graph depends on: the exporter's versions and the torch adapter's code."""
    code = (spec(SPEC.exported_from).folder / "adapter.py").read_bytes()
    versions = "-".join(f"{p}{installed_version(p)}" for p in ("torch", "onnxscript", "onnx"))
    return hashlib.sha256(versions.encode() + code).hexdigest()[:16]


def _template(num_classes: int, width: int) -> Path:
    """The graph exported once per class count and width (seed-0 weights)."""
    path = _cache_dir() / f"resnet50-{_exporter_key()}-c{num_classes}-w{width}.onnx"
    if not path.exists():
        torch_adapter = get(SPEC.exported_from)  # the exporter; imported only when needed

        with tempfile.TemporaryDirectory() as tmp:
            model = torch_adapter.build_resnet50(resnet.init_weights(0, num_classes, width))
            exported = torch_adapter.export(model, tmp)
            # concurrent processes may build the same file: each replaces it whole
            jsonio.write_atomic(path, exported.read_bytes())
    return _cached(path)


def _digest(weights: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(weights):
        arr = np.ascontiguousarray(weights[name], dtype=np.float32)
        h.update(f"{name}{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:20]


def model_file(weights: dict[str, np.ndarray]) -> Path:
    """The exported ONNX file holding ``weights``, written into a copy of the template by name."""
    num_classes = resnet.validate_weights(weights)
    template = _template(num_classes, resnet.width_of(weights))
    path = _cache_dir() / f"resnet50-{_exporter_key()}-w{_digest(weights)}.onnx"
    if not path.exists():
        model = onnx.load(str(template))
        for init in model.graph.initializer:
            if init.name in weights:
                arr = np.asarray(weights[init.name], dtype=np.float32)
                init.CopyFrom(numpy_helper.from_array(arr, init.name))
        # concurrent processes may build the same file: each replaces it whole
        jsonio.write_atomic(path, model.SerializeToString())
    return _cached(path)


#: static int8 quantisation's calibration: (batches, images per batch) of seeded synthetic images
CALIBRATION = (4, 8)


def _int8_file(fp32: Path, image_size: int) -> Path:
    """``fp32`` statically quantised (QDQ, per-channel int8 weights, uint8 activations calibrated
    on :data:`CALIBRATION`) after ORT's ``basic`` rewrite folds BatchNorm; once per size."""
    from onnxruntime import quantization as q

    batches, per = CALIBRATION
    path = _cache_dir() / f"{fp32.stem}-int8-s{image_size}-c{batches}x{per}.onnx"
    if path.exists():
        return _cached(path)
    data = [
        {"images": resnet.random_batch(per, image_size, seed=100 + i)[0]} for i in range(batches)
    ]

    class Reader(q.CalibrationDataReader):
        def get_next(self) -> dict | None:
            return data.pop() if data else None

    root = logging.getLogger()  # the tool asks to pre-process, on the root logger, regardless
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            src = graphs.optimize(fp32, "basic", Path(tmp) / "basic.onnx")
            q.quantize_static(
                str(src),
                str(Path(tmp) / "int8.onnx"),
                Reader(),
                quant_format=q.QuantFormat.QDQ,
                weight_type=q.QuantType.QInt8,
                activation_type=q.QuantType.QUInt8,
                per_channel=True,
            )
            jsonio.write_atomic(path, (Path(tmp) / "int8.onnx").read_bytes())  # whole, always
    finally:
        root.setLevel(level)
    return _cached(path)


def build_resnet50(weights: dict[str, np.ndarray], device: str = "cpu") -> ort.InferenceSession:
    """An ONNX Runtime session of the exported ResNet-50 holding ``weights``."""
    return session_from_file(model_file(weights), device)


def predict(session: ort.InferenceSession, images: np.ndarray) -> np.ndarray:
    """Logits for a host batch (NCHW float32)."""
    name = session.get_inputs()[0].name
    return session.run(None, {name: resnet.check_images(images)})[0]


def prepare(
    weights: dict[str, np.ndarray],
    mode: str,
    task: str,
    batch_size: int,
    precision: str = "fp32",
    image_size: int = 224,
    device: str = "cpu",
) -> Prepared:
    """One inference batch through the optimised session; the export (or finding it in the cache)
    is timed apart as ``export_s``; ``int8`` carries its accuracy cost against fp32."""
    check_cell(SPEC, mode, task, batch_size, precision, device, WHY_NOT)
    images, _ = host_batch(weights, batch_size, image_size)
    t0 = time.perf_counter()
    path = model_file(weights)
    export_s = time.perf_counter() - t0
    session = session_from_file(
        _int8_file(path, image_size) if precision == "int8" else path, device
    )
    name = session.get_inputs()[0].name
    notes = f"torch.onnx.export (dynamo) + ORT_ENABLE_ALL on {session.get_providers()[0]}"
    check = None
    if precision == "int8":
        batches, per = CALIBRATION
        notes += (
            "; onnxruntime.quantization.quantize_static (QDQ, per-channel int8 weights, uint8 "
            f"activations, MinMax calibration on {batches * per} synthetic images)"
        )
        fp32 = session_from_file(path, device)
        ref = f"ONNX Runtime {ort.__version__} fp32 session"
        check = lambda: acc.cost(  # called once, after the timing
            lambda x: predict(fp32, x), lambda x: predict(session, x), image_size, batch_size, ref
        )

    def step() -> np.ndarray:
        return session.run(None, {name: images})[0]

    return Prepared(step, int(batch_size), notes, export_s=export_s, accuracy=check)


#: ONNX tensor element types -> numpy dtypes, for casting a learner's inputs
_NUMPY = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(bool)": np.bool_,
}


def feed(session: ort.InferenceSession, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Inputs by name, in the file's order, cast to the types the file declares."""
    declared = session.get_inputs()
    if len(arrays) != len(declared):
        wanted = ", ".join(f"{i.name} {i.shape} {i.type}" for i in declared)
        raise ValueError(f"the file takes {len(declared)} input(s) ({wanted}), got {len(arrays)}")
    return {
        i.name: np.ascontiguousarray(a, dtype=_NUMPY.get(i.type, np.asarray(a).dtype))
        for i, a in zip(declared, arrays)
    }


def prepare_model(
    model: object,
    inputs: list[np.ndarray],
    mode: str,
    task: str,
    precision: str = "fp32",
    device: str = "cpu",
) -> Prepared:
    """One inference batch of a learner's model (an ONNX file, or a PyTorch model exported here
    with the default exporter, in the cell's prepare time) through an optimised session."""
    batch = batch_of(inputs)
    check_cell(SPEC, mode, task, batch, precision, device, WHY_NOT)
    if precision != "fp32":
        raise Unsupported(
            f"a learner's ONNX model runs in the types its file declares (the lab times fp32 "
            f"here, not {precision})"
        )
    providers = _providers(device)
    with tempfile.TemporaryDirectory(prefix="labkit-ort-") as tmp:
        if isinstance(model, str | os.PathLike):
            path, how = Path(model), "the ONNX file as given"
        else:
            if framework_of(model) != SPEC.exported_from:
                raise Unsupported(
                    f"ONNX Runtime runs ONNX files and {spec(SPEC.exported_from).display} "
                    f"models exported to ONNX, not a {type(model).__name__}"
                )
            try:
                path = get(SPEC.exported_from).export_model(model, inputs, tmp)
            except Exception as exc:
                cause = exc.__cause__ or exc  # the exporter wraps what torch.export raised
                first = next((ln for ln in str(cause).splitlines() if ln.strip()), "")
                raise RuntimeError(
                    f"torch.onnx.export could not export the model: {type(cause).__name__}: "
                    f"{first.strip()} (labkit.explore.check names the line)"
                ) from exc
            how = f"{spec(SPEC.exported_from).display} model exported by torch.onnx.export (dynamo)"
        session = ort.InferenceSession(str(path), sess_options=_options(), providers=providers)
    data = feed(session, inputs)
    notes = f"{how} + ORT_ENABLE_ALL on {session.get_providers()[0]}"

    def step() -> list:
        return session.run(None, data)

    return Prepared(step, batch, notes)
