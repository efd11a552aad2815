"""The Open Inference Protocol (KServe v2), as JSON over HTTP: what a request and a response hold,
and every way a request can be wrong.

The protocol that KServe, Triton, MLServer and TorchServe speak: ``GET /v2/health/live``,
``GET /v2/health/ready``, ``GET /v2/models/{name}`` (the model's metadata: its inputs and
outputs), ``GET /v2/models/{name}/ready`` and ``POST /v2/models/{name}/infer``, whose body
holds named tensors::

    {"id": "42", "inputs": [{"name": "images", "shape": [1, 3, 32, 32], "datatype": "FP32",
                             "data": [0.1, -0.3, ...]}]}

``data`` is row-major, flat or nested. The answer is ``{"model_name": ..., "outputs": [{"name":
"logits", "shape": [1, 1000], "datatype": "FP32", "data": [...]}]}``; an error is ``{"error":
"..."}`` with a 4xx or 5xx status. Triton's *binary tensor data* extension (which this server
also speaks, :data:`BINARY_EXTENSION`) sends the JSON first and the tensor's raw little-endian
bytes after it: the ``Inference-Header-Content-Length`` header says where the JSON ends, and the
input says ``"parameters": {"binary_data_size": N}`` instead of ``data``; JSON numbers cost far
more to write and parse than the model's arithmetic at larger images.

:func:`request_body` builds a request, :func:`parse_request` reads one (a :class:`BadRequest`
names what is wrong: a status and one sentence with the fix), :func:`response_body` and
:func:`parse_response` do the same for the answer. Not for: serving (:mod:`labkit.serve.app`)
or sending (:mod:`labkit.serve.loadgen`). Imports no framework and no web library.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from ..util import jsonio

__all__ = [
    "BINARY_EXTENSION",
    "DATATYPES",
    "HEADER_LENGTH",
    "BadRequest",
    "Request",
    "TensorSpec",
    "error_body",
    "parse_request",
    "parse_response",
    "request_body",
    "response_body",
]

#: the header that says how many bytes of a binary-extension body are JSON
HEADER_LENGTH = "Inference-Header-Content-Length"
#: the extension's name, as a server lists it in ``GET /v2`` (Triton's)
BINARY_EXTENSION = "binary_tensor_data"
#: the protocol's datatypes of the tensors this lab sends and answers, and their numpy types
DATATYPES: dict[str, np.dtype] = {
    "FP32": np.dtype("<f4"),
    "FP64": np.dtype("<f8"),
    "INT64": np.dtype("<i8"),
    "INT32": np.dtype("<i4"),
    "UINT8": np.dtype("u1"),
}
_EXAMPLE = (
    '{"inputs": [{"name": "images", "shape": [1, 3, 32, 32], "datatype": "FP32", "data": [...]}]}'
)


class BadRequest(ValueError):
    """A request the server refuses: ``status`` (400, 404, 413, ...) and the message, which names
    what is wrong and how to send it right."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class TensorSpec:
    """The one input a model takes: its name, datatype and shape (``-1``: any size; the first
    dimension is the batch, at most ``max_batch``)."""

    name: str
    datatype: str
    shape: tuple[int, ...]
    max_batch: int

    def describe(self) -> str:
        dims = ["N" if d < 0 else str(d) for d in self.shape]
        return f"{self.datatype} [{', '.join(dims)}] with N from 1 to {self.max_batch}"

    def metadata(self) -> dict:
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}


@dataclass(frozen=True)
class Request:
    """A request read and checked: the input tensor, the request's id, and whether it asked for
    binary outputs."""

    tensor: np.ndarray
    id: str | None
    binary_output: bool


# ---------------------------------------------------------------------------------------------
# building


def request_body(
    images: np.ndarray, name: str = "images", binary: bool = False, request_id: str | None = None
) -> tuple[bytes, dict[str, str]]:
    """The body and headers of an infer request carrying ``images`` (float32) as input ``name``:
    JSON numbers, or (``binary``) the binary tensor extension, which also asks for binary
    outputs."""
    x = np.ascontiguousarray(images, dtype=DATATYPES["FP32"])
    tensor = {"name": name, "shape": list(x.shape), "datatype": "FP32"}
    head: dict = {"inputs": [tensor]}
    if request_id is not None:
        head["id"] = request_id
    if not binary:
        tensor["data"] = x.ravel().tolist()
        return json.dumps(head).encode(), {"Content-Type": "application/json"}
    tensor["parameters"] = {"binary_data_size": x.nbytes}
    head["parameters"] = {"binary_data_output": True}
    text = json.dumps(head).encode()
    headers = {"Content-Type": "application/octet-stream", HEADER_LENGTH: str(len(text))}
    return text + x.tobytes(), headers


def response_body(
    model: str, version: str, name: str, output: np.ndarray, request: Request
) -> tuple[bytes, dict[str, str]]:
    """The body and headers of the answer to ``request``: ``output`` as tensor ``name``, in
    binary when the request asked for it."""
    y = np.ascontiguousarray(output, dtype=DATATYPES["FP32"])
    tensor: dict = {"name": name, "shape": list(y.shape), "datatype": "FP32"}
    head: dict = {"model_name": model, "model_version": version, "outputs": [tensor]}
    if request.id is not None:
        head["id"] = request.id
    if not request.binary_output:
        tensor["data"] = y.ravel().tolist()
        return json.dumps(head).encode(), {"Content-Type": "application/json"}
    tensor["parameters"] = {"binary_data_size": y.nbytes}
    text = json.dumps(head).encode()
    headers = {"Content-Type": "application/octet-stream", HEADER_LENGTH: str(len(text))}
    return text + y.tobytes(), headers


def error_body(message: str) -> dict:
    """The protocol's error object."""
    return {"error": message}


# ---------------------------------------------------------------------------------------------
# reading


def _split(body: bytes, header_length: str | None) -> tuple[dict, bytes]:
    """The JSON part of a body (an object) and the binary bytes after it."""
    if header_length is None:
        head, rest = body, b""
    else:
        try:
            n = int(header_length)
        except ValueError:
            n = -1
        if not 0 <= n <= len(body):
            raise BadRequest(
                400,
                f"{HEADER_LENGTH} is {header_length!r}, not a byte count within the body's "
                f"{len(body)} bytes: give the length of the JSON part",
            )
        head, rest = body[:n], body[n:]
    try:
        value = jsonio.loads(head.decode("utf-8"))
    except (UnicodeDecodeError, jsonio.JSONError) as exc:
        why = getattr(exc, "msg", None) or str(exc)
        raise BadRequest(
            400, f"the request body is not JSON ({why}); send {_EXAMPLE} (Open Inference Protocol)"
        ) from None
    if not isinstance(value, dict):
        raise BadRequest(400, f"the request body must be a JSON object, like {_EXAMPLE}")
    return value, rest


def _input(head: dict, spec: TensorSpec) -> dict:
    inputs = head.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise BadRequest(400, f"the request has no 'inputs' list; send {_EXAMPLE}")
    if len(inputs) != 1 or not isinstance(inputs[0], dict):
        raise BadRequest(400, f"this model takes one input, {spec.name!r}; got {len(inputs)}")
    tensor = inputs[0]
    if tensor.get("name") != spec.name:
        raise BadRequest(
            400, f"this model's input is named {spec.name!r}, not {tensor.get('name')!r}"
        )
    return tensor


def _shape(tensor: dict, spec: TensorSpec) -> tuple[int, ...]:
    shape = tensor.get("shape")
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise BadRequest(400, f"input {spec.name!r} needs a 'shape', a list of sizes >= 0")
    fits = len(shape) == len(spec.shape) and all(
        want < 0 or got == want for got, want in zip(shape, spec.shape)
    )
    if not fits or not 1 <= shape[0] <= spec.max_batch:
        raise BadRequest(
            400, f"input {spec.name!r} has shape {shape}; this model takes {spec.describe()}"
        )
    return tuple(shape)


def _values(tensor: dict, spec: TensorSpec, shape: tuple[int, ...], rest: bytes) -> np.ndarray:
    dtype, count = DATATYPES[spec.datatype], math.prod(shape)
    size = (tensor.get("parameters") or {}).get("binary_data_size")
    if size is not None:
        if size != count * dtype.itemsize or len(rest) != size:
            raise BadRequest(
                400,
                f"input {spec.name!r}: binary_data_size is {size!r} and {len(rest)} bytes follow "
                f"the JSON; shape {list(shape)} of {spec.datatype} needs {count * dtype.itemsize}",
            )
        return _finite(np.frombuffer(rest, dtype=dtype).reshape(shape).copy(), spec)
    if "data" not in tensor:
        raise BadRequest(400, f"input {spec.name!r} has neither 'data' nor binary_data_size")
    try:
        values = np.asarray(tensor["data"])
    except (TypeError, ValueError):  # ragged nesting
        values = np.asarray([None])
    if values.dtype.kind not in "iuf":
        raise BadRequest(
            400, f"input {spec.name!r}: 'data' must hold numbers only (row-major, flat or nested)"
        )
    if values.size != count:
        raise BadRequest(
            400,
            f"input {spec.name!r}: shape {list(shape)} holds {count} values, data has "
            f"{values.size}",
        )
    with np.errstate(over="ignore"):  # beyond float32: infinite, refused below
        values = values.reshape(shape).astype(dtype)
    return _finite(values, spec)


def _finite(values: np.ndarray, spec: TensorSpec) -> np.ndarray:
    if not np.isfinite(values).all():
        raise BadRequest(
            400, f"input {spec.name!r} holds NaN or infinite values (or numbers beyond float32)"
        )
    return values


def parse_request(body: bytes, header_length: str | None, spec: TensorSpec) -> Request:
    """The request in ``body`` checked against ``spec``; ``header_length`` is the value of
    :data:`HEADER_LENGTH` (None: all JSON). :class:`BadRequest` (status 400) names what is
    wrong: not JSON, no such input, a datatype or shape the model does not take, data that does
    not fill the shape."""
    head, rest = _split(body, header_length)
    tensor = _input(head, spec)
    if tensor.get("datatype") != spec.datatype:
        raise BadRequest(
            400,
            f"input {spec.name!r} has datatype {tensor.get('datatype')!r}; this model takes "
            f"{spec.datatype} (send the images as 32-bit floats)",
        )
    shape = _shape(tensor, spec)
    values = _values(tensor, spec, shape, rest)
    params = head.get("parameters") if isinstance(head.get("parameters"), dict) else {}
    outputs = head.get("outputs") if isinstance(head.get("outputs"), list) else []
    binary = bool(params.get("binary_data_output")) or any(
        isinstance(o, dict) and (o.get("parameters") or {}).get("binary_data") for o in outputs
    )
    request_id = head.get("id")
    return Request(values, None if request_id is None else str(request_id), binary)


def parse_response(body: bytes, header_length: str | None) -> np.ndarray:
    """The first output tensor of an answer (JSON or binary), as a numpy array."""
    head, rest = _split(body, header_length)
    (tensor, *_others) = head.get("outputs") or [None]
    if not isinstance(tensor, dict):
        raise ValueError(f"the answer holds no outputs: {str(head)[:200]}")
    dtype = DATATYPES.get(tensor.get("datatype"), DATATYPES["FP32"])
    shape = tuple(tensor.get("shape") or ())
    if "data" in tensor:
        return np.asarray(tensor["data"], dtype=dtype).reshape(shape)
    return np.frombuffer(rest, dtype=dtype).reshape(shape)
