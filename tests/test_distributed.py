"""labkit.distributed: real worker processes (torchrun, TF_CONFIG, msrun), results, and clean-up.

Every job here starts real processes; the small model without BatchNorm ("tiny") keeps them
fast. After each test no process that the job started may survive (checked with psutil).
"""

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from labkit import distributed, resnet
from labkit.distributed import DistributedError, Job, PortInUse
from labkit.frameworks import crosscheck as cc

import numpy as np
import psutil
import pytest
from conftest import ROOT, require

TIMEOUT = 240.0  # generous: a loaded 2-core machine starts TensorFlow workers slowly


def assert_all_gone(pids, within_s: float = 10.0):
    """None of ``pids`` is running (zombies count as gone) within ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while True:
        alive = distributed.still_running(pids)
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not alive, f"processes survived the job: {alive}"


def no_children_left():
    kids = [
        p for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE
    ]
    assert not kids, f"child processes left behind: {[(p.pid, p.cmdline()[:4]) for p in kids]}"


# ---------------------------------------------------------------------------- bad input, fast


def test_bad_jobs_name_the_valid_choices():
    with pytest.raises(ValueError, match="valid choices are torch, tensorflow, mindspore"):
        Job("jax")
    with pytest.raises(ValueError, match="valid choices are resnet50, tiny"):
        Job("torch", model="vgg")
    with pytest.raises(ValueError, match="workers must be a whole number >= 1"):
        Job("torch", workers=0)
    with pytest.raises(ValueError, match="fault_rank must name a worker, 0..1"):
        Job("torch", fault="crash", fault_rank=2)
    with pytest.raises(ValueError, match="multiple of 32"):
        Job("torch", image_size=40)
    with pytest.raises(ValueError, match="timeout must be > 0"):
        distributed.launch(Job("torch"), timeout=0)
    with pytest.raises(ValueError, match="width must be a whole number >= 1"):
        Job("torch", width=0)


def test_a_narrower_resnet50_reaches_the_workers_and_its_reference():
    """The width travels to every worker (``--width``) and to the single-process reference;
    the real network's default adds nothing to the command line a learner copies."""
    narrow = Job("torch", width=16)
    args = narrow.worker_args("/tmp/out", 60)
    assert args[args.index("--width") + 1] == "16"
    assert narrow.reference().width == 16
    assert "--width" not in Job("torch").worker_args("/tmp/out", 60)
    assert "--width" not in Job("torch", model="tiny", width=16).worker_args("/tmp/out", 60)


def test_reference_job_is_one_process_on_the_concatenated_batch():
    job = Job("torch", workers=3, batch=4, fault="crash")
    ref = job.reference()
    assert (ref.workers, ref.batch, ref.single, ref.fault) == (1, 12, True, None)
    assert ref.global_batch == job.global_batch


def test_port_in_use_is_a_clear_error_and_nothing_starts():
    with socket.socket() as busy:
        busy.bind((distributed.HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(
            PortInUse, match=rf"port {port} on 127.0.0.1 is already in use.*port=None"
        ):
            distributed.launch(Job("torch", model="tiny"), port=port, timeout=30)
        with pytest.raises(PortInUse, match=rf"port {port} "):  # TensorFlow: port, port+1, ...
            distributed.launch(Job("tensorflow", model="tiny"), port=port - 1, timeout=30)
    no_children_left()


def test_temporary_folders_of_dead_owners_are_swept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = distributed.new_output_dir("torch")
    (orphan / "owner.pid").write_text(str(dead.pid))  # as if a killed kernel had made it
    (orphan / "rank0.npz").write_bytes(b"x" * 1000)
    mine = distributed.new_output_dir("torch")  # sweeps first, then makes its own
    assert not orphan.exists() and mine.exists()
    assert distributed.sweep_orphaned_outputs() == [] and mine.exists()  # ours: kept
    shutil.rmtree(mine)


def test_cluster_commands_for_several_machines():
    torch_lines = distributed.cluster_commands(
        Job("torch", workers=4), ["node-a", "node-b"], port=29400
    )
    assert [host for host, _ in torch_lines] == ["node-a", "node-b"]
    for rank, (_host, line) in enumerate(torch_lines):
        assert "--nnodes 2" in line and f"--node-rank {rank}" in line
        assert "--rdzv-endpoint node-a:29400" in line and "--nproc-per-node 4" in line
        assert "-m labkit.frameworks.torch.distributed" in line and "--threads" not in line
    tf_lines = distributed.cluster_commands(Job("tensorflow", workers=2), ["a", "b"], port=12345)
    assert [host for host, _ in tf_lines] == ["a", "a", "b", "b"]
    configs = [json.loads(line.split("'")[1]) for _, line in tf_lines]
    assert [c["task"]["index"] for c in configs] == [0, 1, 2, 3]
    assert configs[0]["cluster"]["worker"] == ["a:12345", "a:12346", "b:12345", "b:12346"]
    ms_lines = distributed.cluster_commands(Job("mindspore", workers=2), ["a", "b"])
    assert all("--worker_num 4" in ln and "--master_addr a" in ln for _, ln in ms_lines)
    assert all(
        "runpy.run_module('labkit.frameworks.mindspore.distributed'" in ln for _, ln in ms_lines
    )
    proc = subprocess.run(
        [sys.executable, "-m", "labkit.distributed", "--hosts", "h1,h2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout.count("--rdzv-endpoint h1:29500") == 2
    assert "# on h2:" in proc.stdout


def test_cli_bad_input_exits_2_with_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "labkit.distributed", "--workers", "0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "workers must be a whole number >= 1" in proc.stderr


# ---------------------------------------------------------------------------- the process tree


def test_stop_returns_how_many_processes_were_still_running(tmp_path):
    tree = distributed.ProcessTree()
    env = dict(os.environ)
    with open(tmp_path / "log", "w") as log:
        done = tree.start([sys.executable, "-c", "pass"], env, log, cwd=tmp_path)
        done.wait(timeout=30)
        tree.start([sys.executable, "-c", "import time; time.sleep(60)"], env, log, cwd=tmp_path)
        assert tree.stop() == 1  # the one still running, not the two ever started
    assert len(tree.pids) == 2
    assert_all_gone(tree.pids)
    no_children_left()


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
def test_children_die_with_their_launcher_without_preexec_fn():
    """``preexec_fn`` runs Python between fork and exec, which can deadlock in a process with
    threads (a Jupyter kernel); the parent-death signal must be set another way."""
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux")
def test_the_exec_wrapper_runs_the_command_only_while_its_launcher_lives(tmp_path):
    marker = tmp_path / "ran"
    code = f"import sys; open({str(marker)!r}, 'w').close(); sys.exit(7)"
    wrapper = distributed.processes.dying_with_parent([sys.executable, "-c", code])
    assert wrapper[-3:] == [sys.executable, "-c", code] and str(os.getpid()) in wrapper
    assert subprocess.run(wrapper, timeout=60, check=False).returncode == 7  # exec'd, same pid
    assert marker.exists()
    marker.unlink()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphaned = [str(dead.pid) if a == str(os.getpid()) else a for a in wrapper]
    proc = subprocess.run(orphaned, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 3 and f"the launcher (pid {dead.pid}) is gone" in proc.stderr
    assert not marker.exists()


# ---------------------------------------------------------------------------- real training


@pytest.mark.slow
@pytest.mark.parametrize(
    "framework",
    # TensorFlow's and MindSpore's (10-13 s each) run in make test-standard: under smoke,
    # notebook 08 checks their workers identical and PyTorch's against one process
    ["torch", pytest.param("tensorflow", marks=pytest.mark.costly)]
    + [pytest.param("mindspore", marks=pytest.mark.costly)],
)
def test_workers_identical_and_equal_to_one_process_on_the_concatenated_batch(framework, tmp_path):
    require(framework)
    job = Job(framework, workers=2, steps=3, batch=4, model="tiny", measure=1)
    run = distributed.launch(job, timeout=TIMEOUT, out_dir=tmp_path / "multi")
    ref = distributed.launch(job.reference(), timeout=TIMEOUT, out_dir=tmp_path / "single")

    # really two worker processes, neither of them us, each with its own shard
    pids = {w["pid"] for w in run.workers}
    assert len(pids) == 2 and os.getpid() not in pids and pids <= set(run.pids)
    assert [w["rank"] for w in run.workers] == [0, 1] and all(
        w["world_size"] == 2 for w in run.workers
    )
    # each worker read its own shard, and the shards together are the single process's data
    sums = [w["data_sum"] for w in run.workers]
    assert sums[0] != sums[1] and sum(sums) == pytest.approx(ref.workers[0]["data_sum"], rel=1e-9)
    assert ref.workers[0]["world_size"] == 1 and ref.workers[0]["launcher"] == "single process"

    # Two workers apply the same all-reduced gradient (a + b == b + a in IEEE arithmetic):
    # their weights are bit-identical.
    assert run.max_difference_between_workers() == 0.0
    # Against one process on the whole batch only the summation order differs (two half-batch
    # sums, then their mean). The tiny model has no BatchNorm, so its gradient is well
    # conditioned: each step may move a weight by a few float32 roundings of its size. Measured
    # here: 0.7-2.8e-8 with weights up to 0.38, about one rounding; the bound allows
    # FP32_SPREAD roundings per step.
    weights = ref.weights(0)
    scale = max(float(np.abs(w).max()) for w in weights.values())
    rounding = float(np.finfo(np.float32).eps) * job.steps * cc.FP32_SPREAD
    assert distributed.max_difference(run.weights(0), weights) <= rounding * scale
    assert abs(run.final_loss - ref.final_loss) <= rounding * abs(ref.final_loss)
    assert run.workers[0]["allreduce_s"] > 0 and len(run.workers[0]["step_s"]) == 3
    if framework == "tensorflow":  # experimental_distribute_dataset shards without being told
        from labkit.frameworks.tensorflow.distributed import AUTO_SHARD_SAMPLES

        ids = [w["auto_shard_ids"] for w in run.workers]
        assert ids[0] and ids[1] and not set(ids[0]) & set(ids[1]), ids
        assert sorted(ids[0] + ids[1]) == list(range(AUTO_SHARD_SAMPLES))
    assert_all_gone(run.pids + ref.pids)
    no_children_left()


@pytest.mark.slow
def test_a_narrow_resnet50_trains_with_its_own_weights_in_every_worker(tmp_path):
    """Width 16 (the smoke profile's): the workers build the narrow network from the same
    canonical weights, end identical, and all-reduce a gradient of its own size."""
    require("torch")
    job = Job("torch", workers=2, steps=2, batch=2, width=16, measure=1)
    run = distributed.launch(job, timeout=TIMEOUT, out_dir=tmp_path)
    assert [w["width"] for w in run.workers] == [16, 16] and run.summary()["width"] == 16
    params = resnet.count_trainable(width=16)
    assert run.workers[0]["gradient_mb"] == pytest.approx(params * 4 / 1e6)
    weights = run.weights(0)
    assert {n: v.shape for n, v in weights.items()} == resnet.param_shapes(width=16)
    # the trainable weights are bit-identical (the same all-reduced gradient); the BatchNorm
    # statistics are each worker's own
    assert run.max_difference_between_workers(lambda n: resnet.is_trainable(n)) == 0.0
    assert_all_gone(run.pids)


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["torch", "tensorflow"])
def test_a_crashing_worker_is_a_clear_error_and_leaves_no_process(framework, tmp_path):
    require(framework)
    job = Job(framework, workers=2, steps=2, batch=2, model="tiny", measure=0, fault="crash")
    with pytest.raises(DistributedError) as info:
        distributed.launch(job, timeout=TIMEOUT, out_dir=tmp_path)
    message = str(info.value)
    assert "worker 1 raised WorkerFailure: worker 1 was told to crash" in message
    assert "processes were stopped" in message and "Traceback" in info.value.log
    pids = [int(p) for p in message.split("(pids [")[1].split("]")[0].split(", ")]
    assert len(pids) >= 2
    assert_all_gone(pids)
    no_children_left()


@pytest.mark.slow
def test_a_hanging_worker_hits_the_timeout_and_everything_is_stopped(tmp_path):
    require("torch")
    job = Job("torch", workers=2, steps=2, batch=2, model="tiny", measure=0, fault="hang")
    start = time.monotonic()
    with pytest.raises(
        DistributedError, match=r"did not finish within 8 s: stopped all \d+ of its"
    ):
        distributed.launch(job, timeout=8, out_dir=tmp_path)
    assert time.monotonic() - start < 8 + 20  # stopping takes seconds, not minutes
    no_children_left()


def _start_hanging_cli(tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    """``python -m labkit.distributed`` with a hanging worker; returns it once the worker hangs,
    with the pids of every process below it."""
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "labkit.distributed",
            "--model",
            "tiny",
            "--steps",
            "2",
            "--fault",
            "hang",
            "--timeout",
            "200",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 150
    while not (tmp_path / "rank1.hang").exists():
        assert cli.poll() is None, cli.communicate()
        assert time.monotonic() < deadline, "the worker never reached its first step"
        time.sleep(0.2)
    tree = psutil.Process(cli.pid).children(recursive=True)
    workers = [p.pid for p in tree]
    assert len(workers) >= 3  # torchrun and its two workers
    return cli, workers


@pytest.mark.slow
def test_keyboard_interrupt_stops_every_worker(tmp_path):
    require("torch")
    cli, pids = _start_hanging_cli(tmp_path)
    cli.send_signal(signal.SIGINT)  # what the notebook's "interrupt kernel" sends
    _out, err = cli.communicate(timeout=60)
    assert cli.returncode != 0 and "interrupted: stopped the" in err
    assert_all_gone(pids)


@pytest.mark.slow
def test_workers_die_with_a_launcher_killed_by_sigkill(tmp_path):
    require("torch")
    cli, pids = _start_hanging_cli(tmp_path)
    cli.kill()  # no chance to clean up: parent-death signal and the workers' watchdogs must
    cli.wait(timeout=30)
    assert_all_gone(pids, within_s=30)


@pytest.mark.slow
def test_a_successful_run_stops_what_its_workers_left_running(tmp_path):
    require("torch")
    job = Job("torch", workers=2, steps=2, batch=2, model="tiny", measure=0, fault="straggler")
    run = distributed.launch(job, timeout=TIMEOUT, out_dir=tmp_path)
    straggler = int((tmp_path / "rank1.straggler").read_text())
    try:
        assert straggler in run.pids and len(run.workers) == 2
        assert_all_gone(run.pids)
    finally:  # a failing test must not leave it behind either
        if distributed.still_running([straggler]):
            os.kill(straggler, signal.SIGKILL)
    no_children_left()


@pytest.mark.slow
def test_compare_with_a_failing_reference_is_one_clear_error(tmp_path, monkeypatch, capsys):
    require("torch")
    reference = Job.reference

    def crashing_reference(self, threads=None):
        return dataclasses.replace(reference(self, threads), fault="crash", fault_rank=0)

    monkeypatch.setattr(Job, "reference", crashing_reference)
    argv = ["--model", "tiny", "--steps", "2", "--batch", "2", "--compare", "--out", str(tmp_path)]
    assert distributed.main([*argv, "--timeout", str(TIMEOUT)]) == 1
    out, err = capsys.readouterr()
    summary = json.loads(out)  # the data-parallel run's results are kept
    assert summary["workers"] == 2 and "single_process" not in summary
    assert err.startswith("error: the single-process reference of --compare failed")
    assert err.count("error:") == 1 and "worker 0 raised WorkerFailure" in err
    no_children_left()
