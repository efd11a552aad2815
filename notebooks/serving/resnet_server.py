"""A small inference server for the lab's ResNet-50: notebook 07b reads it, starts it and loads it.

    python notebooks/serving/resnet_server.py --backend eager --max-batch 4 --max-wait-ms 5

It speaks the Open Inference Protocol (KServe v2, what Triton, KServe and MLServer speak) with
Triton's binary tensor extension, so tritonclient's HTTP client works against it. Requests wait
in one queue; a batcher takes the oldest and whatever arrives within --max-wait-ms of it, up to
--max-batch images, and runs them as one batch on one model thread. Past --max-queue waiting
images it refuses at once (503). It listens on 127.0.0.1 only and prints "ready <url>" once warm.
Written for FastAPI 0.163, uvicorn 0.54, torch 2.13, onnxruntime 1.32.
"""

import argparse
import asyncio
import contextlib
import io
import json
import logging
import socket
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from labkit import resnet
from labkit.frameworks.torch.adapter import build_resnet50

import numpy as np
import torch
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

NAME, BINARY = "resnet50", "Inference-Header-Content-Length"


def options(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=["eager", "compile", "ort"], default="eager")
    p.add_argument("--port", type=int, default=0, help="0: any free port")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--width", type=int, default=16, help="64 is the real ResNet-50")
    p.add_argument("--seed", type=int, default=0, help="the weights come from this seed")
    p.add_argument("--max-batch", type=int, default=1, help="1: no batching")
    p.add_argument("--max-wait-ms", type=float, default=2.0)
    p.add_argument("--max-queue", type=int, default=32, help="waiting images before a 503")
    p.add_argument("--no-pad", dest="pad", action="store_false", help="run every batch size as is")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--body-timeout-s", type=float, default=5.0, help="to read a request's body")
    return p.parse_args(argv)


def load_model(backend, model, image_size):
    """The batch function of one backend: float32 NCHW images in, logits out (numpy)."""
    if backend == "ort":  # export to ONNX in memory (no file), with a dynamic batch dimension
        import onnxruntime as ort

        # quiet: the exporter logs torchvision ops it skips, PyTorch's pytree a FutureWarning
        logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
        warnings.filterwarnings("ignore", category=FutureWarning)
        example, batch = torch.zeros(2, 3, image_size, image_size), torch.export.Dim("batch")
        program = torch.onnx.export(model, (example,), dynamo=True, dynamic_shapes=({0: batch},))
        program.save(buffer := io.BytesIO())
        session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
        return lambda x: session.run(None, {session.get_inputs()[0].name: x})[0]
    net = torch.compile(model, dynamic=False) if backend == "compile" else model

    def run(x):
        with torch.inference_mode():
            return net(torch.from_numpy(x)).numpy()

    return run


class Batcher:
    """One queue, one model thread: the dynamic batcher."""

    def __init__(self, run, args):
        self.run, self.args = run, args
        self.queue = asyncio.Queue()
        self.held = None  # a request that did not fit the last batch: first in the next
        self.waiting, self.seen = 0, set()  # images waiting; batch shapes this process has run
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="model")
        self.stats = {"batches": 0, "images": 0, "padded_images": 0, "shed": 0, "warmed": []}
        self.stats.update(new_shapes=0, new_shape_s=0.0, warmup_s=0.0)

    def sizes(self):  # the fixed batch shapes: powers of two, and max_batch itself
        return sorted({min(1 << i, self.args.max_batch) for i in range(12)})

    def padded(self, n):
        return next(s for s in self.sizes() if s >= n) if self.args.pad else n

    def compute(self, x):  # on the model thread
        n, size = len(x), self.padded(len(x))
        if size > n:
            x = np.concatenate([x, np.zeros((size - n, *x.shape[1:]), np.float32)])
        t0 = time.perf_counter()
        y = self.run(x)[:n]
        if size not in self.seen:
            self.seen.add(size)
            self.stats["new_shapes"] += 1
            self.stats["new_shape_s"] += time.perf_counter() - t0
        self.stats["padded_images"] += size - n
        return y

    def warm_up(self, image_size):
        t0, sizes = time.perf_counter(), self.sizes() if self.args.pad else [1]
        for size in sizes:
            self.compute(np.zeros((size, 3, image_size, image_size), np.float32))
        self.stats.update(warmed=sizes, new_shapes=0, new_shape_s=0.0)
        self.stats["warmup_s"] = time.perf_counter() - t0

    def submit(self, images):
        if self.waiting + len(images) > self.args.max_queue:
            self.stats["shed"] += 1
            why = f"overloaded: {self.waiting} images already wait; retry later"
            raise HTTPException(503, why, headers={"Retry-After": "1"})
        future = asyncio.get_running_loop().create_future()
        self.waiting += len(images)
        self.queue.put_nowait((images, future, time.perf_counter()))
        return future

    async def collect(self):
        """The oldest request, then whatever arrives within max_wait of it, up to max_batch."""
        first, self.held = self.held or await self.queue.get(), None
        batch, count = [first], len(first[0])
        deadline = first[2] + self.args.max_wait_ms / 1e3
        while self.args.max_batch > 1:
            try:
                left = deadline - time.perf_counter()
                get = asyncio.wait_for(self.queue.get(), left) if left > 0 else None
                item = await get if get else self.queue.get_nowait()
            except (TimeoutError, asyncio.QueueEmpty):
                break
            if count + len(item[0]) > self.args.max_batch:  # never split a request
                self.held = item  # it opens the next batch
                break
            batch.append(item)
            count += len(item[0])
        self.waiting -= count
        return batch

    async def loop(self):
        while True:
            batch = await self.collect()
            x = np.concatenate([images for images, _, _ in batch])
            try:
                y = await asyncio.get_running_loop().run_in_executor(self.thread, self.compute, x)
            except Exception as exc:  # noqa: BLE001  (the batch fails, the server keeps serving)
                for _, future, _ in batch:
                    future.done() or future.set_exception(exc)
                continue
            self.stats["batches"] += 1
            self.stats["images"] += len(x)
            start = 0
            for images, future, _ in batch:
                future.done() or future.set_result(y[start : start + len(images)])
                start += len(images)


async def read_body(request, limit, timeout_s):
    """The request's body, at most ``limit`` bytes within ``timeout_s`` seconds (a slow client
    holds only its own connection, never the queue)."""
    if int(request.headers.get("content-length") or 0) > limit:
        raise HTTPException(413, f"body over {limit} bytes: send at most max_batch images")
    if request.headers.get("content-encoding", "identity") != "identity":
        raise HTTPException(415, "compressed bodies are not accepted: send it uncompressed")
    chunks, size = [], 0

    async def read():
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise HTTPException(413, f"body over {limit} bytes: send at most max_batch images")
            chunks.append(chunk)

    try:
        await asyncio.wait_for(read(), timeout_s)
    except TimeoutError:
        raise HTTPException(408, f"body not received within {timeout_s} s") from None
    except ClientDisconnect:  # the client left mid-body: nobody reads this answer
        raise HTTPException(400, "the client left before its body ended") from None
    return b"".join(chunks)


def parse(body, header_length, args):
    """The request's images as float32 NCHW, JSON or binary, and whether to answer in binary."""
    try:
        head = json.loads(body[: int(header_length)] if header_length else body)
        tensor = head["inputs"][0]
        shape = [int(n) for n in tensor["shape"]]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise HTTPException(
            400, f"not an inference request ({exc!r}): see the v2 protocol"
        ) from None
    want = [3, args.image_size, args.image_size]
    if len(shape) != 4 or shape[1:] != want or not 1 <= shape[0] <= args.max_batch:
        raise HTTPException(
            400, f"shape {shape}: send [n, {', '.join(map(str, want))}], 1 <= n <= {args.max_batch}"
        )
    if tensor.get("datatype") != "FP32":
        raise HTTPException(400, f"datatype {tensor.get('datatype')!r}: send FP32")
    if header_length:
        raw = body[int(header_length) :]
        if len(raw) != np.prod(shape) * 4:
            raise HTTPException(400, f"{len(raw)} binary bytes, expected {np.prod(shape) * 4}")
        images = np.frombuffer(raw, np.float32)
    else:
        try:
            images = np.asarray(tensor["data"], np.float32).ravel()
        except (KeyError, ValueError, TypeError):
            raise HTTPException(400, "data must be a flat list of numbers") from None
        if images.size != np.prod(shape):
            raise HTTPException(400, f"{images.size} numbers for shape {shape}")
    asked = {**(head.get("outputs") or [{}])[0].get("parameters", {}), **head.get("parameters", {})}
    binary = asked.get("binary_data_output") or asked.get("binary_data", False)
    return images.reshape(shape), bool(binary)


def answer(logits, binary):
    out = {"name": "logits", "datatype": "FP32", "shape": list(logits.shape)}
    if not binary:
        body = {"model_name": NAME, "outputs": [{**out, "data": logits.ravel().tolist()}]}
        return JSONResponse(body)
    raw = logits.astype(np.float32).tobytes()
    out["parameters"] = {"binary_data_size": len(raw)}
    head = json.dumps({"model_name": NAME, "outputs": [out]}).encode()
    return Response(head + raw, 200, {BINARY: str(len(head))}, "application/octet-stream")


def make_app(args):
    torch.set_num_threads(args.threads)
    model = build_resnet50(resnet.init_weights(args.seed, 1000, args.width)).eval()
    batcher = Batcher(load_model(args.backend, model, args.image_size), args)
    limit = 1024 + args.max_batch * 3 * args.image_size**2 * 24  # JSON floats: ~24 bytes each

    @asynccontextmanager
    async def lifespan(app):
        batcher.warm_up(args.image_size)
        task = asyncio.create_task(batcher.loop())
        print(f"ready http://127.0.0.1:{args.port}", flush=True)
        yield
        task.cancel()
        batcher.thread.shutdown(wait=True)

    app = FastAPI(lifespan=lifespan)
    size, fp32 = args.image_size, {"datatype": "FP32"}
    meta = {"name": NAME, "versions": ["1"], "platform": f"pytorch_{args.backend}"}
    meta["inputs"] = [{"name": "images", **fp32, "shape": [-1, 3, size, size]}]
    meta["outputs"] = [{"name": "logits", **fp32, "shape": [-1, 1000]}]

    @app.exception_handler(HTTPException)
    async def error(request, exc):  # the protocol's error body; 405 keeps its Allow header
        return JSONResponse({"error": exc.detail}, exc.status_code, headers=exc.headers)

    @app.get("/v2/health/live")
    @app.get("/v2/health/ready")
    @app.get(f"/v2/models/{NAME}/ready")
    @app.get(f"/v2/models/{NAME}/versions/1/ready")
    async def health():
        return {"live": True, "ready": True}

    @app.get(f"/v2/models/{NAME}")
    @app.get(f"/v2/models/{NAME}/versions/1")
    async def metadata():
        return meta

    @app.get(f"/v2/models/{NAME}/stats")
    async def stats():
        return batcher.stats

    @app.post(f"/v2/models/{NAME}/infer")
    @app.post(f"/v2/models/{NAME}/versions/1/infer")
    async def infer(request: Request):
        body = await read_body(request, limit, args.body_timeout_s)
        images, binary = parse(body, request.headers.get(BINARY), args)
        logits = await batcher.submit(images)
        return answer(logits, binary)

    return app


def main(argv=None):
    args = options(argv)
    # loopback only; listening before "ready" is printed, so an early client waits, not refused
    sock = socket.create_server(("127.0.0.1", args.port), backlog=2048)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle: 07b, section 1
    args.port = sock.getsockname()[1]
    config = uvicorn.Config(make_app(args), log_level="warning", timeout_graceful_shutdown=5)
    # Ctrl-C or SIGTERM: uvicorn stops serving, the lifespan's end runs, then it re-raises
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
