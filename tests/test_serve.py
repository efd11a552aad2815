"""labkit.serve: the Open Inference Protocol's requests and refusals, dynamic batching and load
shedding, serving records and their verdict; then real servers (torch eager and ONNX Runtime at
the smoke profile's width) driven by the real load generator, every bad request answered with a
4xx while the server keeps serving, overload shed with 503, and no process left behind after
Ctrl-C or a killed parent, every server listening on 127.0.0.1 only.

Cost under smoke: the unit tests a few seconds; the server tests about a minute (each server
starts in a few seconds; ONNX Runtime's export is cached after its first run).
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time

from labkit import resnet, results, serve
from labkit.results import sweeps
from labkit.serve import batching, loadgen, protocol, records
from labkit.sources import claims
from labkit.util import net

import httpx
import numpy as np
import psutil
import pytest
from conftest import ROOT, require

SIZE = 32  # the smoke profile's images
SPEC = protocol.TensorSpec("images", "FP32", (-1, 3, SIZE, SIZE), 4)
INFER = f"/v2/models/{serve.MODEL_NAME}/infer"


def images(n: int = 1) -> np.ndarray:
    return resnet.random_batch(n, SIZE)[0]


# ---- the protocol ----------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_a_request_reads_back_as_the_images_it_carries(binary):
    x = images(3)
    body, headers = protocol.request_body(x, binary=binary, request_id="7")
    req = protocol.parse_request(body, headers.get(protocol.HEADER_LENGTH), SPEC)
    assert np.array_equal(req.tensor, x) and req.id == "7" and req.binary_output is binary
    out, out_headers = protocol.response_body("resnet50", "1", "logits", x[:, 0, 0, :3], req)
    back = protocol.parse_response(out, out_headers.get(protocol.HEADER_LENGTH))
    assert np.array_equal(back, x[:, 0, 0, :3])


def _json(**tensor) -> bytes:
    base = {"name": "images", "shape": [1, 3, SIZE, SIZE], "datatype": "FP32"}
    base.update(tensor)
    return json.dumps({"inputs": [base]}).encode()


FULL = [0.5] * (3 * SIZE * SIZE)
#: (body, header length, what the 400's message names)
BAD = {
    "garbage": (b"\x00garbage{", None, "not JSON"),
    "not an object": (b"[1, 2]", None, "must be a JSON object"),
    "no inputs": (b'{"outputs": []}', None, "no 'inputs'"),
    "another name": (_json(name="pixels", data=FULL), None, "named 'images', not 'pixels'"),
    "wrong datatype": (_json(datatype="INT64", data=[1] * len(FULL)), None, "datatype 'INT64'"),
    "wrong shape": (_json(shape=[1, 3, 64, 64], data=[0.5] * 12288), None, "has shape [1, 3, 64"),
    "batch too large": (_json(shape=[9, 3, SIZE, SIZE], data=FULL * 9), None, "with N from 1 to"),
    "too few values": (_json(data=[0.5] * 10), None, "holds 3072 values, data has 10"),
    "not numbers": (_json(data=["a"] * len(FULL)), None, "numbers only"),
    "NaN": (b'{"inputs": [{"name": "images", "data": [NaN]}]}', None, "not JSON"),
    "infinite": (_json(data=[1e39] * len(FULL)), None, "NaN or infinite"),
    "binary size": (
        _json(parameters={"binary_data_size": 12}) + b"x" * 12,
        "-1",
        "binary_data_size is 12 and 12 bytes follow",
    ),
    "header length": (_json(data=FULL), "many", "not a byte count"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_every_bad_request_is_a_400_that_names_the_problem(case):
    body, length, named = BAD[case]
    if length == "-1":
        length = str(len(body) - 12)
    with pytest.raises(protocol.BadRequest, match=named.replace("[", r"\[")) as caught:
        protocol.parse_request(body, length, SPEC)
    assert caught.value.status == 400


# ---- batching --------------------------------------------------------------------------------


def _batcher(**options):
    seen = []

    def predict(x):
        seen.append(len(x))
        return x.reshape(len(x), -1)[:, :2] * 2

    return batching.Batcher(predict, batching.ModelThread(), **options), seen


async def _arrivals(batcher, sizes, gap_s):
    loop = asyncio.create_task(batcher.run())
    tasks = []
    for n in sizes:
        tasks.append(asyncio.create_task(batcher.submit(images(n))))
        await asyncio.sleep(gap_s)
    out = await asyncio.gather(*tasks, return_exceptions=True)
    loop.cancel()
    return out


def test_requests_within_the_wait_run_as_one_batch_and_each_gets_its_own_rows():
    batcher, seen = _batcher(max_batch=8, max_wait_s=0.2)
    out = asyncio.run(_arrivals(batcher, [1, 2, 1], gap_s=0.01))
    assert seen == [4]  # one model call for the three requests
    assert [o.shape for o in out] == [(1, 2), (2, 2), (1, 2)]
    assert np.allclose(out[1], images(2).reshape(2, -1)[:, :2] * 2)
    assert batcher.stats.requests == 3 and batcher.stats.batches == 1
    assert batcher.stats.batch_sizes == {4: 1} and batcher.stats.queue_s > 0


def test_batching_off_runs_every_request_alone_in_arrival_order():
    batcher, seen = _batcher(max_batch=1)
    asyncio.run(_arrivals(batcher, [1, 1, 1], gap_s=0.0))
    assert seen == [1, 1, 1]


def test_a_batch_never_exceeds_max_batch_and_padding_runs_powers_of_two():
    batcher, seen = _batcher(max_batch=4, max_wait_s=0.2, pad=True, warmed={1, 2, 4})
    asyncio.run(_arrivals(batcher, [2, 1, 2], gap_s=0.01))
    assert seen == [4, 2]  # 2+1 padded to 4, then the last request alone
    assert batcher.stats.padded_images == 1 and batcher.stats.new_shapes == 0
    unpadded, sizes = _batcher(max_batch=4, max_wait_s=0.2, warmed={1, 4})
    asyncio.run(_arrivals(unpadded, [2, 1], gap_s=0.01))
    assert sizes == [3] and unpadded.stats.new_shapes == 1  # 3 was never run before
    assert batching.warm_shapes(8, pad=True) == [1, 2, 4, 8]
    assert batching.warm_shapes(8, pad=False) == [1, 8]


def test_past_its_queue_the_batcher_refuses_at_once_instead_of_queueing():
    batcher, _ = _batcher(max_batch=1, max_queue=2)

    async def flood_then_serve():
        loop = asyncio.create_task(batcher.run())
        first = [asyncio.create_task(batcher.submit(images(1))) for _ in range(5)]
        got = await asyncio.gather(*first, return_exceptions=True)
        after = await batcher.submit(images(1))  # and it still serves
        loop.cancel()
        return got, after

    got, after = asyncio.run(flood_then_serve())
    refused = [g for g in got if isinstance(g, batching.Overloaded)]
    assert len(refused) == 3 and "2 images already wait" in str(refused[0])
    assert batcher.stats.shed == 3 and after.shape == (1, 2)


# ---- records and their verdict ---------------------------------------------------------------


def test_the_p99_bound_is_the_seeds_100_ms_scaled_to_the_image_and_says_so():
    assert records.p99_bound(224) == pytest.approx(0.100)
    standard = records.p99_bound(128)
    assert standard == pytest.approx(0.100 * (128 / 224) ** 2) and "128x128" in standard.why
    smoke = records.p99_bound(32)
    assert smoke == records.FLOOR_S and "raised to 25 ms" in smoke.why


def _step(rate, latencies, shed=0, timeouts=0, errors=0, wall=10.0):
    step = loadgen.Step("poisson", rate, None, 2.0, requests=len(latencies) + shed + timeouts)
    step.requests += errors
    step.latencies_s = list(latencies)
    step.started = 100.0
    step.planned_s = wall
    step.done_at = [100.0 + wall * (i + 0.5) / len(latencies) for i in range(len(latencies))]
    step.lags_s = [0.0005] * step.requests
    step.shed, step.timeouts, step.errors, step.wall_s = shed, timeouts, errors, wall
    return step


SERVER = {
    "framework": "torch",
    "mode": "eager",
    "max_batch": 1,
    "image_size": 128,
    "profile": "standard",
    "first_call_s": 0.05,
    "warmup_calls": 2,
    "threads": {"intra": 1, "inter": 1},
}


def _record(step, **server):
    stats = {"peak_rss_mb": 400.0}
    return records.step_record(
        step,
        {**SERVER, **server},
        {},
        stats,
        encoding="binary",
        client_cpus=[0],
        bound_s=records.p99_bound(128),
        machine={"logical_cpus": 2},
    )


def test_a_step_becomes_a_valid_serve_record_that_round_trips_through_a_results_file(tmp_path):
    rng = np.random.default_rng(0)
    r = _record(_step(10, rng.uniform(0.010, 0.020, 200)))
    assert r["task"] == "serve" and r["status"] == "ok" and r["valid"], r["invalid_reasons"]
    assert r["median_s"] < r["p90_s"] < r["p99_s"] <= 0.020 and len(r["times_s"]) == 200
    assert r["achieved_rps"] == pytest.approx(20.0) and r["offered_rps"] == 10
    assert sweeps.meets(r) and r["p99_bound_s"] == pytest.approx(0.0327, rel=1e-2)
    path = tmp_path / "serve.jsonl"
    results.append(path, r)
    assert results.load(path) == [r]


def test_an_old_record_without_the_serving_fields_still_loads(tmp_path):
    old = results.make(
        framework="torch", mode="eager", task="latency", batch_size=1, precision="fp32",
        image_size=32, device="cpu", threads=1, profile="smoke", status="failed", error="boom",
    )  # fmt: skip
    from labkit.results.serving import SERVE_FIELDS

    serving_fields = [f for f in results.ADDED_IN_2 if f in SERVE_FIELDS]
    assert serving_fields
    for field in serving_fields:
        del old[field]
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(old) + "\n")
    (back,) = results.load(path)
    assert all(back[f] is None for f in serving_fields) and back["error"] == "boom"


def test_the_serving_verdict_names_each_rule_a_step_broke():
    few = _record(_step(10, [0.01] * 30, wall=3.0))
    assert any("fewer than the 100 a p99 needs" in x for x in few["invalid_reasons"])
    failing = _record(_step(10, [0.01] * 200, errors=10))
    assert any("10 of 210 requests failed" in x for x in failing["invalid_reasons"])
    late = _step(10, [0.01] * 200)
    late.lags_s = [0.05] * late.requests
    assert any("fell behind" in x for x in _record(late)["invalid_reasons"])
    uneven = _step(10, [0.01] * 200)
    uneven.done_at = [100.0 + 1.0 * i / 200 for i in range(200)]  # every answer in the first half
    assert any("unsteady achieved rate" in x for x in _record(uneven)["invalid_reasons"])
    shed = _record(_step(10, [0.01] * 200, shed=50))
    assert shed["valid"] and not sweeps.meets(shed)  # overload is a result, not a broken run


def test_capacity_is_the_highest_rate_under_the_bound_and_the_knee_where_latency_turns_up():
    rng = np.random.default_rng(1)
    steps = [
        _record(_step(5, rng.uniform(0.010, 0.012, 150))),
        _record(_step(10, rng.uniform(0.010, 0.015, 150))),
        _record(_step(20, rng.uniform(0.030, 0.040, 150))),
        _record(_step(40, rng.uniform(0.2, 0.5, 150), shed=40)),
    ]
    assert sweeps.capacity(steps) == 10 and sweeps.knee(steps) == 20
    assert sweeps.capacity(steps, bound_s=0.050) == 20
    assert sweeps.capacity(steps[2:]) is None
    assert "| torch/eager | off | 40/s |" in records.table(steps)


def test_the_load_generator_drives_this_machine_only():
    assert loadgen.check_url("http://127.0.0.1:8000/") == "http://127.0.0.1:8000"
    for url in ("http://example.com:8000", "http://10.1.2.3:8000", "ftp://127.0.0.1:8000"):
        with pytest.raises(ValueError, match="127.0.0.1"):
            loadgen.check_url(url)


# ---- real servers ----------------------------------------------------------------------------


def _listening(pid: int) -> list[tuple[str, int]]:
    procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    return [
        (c.laddr.ip, c.laddr.port)
        for p in procs
        for c in p.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]


@pytest.mark.slow
@pytest.mark.parametrize("framework,mode", [("torch", "eager"), ("onnxruntime", "ort")])
def test_a_real_server_driven_at_two_rates_gives_records_with_latencies_and_verdicts(
    framework, mode, tmp_path
):
    require(framework)
    out = tmp_path / "serve.jsonl"
    with serve.Server(framework, mode, max_batch=4, max_wait_ms=2) as server:
        assert _listening(server.process.pid) == [("127.0.0.1", server.port)]  # loopback only
        found = serve.run_load(server.url, serve.Plan(rates=[10, 30], duration_s=2.5, out=out))
        params = server.metadata()["parameters"]
    assert params["network"].startswith("a narrow ResNet-50 (width 16")
    assert server.process.returncode is not None and not psutil.pid_exists(server.process.pid)
    assert results.load(out) == found and [r["offered_rps"] for r in found] == [10, 30]
    for r in found:
        assert (r["framework"], r["mode"], r["task"], r["batch_size"]) == (
            framework,
            mode,
            "serve",
            4,
        )
        assert r["status"] == "ok" and len(r["times_s"]) == r["repeats"] > 10
        assert 0 < r["median_s"] <= r["p90_s"] <= r["p99_s"] and r["achieved_rps"] > 0
        assert isinstance(r["valid"], bool) and r["valid"] == (not r["invalid_reasons"])
        assert r["server_stats"]["batches"] >= 1 and r["server_stats"]["mean_batch"] >= 1
        assert r["encoding"] == "binary" and r["p99_bound_s"] == records.p99_bound(SIZE)
        assert r["machine"] and r["versions"]["fastapi"] and r["server_cpus"] != r["client_cpus"]


@pytest.fixture(scope="module")
def torch_server():
    require("torch")
    with serve.Server("torch", "eager", max_batch=1, max_queue=1, cpus=None) as server:
        yield server


def _good(url: str) -> int:
    body, headers = protocol.request_body(images(1))
    return httpx.post(url + INFER, content=body, headers=headers, timeout=30).status_code


@pytest.mark.slow
def test_each_bad_request_gets_a_4xx_naming_it_and_the_server_keeps_serving(torch_server):
    url = torch_server.url
    sent = [(case, body, {protocol.HEADER_LENGTH: length} if length else {}, 400, named)
            for case, (body, length, named) in BAD.items() if length != "-1"]  # fmt: skip
    sent += [
        ("another model", _json(data=FULL), {}, 404, "no model 'vgg'", "/v2/models/vgg/infer"),
        ("oversize", b"0" * 2_000_000, {}, 413, "the most this server reads"),
        ("no such path", b"", {}, 404, "Open Inference Protocol under /v2", "/v1/predict"),
    ]
    for case, body, headers, status, named, *path in sent:
        r = httpx.post(url + (path[0] if path else INFER), content=body, headers=headers)
        assert r.status_code == status and named in r.json()["error"], (case, r.text)
        assert _good(url) == 200, f"the server stopped answering after {case!r}"

    def chunks():  # no Content-Length: refused while it streams past the limit
        for _ in range(100):
            yield b"0" * 65536

    r = httpx.post(url + INFER, content=chunks())
    assert r.status_code == 413 and _good(url) == 200


@pytest.mark.slow
def test_past_capacity_the_server_sheds_with_503_and_a_reason(torch_server):
    async def flood():
        body, headers = protocol.request_body(images(1))
        async with httpx.AsyncClient(timeout=30) as client:
            post = lambda: client.post(torch_server.url + INFER, content=body, headers=headers)
            return await asyncio.gather(*(post() for _ in range(40)))

    answers = asyncio.run(flood())
    shed = [a for a in answers if a.status_code == 503]
    assert shed and all(a.status_code in (200, 503) for a in answers)
    assert "overloaded" in shed[0].json()["error"] and shed[0].headers["Retry-After"] == "1"
    assert _good(torch_server.url) == 200


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.slow
def test_ctrl_c_to_the_load_command_leaves_no_process_and_frees_the_port(tmp_path):
    require("torch")
    out = tmp_path / "steps.jsonl"
    command = [sys.executable, "-m", "labkit", "load", "--serve", "torch/eager", "--rates",
               "20,20,20", "--duration", "30", "--out", str(out)]  # fmt: skip
    job = subprocess.Popen(command, cwd=ROOT, env=_env(), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        listening = []
        while time.monotonic() < deadline and not listening:
            time.sleep(0.5)
            listening = [a for a in _listening(job.pid) if a[1] > 0]
        descendants = psutil.Process(job.pid).children(recursive=True)
        assert descendants and listening, "the server never came up"
        assert {ip for ip, _ in listening} == {"127.0.0.1"}
        time.sleep(3)  # requests in flight
        job.send_signal(signal.SIGINT)
        assert job.wait(timeout=60) == 130
    finally:
        if job.poll() is None:
            job.kill()
    assert "interrupted: the steps measured so far are kept" in job.stderr.read()
    _gone, alive = psutil.wait_procs(descendants, timeout=15)
    assert not alive, f"left behind: {[p.cmdline() for p in alive]}"
    for _, port in listening:
        assert net.check_port(port, reuse=True) == port


@pytest.mark.slow
def test_a_server_whose_parent_is_killed_stops_by_itself(tmp_path):
    require("torch")
    script = (
        "import sys, time\n"
        "from labkit import serve\n"
        "s = serve.Server('torch', 'eager', cpus=None).start()\n"
        "print(s.process.pid, s.port, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=_env(),
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        pid, port = map(int, parent.stdout.readline().split())
        assert psutil.pid_exists(pid)
        parent.kill()  # SIGKILL: no cleanup of its own can run
        parent.wait(timeout=30)
        _gone, alive = psutil.wait_procs([psutil.Process(pid)], timeout=20)
        assert not alive, "the server outlived its parent"
        assert net.check_port(port, reuse=True) == port
    finally:
        if parent.poll() is None:
            parent.kill()


def _ladder(mode, batch, latencies_by_rate, **server):
    out = []
    for rate, (low, high, shed) in latencies_by_rate.items():
        lat = np.random.default_rng(int(rate)).uniform(low, high, 150)
        out.append(_record(_step(rate, lat, shed=shed), mode=mode, max_batch=batch, **server))
    return out


def test_the_summary_and_the_claim_rows_read_a_run_as_it_went():
    eager = _ladder("eager", 1, {5: (0.010, 0.012, 0), 10: (0.03, 0.05, 0), 20: (0.3, 0.9, 30)})
    graph = _ladder(
        "compile", 1, {5: (0.006, 0.008, 0), 10: (0.008, 0.010, 0), 20: (0.01, 0.02, 0)}
    )
    batched = _ladder("eager", 4, {5: (0.040, 0.050, 0)}, max_wait_ms=2.0, padding="none")
    rows = {(r["mode"], r["max_batch"]): r for r in sweeps.summary(eager + graph + batched)}
    assert rows["eager", 1]["capacity_rps"] == 5 and rows["eager", 1]["knee_rps"] == 10
    assert rows["compile", 1]["capacity_rps"] == 20 and rows["compile", 1]["at_least"]
    assert "at least 20 requests/s" in records.summary_table(list(rows.values()))
    verdicts = {c["claim"]: c for c in claims.serving.check(eager + graph + batched)}
    concurrency = verdicts[claims.serving.CLAIMS["graph_concurrency"]]
    assert (
        concurrency["verdict"] == "holds here"
        and "compile 20 requests/s vs torch eager 5" in (concurrency["measured here"])
    )
    assert verdicts[claims.serving.CLAIMS["serving_system"]]["verdict"] == "not measured here"
    realtime = verdicts[claims.serving.CLAIMS["realtime"]]
    assert (
        realtime["verdict"] == "holds here" and "2 of 3 configurations" in realtime["measured here"]
    )
    assert "| claim | seeds | verdict |" in claims.serving.markdown(list(verdicts.values()))
    fig = serve.figures.latency_vs_load(eager + graph)
    lat, got = fig.axes
    assert len(got.lines) == 3 and lat.get_yscale() == "log"  # 2 configurations and the diagonal


def test_an_open_loop_step_offers_at_least_its_minimum_of_requests():
    """Poisson arrivals for the duration, or until the minimum is reached if that comes later;
    sent to a real (tiny) server of this test's own on 127.0.0.1."""
    import uvicorn
    from fastapi import FastAPI

    app = FastAPI()

    @app.post("/infer")
    async def infer():
        return {}

    port = net.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)

    async def steps():
        async with httpx.AsyncClient() as client:
            url = f"http://127.0.0.1:{port}/infer"
            few = await loadgen.poisson_step(client, url, b"", {}, 20, 0.5, 1000, 2.0)
            more = await loadgen.poisson_step(client, url, b"", {}, 20, 0.5, 1000, 2.0, 0, 40)
            return few, more

    try:
        few, more = asyncio.run(steps())
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert few.requests < 40 and more.requests == 40 == more.answered
    assert more.planned_s > 1.0  # the window grew to the 40th arrival
