"""The load generator: requests at random arrival times (open loop) or from N clients at once
(closed loop), against a server on this machine, each step bounded in requests and time.

- **Open loop** (:func:`poisson_step`, MLPerf's *Server* scenario): arrivals are a Poisson
  process at the offered rate (exponential gaps, seeded); each request is sent at its time
  whether or not earlier ones were answered, as independent users would. A request's latency
  runs from its *scheduled* arrival to its answer, so a client that falls behind cannot hide
  the server's queue (no coordinated omission); how late it sent is kept too.
- **Closed loop** (:func:`closed_step`): N clients, each sends its next request when the last
  one is answered (a benchmark script, a batch job): the offered rate adapts to the server.

Each request ends answered (200), shed (503 or 429: the server refused it for overload),
timed out (no answer within the client's timeout: counted as such) or failed (another status,
a broken connection). A step sends at most ``max_requests`` and stops ``timeout`` seconds after
its last arrival, whatever is still open (those count as timeouts). Only loopback URLs are
accepted (:func:`check_url`).

Not for: records (:mod:`labkit.serve.records`) or starting servers (:mod:`labkit.serve.process`).
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from dataclasses import dataclass, field

import numpy as np

from .. import bench

__all__ = ["LOOPBACK_HOSTS", "Step", "check_url", "closed_step", "poisson_step", "send_one"]

#: the hosts the load generator drives: this machine only
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
#: seconds after its last arrival that a step waits for open requests beyond their timeout
_GRACE_S = 1.0


def check_url(url: str) -> str:
    """``url`` without a trailing slash if it is ``http://`` on this machine's loopback, else
    ``ValueError`` with the fix: the lab's load generator never drives another machine."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(
            f"{url!r} is not an http:// URL; give the server's address, e.g. http://127.0.0.1:8000"
        )
    if parts.hostname not in LOOPBACK_HOSTS:
        raise ValueError(
            f"{url} is on {parts.hostname}, not this machine: the load generator drives servers on "
            "127.0.0.1 only (it would flood another machine's server)"
        )
    return url.rstrip("/")


@dataclass
class Step:
    """What one step of load sent and got back."""

    load: str  #: poisson | closed
    offered_rps: float | None
    concurrency: int | None
    timeout_s: float
    latencies_s: list[float] = field(default_factory=list)  #: answered requests
    done_at: list[float] = field(default_factory=list)  #: when each answer came (perf_counter)
    lags_s: list[float] = field(default_factory=list)  #: how late each request was sent
    requests: int = 0
    shed: int = 0
    timeouts: int = 0
    errors: int = 0
    reasons: dict[str, int] = field(default_factory=dict)  #: why requests were shed or failed
    started: float = 0.0
    planned_s: float = 0.0  #: the step's arrival window (open loop) or its length (closed)
    wall_s: float = 0.0  #: from its start until every request was settled
    cpu_before: tuple | None = None
    cpu_after: tuple | None = None
    load_1min: float | None = None

    @property
    def answered(self) -> int:
        return len(self.latencies_s)

    def halves(self) -> list[float]:
        """Answers per second in the first and second half of the planned window."""
        half = self.planned_s / 2
        if half <= 0:
            return [0.0, 0.0]
        first = sum(1 for t in self.done_at if t < self.started + half)
        second = sum(1 for t in self.done_at if self.started + half <= t < self.started + 2 * half)
        return [first / half, second / half]

    def note(self, reason: str) -> None:
        self.reasons[reason] = self.reasons.get(reason, 0) + 1


async def send_one(client, url: str, body: bytes, headers: dict, step: Step, since: float) -> None:
    """Send one request and file its outcome in ``step``; its latency runs from ``since``."""
    import httpx

    step.requests += 1
    try:
        r = await client.post(url, content=body, headers=headers)
    except httpx.TimeoutException:
        step.timeouts += 1
        return
    except httpx.HTTPError as exc:
        step.errors += 1
        step.note(f"{type(exc).__name__}: {exc}"[:160])
        return
    done = time.perf_counter()
    if r.status_code == 200:
        step.latencies_s.append(done - since)
        step.done_at.append(done)
        return
    try:
        why = r.json().get("error", "")
    except ValueError:
        why = r.text[:120]
    if r.status_code in (429, 503):
        step.shed += 1
        step.note(f"{r.status_code} {why.split(';')[0]}"[:160])
    else:
        step.errors += 1
        step.note(f"{r.status_code} {why}"[:160])


def _begin(step: Step, planned_s: float) -> None:
    step.planned_s = planned_s
    step.load_1min = bench.load_1min()
    step.cpu_before = bench.cpu_sample()
    step.started = time.perf_counter()


def _end(step: Step) -> Step:
    step.wall_s = time.perf_counter() - step.started
    step.cpu_after = bench.cpu_sample()
    return step


async def _settle(tasks: list[asyncio.Task], step: Step, wait_s: float) -> None:
    """Wait up to ``wait_s`` for the open requests; those still open count as timeouts."""
    if not tasks:
        return
    _done, pending = await asyncio.wait(tasks, timeout=wait_s)
    for task in pending:
        task.cancel()
        step.timeouts += 1
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)


async def poisson_step(
    client,
    url: str,
    body: bytes,
    headers: dict,
    rate: float,
    duration_s: float,
    max_requests: int,
    timeout_s: float,
    seed: int = 0,
    min_requests: int = 0,
) -> Step:
    """One open-loop step: Poisson arrivals at ``rate`` per second for ``duration_s`` seconds,
    or until the ``min_requests``-th arrival if that comes later (at most ``max_requests``)."""
    if rate <= 0 or duration_s <= 0 or max_requests < 1:
        raise ValueError(
            f"need rate > 0, duration > 0, max_requests >= 1; got {rate}, "
            f"{duration_s}, {max_requests}"
        )
    rng = np.random.default_rng(seed)
    drawn = max(int(rate * duration_s * 2 + 20), 2 * min_requests + 20)
    times = np.cumsum(rng.exponential(1.0 / rate, size=drawn))
    within = times[times < duration_s]
    times = (within if len(within) >= min_requests else times[:min_requests])[:max_requests]
    duration_s = max(duration_s, float(times[-1]) if len(times) else 0.0)
    step = Step("poisson", float(rate), None, timeout_s)
    _begin(step, duration_s)
    tasks = []
    for t in times:
        due = step.started + float(t)
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        step.lags_s.append(max(0.0, time.perf_counter() - due))
        tasks.append(asyncio.create_task(send_one(client, url, body, headers, step, due)))
    left = step.started + duration_s - time.perf_counter()
    await _settle(tasks, step, max(0.0, left) + timeout_s + _GRACE_S)
    return _end(step)


async def closed_step(
    client,
    url: str,
    body: bytes,
    headers: dict,
    concurrency: int,
    duration_s: float,
    max_requests: int,
    timeout_s: float,
) -> Step:
    """One closed-loop step: ``concurrency`` clients, each sending its next request when the last
    one is settled, for ``duration_s`` seconds (at most ``max_requests`` in all)."""
    if concurrency < 1 or duration_s <= 0 or max_requests < 1:
        raise ValueError(
            f"need concurrency >= 1, duration > 0, max_requests >= 1; got "
            f"{concurrency}, {duration_s}, {max_requests}"
        )
    step = Step("closed", None, int(concurrency), timeout_s)
    _begin(step, duration_s)
    stop = step.started + duration_s

    async def client_loop() -> None:
        while time.perf_counter() < stop and step.requests < max_requests:
            await send_one(client, url, body, headers, step, time.perf_counter())

    tasks = [asyncio.create_task(client_loop()) for _ in range(concurrency)]
    await _settle(tasks, step, duration_s + timeout_s + _GRACE_S)
    return _end(step)
