"""MLPerf LoadGen's Server scenario against an HTTP inference server, and what it says.

LoadGen (``mlcommons-loadgen``, 6.0.17 here) schedules queries as a Poisson process at a target
rate and times each from its scheduled issue to its completion; a *system under test* (SUT) is
the code that answers them. :func:`run_server_scenario` builds a SUT that sends each query to
the server as one Open Inference Protocol request (binary tensor, keep-alive connections, a pool
of threads so that LoadGen's issuing thread never waits) and completes it when the answer
arrives. The SUT times each query too, from the moment LoadGen handed it over: :class:`Run`
holds LoadGen's summary (its p50/p90/p99, achieved rate, VALID or INVALID and why) beside the
adapter's own p50 and achieved rate, so the two can be compared.

A refused request (503: the server shed it) still completes its query for LoadGen, which would
count its quick refusal as a fast answer: the run counts them (``shed``), and the figure and
table say so.

Not for: starting servers (:mod:`labkit.serve.process`).
"""

from __future__ import annotations

import http.client
import json
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["REFERENCE_BOUNDS", "Run", "figure", "run_server_scenario", "table"]

#: latency bounds from elsewhere, named for what they are (none of them is this machine's)
REFERENCE_BOUNDS = {
    "MLPerf Inference ResNet-50, Server scenario (224 px, datacenter systems)": 15.0,
    "the seed articles' real-time recommender (a different model and task)": 100.0,
}


@dataclass
class Run:
    """One LoadGen Server-scenario run at one target rate, and the SUT's own view of it."""

    label: str
    target_qps: float
    bound_ms: float
    result: str  #: VALID or INVALID, LoadGen's word
    why: list[str]  #: LoadGen's checks that failed, and its recommendations
    achieved_qps: float  #: LoadGen's "Completed samples per second"
    p50_ms: float
    p90_ms: float
    p99_ms: float
    queries: int
    own_achieved_qps: float  #: answers / (last answer - first hand-over), measured by the SUT
    own_p50_ms: float  #: hand-over to answer, measured by the SUT
    shed: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    summary: str = field(default="", repr=False)  #: LoadGen's mlperf_log_summary.txt

    @property
    def valid(self) -> bool:
        return self.result == "VALID" and not self.shed and not self.errors

    def __repr__(self) -> str:
        extra = f", {self.shed} shed" if self.shed else ""
        return (
            f"<{self.label} at {self.target_qps:g}/s: {self.result}{extra}; achieved "
            f"{self.achieved_qps:.1f}/s, p50 {self.p50_ms:.1f} ms, p99 {self.p99_ms:.1f} ms>"
        )


class _HttpSut:
    """Sends each query as one binary v2 request from a pool of keep-alive connections."""

    def __init__(self, url: str, model: str, images: np.ndarray, threads: int):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost"):
            raise ValueError(f"{url}: the lab drives servers on http://127.0.0.1 only")
        self.host, self.port = parts.hostname, parts.port or 80
        self.path = f"/v2/models/{model}/infer"
        self.bodies = [_binary_request(x[None]) for x in images]
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="sut")
        self.local = threading.local()
        self.lock = threading.Lock()
        self.handed, self.done, self.latencies = [], [], []
        self.shed, self.errors = 0, {}

    def issue(self, samples) -> None:  # LoadGen's thread: hand over, never wait
        for s in samples:
            self.pool.submit(self.send, s.id, s.index, time.perf_counter())

    def send(self, query_id: int, index: int, handed: float) -> None:
        import mlperf_loadgen as lg

        head, body = self.bodies[index % len(self.bodies)]
        try:
            status = self.post(head, body)
        except Exception as exc:  # noqa: BLE001  (LoadGen waits for every query: complete it)
            self.local.conn = None
            status = type(exc).__name__
        now = time.perf_counter()
        with self.lock:
            if status == 200:
                self.handed.append(handed)
                self.done.append(now)
                self.latencies.append(now - handed)
            elif status == 503:
                self.shed += 1
            else:
                self.errors[str(status)] = self.errors.get(str(status), 0) + 1
        lg.QuerySamplesComplete([lg.QuerySampleResponse(query_id, 0, 0)])

    def post(self, head: dict, body: bytes) -> int:
        """One request; once more on a new connection if the kept-alive one was closed idle."""
        for retry in (False, True):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
                self.local.conn = conn
            try:
                conn.request("POST", self.path, body, head)
                answer = conn.getresponse()
                answer.read()
                return answer.status
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
                conn.close()
                self.local.conn = None
                if retry:
                    raise
        raise AssertionError("unreachable")


def _binary_request(images: np.ndarray) -> tuple[dict, bytes]:
    raw = np.ascontiguousarray(images, np.float32).tobytes()
    tensor = {"name": "images", "shape": list(images.shape), "datatype": "FP32"}
    head = json.dumps({"inputs": [{**tensor, "parameters": {"binary_data_size": len(raw)}}],
                       "outputs": [{"name": "logits", "parameters": {"binary_data": True}}]})  # fmt: skip
    headers = {"Inference-Header-Content-Length": str(len(head)),
               "Content-Type": "application/octet-stream"}  # fmt: skip
    return headers, head.encode() + raw


def read_summary(text: str) -> dict[str, str]:
    """``key : value`` lines of LoadGen's summary, and ``why``: its failed checks and advice."""
    fields, why, bullet = {}, [], False
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip()] = value.strip()
            if value.strip() == "NO":
                why.append(f"{key.strip()}: NO")
        elif line.strip().startswith("*"):
            why.append(line.strip(" *"))
        elif bullet and line.strip():  # a bullet's sentence goes on
            why[-1] += " " + line.strip()
        bullet = line.strip().startswith("*") or (bullet and bool(line.strip()) and not sep)
    fields["why"] = why
    return fields


def _ns_ms(fields: dict, key: str) -> float:
    return float(fields.get(key, "nan")) / 1e6


def run_server_scenario(
    url: str, images: np.ndarray, rates, bound_ms: float, duration_s: float = 10.0,
    min_queries: int = 100, label: str = "", model: str = "resnet50", threads: int = 16,
) -> list[Run]:  # fmt: skip
    """One LoadGen Server-scenario run per rate in ``rates`` (queries/s) against ``url``, each
    at least ``duration_s`` seconds and ``min_queries`` queries, with the p99 bound ``bound_ms``
    (yours to choose: LoadGen judges the run against it). ``images`` (N, 3, H, W) are the
    samples, one per query."""
    import mlperf_loadgen as lg

    rates = [float(r) for r in rates]
    if bound_ms <= 0 or duration_s <= 0 or min_queries < 1 or not all(r > 0 for r in rates):
        raise ValueError(f"need rates and bound_ms, duration_s > 0, min_queries >= 1; got "
                         f"{rates}, {bound_ms}, {duration_s}, {min_queries}")  # fmt: skip
    runs = []
    for rate in rates:
        sut = _HttpSut(url, model, images, threads)
        settings = lg.TestSettings()
        settings.scenario, settings.mode = lg.TestScenario.Server, lg.TestMode.PerformanceOnly
        settings.server_target_qps = float(rate)
        settings.server_target_latency_ns = int(bound_ms * 1e6)
        settings.min_duration_ms, settings.min_query_count = int(duration_s * 1e3), min_queries
        handle = lg.ConstructSUT(sut.issue, lambda: None)
        qsl = lg.ConstructQSL(len(images), len(images), lambda s: None, lambda s: None)
        with tempfile.TemporaryDirectory(prefix="labkit-loadgen-") as out:
            logs = lg.LogSettings()
            logs.log_output.outdir, logs.log_output.copy_summary_to_stdout = out, False
            try:
                lg.StartTestWithLogSettings(handle, qsl, settings, logs)
            finally:
                lg.DestroyQSL(qsl)
                lg.DestroySUT(handle)
                sut.pool.shutdown(wait=True)
            text = (Path(out) / "mlperf_log_summary.txt").read_text()
        runs.append(_record(label, rate, bound_ms, text, sut))
    return runs


def _record(label: str, rate: float, bound_ms: float, text: str, sut: _HttpSut) -> Run:
    f = read_summary(text)
    span = max(sut.done) - min(sut.handed) if sut.done else 0.0
    return Run(
        label, float(rate), bound_ms, f.get("Result is", "?"), f["why"],
        float(f.get("Completed samples per second", "nan")),
        _ns_ms(f, "50.00 percentile latency (ns)"), _ns_ms(f, "90.00 percentile latency (ns)"),
        _ns_ms(f, "99.00 percentile latency (ns)"),
        len(sut.done) + sut.shed + sum(sut.errors.values()),
        len(sut.done) / span if span > 0 else float("nan"),
        float(np.median(sut.latencies) * 1e3) if sut.latencies else float("nan"),
        sut.shed, dict(sut.errors), text,
    )  # fmt: skip


def table(runs: list[Run]) -> str:
    """A markdown table of ``runs``: LoadGen's figures beside the SUT's own."""
    head = ("server", "target /s", "LoadGen achieved /s", "own /s", "p50 ms", "own p50 ms",
            "p90 ms", "p99 ms", "result", "why")  # fmt: skip
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in runs:
        shed = [f"{r.shed} shed (503)"] if r.shed else []
        why = "; ".join(r.why[:2] + shed + [f"{n} x {k}" for k, n in r.errors.items()])
        cells = (r.label, f"{r.target_qps:g}", f"{r.achieved_qps:.1f}",
                 f"{r.own_achieved_qps:.1f}", f"{r.p50_ms:.1f}", f"{r.own_p50_ms:.1f}",
                 f"{r.p90_ms:.1f}", f"{r.p99_ms:.1f}", r.result, why or "-")  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def figure(runs: list[Run], title: str = "p99 latency against the target rate"):
    """p99 and p50 (LoadGen's) against the target rate, one line per server label, the bound as
    a line; an invalid run (LoadGen's INVALID, or requests shed) is drawn hollow."""
    from matplotlib.figure import Figure  # not pyplot: shown once, where it is displayed

    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.subplots()
    for label in dict.fromkeys(r.label for r in runs):
        mine = sorted((r for r in runs if r.label == label), key=lambda r: r.target_qps)
        x = [r.target_qps for r in mine]
        (line,) = ax.plot(x, [r.p99_ms for r in mine], marker="o", label=f"{label}: p99")
        ax.plot(x, [r.p50_ms for r in mine], lw=0.8, ls="--", color=line.get_color())
        for r in mine:
            if not r.valid:
                ax.plot(r.target_qps, r.p99_ms, "o", mfc="white", color=line.get_color())
    if runs:
        ax.axhline(
            runs[0].bound_ms, color="black", lw=1, label=f"your bound {runs[0].bound_ms:g} ms"
        )
    ax.set(xlabel="target rate (queries/s, Poisson)", ylabel="latency (ms; p50 dashed)",
           yscale="log", title=title)  # fmt: skip
    ax.legend(fontsize=7)
    return fig
