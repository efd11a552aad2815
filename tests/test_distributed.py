"""labkit.distributed: real processes on loopback, their results, and clean-up.

The fast tests run plain-Python workers through TensorFlow's launcher (one ``python script``
per worker with its ``TF_CONFIG``: framework-free); the slow ones run notebook 08's worker
scripts with torchrun, TF_CONFIG and msrun. After each job no process it started may survive.
"""

import json
import os
import socket
import subprocess
import sys
import time

from labkit import distributed
from labkit.distributed import DistributedError, PortInUse

import psutil
import pytest
from conftest import ROOT, require

TIMEOUT = 300.0  # generous: a loaded 2-core machine starts framework workers slowly
SCRIPTS = ROOT / "notebooks" / "distributed"

FAKE = """
import argparse, json, os, subprocess, sys, time
from pathlib import Path
import numpy as np
p = argparse.ArgumentParser(); p.add_argument("--out", type=Path); p.add_argument("--mode")
args = p.parse_args()
rank = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
if args.mode == "crash" and rank == 0:
    print("worker 0 fails on purpose", flush=True); sys.exit(3)
if args.mode in ("crash", "hang"):
    time.sleep(120)
if args.mode == "straggler":  # a grandchild that outlives its worker
    kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    (args.out / f"straggler{rank}").write_text(str(kid.pid))
np.savez(args.out / f"rank{rank}.npz", w=np.full(3, 1.0 + rank * 1e-7, dtype=np.float32))
(args.out / f"rank{rank}.json").write_text(json.dumps({"rank": rank, "pid": os.getpid()}))
"""


@pytest.fixture
def fake(tmp_path):
    path = tmp_path / "fake_worker.py"
    path.write_text(FAKE)
    return path


def assert_all_gone(pids, within_s: float = 10.0):
    deadline = time.monotonic() + within_s
    while (alive := distributed.still_running(pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive, f"processes survived the job: {alive}"


def no_children_left():
    kids = [p for p in psutil.Process().children(recursive=True) if p.status() != "zombie"]
    assert not kids, f"child processes left behind: {[(p.pid, p.cmdline()[:4]) for p in kids]}"


def test_bad_input_names_the_problem(fake, tmp_path):
    with pytest.raises(ValueError, match="unknown framework 'jax'"):
        distributed.launch("jax", fake, out_dir=tmp_path)
    with pytest.raises(ValueError, match="onnxruntime has no data-parallel launcher"):
        distributed.launch("onnxruntime", fake, out_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="no worker script .*missing.py: give the path"):
        distributed.launch("torch", tmp_path / "missing.py", out_dir=tmp_path)
    with pytest.raises(ValueError, match="timeout must be > 0 seconds"):
        distributed.launch("torch", fake, out_dir=tmp_path, timeout=0)
    with pytest.raises(ValueError, match="at least one host"):
        distributed.cluster_commands("torch", "torch_ddp.py", [])


def test_a_port_in_use_is_refused_before_anything_starts(fake, tmp_path):
    with socket.socket() as busy:
        busy.bind((distributed.HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(PortInUse, match=rf"port {port} .*in use.*port=None for a free one"):
            distributed.launch("tensorflow", fake, out_dir=tmp_path, port=port)
    no_children_left()


def test_a_job_returns_what_each_worker_wrote_and_stops_what_they_left(fake, tmp_path):
    run = distributed.launch("tensorflow", fake, ["--mode", "straggler"], out_dir=tmp_path)
    assert [w["rank"] for w in run.workers] == [0, 1]
    assert run.max_difference_between_workers() == pytest.approx(1e-7, rel=0.2)
    stragglers = [int((tmp_path / f"straggler{r}").read_text()) for r in (0, 1)]
    assert set(stragglers) <= set(run.pids)  # seen, so stopped with the job
    assert_all_gone(run.pids)
    assert all(line.startswith("TF_CONFIG=") and " python " in line for line in run.shell())
    no_children_left()


def test_a_failing_worker_stops_the_whole_job_with_its_log(fake, tmp_path):
    with pytest.raises(DistributedError, match=r"(?s)exited with code 3.*fails on purpose"):
        distributed.launch("tensorflow", fake, ["--mode", "crash"], out_dir=tmp_path)
    no_children_left()


def test_a_hanging_job_hits_its_timeout_and_everything_is_stopped(fake, tmp_path):
    start = time.monotonic()
    with pytest.raises(DistributedError, match="ran past its timeout of 3 s; every process"):
        distributed.launch("tensorflow", fake, ["--mode", "hang"], out_dir=tmp_path, timeout=3)
    assert time.monotonic() - start < 3 + 20
    no_children_left()


def test_stop_returns_how_many_processes_were_still_running(tmp_path):
    tree = distributed.ProcessTree()
    env = dict(os.environ)
    with open(tmp_path / "log", "w") as log:
        tree.start([sys.executable, "-c", "pass"], env, log, cwd=tmp_path).wait(timeout=30)
        tree.start([sys.executable, "-c", "import time; time.sleep(60)"], env, log, cwd=tmp_path)
        assert tree.stop() == 1  # the one still running, not the two ever started
    assert len(tree.pids) == 2
    assert_all_gone(tree.pids)


LAUNCHER = """
import os, subprocess, sys, time
from labkit.distributed import ProcessTree
preexec = []
popen = subprocess.Popen
def spy(*args, **kwargs):
    preexec.append(kwargs.get("preexec_fn"))
    return popen(*args, **kwargs)
subprocess.Popen = spy
child = ProcessTree().start(
    [sys.executable, "-c", "import time; time.sleep(120)"], dict(os.environ), sys.stderr, cwd="."
)
print(child.pid, preexec == [None], flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux")
def test_children_die_with_a_launcher_killed_by_sigkill_without_preexec_fn():
    """``preexec_fn`` runs Python between fork and exec, which can deadlock in a process with
    threads (a Jupyter kernel); the parent-death signal is armed by an exec wrapper instead."""
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        pid, no_preexec = launcher.stdout.readline().split()
        assert no_preexec == "True", "ProcessTree.start passed a preexec_fn to Popen"
        assert distributed.still_running([int(pid)]) == [int(pid)]
    finally:
        launcher.kill()  # SIGKILL: no clean-up code runs in the launcher
        launcher.wait(timeout=30)
        launcher.stdout.close()
    assert_all_gone([int(pid)])


def test_the_exec_wrapper_refuses_to_start_for_a_launcher_already_gone(tmp_path):
    wrapper = ROOT / "labkit" / "distributed" / "die_with_parent.py"
    code = "import sys; sys.exit(7)"
    cmd = [sys.executable, wrapper, str(os.getpid()), sys.executable, "-c", code]
    ok = subprocess.run(cmd, check=False, timeout=60)
    assert ok.returncode == 7  # exec'd: the command's own exit status
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    cmd = [sys.executable, wrapper, str(dead.pid), sys.executable, "-c", code]
    gone = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=60)
    assert gone.returncode == 3 and f"launcher {dead.pid} gone" in gone.stderr


def test_the_commands_for_several_machines():
    torch = distributed.cluster_commands("torch", "torch_ddp.py", ["a", "b"])
    assert [h for h, _ in torch] == ["a", "b"] and all(
        "--rdzv-endpoint a:29500" in c for _, c in torch
    )
    assert all(c.startswith("torchrun --nnodes 2 --nproc-per-node 2") for _, c in torch)
    tf = distributed.cluster_commands("tensorflow", "tf_mwms.py", ["a", "b"])
    assert [h for h, _ in tf] == ["a", "a", "b", "b"]
    for index, (_host, line) in enumerate(tf):
        config = json.loads(line.split("'")[1])
        assert config["cluster"]["worker"] == ["a:29500", "a:29501", "b:29500", "b:29501"]
        assert config["task"] == {"type": "worker", "index": index}
        assert line.endswith("python tf_mwms.py --out results")
    ms = distributed.cluster_commands("mindspore", "ms_dp.py", ["a", "b"])
    assert [c.count("--worker_num 4") for _, c in ms] == [1, 1]
    assert ["--node_rank 0" in ms[0][1], "--node_rank 1" in ms[1][1]] == [True, True]


# ------------------------------------------------- notebook 08's workers, really (slow)


def job(framework, script, tmp_path, *args):
    run = distributed.launch(
        framework, SCRIPTS / script, ["--steps", "3", "--width", "64", *args],
        out_dir=tmp_path, timeout=TIMEOUT,
    )  # fmt: skip
    assert len(run.workers) == 2 and run.max_difference_between_workers() <= 1e-6
    assert_all_gone(run.pids)
    return run


@pytest.mark.slow
@pytest.mark.costly  # notebook 08 counts the graphs under smoke
def test_compiled_ddp_builds_more_graphs_with_smaller_buckets(tmp_path):
    """DDPOptimizer splits the captured graph at gradient-bucket boundaries."""
    require("torch")
    graphs = {}
    for mb in (25, 1):  # DDP's first bucket is 1 MB: a smaller cap is refused
        run = job(
            "torch",
            "torch_ddp.py",
            tmp_path,
            "--compile",
            "aot_eager",
            "--bucket-cap-mb",
            str(mb),
            "--width",
            "512",
        )
        graphs[mb] = {w["graphs"] for w in run.workers}
    (big,), (small,) = graphs[25], graphs[1]
    assert 1 <= big < small, graphs


@pytest.mark.slow
@pytest.mark.costly  # notebook 08 shows the collective under smoke
def test_the_traced_mwms_step_holds_the_collective(tmp_path):
    require("tensorflow")
    run = job("tensorflow", "tf_mwms.py", tmp_path)
    assert all("CollectiveReduceV2" in w["collectives"] and w["traces"] == 1 for w in run.workers)


@pytest.mark.slow
@pytest.mark.costly  # notebook 08 shows the AllReduce nodes under smoke
def test_mindspore_graph_mode_step_has_its_allreduce_nodes(tmp_path):
    require("mindspore")
    run = job("mindspore", "ms_dp.py", tmp_path)
    assert all(w["allreduce_nodes"] >= 1 and w["mode"] == "graph" for w in run.workers)
