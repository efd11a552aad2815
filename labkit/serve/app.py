"""The inference server: FastAPI routes of the Open Inference Protocol on uvicorn, on 127.0.0.1.

``python -m labkit serve --framework F --mode M`` runs :func:`serve`: the process listens at
once (``/v2/health/live`` answers), loads and warms up the model on its model thread, and then
says it is ready (``/v2/health/ready`` and ``/v2/models/resnet50/ready`` answer 200; before
that 400, and an infer request 503). Requests go through the batcher
(:mod:`labkit.serve.batching`); the model's metadata (``GET /v2/models/resnet50``) carries, in
its ``parameters``, everything a load step records about the server (framework, mode, batching,
threads, CPUs, versions, what loading and warming up cost), and ``GET
/v2/models/resnet50/stats`` (the protocol's statistics extension, shaped as Triton's) its
counts.

Every refusal is a status and ``{"error": "..."}`` naming the problem: 400 for a request the
model cannot take (:mod:`labkit.serve.protocol`), 404 for another model or path, 413 for a body
over :func:`body_limit`, 503 with ``Retry-After`` when it is overloaded or not ready yet; the
server keeps serving. It listens on 127.0.0.1 only, ends on SIGINT or SIGTERM (status 130 for
Ctrl-C) and, given ``parent``, when that process is gone (its process group with it).

Not for: the load generator (:mod:`labkit.serve.loadgen`) or starting servers from a notebook
(:mod:`labkit.serve.process`). It imports FastAPI (``labkit.serve`` itself does not).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import os
import sys
import time
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from .. import bench, frameworks, profiles
from ..util import net, proc
from . import model as models
from .batching import Batcher, ModelThread, Overloaded, Stats, warm_shapes
from .protocol import (
    BINARY_EXTENSION,
    HEADER_LENGTH,
    BadRequest,
    error_body,
    parse_request,
    response_body,
)

__all__ = ["HOST", "ServerConfig", "body_limit", "build_app", "serve"]

#: the only address a lab server listens on
HOST = net.LOOPBACK
#: bytes one JSON number may take at most ("-1.2345678901234567e-05, "), for the body limit
_JSON_NUMBER = 26


@dataclass
class ServerConfig:
    """How a server runs: what it serves, on which port, and how it batches."""

    framework: str
    mode: str
    port: int
    max_batch: int = 1  #: 1: batching off
    max_wait_ms: float = 0.0
    max_queue: int = 32  #: images that may wait; past them a request is refused (503)
    pad: bool | None = None  #: None: pad when the mode builds a graph per batch size
    threads: int | None = None  #: None: the physical cores this process may use
    max_request: int = 8  #: images one request may carry
    image_size: int | None = None  #: None: the profile's
    width: int | None = None  #: None: the profile's resnet_width

    def check(self) -> ServerConfig:
        models.check_mode(self.framework, self.mode)
        for name in ("max_batch", "max_queue", "max_request"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}"
                )
        if self.max_wait_ms < 0:
            raise ValueError(f"--max-wait-ms must be >= 0, got {self.max_wait_ms:g}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"--threads must be >= 1, got {self.threads}")
        net.check_port(self.port, HOST, reuse=True)  # as uvicorn binds it
        return self


def body_limit(image_size: int, max_request: int) -> int:
    """The largest request body the server reads: ``max_request`` images as JSON numbers, and
    64 KiB for the rest."""
    return max_request * 3 * image_size * image_size * _JSON_NUMBER + 65536


class _State:
    """What the routes share: the configuration, the model once it is ready, the batcher."""

    def __init__(self, config: ServerConfig, threads: int):
        self.config, self.threads = config, threads
        profile = profiles.current()
        self.image_size = config.image_size or profile.image_size
        self.width = config.width or profile.resnet_width
        largest = min(config.max_request, config.max_queue)  # a larger one could never queue
        self.spec = models.tensor_spec(self.image_size, largest)
        self.limit = body_limit(self.image_size, largest)
        self.model: models.Loaded | None = None
        self.batcher: Batcher | None = None
        self.thread = ModelThread()
        self.error: str | None = None
        self.started = time.perf_counter()
        self.tasks: list[asyncio.Task] = []
        self.on_failure = lambda: None

    def pad(self) -> bool:
        c = self.config
        if c.pad is not None:
            return c.pad
        return bool(self.model and self.model.fixed_shapes and c.max_batch > 1)

    def load(self) -> models.Loaded:
        frameworks.get(self.config.framework).set_threads(self.threads)
        loaded = models.load(self.config.framework, self.config.mode, self.image_size, self.width)
        self.model = loaded  # pad() needs it: a graph per batch size means padding
        return models.warm_up(loaded, warm_shapes(self.config.max_batch, self.pad()))

    async def start(self) -> None:
        """Load and warm up on the model thread, then run the batch loop; a failure ends the
        server (``on_failure``)."""
        c = self.config
        try:
            loaded = await self.thread.run(self.load)
        except Exception as exc:  # noqa: BLE001 - said, and the server ends
            self.error = f"{c.framework}/{c.mode} could not be loaded: {type(exc).__name__}: {exc}"
            print(f"error: {self.error}", file=sys.stderr, flush=True)
            self.on_failure()
            return
        self.batcher = Batcher(
            loaded.predict,
            self.thread,
            c.max_batch,
            c.max_wait_ms / 1e3,
            c.max_queue,
            self.pad(),
            loaded.warmed,
        )
        print(
            f"ready in {time.perf_counter() - self.started:.1f} s (build {loaded.prepare_s:.1f} s, "
            f"first call {loaded.first_call_s:.2f} s, warm-up of batch sizes "
            f"{sorted(loaded.warmed)} {loaded.warmup_s:.1f} s): POST "
            f"http://{HOST}:{c.port}/v2/models/{models.MODEL_NAME}/infer",
            file=sys.stderr,
            flush=True,
        )
        await self.batcher.run()

    def parameters(self) -> dict:
        """Everything a load step records about this server (the metadata's ``parameters``)."""
        c, m = self.config, self.model
        ready = self.batcher is not None
        return {
            "framework": c.framework,
            "mode": c.mode,
            "profile": profiles.current().name,
            "image_size": self.image_size,
            "width": self.width,
            "network": models.network_name(self.width),
            "max_batch": c.max_batch,
            "max_wait_ms": c.max_wait_ms if c.max_batch > 1 else None,
            "max_queue": c.max_queue,
            "padding": "pow2" if ready and self.pad() else "none",
            "threads": frameworks.get(c.framework).threads() if ready else None,
            "thread_env": {k: os.environ[k] for k in _THREAD_VARS if k in os.environ},
            "cpus": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "versions": _versions(c.framework) if ready else {},
            "notes": m.notes if m else "",
            "fixed_shapes": m.fixed_shapes if m else None,
            "export_s": m.export_s if m else None,
            "prepare_s": m.prepare_s if m else None,
            "first_call_s": m.first_call_s if ready else None,
            "warmup_s": m.warmup_s if ready else None,
            "warmup_calls": m.warmup_calls if ready else None,
            "warmed": sorted(m.warmed) if ready else [],
            "pid": os.getpid(),
        }


_THREAD_VARS = (*proc.THREAD_ENV, "TF_NUM_INTEROP_THREADS", "TORCHINDUCTOR_COMPILE_THREADS")


def _versions(framework: str) -> dict:
    out = {framework: frameworks.get(framework).version()}
    for dist in ("fastapi", "uvicorn", "starlette"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out[dist] = importlib.metadata.version(dist)
    return out


async def _read_body(request, limit: int) -> bytes:
    """The request's body, refused with 413 as soon as it passes ``limit`` bytes."""
    declared = request.headers.get("content-length")
    too_big = (
        f"the request body is over {limit} bytes ({limit / 2**20:.1f} MiB), the most this server "
        "reads: its largest request as JSON numbers; send fewer images per request"
    )
    if declared and declared.isdigit() and int(declared) > limit:
        raise BadRequest(413, too_big)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BadRequest(413, too_big)
        chunks.append(chunk)
    return b"".join(chunks)


def _stats(state: _State) -> dict:
    """The statistics extension's answer (Triton's shape), the server's own counts and CPU
    seconds under ``labkit``."""
    s = state.batcher.stats if state.batcher else Stats()
    own = os.times()
    mine = {
        **s.as_dict(),
        "cpu_s": own.user + own.system + own.children_user + own.children_system,
        "peak_rss_mb": bench.peak_rss_mb(),
        "new_shape_running_s": state.batcher.new_shape_running_s() if state.batcher else 0.0,
        "uptime_s": time.perf_counter() - state.started,
    }
    return {
        "model_stats": [
            {
                "name": models.MODEL_NAME,
                "version": "1",
                "inference_count": s.images,
                "execution_count": s.batches,
                "inference_stats": {
                    "success": {"count": s.requests},
                    "fail": {"count": s.failed},
                    "queue": {"count": s.requests, "ns": int(s.queue_s * 1e9)},
                    "compute_infer": {"count": s.batches, "ns": int(s.compute_s * 1e9)},
                },
                "batch_stats": [
                    {"batch_size": k, "compute_infer": {"count": v}}
                    for k, v in sorted(s.batch_sizes.items())
                ],
                "labkit": mine,
            }
        ]
    }


def _refuse(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse(error_body(message), status_code=status, headers=headers or None)


def _not_ready(state: _State) -> str:
    return state.error or "not ready: the model is still loading and warming up"


def _check_name(name: str) -> None:
    if name != models.MODEL_NAME:
        raise BadRequest(404, f"no model {name!r} here: this server serves {models.MODEL_NAME!r}")


def _health_routes(app: FastAPI, state: _State) -> None:
    @app.get("/v2")
    async def server_metadata():
        from .. import __version__

        return {
            "name": "labkit",
            "version": __version__,
            "extensions": [BINARY_EXTENSION, "statistics"],
        }

    @app.get("/v2/health/live")
    async def live():
        return {"live": True}

    @app.get("/v2/health/ready")
    async def ready():
        return {"ready": True} if state.batcher else _refuse(400, _not_ready(state))


def _model_routes(app: FastAPI, state: _State) -> None:
    @app.get("/v2/models/{name}")
    async def model_metadata(name: str):
        _check_name(name)
        return {
            "name": models.MODEL_NAME,
            "versions": ["1"],
            "platform": f"labkit_{state.config.framework}_{state.config.mode}",
            "inputs": [state.spec.metadata()],
            "outputs": [{"name": models.OUTPUT, "datatype": "FP32", "shape": [-1, models.CLASSES]}],
            "parameters": state.parameters(),
        }

    @app.get("/v2/models/{name}/ready")
    async def model_ready(name: str):
        _check_name(name)
        return {"name": name, "ready": True} if state.batcher else _refuse(400, _not_ready(state))

    @app.get("/v2/models/{name}/stats")
    async def model_stats(name: str):
        _check_name(name)
        return _stats(state)


def _infer_route(app: FastAPI, state: _State) -> None:
    @app.post("/v2/models/{name}/infer")
    async def infer(name: str, request: Request):
        _check_name(name)
        if state.batcher is None:
            return _refuse(503, _not_ready(state), **{"Retry-After": "5"})
        try:
            with state.batcher.admit():  # refused at once past capacity, before the body is read
                body = await _read_body(request, state.limit)
                req = parse_request(body, request.headers.get(HEADER_LENGTH), state.spec)
                logits = await state.batcher.submit(req.tensor)
        except Overloaded as exc:
            return _refuse(503, str(exc), **{"Retry-After": "1"})
        except RuntimeError as exc:
            return _refuse(500, str(exc))
        content, headers = response_body(models.MODEL_NAME, "1", models.OUTPUT, logits, req)
        return Response(content, headers=headers)


def build_app(state: _State) -> FastAPI:
    """The FastAPI application of ``state``'s server: the protocol's routes, and every refusal
    as the protocol's error object."""

    @contextlib.asynccontextmanager
    async def lifespan(app):
        state.tasks.append(asyncio.create_task(state.start()))
        yield
        for task in state.tasks:
            task.cancel()

    app = FastAPI(
        title="labkit inference server",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @app.exception_handler(BadRequest)
    async def bad_request(request, exc: BadRequest):
        return _refuse(exc.status, str(exc))

    @app.exception_handler(HTTPException)
    async def http_error(request, exc: HTTPException):
        where = f"{request.method} {request.url.path}"
        return _refuse(
            exc.status_code,
            f"{exc.detail}: {where} (this server speaks the Open Inference Protocol under /v2)",
        )

    _health_routes(app, state)
    _model_routes(app, state)
    _infer_route(app, state)
    return app


def _configure_process(threads: int) -> None:
    """Before any framework loads: the lab's thread policy, compile caches shared with earlier
    runs, no compile worker processes (Inductor compiles in this process)."""
    from .. import runner

    os.environ.update(proc.thread_env(threads))
    os.environ.update(runner.cache_env("warm", runner.shared_cache_dir()))
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def serve(config: ServerConfig, parent: int | None = None) -> int:
    """Run the server of ``config`` until SIGINT/SIGTERM (or, with ``parent``, until that process
    is gone): 0 after a clean stop, 130 after Ctrl-C, 1 when the model could not be loaded.
    ``ValueError`` (before anything starts) names a bad setting or a port in use."""
    import uvicorn

    from .. import hardware

    config.check()
    threads = config.threads or hardware.default_threads()
    _configure_process(threads)
    if parent is not None:
        proc.exit_with_parent(parent, label="labkit serve")
    state = _State(config, threads)
    print(
        f"labkit serve: {config.framework}/{config.mode}, {models.network_name(state.width)}, "
        f"{state.image_size}x{state.image_size} images, "
        + (
            f"batches of up to {config.max_batch} within {config.max_wait_ms:g} ms"
            if config.max_batch > 1
            else "batching off"
        )
        + f", {threads} thread(s); listening on http://{HOST}:{config.port} (this machine only)",
        file=sys.stderr,
        flush=True,
    )
    server = uvicorn.Server(
        uvicorn.Config(
            build_app(state),
            host=HOST,
            port=config.port,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=3,
        )
    )

    def fail() -> None:
        server.should_exit = True

    state.on_failure = fail
    try:
        server.run()
    except KeyboardInterrupt:
        return 130
    return 1 if state.error else 0
