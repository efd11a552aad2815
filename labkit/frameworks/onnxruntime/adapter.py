"""ONNX Runtime adapter: PyTorch's ResNet-50 export (canonical initializer names), run with every
graph optimisation on (``ORT_ENABLE_ALL``); inference only, int8 by static quantisation. The
export and the weighted copies are cached in this user's own temp folder.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from ... import resnet
from ...util import jsonio, tempdirs
from .. import framework_of, get, installed_version, spec
from .._kit import accuracy as acc
from .._kit.cells import batch_of, check_cell, check_threads, host_batch
from .._kit.checks import what_broke
from ..contract import Prepared, Unsupported
from . import SPEC

__all__ = [
    "build_resnet50",
    "model_file",
    "predict",
    "prepare",
    "prepare_model",
    "session_from_file",
    "set_threads",
    "threads",
    "version",
]


#: every session's options: every graph optimisation on, :func:`set_threads`' threads (0, until
#: it is called: ONNX Runtime's default, one thread per physical core)
_options = ort.SessionOptions()
_options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL


def version() -> str:
    return ort.__version__


def set_threads(n: int) -> None:
    """Use ``n`` intra-op threads and one inter-op thread in every session created from now on."""
    _options.intra_op_num_threads, _options.inter_op_num_threads = check_threads(n), 1


def threads() -> dict[str, int | None]:
    """As the next session gets them (None: ONNX Runtime's default)."""
    return {k: getattr(_options, f"{k}_op_num_threads") or None for k in ("intra", "inter")}


def session_from_file(path: Path, device: str = "cpu") -> ort.InferenceSession:
    """A session of the file with every graph optimisation on and :func:`set_threads`' threads."""
    if device == "gpu" and "CUDAExecutionProvider" not in ort.get_available_providers():
        raise Unsupported("this onnxruntime has no CUDAExecutionProvider: install onnxruntime-gpu")
    providers = ["CUDAExecutionProvider"] * (device == "gpu") + ["CPUExecutionProvider"]
    return ort.InferenceSession(str(path), _options, providers=providers)


def _cached(name: str, make: Callable[[], bytes]) -> Path:
    """The file ``name`` in this user's own cache folder (one others can write to is refused: a
    planted model would run), written whole from ``make()`` when missing (concurrent processes
    may build the same file), marked as just used; the cache keeps at most 1 GiB, least recently
    used out."""
    path = tempdirs.private_dir("labkit-onnx-cache") / name
    if not path.exists():
        jsonio.write_atomic(path, make())
    path.touch()
    tempdirs.bound(path.parent, 1 << 30, keep=path)
    return path


def _exporter_key() -> str:
    """What the exported graph depends on: the exporter's versions and the torch adapter's code."""
    code = (spec(SPEC.exported_from).folder / "adapter.py").read_bytes()
    versions = "-".join(f"{p}{installed_version(p)}" for p in ("torch", "onnxscript", "onnx"))
    return hashlib.sha256(versions.encode() + code).hexdigest()[:16]


def _export(num_classes: int, width: int) -> bytes:
    """The graph of seed-0 weights, exported by the torch adapter (imported only when needed)."""
    torch_adapter = get(SPEC.exported_from)
    with tempfile.TemporaryDirectory() as tmp:
        model = torch_adapter.build_resnet50(resnet.init_weights(0, num_classes, width))
        return torch_adapter.export(model, tmp).read_bytes()


def _digest(weights: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(weights):
        arr = np.ascontiguousarray(weights[name], dtype=np.float32)
        h.update(f"{name}{arr.shape}".encode() + arr.tobytes())
    return h.hexdigest()[:20]


def model_file(weights: dict[str, np.ndarray]) -> Path:
    """The exported ONNX file holding ``weights``: the graph exported once per class count and
    width, ``weights`` written into a copy of it by name."""
    shape, key = (resnet.validate_weights(weights), resnet.width_of(weights)), _exporter_key()
    template = _cached(f"resnet50-{key}-c{shape[0]}-w{shape[1]}.onnx", partial(_export, *shape))

    def weighted() -> bytes:
        model = onnx.load(str(template))
        for init in model.graph.initializer:
            if init.name in weights:
                arr = np.asarray(weights[init.name], dtype=np.float32)
                init.CopyFrom(numpy_helper.from_array(arr, init.name))
        return model.SerializeToString()

    return _cached(f"resnet50-{key}-w{_digest(weights)}.onnx", weighted)


#: static int8 quantisation's calibration: (batches, images per batch) of seeded synthetic images
CALIBRATION = (4, 8)


def _quantized(fp32: Path, image_size: int) -> bytes:
    """``fp32`` statically quantised (QDQ, per-channel int8 weights, uint8 activations calibrated
    on :data:`CALIBRATION`) after ORT's pre-processing, whose ``basic`` rewrite folds BatchNorm."""
    from onnxruntime import quantization as q

    batches, per = CALIBRATION
    data = iter(
        [{"images": resnet.random_batch(per, image_size, seed=100 + i)[0]} for i in range(batches)]
    )
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "basic.onnx", Path(tmp) / "int8.onnx"
        # symbolic shape inference fails on the dynamo export: ONNX's own inference only
        q.quant_pre_process(fp32, src, skip_symbolic_shape=True)
        q.quantize_static(
            src,
            out,
            SimpleNamespace(get_next=lambda: next(data, None)),  # a CalibrationDataReader
            quant_format=q.QuantFormat.QDQ,
            weight_type=q.QuantType.QInt8,
            activation_type=q.QuantType.QUInt8,
            per_channel=True,
        )
        return out.read_bytes()


def build_resnet50(weights: dict[str, np.ndarray]) -> ort.InferenceSession:
    """An ONNX Runtime session of the exported ResNet-50 holding ``weights``."""
    return session_from_file(model_file(weights))


def predict(session: ort.InferenceSession, images: np.ndarray) -> np.ndarray:
    """Logits for a host batch (NCHW float32)."""
    return session.run(None, {"images": resnet.check_images(images)})[0]


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
    check_cell(SPEC, mode, task, batch_size, precision, device)
    images, _ = host_batch(weights, batch_size, image_size)
    t0 = time.perf_counter()
    path = model_file(weights)
    export_s = time.perf_counter() - t0
    session = fp32 = session_from_file(path, device)
    notes = f"torch.onnx.export (dynamo) + ORT_ENABLE_ALL on {session.get_providers()[0]}"
    check = None
    if precision == "int8":
        batches, per = CALIBRATION
        name = f"{path.stem}-int8-s{image_size}-c{batches}x{per}.onnx"
        session = session_from_file(_cached(name, partial(_quantized, path, image_size)), device)
        notes += (
            "; onnxruntime.quantization.quantize_static (QDQ, per-channel int8 weights, uint8 "
            f"activations, MinMax calibration on {batches * per} synthetic images)"
        )
        ref, lowp = f"ONNX Runtime {version()} fp32 session", partial(predict, session)
        check = lambda: acc.cost(partial(predict, fp32), lowp, image_size, batch_size, ref)
    step = lambda: session.run(None, {"images": images})[0]
    return Prepared(step, int(batch_size), notes, export_s=export_s, accuracy=check)


def prepare_model(
    model: object,
    inputs: list[np.ndarray],
    mode: str,
    task: str,
    precision: str = "fp32",
    device: str = "cpu",
) -> Prepared:
    """One inference batch of a learner's PyTorch model, exported here with the default exporter
    (in the cell's prepare time), through an optimised session."""
    batch = batch_of(inputs)
    check_cell(SPEC, mode, task, batch, precision, device)
    if precision != "fp32":
        raise Unsupported(
            f"a learner's ONNX model runs in the types its export declares (the lab times fp32 "
            f"here, not {precision})"
        )
    exporter = spec(SPEC.exported_from)
    if framework_of(model) != exporter.name:
        raise Unsupported(
            f"ONNX Runtime runs {exporter.display} models exported to ONNX, not a "
            f"{type(model).__name__}"
        )
    with tempfile.TemporaryDirectory(prefix="labkit-ort-") as tmp:
        try:
            path = get(exporter.name).export_model(model, inputs, tmp)
        except Exception as exc:
            cause = exc.__cause__ or exc  # the exporter wraps what torch.export raised
            raise RuntimeError(
                f"torch.onnx.export could not export the model: {what_broke(cause)} "
                "(labkit.explore.check names the line)"
            ) from exc
        session = session_from_file(path, device)
    # the export declares the inputs' own types, in their order
    data = {i.name: np.ascontiguousarray(a) for i, a in zip(session.get_inputs(), inputs)}
    notes = f"torch.onnx.export (dynamo) + ORT_ENABLE_ALL on {session.get_providers()[0]}"
    return Prepared(lambda: session.run(None, data), batch, notes)
