"""A load run against one server: its steps in order, each recorded as soon as it ends.

:func:`run` (``python -m labkit load URL --rates ... --duration ...``) asks the server what it
is (``GET /v2``, ``GET /v2/models/{name}``: the protocol's metadata; a labkit server adds its
framework, mode and batching in ``parameters``), waits until it is ready, then runs an
open-loop step per offered rate (and a closed-loop step per client count), reading the
server's statistics before and after each so that the record holds what the server did in it
(batches, padding, new shapes, its CPU seconds). With ``refine``, it then halves the gap between
the highest rate under the bound and the lowest above it that many times; with ``half``, it
ends with one step at half the highest rate under the bound. Every record is appended to
``out`` the moment it exists, so an interrupted run keeps its steps.

The request is one image (seeded synthetic data, as everywhere in the lab) encoded once: JSON
numbers, or the binary tensor extension when the server lists it (``encoding="auto"``).

Not for: the steps themselves (:mod:`labkit.serve.loadgen`) or the record's fields
(:mod:`labkit.serve.records`).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import hardware, resnet, results
from ..results import sweeps
from . import loadgen, records
from .model import MODEL_NAME
from .protocol import BINARY_EXTENSION, parse_response, request_body

__all__ = ["ENCODINGS", "Plan", "Target", "run"]

ENCODINGS = ("auto", "json", "binary")


class Target:
    """The server a run drives: its URLs and what it said about itself."""

    def __init__(self, url: str, model: str = MODEL_NAME):
        self.root = loadgen.check_url(url).split("/v2")[0]
        self.model = model
        self.infer = f"{self.root}/v2/models/{model}/infer"
        self.server: dict = {}
        self.metadata: dict = {}

    async def wait_ready(self, client, timeout_s: float) -> None:
        """Wait until the model says it is ready; ``ValueError`` naming what answered instead."""
        import httpx

        deadline, last = time.perf_counter() + timeout_s, "no answer"
        while time.perf_counter() < deadline:
            try:
                r = await client.get(f"{self.root}/v2/models/{self.model}/ready", timeout=5)
                if r.status_code == 200:
                    break
                last = f"{r.status_code} {r.text[:200]}"
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            await asyncio.sleep(0.5)
        else:
            raise ValueError(
                f"the server at {self.root} was not ready within {timeout_s:g} s ({last}); "
                f"fix: start it first (python -m labkit serve ...) and give its address"
            )
        self.server = (await client.get(f"{self.root}/v2", timeout=5)).json()
        self.metadata = (await client.get(f"{self.root}/v2/models/{self.model}", timeout=5)).json()

    def parameters(self) -> dict:
        """What the records say about the server: a labkit server's own account, or what the
        protocol's metadata tells of any other."""
        params = dict(self.metadata.get("parameters") or {})
        if "framework" not in params:  # another server (Triton, KServe, MLServer)
            shape = (self.metadata.get("inputs") or [{}])[0].get("shape") or [1, 3, 224, 224]
            params.update(
                framework=self.metadata.get("platform") or "other",
                mode=self.server.get("name") or "other",
                image_size=int(shape[-1]),
                max_batch=1,
                profile="standard",
            )
        return params

    def encoding(self, asked: str) -> str:
        """The encoding a run uses: ``asked``, or for ``auto`` binary where the server lists
        the extension."""
        if asked == "auto":
            return "binary" if BINARY_EXTENSION in self.server.get("extensions", []) else "json"
        return asked

    async def statistics(self, client) -> dict:
        """The statistics' ``labkit`` part ({} from a server without it)."""
        try:
            r = await client.get(f"{self.root}/v2/models/{self.model}/stats", timeout=5)
            return r.json()["model_stats"][0].get("labkit", {}) if r.status_code == 200 else {}
        except (ValueError, KeyError, IndexError):
            return {}


async def _check_answer(client, target: Target, body: bytes, headers: dict) -> None:
    """One request before the steps: the answer must be logits for one image."""
    r = await client.post(target.infer, content=body, headers=headers, timeout=60)
    if r.status_code != 200:
        raise ValueError(f"the server refused the lab's request: {r.status_code} {r.text[:300]}")
    logits = parse_response(r.content, r.headers.get("Inference-Header-Content-Length"))
    if logits.ndim != 2 or logits.shape[0] != 1:
        raise ValueError(f"the server answered a tensor of shape {logits.shape}, not (1, classes)")


class _Run:
    """The state of one run: the client, the plan, the request and what it said so far."""

    def __init__(self, target: Target, client, plan: Plan, request: dict, on_record: Callable):
        self.target, self.client, self.plan, self.r = target, client, plan, request
        self.on_record = on_record
        self.records: list[dict] = []

    async def step(self, rate: float | None = None, clients: int | None = None) -> dict:
        p, r, t = self.plan, self.r, self.target
        before = await t.statistics(self.client)
        if rate is not None:
            step = await loadgen.poisson_step(
                self.client,
                t.infer,
                r["body"],
                r["headers"],
                rate,
                p.duration_s,
                p.max_requests,
                p.timeout_s,
                seed=len(self.records),
                min_requests=p.min_requests,
            )
        else:
            step = await loadgen.closed_step(
                self.client,
                t.infer,
                r["body"],
                r["headers"],
                clients,
                p.duration_s,
                p.max_requests,
                p.timeout_s,
            )
        after = await t.statistics(self.client)
        record = records.step_record(
            step,
            r["server"],
            before,
            after,
            encoding=r["encoding"],
            client_cpus=p.client_cpus,
            bound_s=r["bound_s"],
            machine=r["machine"],
        )
        self.records.append(record)
        if p.out is not None:
            results.append(p.out, record)
        self.on_record(record)
        return record

    async def refine(self, times: int) -> None:
        """Halve the gap between the highest rate under the bound and the next rate tried."""
        for _ in range(times):
            steps = sorted(
                (r for r in self.records if r.get("load") == "poisson"),
                key=lambda r: r["offered_rps"],
            )
            good = sweeps.capacity(steps, include_invalid=True)
            above = [r["offered_rps"] for r in steps if good is None or r["offered_rps"] > good]
            if good is None or not above:
                return
            await self.step(rate=round((good + min(above)) / 2, 2))


def _line(record: dict) -> None:
    load = (
        f"{record['offered_rps']:g} requests/s offered"
        if record["load"] == "poisson"
        else f"{record['concurrency']} clients"
    )
    if record["status"] != "ok":
        print(f"  {load}: {record['error']}", file=sys.stderr, flush=True)
        return
    flag = "" if record["valid"] else f" (invalid: {'; '.join(record['invalid_reasons'])})"
    print(
        f"  {load}: {record['achieved_rps']:.1f} answered/s, p50 {record['median_s'] * 1e3:.1f} "
        f"ms, p99 {record['p99_s'] * 1e3:.1f} ms, shed {record['shed']}, timeouts "
        f"{record['timeouts']}, errors {record['errors']}{flag}",
        file=sys.stderr,
        flush=True,
    )


@dataclass
class Plan:
    """The steps of a load run and how each is bounded (see the module's docstring)."""

    rates: Sequence[float] = ()  #: offered rates of the open-loop steps, requests/s
    concurrency: Sequence[int] = ()  #: client counts of the closed-loop steps
    duration_s: float = 10.0  #: each step's arrival window (open loop) or length (closed)
    #: an open-loop step lasts until it has offered at least this many requests (0: duration_s)
    min_requests: int = 0
    max_requests: int = 5000  #: requests one step may send
    timeout_s: float = 2.0  #: how long the client waits for an answer
    encoding: str = "auto"  #: auto | json | binary
    out: str | Path | None = None  #: the results file the records are appended to
    bound_s: float | None = None  #: None: p99_bound of the server's image size
    refine: int = 0  #: extra steps that narrow the highest rate under the bound
    half: bool = False  #: end with a step at half the highest rate under the bound
    client_cpus: list[int] | None = None  #: the CPUs this client was pinned to (recorded)
    #: the machine's fingerprint, read before the client was pinned (None: read at the start)
    machine: dict | None = None
    ready_timeout_s: float = 60.0  #: how long to wait for the server to be ready

    def check(self) -> Plan:
        if not self.rates and not self.concurrency:
            raise ValueError(
                "give offered rates (--rates 5,10,20) or client counts (--concurrency 1,4)"
            )
        bad = [r for r in self.rates if not r > 0] + [c for c in self.concurrency if not c >= 1]
        if bad:
            raise ValueError(f"rates must be > 0 and client counts >= 1, got {bad}")
        if not (self.duration_s > 0 and self.timeout_s > 0 and self.max_requests >= 1):
            raise ValueError(
                f"the duration and the timeout must be > 0 s and max requests >= 1, got "
                f"{self.duration_s:g} s, {self.timeout_s:g} s, {self.max_requests}"
            )
        if self.encoding not in ENCODINGS:
            raise ValueError(
                f"encoding must be one of {', '.join(ENCODINGS)}, not {self.encoding!r}"
            )
        if self.out is not None:
            from .. import runner

            runner.check_out(self.out)
        return self

    def step_s(self, rate: float) -> float:
        """About how long the open-loop step at ``rate`` offers requests (its arrivals decide)."""
        return max(self.duration_s, 1.5 * self.min_requests / rate if rate > 0 else 0.0)

    def seconds(self) -> float:
        """The longest the run can take (its steps, their timeouts and the refinements)."""
        rates = list(self.rates) or [1.0]
        longest = max(self.step_s(r) for r in rates)
        steps = len(rates) + len(self.concurrency) + self.refine + int(self.half)
        return self.ready_timeout_s + steps * (longest + self.timeout_s + 10)

    def arguments(self) -> list[str]:
        """This plan as ``python -m labkit load`` options (``out`` and the CPUs left out)."""
        args = ["--duration", f"{self.duration_s:g}", "--timeout", f"{self.timeout_s:g}"]
        args += ["--max-requests", str(self.max_requests), "--encoding", self.encoding]
        if self.rates:
            args += ["--rates", ",".join(f"{r:g}" for r in self.rates)]
        if self.concurrency:
            args += ["--concurrency", ",".join(map(str, self.concurrency))]
        if self.min_requests:
            args += ["--min-requests", str(self.min_requests)]
        if self.bound_s is not None:
            args += ["--bound-ms", f"{self.bound_s * 1e3:g}"]
        if self.refine:
            args += ["--refine", str(self.refine)]
        return args + ["--half"] * self.half


def run(url: str, plan: Plan, on_record: Callable[[dict], None] = _line) -> list[dict]:
    """Drive the server at ``url`` through ``plan``'s steps and return their records.
    ``ValueError`` names a bad plan or a server that is not there (or not on this machine)."""
    loadgen.check_url(url)
    return asyncio.run(_drive(Target(url), plan.check(), on_record))


async def _drive(target: Target, plan: Plan, on_record: Callable[[dict], None]) -> list[dict]:
    import httpx

    limits = httpx.Limits(max_connections=512, max_keepalive_connections=64)
    timeout = httpx.Timeout(plan.timeout_s, pool=plan.timeout_s)
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        await target.wait_ready(client, plan.ready_timeout_s)
        server = target.parameters()
        chosen = target.encoding(plan.encoding)
        image = resnet.random_batch(1, int(server["image_size"]))[0]
        body, headers = request_body(image, binary=chosen == "binary")
        await _check_answer(client, target, body, headers)
        bound = plan.bound_s or records.p99_bound(int(server["image_size"]))
        machine = plan.machine or hardware.fingerprint()
        run_ = _Run(
            target,
            client,
            plan,
            {
                "body": body,
                "headers": headers,
                "server": server,
                "encoding": chosen,
                "bound_s": float(bound),
                "machine": machine,
            },
            on_record,
        )
        for rate in sorted(plan.rates):
            await run_.step(rate=rate)
        await run_.refine(plan.refine)
        best = sweeps.capacity(run_.records, include_invalid=True)
        if plan.half and best:
            await run_.step(rate=round(best / 2, 2))
        for n in sorted(plan.concurrency):
            await run_.step(clients=n)
        return run_.records
