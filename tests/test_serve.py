"""The lesson's server (notebooks/serving/resnet_server.py) against a real client, real load and
real abuse, and labkit.serve's LoadGen adapter.

- tritonclient's HTTP client (the client a practitioner uses) gets health, metadata (version 1
  included) and the network's logits, as JSON and as binary tensors;
- bad requests get a 4xx that names the problem, and the server keeps serving;
- slow clients holding their bodies open do not starve the others (a body-read timeout);
- past its queue it sheds with 503 and Retry-After; it batches concurrent requests;
- it listens on 127.0.0.1 only; after SIGINT, SIGTERM or SIGKILL no process and no file is left;
- a LoadGen Server-scenario run is read into a record (no timing is asserted).
"""

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from labkit import resnet, serve
from labkit.serve import loadgen

import httpx
import numpy as np
import psutil
import pytest
from conftest import require

SCRIPT = Path(__file__).parents[1] / "notebooks" / "serving" / "resnet_server.py"
SIZE, WIDTH = 32, 16
INFER = "/v2/models/resnet50/infer"
pytestmark = pytest.mark.slow


def start(*args, **kw):
    return serve.Server(SCRIPT, ["--image-size", SIZE, "--width", WIDTH, *args], **kw)


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require("torch")
    with start("--max-batch", "4", "--max-wait-ms", "50", "--body-timeout-s", "2") as u:
        yield u


@pytest.fixture(scope="module")
def reference():
    """Images and the logits this process computes for them (the same seed-0 weights)."""
    torch_adapter = require("torch")
    model = torch_adapter.build_resnet50(resnet.init_weights(0, 1000, WIDTH))
    images = resnet.random_batch(3, SIZE, seed=1)[0]
    return images, torch_adapter.predict(model.eval(), images)


def good_request(images):
    data = images.ravel().tolist()
    return {"inputs": [{"name": "images", "shape": list(images.shape), "datatype": "FP32",
                        "data": data}]}  # fmt: skip


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_tritonclient_gets_the_networks_logits(url, reference, binary):
    import tritonclient.http as triton

    images, want = reference
    client = triton.InferenceServerClient(url.removeprefix("http://"))
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("resnet50") and client.is_model_ready("resnet50", "1")
    meta = client.get_model_metadata("resnet50", "1")
    assert meta["versions"] == ["1"] and meta["inputs"][0]["shape"] == [-1, 3, SIZE, SIZE]
    tensor = triton.InferInput("images", list(images.shape), "FP32")
    tensor.set_data_from_numpy(images, binary_data=binary)
    wanted = triton.InferRequestedOutput("logits", binary_data=binary)
    got = client.infer("resnet50", [tensor], outputs=[wanted]).as_numpy("logits")
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_bad_requests_get_a_4xx_that_names_the_problem(url, reference):
    images = reference[0][:1]
    good = good_request(images)
    tensor = good["inputs"][0]
    head = json.dumps({"inputs": [{**tensor, "data": None}]}).encode()
    cases = {
        "shape": (json.dumps({"inputs": [{**tensor, "shape": [1, 3, 16, 16]}]}), {}, 400),
        "datatype": (json.dumps({"inputs": [{**tensor, "datatype": "INT8"}]}), {}, 400),
        "not an inference request": (b"{images: [1, 2", {}, 400),
        "numbers for shape": (json.dumps({"inputs": [{**tensor, "data": [1.0]}]}), {}, 400),
        "binary bytes": (
            head + b"\0" * 8,
            {"Inference-Header-Content-Length": str(len(head))},
            400,
        ),
        "body over": (b"0" * 400_000, {}, 413),
        "uncompressed": (b"\x1f\x8b" + b"0" * 20, {"Content-Encoding": "gzip"}, 415),
        "1 <= n <= 4": (json.dumps(good_request(np.zeros((5, 3, SIZE, SIZE)))), {}, 400),
    }
    with httpx.Client(base_url=url, timeout=30) as client:
        for words, (body, headers, status) in cases.items():
            r = client.post(INFER, content=body, headers=headers)
            assert r.status_code == status and words in r.json()["error"], (words, r.text)
        r = client.get(INFER)
        assert r.status_code == 405 and r.headers["allow"] == "POST" and r.json()["error"]
        assert client.post("/v2/models/vgg/infer", json=good).status_code == 404
        assert client.post(INFER, json=good).status_code == 200  # and it still serves


def hold_body_open(port: int, stop: threading.Event) -> bytes:
    """A slow client: announces 100 kB, sends 10 bytes, then waits; returns what it got."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"POST {INFER} HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n".encode())
        s.sendall(b'{"inputs":')
        stop.wait(30)
        return s.recv(4096)


def test_slow_clients_do_not_starve_the_others(url, reference):
    port, stop = int(url.rsplit(":", 1)[1]), threading.Event()
    with ThreadPoolExecutor(40) as pool:
        slow = [pool.submit(hold_body_open, port, stop) for _ in range(40)]
        time.sleep(0.5)  # all 40 hold a connection and a half-sent body now
        with httpx.Client(base_url=url, timeout=30) as client:
            answers = [client.post(INFER, json=good_request(reference[0][:1])) for _ in range(5)]
        assert [r.status_code for r in answers] == [200] * 5
        time.sleep(2.5)  # past the server's 2 s body-read timeout
        stop.set()
        said = [f.result() for f in slow]
    assert all(b" 408 " in s.split(b"\r\n")[0] for s in said), said[:3]


def test_past_its_queue_it_sheds_with_503_and_batches_what_it_keeps(reference):
    body = json.dumps(good_request(reference[0][:1]))
    with start("--max-batch", "2", "--max-wait-ms", "20", "--max-queue", "2") as u:

        def post(_):
            return httpx.post(u + INFER, content=body, timeout=60)

        with ThreadPoolExecutor(24) as pool:
            answers = list(pool.map(post, range(48)))
        stats = httpx.get(u + "/v2/models/resnet50/stats").json()
    codes = sorted({r.status_code for r in answers})
    assert codes == [200, 503], codes
    shed = [r for r in answers if r.status_code == 503]
    assert all(r.headers["retry-after"] and "overloaded" in r.json()["error"] for r in shed)
    assert stats["shed"] == len(shed)
    assert stats["images"] >= 48 - len(shed) and stats["batches"] <= stats["images"]
    assert stats["warmed"] == [1, 2]


def test_it_listens_on_loopback_only(url):
    port = int(url.rsplit(":", 1)[1])
    owners = [c for c in psutil.net_connections("inet") if c.laddr and c.laddr.port == port]
    listening = {c.laddr.ip for c in owners if c.status == psutil.CONN_LISTEN}
    assert listening == {"127.0.0.1"}


def left_over(server: subprocess.Popen, tmp: Path) -> list[str]:
    gone = [p for p in psutil.process_iter(["pid"]) if p.pid == server.pid]
    return [str(p) for p in gone] + [str(f) for f in tmp.iterdir()]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_after_a_signal_no_process_and_no_file_is_left(sig, tmp_path, monkeypatch):
    require("torch")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    server = serve.Server(SCRIPT, ["--image-size", SIZE, "--width", WIDTH])
    with server as u:
        assert httpx.get(u + "/v2/health/ready").status_code == 200
        children = psutil.Process(server.process.pid).children(recursive=True)
        server.process.send_signal(sig)
        code = server.process.wait(30)
    assert code in (0, -sig), code
    assert not [c for c in children if c.is_running()]
    assert left_over(server.process, tmp) == []


LAUNCHER = """
import sys, time
from labkit import serve
server = serve.Server(sys.argv[1])
with server as url:
    print(url, server.process.stdout.readline().strip(), flush=True)
    time.sleep(120)
"""


def test_a_server_ends_with_the_process_that_started_it_even_one_killed(tmp_path):
    """A kernel killed (SIGKILL: no ``with`` block ends) takes its server and the server's
    children with it."""
    script = tmp_path / "server.py"
    script.write_text(
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        "print('ready http://127.0.0.1:9', child.pid, flush=True)\n"
        "print(sys.argv[0] == __file__, __name__, flush=True)\n"
        "time.sleep(120)\n"
    )
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(script)], stdout=subprocess.PIPE, text=True
    )
    try:
        # the url it said, and that it ran as a script would
        assert launcher.stdout.readline().split() == ["http://127.0.0.1:9", "True", "__main__"]
        (server,) = psutil.Process(launcher.pid).children()
        (child,) = server.children()
    finally:
        launcher.kill()
        launcher.wait(30)
        launcher.stdout.close()
    _, alive = psutil.wait_procs([server, child], timeout=10)
    assert not alive, f"survived the process that started them: {alive}"


def test_a_server_that_cannot_start_says_why(tmp_path):
    with pytest.raises(FileNotFoundError, match="no server script"):
        serve.Server(tmp_path / "missing.py")
    broken = tmp_path / "broken.py"
    broken.write_text("import sys\nsys.exit('no model here')\n")
    with (
        pytest.raises(RuntimeError, match="ended; its stderr ends:\nno model here"),
        serve.Server(broken),
    ):
        pass


def test_loadgen_server_scenario_is_read_into_a_record(url, tmp_path, monkeypatch):
    pytest.importorskip("mlperf_loadgen")
    monkeypatch.setattr(loadgen.tempfile, "tempdir", str(tmp_path))
    images = resnet.random_batch(8, SIZE)[0]
    (run,) = serve.run_server_scenario(
        url, images, [20], bound_ms=500, duration_s=1, min_queries=30, label="eager"
    )
    assert run.result in ("VALID", "INVALID") and "MLPerf Results Summary" in run.summary
    assert run.queries >= 30 and run.shed == 0 and run.errors == {}
    assert 0 < run.p50_ms <= run.p90_ms <= run.p99_ms and run.own_p50_ms > 0
    assert run.achieved_qps > 0 and run.own_achieved_qps > 0
    assert run.valid == (run.result == "VALID") and "eager at 20/s" in repr(run)
    assert "| eager | 20 |" in serve.table([run])
    (axes,) = serve.figure([run]).axes
    assert len(axes.get_lines()) >= 3  # p99, p50 and the bound
    assert list(tmp_path.iterdir()) == []  # LoadGen's log folder is gone


def test_loadgen_summary_lines_and_why():
    text = """Result is : INVALID
  Performance constraints satisfied : NO
  Min duration satisfied : Yes
Recommendations:
 * Reduce target QPS to improve latency.
Early Stopping Result:
 * Would need to run at least 9323 more queries,
 with the run being successful if every additional
 query were under latency.

50.00 percentile latency (ns)   : 74765728
"""
    fields = loadgen.read_summary(text)
    assert fields["Result is"] == "INVALID"
    assert fields["50.00 percentile latency (ns)"] == "74765728"
    assert fields["why"] == [
        "Performance constraints satisfied: NO",
        "Reduce target QPS to improve latency.",
        (
            "Would need to run at least 9323 more queries, with the run being successful if every "
            "additional query were under latency."
        ),
    ]


def test_the_adapter_drives_loopback_only_at_positive_rates():
    pytest.importorskip("mlperf_loadgen")
    with pytest.raises(ValueError, match="127.0.0.1 only"):
        serve.run_server_scenario("http://example.com:8000", np.zeros((1, 3, 4, 4)), [1], 100)
    with pytest.raises(ValueError, match=r"need rates .* > 0"):
        serve.run_server_scenario("http://127.0.0.1:1", np.zeros((1, 3, 4, 4)), [0], 100)


def test_the_script_is_short_and_listens_on_loopback():
    text = SCRIPT.read_text()
    assert len(text.splitlines()) <= 300
    assert "0.0.0.0" not in text and 'create_server(("127.0.0.1", args.port)' in text
    assert "os._exit" not in text
