"""labkit.runner: plans, and real benchmark cells in real subprocesses under the smoke profile.

Every framework and mode runs one real cell (torch eager all three tasks); failures, hangs,
out-of-memory and a killed runner are provoked with the models of ``tests/cell_faults.py``, and
must become recorded failures while the other cells complete.
No speed is asserted, nor anything about the machine: a record's validity verdict and its
place against the ceiling are checked for shape, never for a value.
"""

import errno
import json
import os
import re
import signal
import subprocess
import sys
import time

from labkit import frameworks, hardware, profiles, recipe, results, runner
from labkit.util import proc

import pytest
from conftest import ROOT, WRITER, require, start_together

SMOKE = profiles.get("smoke")
FAULTS = ROOT / "tests" / "cell_faults.py"
#: CI machines are often busy; the runner's warning about it is expected there
pytestmark = pytest.mark.filterwarnings("ignore:this machine is busy:UserWarning")


# ----------------------------------------------------------------------------- plans


def labels(plan):
    return [(c.framework, c.mode, c.task, c.batch_size) for c in plan]


def test_default_plan_is_every_framework_mode_and_task_in_fp32():
    plan = runner.Plan.build(profile="standard")
    n_modes = sum(len(m) for m in frameworks.MODES.values())
    assert len(plan) == n_modes * 3
    assert {c.precision for c in plan} == {"fp32"} and {c.device for c in plan} == {"cpu"}
    assert {c.image_size for c in plan} == {profiles.get("standard").image_size}
    by_task = {c.task: c.batch_size for c in plan}
    assert by_task == {"latency": 1, "throughput": 8, "train": 8}


def test_graph_selects_every_non_eager_mode_and_own_names_work():
    plan = runner.Plan.build(modes=["graph"], tasks=["latency"], profile=SMOKE)
    assert {(c.framework, c.mode) for c in plan} == {
        ("torch", "torchscript"),
        ("torch", "compile"),
        ("tensorflow", "function"),
        ("tensorflow", "xla"),
        ("mindspore", "graph"),
        ("paddle", "sot"),
        ("paddle", "ast"),
        ("onnxruntime", "ort"),
        ("tvm", "relax"),
    }
    plan = runner.Plan.build(modes=["eager"], tasks=["latency"], profile=SMOKE)
    assert {(c.framework, c.mode) for c in plan} == {
        ("torch", "eager"),
        ("tensorflow", "eager"),
        ("mindspore", "pynative"),
        ("paddle", "dygraph"),
    }
    plan = runner.Plan.build(modes=["xla", "compile"], tasks=["train"], profile=SMOKE)
    assert labels(plan) == [("torch", "compile", "train", 4), ("tensorflow", "xla", "train", 4)]
    # quick: the eager mode and the spec's first graph mode (a runtime: its first mode)
    plan = runner.Plan.build(modes=["quick"], tasks=["latency"], profile=SMOKE)
    for spec in frameworks.specs():
        modes = [c.mode for c in plan if c.framework == spec.name]
        assert modes == [m for m in spec.modes if m in (spec.eager, *spec.graph_modes[:1])]
        assert len(modes) == (2 if spec.eager else 1), spec.name


def test_batch_sizes_apply_to_batched_tasks_latency_stays_one():
    plan = runner.Plan.build(
        ["torch"], ["eager"], batch_sizes=[2, 16], precisions=["fp32", "bf16"], profile=SMOKE
    )
    assert labels(plan)[:1] == [("torch", "eager", "latency", 1)]
    assert sorted({(c.task, c.batch_size) for c in plan}) == [
        ("latency", 1),
        ("throughput", 2),
        ("throughput", 16),
        ("train", 2),
        ("train", 16),
    ]
    assert len(plan) == 5 * 2


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"frameworks": ["torch", "jax"]},
            "unknown framework 'jax': valid frameworks are torch, tensorflow",
        ),
        (
            {"modes": ["fast"]},
            "unknown mode 'fast': valid modes are eager, graph, quick, compile",
        ),
        ({"tasks": ["infer"]}, "unknown task 'infer': valid tasks are latency, throughput, train"),
        ({"precisions": ["fp16"]}, "unknown precision 'fp16': valid precisions are fp32, bf16"),
        ({"device": "tpu"}, "unknown device 'tpu': valid devices are cpu, gpu"),
        ({"batch_sizes": [8, 0]}, "batch sizes must be whole numbers >= 1"),
        ({"profile": "huge"}, "valid profiles are smoke, standard, full"),
        (
            {"frameworks": ["mindspore"], "modes": ["xla"]},
            "the plan is empty.*mindspore: pynative, graph",
        ),
    ],
)
def test_bad_choices_name_the_valid_ones(kwargs, message):
    with pytest.raises(ValueError, match=message):
        runner.Plan.build(**kwargs)


def test_crash_reasons_name_the_cause():
    assert "out-of-memory killer" in proc.crash_reason(-signal.SIGKILL, "")
    assert "out of memory" in proc.crash_reason(1, "Traceback...\nMemoryError\n")
    assert "SIGSEGV" in proc.crash_reason(-signal.SIGSEGV, "")


def test_a_learners_model_is_a_plan_of_the_same_cells_with_its_model_and_shapes(tmp_path):
    spec = ROOT / "tests" / "explore_models.py"
    plan = runner.Plan.for_model(
        f"{spec}:clean", "4x3x8x8", "torch", modes=["eager", "graph"], profile=SMOKE
    )
    # its own framework and the runtimes of its exports, each of their modes, every task
    assert {(c.framework, c.mode) for c in plan} == {
        ("torch", m) for m in frameworks.MODES["torch"]
    } | {("onnxruntime", m) for m in frameworks.MODES["onnxruntime"]}
    assert len(plan) == len({(c.framework, c.mode) for c in plan}) * 3
    for c in plan:
        assert c.model == f"{spec}:clean" and c.image_size == 0 and c.custom
        batch = 1 if c.task == "latency" else 4
        assert (c.batch_size, c.input_shape) == (batch, f"{batch}x3x8x8")
        assert c.label() == (
            f"explore_models:clean {c.framework} {c.mode} {c.task} {batch}x3x8x8 fp32 cpu"
        )
    # what differs from a ResNet-50 cell: no ceiling, and the learner's modules importable
    cell = plan.cells[0]
    assert runner.ceiling_fields(1e9, cell) == {}  # no ceiling for a learner's model
    env = runner.cell_env(cell, 2, tmp_path)
    assert set(runner.inputs.child_pythonpath()) <= set(env["PYTHONPATH"].split(os.pathsep))
    resnet = runner.cell_env(runner.Plan.build(profile=SMOKE).cells[0], 2, tmp_path)
    assert resnet["PYTHONPATH"] == proc.child_env(2)["PYTHONPATH"]  # no learner's modules
    # bad choices name the valid ones, as Plan.build's do
    with pytest.raises(ValueError, match=r"the plan is empty: none of the modes xla belongs to "):
        runner.Plan.for_model(f"{spec}:clean", "2x8", "torch", modes=["xla"], profile=SMOKE)
    with pytest.raises(ValueError, match="cannot benchmark other models with MindSpore: choose"):
        runner.Plan.for_model(f"{spec}:clean", "2x8", "torch", frameworks=["mindspore"])
    with pytest.raises(ValueError, match="unknown task 'infer': valid tasks are latency"):
        runner.Plan.for_model(f"{spec}:clean", "2x8", "torch", tasks=["infer"])
    with pytest.raises(ValueError, match="is not a shape"):
        runner.Plan.for_model(f"{spec}:clean", "2xx8", "torch")


def test_each_room_of_the_runner_has_its_docstring_and_names_and_the_package_shows_them():
    import importlib

    for name in ("plan", "inputs", "loop"):
        room = importlib.import_module(f"labkit.runner.{name}")
        assert room.__doc__ and room.__all__, name
        assert all(hasattr(room, n) for n in room.__all__), name
    assert runner.__doc__ and all(hasattr(runner, n) for n in runner.__all__)
    # no room shadows a function of the same name
    assert callable(runner.run)
    assert runner.run_cell is runner.loop.run_cell and runner.Plan is runner.plan.Plan
    # `python -m labkit.runner` is the cell's entry point: the real cells below run through it


# ----------------------------------------------------------------------------- real cells


def children(pid):
    """Process ids whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def check_measured(records, plan, framework):
    assert [results.key(r) for r in records] == [c.key() for c in plan]
    version = require(framework).version()
    threads = hardware.default_threads()
    for r in records:
        assert r["status"] == "ok", f"{r['mode']} {r['task']}: {r['error']}\n{r['log']}"
        assert results.problems(r) == []
        assert r["repeats"] >= SMOKE.min_repeats and len(r["times_s"]) == r["repeats"]
        assert r["first_call_s"] > 0 and r["median_s"] > 0 and r["peak_rss_mb"] > 50
        assert r["versions"][framework] == version
        # the one thread policy, read back from the framework in the cell's process
        assert r["threads"] == {"intra": threads, "inter": 1}, r["threads"]
        assert r["machine"] == hardware.fingerprint()
        assert r["profile"] == "smoke" and r["image_size"] == SMOKE.image_size
        assert r["thread_env"]["OMP_NUM_THREADS"] == str(threads)
        assert r["cache"] == "cold"
        # a verdict with its reasons, and the ceiling flag: shapes only, never values
        assert isinstance(r["valid"], bool) and r["valid"] == (not r["invalid_reasons"])
        assert all(isinstance(x, str) and x for x in r["invalid_reasons"])
        assert isinstance(r["others_cpus"], float) and r["others_cpus"] >= 0
        if r["ceiling_share"] is None:
            assert hardware.ceiling(r["precision"]).peak_gflops is None and not r["above_ceiling"]
        else:
            assert r["above_ceiling"] == (r["ceiling_share"] > 1)
            assert bool(r["ceiling_note"]) == r["above_ceiling"]
        assert r["recipe"] == (recipe.TRAIN._asdict() if r["task"] == "train" else None)
        spec = frameworks.spec(framework)
        assert (r["export_s"] is not None) == (spec.exported_from is not None)
        check_measured_peak(r, threads)


def check_measured_peak(r, threads):
    """The run measured the peaks first (or found them cached): each record carries the share
    of the measured peak at its precision and threads, or says why there is none."""
    found = hardware.cached(frameworks.peak_probes(), threads)
    if found is None:  # none measured, or refused: measured on a busy machine or too spread
        assert r["measured_peak_share"] is None and "no measured peak" in r["measured_peak_note"]
        return
    peak = found[r["precision"]]
    if not peak.valid:
        assert r["measured_peak_share"] is None and r["measured_peak_note"] == peak.note
        return
    assert r["measured_peak"]["gflops"] == peak.gflops and r["measured_peak"]["threads"] == threads
    training = r["task"] == "train"
    best = peak.images_per_s_at(r["image_size"], training=training)
    assert r["measured_peak_images_per_s"] == pytest.approx(best)
    assert r["measured_peak_share"] == pytest.approx(r["images_per_s"] / best)
    assert r["above_measured_peak"] == (r["measured_peak_share"] > 1)
    assert bool(r["measured_peak_note"]) == r["above_measured_peak"]
    assert r["accuracy"] is None  # fp32


def run_plan(tmp_path, framework, modes, tasks):
    require(framework)
    plan = runner.Plan.build([framework], modes, tasks, profile=SMOKE)
    out = tmp_path / "r.jsonl"
    res = runner.run(plan, out, progress=False)
    assert not res.interrupted
    assert results.load(out) == res.records  # every record was appended as it came
    return plan, res.records


@pytest.mark.costly  # a cold torch.compile in a cell (about 30 s): smoke runs the two below
def test_torch_every_mode_and_every_task_in_real_subprocesses(tmp_path):
    plan = runner.Plan.build(["torch"], None, ["latency"], profile=SMOKE)
    plan.cells += runner.Plan.build(
        ["torch"], ["eager"], ["throughput", "train"], profile=SMOKE
    ).cells
    out = tmp_path / "r.jsonl"
    require("torch")
    res = runner.run(plan, out, progress=False)
    check_measured(res.records, plan, "torch")
    assert {(r["mode"], r["task"]) for r in res.records} >= {
        ("eager", "latency"),
        ("eager", "throughput"),
        ("eager", "train"),
        ("torchscript", "latency"),
        ("compile", "latency"),
    }


@pytest.mark.parametrize(
    "framework",
    [pytest.param(f, marks=pytest.mark.costly) for f in ("tensorflow", "onnxruntime")]
    + ["mindspore"],
)
def test_every_mode_of_each_framework_in_real_subprocesses(tmp_path, framework):
    plan, records = run_plan(tmp_path, framework, None, ["latency"])
    assert [r["mode"] for r in records] == list(frameworks.MODES[framework])
    check_measured(records, plan, framework)
    if framework == "onnxruntime":  # a cold cache: the cell exported the model itself
        assert records[0]["export_s"] > 0


def test_torch_eager_and_torchscript_in_real_subprocesses(tmp_path):
    """PyTorch's modes that compile nothing (its compile cell is the costly test above)."""
    plan, records = run_plan(tmp_path, "torch", ["eager", "torchscript"], ["latency"])
    assert [r["mode"] for r in records] == ["eager", "torchscript"]
    check_measured(records, plan, "torch")


@pytest.mark.costly  # compiles bf16 and quantises int8 in cells (30 s); tests/test_registry covers each adapter's step
def test_low_precision_cells_carry_their_peak_share_and_accuracy_cost(tmp_path, monkeypatch):
    """int8 through every framework and bf16 through PyTorch's eager mode, from an empty peak
    cache: the run measures the peaks first; a low-precision record stands against the peak of
    its own precision and carries its accuracy cost; an int8 cell of a framework without an
    int8 path is recorded unsupported with the reason."""
    require("torch")
    require("onnxruntime")
    monkeypatch.setenv(hardware.measured.CACHE_ENV, str(tmp_path / "cache"))
    threads = hardware.default_threads()
    assert hardware.cached(frameworks.peak_probes(), threads) is None
    plan = runner.Plan.build(
        ["torch", "onnxruntime"],
        ["eager", "ort"],
        ["throughput"],
        precisions=["int8", "bf16"],
        profile=SMOKE,
    )
    res = runner.run(plan, tmp_path / "r.jsonl", progress=False)
    found = hardware.cached(
        frameworks.peak_probes(), threads
    )  # None where a busy machine's peaks were refused
    assert found is None or found.source.startswith(str(tmp_path / "cache"))
    by = {(r["framework"], r["precision"]): r for r in res.records}
    assert by["torch", "int8"]["unsupported"] and "torchao" in by["torch", "int8"]["error"]
    assert (
        by["onnxruntime", "bf16"]["unsupported"]
        and "bfloat16" in by["onnxruntime", "bf16"]["error"]
    )
    for key in (("torch", "bf16"), ("onnxruntime", "int8")):
        r = by[key]
        assert r["status"] == "ok", r["error"]
        assert results.problems(r) == []
        peak = found[r["precision"]] if found is not None else None
        if peak is None or (peak.measured and not peak.valid):
            assert r["measured_peak_share"] is None and r["measured_peak_note"]
        elif peak.measured:
            assert r["measured_peak"]["gflops"] == peak.gflops
            assert r["measured_peak_share"] == pytest.approx(
                r["images_per_s"] / peak.images_per_s_at(r["image_size"])
            )
        else:  # a CPU without that unit: no peak, and the record says why
            assert r["measured_peak_share"] is None and "not measured" in r["measured_peak_note"]
        cost = r["accuracy"]
        assert (
            cost["images"] >= 256
            and 0 <= cost["top1_agreement"] <= 1
            and "fp32" in cost["reference"]
        )
        assert cost["max_abs_diff"] > 0
    assert "quantize_static" in by["onnxruntime", "int8"]["notes"]


def test_gpu_cells_pass_the_device_through(tmp_path):
    require("torch")
    plan = runner.Plan.build(["torch"], ["eager"], ["latency"], device="gpu", profile=SMOKE)
    (r,) = runner.run(plan, tmp_path / "r.jsonl", progress=False).records
    assert r["device"] == "gpu" and r["machine"]["gpus"] == hardware.machine.gpus()
    if r["status"] == "ok":  # a CUDA build on a GPU machine: no CPU ceiling applies
        assert r["ceiling_share"] is None and r["median_s"] > 0
    else:
        assert r["unsupported"] and "CUDA" in r["error"], r["error"]


def fault_cells(model, tasks):
    """torch eager cells of ``model`` (``tests/cell_faults.py:NAME`` or a working one)."""
    kinds = {"frameworks": ["torch"], "modes": ["eager"], "tasks": tasks, "profile": SMOKE}
    return runner.Plan.for_model(model, "2x3x8x8", "torch", **kinds).cells


def test_failure_and_out_of_memory_are_recorded_while_other_cells_complete(tmp_path):
    require("torch")
    cells = fault_cells(f"{FAULTS}:fails", ["latency"])
    cells += fault_cells(f"{ROOT / 'tests' / 'explore_models.py'}:clean", ["throughput"])
    cells += fault_cells(f"{FAULTS}:oom", ["train"])
    out = tmp_path / "r.jsonl"
    res = runner.run(runner.Plan(cells, SMOKE), out, progress=False)
    by_task = {r["task"]: r for r in results.load(out)}
    assert by_task["latency"]["status"] == "failed"
    assert "test fault: the model raised" in by_task["latency"]["error"]
    assert "RuntimeError" in by_task["latency"]["log"]  # the traceback is kept for debugging
    assert by_task["train"]["status"] == "failed"
    assert by_task["train"]["error"].startswith("out of memory")
    assert by_task["throughput"]["status"] == "ok"  # the plan went on
    assert not by_task["latency"]["unsupported"] and [r.ok for r in res.records] == [
        False,
        True,
        False,
    ]


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc to see which processes live")
def test_a_hanging_cell_is_killed_with_its_process_group(tmp_path):
    require("torch")
    # a profile whose cells may take 15 s: PyTorch's import, before the model hangs, can take
    # several on a busy machine
    quick = SMOKE._replace(cell_timeout_s=15)
    plan = runner.Plan(fault_cells(f"{FAULTS}:hangs", ["latency", "throughput"]), quick)
    t0 = time.perf_counter()
    res = runner.run(plan, tmp_path / "r.jsonl", progress=False)
    assert time.perf_counter() - t0 < 60
    assert [r["status"] for r in res.records] == ["failed", "failed"]  # both recorded, in order
    for r in res.records:
        assert r["error"].startswith("timed out after 15 s")
        pid = int(re.search(r"grandchild pid (\d+)", r["log"]).group(1))
        assert not alive(pid), "the cell's own child survived the timeout"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc to find the cell process")
def test_a_killed_run_resumes_without_duplicates_or_losses(tmp_path):
    """SIGTERM (like Ctrl-C) after the first result, then SIGKILL mid-cell; --resume completes."""
    require("torch")
    out = tmp_path / "r.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "labkit",
        "bench",
        "--profile",
        "smoke",
        "--frameworks",
        "torch",
        "--modes",
        "eager",
        "--tasks",
        "latency,throughput,train",
        "--out",
        str(out),
    ]

    def start(extra):
        return subprocess.Popen(
            cmd + extra, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def wait_for(proc, condition):
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None and not condition():
            time.sleep(0.1)

    # 1. SIGTERM once the first result is in: the running cell is killed, the run stops cleanly
    proc = start([])
    wait_for(proc, lambda: out.exists() and out.read_text().count("\n") >= 1)
    proc.send_signal(signal.SIGTERM)
    said, _ = proc.communicate(timeout=60)  # the run's last line: how it ended, how to go on
    assert proc.returncode == 130 and "interrupted: rerun with resume=True (--resume)" in said
    first = out.read_text().splitlines()
    assert 1 <= len(first) < 3

    # 2. SIGKILL the runner while a cell runs: the orphaned cell ends itself, nothing is lost
    # (a cell, not the peak probe a runner starts first where no measured peak is cached)
    def cells_of(pid):
        cells = []
        for child in children(pid):
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    if b"labkit.runner" in f.read():
                        cells.append(child)
            except OSError:
                continue
        return cells

    proc = start(["--resume"])
    wait_for(proc, lambda: cells_of(proc.pid))
    cells = cells_of(proc.pid)
    assert cells, "the resumed runner started no cell"
    proc.kill()
    proc.communicate(timeout=60)
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(p) for p in cells):
        time.sleep(0.2)
    assert not any(alive(p) for p in cells), "a cell outlived its killed runner"
    assert out.read_text().splitlines()[: len(first)] == first

    # 3. resume to the end: each cell exactly once, earlier lines untouched
    kept = out.read_text().splitlines()
    done = subprocess.run(
        cmd + ["--resume"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "already in" in done.stdout  # the run's last line: the cells it skipped
    assert out.read_text().splitlines()[: len(kept)] == kept
    records = results.load(out)
    assert sorted(r["task"] for r in records) == ["latency", "throughput", "train"]
    assert all(r["status"] == "ok" for r in records), [r["error"] for r in records]
    assert len({results.key(r) for r in records}) == len(records) == 3


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc to find the cell's processes")
def test_a_sigkilled_runner_leaves_no_cell_process_behind(tmp_path):
    """The cell notices its runner is gone and ends its whole process group (its own children
    included: here the test fault's sleeping grandchild)."""
    require("torch")
    code = (
        "import sys; from labkit import runner\n"
        "kinds = ['torch'], ['eager'], ['latency']\n"
        "plan = runner.Plan.for_model(sys.argv[1], '2x8', 'torch', *kinds, profile='smoke')\n"
        "runner.run(plan, sys.argv[2])"
    )
    cmd = [sys.executable, "-c", code, f"{FAULTS}:hangs", str(tmp_path / "r.jsonl")]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    family = []
    while time.time() < deadline:
        cells = children(proc.pid)
        family = cells + [g for c in cells for g in children(c)]
        if cells and len(family) > len(cells):  # the cell and its grandchild are up
            break
        time.sleep(0.2)
    assert len(family) >= 2, "the cell and its child never started"
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.time() + 15
    while time.time() < deadline and any(alive(p) for p in family):
        time.sleep(0.2)
    assert not any(alive(p) for p in family), "a cell process outlived its SIGKILLed runner"


def fake_fields(median=0.1, **extra):
    times = [median] * 5
    return {
        "status": "ok",
        "first_call_s": 1.0,
        "prepare_s": 0.5,
        "median_s": median,
        "iqr_s": 0.0,
        "p90_s": median,
        "mean_s": median,
        "images_per_s": 1 / median,
        "peak_rss_mb": 300.0,
        "repeats": 5,
        "warmup": 1,
        "times_s": times,
        "threads": {"intra": 1, "inter": 1},
        "cache": "cold",
        "wall_s": 3.0,
        **extra,
    }


def test_ctrl_c_waits_until_the_record_is_written(tmp_path, monkeypatch):
    plan = runner.Plan.build(["torch"], ["eager"], ["latency", "throughput"], profile=SMOKE)
    monkeypatch.setattr(runner.loop, "run_cell", lambda *a, **k: fake_fields())
    real_append = results.append

    def append_interrupted(path, record):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives while the line is being written
        time.sleep(0.05)
        real_append(path, record)

    monkeypatch.setattr(results, "append", append_interrupted)
    out = tmp_path / "r.jsonl"
    res = runner.run(plan, out, progress=False)
    assert res.interrupted
    assert len(res.records) == 1 and results.load(out) == res.records  # whole, and reported


def test_a_result_that_makes_no_valid_record_becomes_a_failed_one(tmp_path, monkeypatch):
    plan = runner.Plan.build(["torch"], ["eager"], ["latency", "throughput"], profile=SMOKE)
    answers = iter([fake_fields(median_s=float("nan")), fake_fields()])
    monkeypatch.setattr(runner.loop, "run_cell", lambda *a, **k: next(answers))
    out = tmp_path / "r.jsonl"
    res = runner.run(plan, out, progress=False)
    first, second = results.load(out)
    assert first["status"] == "failed" and "could not be recorded" in first["error"]
    assert "median_s" in first["error"] and first["wall_s"] == 3.0
    assert second["status"] == "ok" and not res.interrupted  # the plan went on


def test_each_cell_gets_compile_caches_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_XLA_FLAGS", f"--tf_xla_auto_jit=2 {runner.loop.XLA_CACHE_FLAG}=/old")
    cold = runner.loop.cache_env("cold", tmp_path)
    for key in ("TMPDIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUDA_CACHE_PATH"):
        assert cold[key].startswith(str(tmp_path)), key
    assert (tmp_path / "cache" / "tmp").is_dir() and cold["MS_COMPILER_CACHE_ENABLE"] == "0"
    assert cold["TF_XLA_FLAGS"] == "--tf_xla_auto_jit=2"  # the user's cache folder is dropped
    warm = runner.loop.cache_env("warm", tmp_path)
    shared = str(runner.loop.shared_cache_dir())
    assert warm["TORCHINDUCTOR_CACHE_DIR"].startswith(shared) and "TMPDIR" not in warm
    assert warm["TF_XLA_FLAGS"].endswith(f"{runner.loop.XLA_CACHE_FLAG}={shared}/xla")
    assert warm["MS_COMPILER_CACHE_ENABLE"] == "1"
    plan = runner.Plan.build(["torch"], ["eager"], ["latency"], profile=SMOKE)
    with pytest.raises(ValueError, match="cache must be 'cold' or 'warm'"):
        runner.run(plan, tmp_path / "r.jsonl", cache="tepid", progress=False)
    cell = plan.cells[0]
    env = runner.cell_env(cell, 3, tmp_path)
    assert env["OMP_NUM_THREADS"] == "3" and env["LABKIT_PROFILE"] == "smoke"


def test_the_run_shows_a_line_per_record_and_ends_with_a_static_line(tmp_path, monkeypatch):
    """Progress through tqdm.auto (a bar, disabled with progress=False), a line per record with
    its verdict, and one last line that says how the run ended, "done" once."""
    plan = runner.Plan.build(["torch"], ["eager"], ["latency", "throughput"], profile=SMOKE)
    answers = iter([fake_fields(), fake_fields(others_cpus=1e6)])
    monkeypatch.setattr(runner.loop, "run_cell", lambda *a, **k: next(answers))
    bars = []
    from tqdm import auto as tqdm_auto

    real_tqdm = tqdm_auto.tqdm
    monkeypatch.setattr(tqdm_auto, "tqdm", lambda *a, **k: bars.append(k) or real_tqdm(*a, **k))
    lines = []
    monkeypatch.setattr(real_tqdm, "write", staticmethod(lambda text, **k: lines.append(text)))
    printed = []
    monkeypatch.setattr("builtins.print", lambda *a, **k: printed.append(" ".join(map(str, a))))
    seen = []
    res = runner.run(plan, tmp_path / "r.jsonl", on_record=seen.append)
    assert [k["disable"] for k in bars] == [False] and len(seen) == 2
    assert lines[0].startswith("torch eager latency b1 fp32 ") and lines[0].endswith(", valid")
    assert "invalid: busy machine" in lines[1]
    # where no valid peak is cached (none is, after a busy machine), the run says it measures one
    printed = [p for p in printed if not p.startswith("labkit: measuring this machine's")]
    assert printed == [res.summary()] and printed[0].count("done") == 1
    assert printed[0].startswith("2 of 2 cells in ") and "1 invalid" in printed[0]
    # interrupted after the first cell: the last line says so, and how to go on
    answers = iter([fake_fields(), KeyboardInterrupt()])

    def interrupted(c, **how):
        answer = next(answers)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr(runner.loop, "run_cell", interrupted)
    res = runner.run(plan, tmp_path / "r2.jsonl", progress=False)
    assert res.interrupted and "interrupted: rerun with resume=True" in res.summary()
    assert printed == [printed[0]]  # progress=False: nothing printed


# ----------------------------------------------------------------------------- the results file


def test_an_out_that_cannot_be_written_is_refused_before_any_cell(tmp_path, monkeypatch):
    plan = runner.Plan.build(["torch"], ["eager"], ["latency"], profile=SMOKE)
    measured = []
    monkeypatch.setattr(
        runner.loop, "run_cell", lambda *a, **k: measured.append(1) or fake_fields()
    )
    (tmp_path / "afile").write_text("not a folder")
    bad = tmp_path / "afile" / "r.jsonl"  # no one can write under a file, root neither
    with pytest.raises(ValueError) as caught:
        runner.run(plan, bad, progress=False)
    assert str(caught.value).startswith(f"cannot write results to {bad}: ")
    assert f"{tmp_path / 'afile'} is a file, not a folder" in str(caught.value)
    assert "fix: choose a results file in a folder you can write to" in str(caught.value)
    with pytest.raises(ValueError, match="Is a directory"):  # a folder as --out
        runner.run(plan, tmp_path, progress=False)
    # a full disk, as the OS reports it
    fake = type("Full", (), {"f_bavail": 3, "f_frsize": 100})
    monkeypatch.setattr(os, "statvfs", lambda p: fake)
    with pytest.raises(ValueError, match=r"r.jsonl: its disk is full \(0 KiB free\)"):
        runner.run(plan, tmp_path / "r.jsonl", progress=False)
    assert measured == [] and list(tmp_path.iterdir()) == [tmp_path / "afile"]  # nothing left


def test_a_write_that_fails_keeps_the_record_and_resume_recovers(tmp_path, monkeypatch, capsys):
    plan = runner.Plan.build(
        ["torch"], ["eager"], ["latency", "throughput", "train"], profile=SMOKE
    )
    monkeypatch.setattr(runner.loop, "run_cell", lambda *a, **k: fake_fields())
    real_append, calls, fragment = results.append, [], []

    def disk_full_after_the_first(path, record):
        calls.append(record.task)
        if len(calls) == 1:
            return real_append(path, record)
        if len(calls) == 2:  # a full disk takes part of a line, then refuses
            fragment.append(json.dumps(record.to_json())[:60])
            with open(path, "a") as f:
                f.write(fragment[0])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(results, "append", disk_full_after_the_first)
    out = tmp_path / "r.jsonl"
    res = runner.run(plan, out, progress=False)  # no exception: the run goes on and ends
    assert [r["task"] for r in res.records] == ["latency", "throughput", "train"]
    assert [r["task"] for r in res.unsaved] == ["throughput", "train"] and not res.interrupted
    assert calls == ["latency", "throughput", "throughput"]  # retried first, before the next
    err = capsys.readouterr().err
    assert f"could not write to {out} (OSError: No space left on device)" in err
    assert "kept in memory only (RunResult.unsaved)" in err and "--resume" in err
    assert "NOT written" in repr(res)
    # the disk has room again: --resume sets the partial line aside and measures the rest
    monkeypatch.setattr(results, "append", real_append)
    with pytest.warns(UserWarning, match="line 2 is truncated"):
        again = runner.run(plan, out, resume=True, progress=False)
    assert [c.task for c in again.skipped] == ["latency"] and not again.unsaved
    assert [r["task"] for r in results.load(out)] == ["latency", "throughput", "train"]
    assert (tmp_path / "r.jsonl.partial").read_text() == fragment[0] + "\n"


def test_a_write_that_fails_once_is_written_with_the_next_record(tmp_path, monkeypatch):
    plan = runner.Plan.build(["torch"], ["eager"], ["latency", "throughput"], profile=SMOKE)
    monkeypatch.setattr(runner.loop, "run_cell", lambda *a, **k: fake_fields())
    real_append, calls = results.append, []

    def fails_once(path, record):
        calls.append(record["task"])
        if len(calls) == 1:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_append(path, record)

    monkeypatch.setattr(results, "append", fails_once)
    res = runner.run(plan, tmp_path / "r.jsonl", progress=False)
    assert not res.unsaved and res.write_error.startswith("OSError: ")
    assert [r["task"] for r in results.load(tmp_path / "r.jsonl")] == ["latency", "throughput"]


BENCH_WRITER = """
import sys
from labkit import profiles, runner
path, n = sys.argv[1], int(sys.argv[2])
fields = {fields!r}
runner.loop.run_cell = lambda *a, **k: dict(fields)  # a cell that takes no time
smoke = profiles.get("smoke")
cell = runner.Plan.build(["torch"], ["eager"], ["latency"], profile=smoke).cells[0]
print("ready", flush=True)
sys.stdin.readline()
res = runner.run(runner.Plan([cell] * n, smoke), path, progress=False)
assert len(res.records) == n and not res.unsaved, res
"""


def test_a_bench_and_a_notebook_writing_one_file_lose_nothing(tmp_path):
    path = tmp_path / "bench-smoke.jsonl"
    procs = start_together(
        [sys.executable, "-c", BENCH_WRITER.format(fields=fake_fields()), str(path), "400"],
        [sys.executable, "-c", WRITER, str(path), "notebook", "2000"],
    )
    for p in procs:
        assert p.wait(timeout=120) == 0
    records = results.load(path)
    notebook = [r["notes"] for r in records if r["status"] == "failed"]
    assert notebook == [f"notebook {i}" for i in range(2000)]
    assert sum(r["status"] == "ok" for r in records) == 400 and len(records) == 2400


def test_a_busy_machine_is_said_once_per_process(tmp_path):
    """The busy-machine warning is a notebook's stderr box: a second run in the same kernel
    (notebook 10 runs two) does not repeat it; its records still say so."""
    code = (
        "import warnings; from labkit import bench, profiles, runner\n"
        "bench.load_1min = lambda: 99.0\n"
        "plan = runner.Plan([], profiles.get('smoke'))\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        f"    for i in range(2): runner.run(plan, {str(tmp_path)!r} + f'/r{{i}}.jsonl', progress=False)\n"
        "print([str(w.message)[:24] for w in seen])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['this machine is busy (1-']", out.stdout + out.stderr
