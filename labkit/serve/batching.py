"""Dynamic batching: requests that arrive within a short wait run through the model as one batch.

:class:`Batcher` sits between the HTTP handlers (many coroutines on one event loop) and the
model (one thread, :class:`ModelThread`). A handler ``await``\\ s :meth:`Batcher.submit` with its
images; the batch loop (:meth:`Batcher.run`) takes the oldest request, waits until
``max_wait_s`` after *its* arrival for more (never past ``max_batch`` images; a request that
waited longer than that while the model was busy goes at once, with whatever queued behind it),
runs the batch on the model thread, and hands each request its rows of the output. With
``max_batch=1`` every request runs alone, in arrival order: batching off.

Fixed shapes: with ``pad``, a batch is padded with zero images up to the next power of two, so
a model that builds one graph per input shape (``torch.compile(dynamic=False)``) meets only
the few sizes it compiled while warming up; without it, every batch runs at its own size and a
size met for the first time is counted (``new_shapes``, and the seconds that batch took).

Overload: at most ``max_queue`` images wait, and at most ``max_queue + max_batch`` requests
are inside the server at once (:meth:`Batcher.admit`, from the moment a handler starts, before
it reads the body); past that :class:`Overloaded` is raised at once (the server answers 503
with the reason) instead of letting the queue, and every request's latency, grow without
bound.

Not for: HTTP (:mod:`labkit.serve.app`) or loading the model (:mod:`labkit.serve.model`).
Imports no framework and no web library.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Batcher", "ModelThread", "Overloaded", "Stats", "padded_size", "warm_shapes"]


class Overloaded(RuntimeError):
    """The server is past its capacity: the request was refused, not queued (the message says
    how many images wait)."""


def padded_size(n: int, pad: bool) -> int:
    """The batch size ``n`` images run at: the next power of two with ``pad``, else ``n``."""
    if not pad or n <= 1:
        return n
    return 1 << (n - 1).bit_length()


def warm_shapes(max_batch: int, pad: bool) -> list[int]:
    """The batch sizes a server runs before it says it is ready: every power of two up to
    ``max_batch`` with ``pad`` (then no other size ever runs), else 1 and ``max_batch`` (a size
    in between meets the model for the first time while serving)."""
    if pad:
        return sorted({padded_size(n, True) for n in range(1, max_batch + 1)})
    return sorted({1, max_batch})


class ModelThread:
    """The one thread that runs the model: loading, warm-up and every batch, in order.

    A daemon thread, so that a server stopped in the middle of a long compile exits at once;
    :meth:`run` hands it a call and returns an ``asyncio`` future of the result.
    """

    def __init__(self, name: str = "labkit-model"):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while True:
            fn, args, future, loop = self._jobs.get()
            try:
                result = fn(*args)
            except BaseException as exc:  # noqa: BLE001 - raised in the awaiting coroutine
                loop.call_soon_threadsafe(_settle, future, None, exc)
            else:
                loop.call_soon_threadsafe(_settle, future, result, None)

    def run(self, fn: Callable, *args) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((fn, args, future, loop))
        return future


def _settle(future: asyncio.Future, result: object, exc: BaseException | None) -> None:
    if future.done():  # the waiting handler went away
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)


@dataclass
class Stats:
    """What the server did since it started (a load step reads it before and after, the
    statistics extension of the protocol reports it)."""

    requests: int = 0  #: requests answered
    images: int = 0  #: images answered
    batches: int = 0  #: model calls
    padded_images: int = 0  #: zero images run to fill padded batches
    queue_s: float = 0.0  #: the seconds answered requests waited before their batch ran (sum)
    compute_s: float = 0.0  #: the seconds model calls took (sum)
    shed: int = 0  #: requests refused for overload
    failed: int = 0  #: requests whose batch raised
    new_shapes: int = 0  #: batch sizes met for the first time while serving (from their start)
    new_shape_s: float = 0.0  #: the seconds the finished batches of those sizes took
    batch_sizes: dict[int, int] = field(default_factory=dict)  #: images per batch -> batches

    def as_dict(self) -> dict:
        return {**self.__dict__, "batch_sizes": {str(k): v for k, v in self.batch_sizes.items()}}


@dataclass
class _Pending:
    images: np.ndarray
    future: asyncio.Future
    arrived: float


class Batcher:
    """Requests in, batches through ``predict`` on ``model`` (a :class:`ModelThread`), rows out.

    ``predict`` takes an NCHW batch and returns one output row per image; ``warmed`` are the
    batch sizes it already ran (a size outside them counts as new). See the module's docstring.
    """

    def __init__(
        self,
        predict: Callable[[np.ndarray], np.ndarray],
        model: ModelThread,
        max_batch: int = 1,
        max_wait_s: float = 0.0,
        max_queue: int = 32,
        pad: bool = False,
        warmed: set[int] | None = None,
    ):
        if max_batch < 1 or max_queue < 1 or max_wait_s < 0:
            raise ValueError(
                f"need max_batch >= 1, max_queue >= 1 and max_wait_s >= 0; got {max_batch}, "
                f"{max_queue}, {max_wait_s}"
            )
        self.predict, self.model = predict, model
        self.max_batch, self.max_wait_s, self.max_queue, self.pad = (
            max_batch,
            max_wait_s,
            max_queue,
            pad,
        )
        self.seen: set[int] = set(warmed or ())
        self.stats = Stats()
        self._pending: collections.deque[_Pending] = collections.deque()
        self._waiting = 0  # images queued
        self._inside = 0  # requests admitted and not yet answered
        self._new_since: float | None = None  # when the running batch of a new size started
        self._arrived = asyncio.Event()

    @contextlib.contextmanager
    def admit(self):
        """Count a request as inside the server while the block runs; :class:`Overloaded` at
        once when ``max_queue + max_batch`` already are."""
        limit = self.max_queue + self.max_batch
        if self._inside >= limit:
            self.stats.shed += 1
            raise Overloaded(
                f"overloaded: {self._inside} requests are already inside the server (at most "
                f"{limit}); retry later"
            )
        self._inside += 1
        try:
            yield
        finally:
            self._inside -= 1

    async def submit(self, images: np.ndarray) -> np.ndarray:
        """The model's output for ``images`` once its batch has run; :class:`Overloaded` at once
        when ``max_queue`` images already wait."""
        if self._waiting + len(images) > self.max_queue:
            self.stats.shed += 1
            raise Overloaded(
                f"overloaded: {self._waiting} images already wait for the model (at most "
                f"{self.max_queue} may); retry later, or send less"
            )
        future = asyncio.get_running_loop().create_future()
        self._pending.append(_Pending(images, future, time.perf_counter()))
        self._waiting += len(images)
        self._arrived.set()
        return await future

    async def _next_arrival(self, timeout: float | None) -> bool:
        """Wait until a request is queued (True) or ``timeout`` seconds pass (False)."""
        while not self._pending:
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), timeout)
            except TimeoutError:
                return bool(self._pending)
        return True

    async def collect(self) -> list[_Pending]:
        """The next batch: the oldest request, then those that arrive until ``max_wait_s`` after
        it did, up to ``max_batch`` images (a request is never split)."""
        await self._next_arrival(None)
        batch = [self._pending.popleft()]
        size = len(batch[0].images)
        deadline = batch[0].arrived + self.max_wait_s
        while size < self.max_batch:
            left = deadline - time.perf_counter()
            if not self._pending and (left <= 0 or not await self._next_arrival(left)):
                break
            if size + len(self._pending[0].images) > self.max_batch:
                break
            batch.append(self._pending.popleft())
            size += len(batch[-1].images)
        self._waiting -= size
        return batch

    def _run_model(self, images: np.ndarray) -> tuple[np.ndarray, float]:
        t0 = time.perf_counter()
        out = self.predict(images)
        return out, time.perf_counter() - t0

    async def execute(self, batch: list[_Pending]) -> None:
        """Run one batch (padded when asked) and settle each request's future."""
        images = np.concatenate([p.images for p in batch]) if len(batch) > 1 else batch[0].images
        n = len(images)
        size = padded_size(n, self.pad)
        if size > n:
            images = np.concatenate([images, np.zeros((size - n, *images.shape[1:]), images.dtype)])
        started = time.perf_counter()
        new = size not in self.seen
        if new:  # counted now: a compile in progress shows before it ends
            self.seen.add(size)
            self.stats.new_shapes += 1
            self._new_since = started
        try:
            out, seconds = await self.model.run(self._run_model, images)
        except Exception as exc:  # noqa: BLE001 - each request of the batch gets it
            self._new_since = None
            self.stats.failed += len(batch)
            for p in batch:
                _settle(p.future, None, RuntimeError(f"the model failed on this batch: {exc}"))
            return
        self._count(batch, n, size, started, seconds)
        if new:
            self.stats.new_shape_s += seconds
            self._new_since = None
        row = 0
        for p in batch:
            _settle(p.future, out[row : row + len(p.images)], None)
            row += len(p.images)

    def _count(self, batch: list[_Pending], n: int, size: int, started: float, seconds: float):
        s = self.stats
        s.requests += len(batch)
        s.images += n
        s.batches += 1
        s.padded_images += size - n
        s.queue_s += sum(started - p.arrived for p in batch)
        s.compute_s += seconds
        s.batch_sizes[n] = s.batch_sizes.get(n, 0) + 1

    def new_shape_running_s(self) -> float:
        """How long a batch of a size met for the first time has been running (0: none is)."""
        return 0.0 if self._new_since is None else time.perf_counter() - self._new_since

    async def run(self) -> None:
        """The batch loop: collect a batch, run it, forever (cancel the task to stop it)."""
        while True:
            await self.execute(await self.collect())
