"""labkit.explore: a learner's own model through every capture path, and through the runner.

Fixture models whose fate is known (tests/explore_models.py, notebooks/own_model/examples.py):
one without graph breaks, one with exactly two, one that torch.export rejects, a Keras model
whose plain tf.function retraces at every new shape until reduce_retracing, and a model that
kills its own process inside one check. Checks run in real worker processes.
"""

import json
import os
import threading

from labkit import explore, frameworks, results
from labkit.frameworks._kit import explore as kit
from labkit.frameworks._kit import layout
from labkit.runner import inputs

import numpy as np
import pytest
from conftest import ROOT, require, run_labkit

FIXTURES = ROOT / "tests" / "explore_models.py"


def spec(name: str) -> str:
    return f"{FIXTURES}:{name}"


def line_of(marker: str) -> int:
    """The line of tests/explore_models.py that carries ``marker``."""
    lines = FIXTURES.read_text().splitlines()
    return next(i for i, text in enumerate(lines, start=1) if marker in text)


# --------------------------------------------------------------------------------------------
# framework-free pieces


def test_input_shapes_parse_from_text():
    assert inputs.parse_inputs("8x3x32x32") == [inputs.Input((8, 3, 32, 32))]
    assert inputs.parse_inputs("2x16x64,2x16:int64") == [
        inputs.Input((2, 16, 64)),
        inputs.Input((2, 16), "int64"),
    ]
    assert inputs.parse_inputs("4X8") == [inputs.Input((4, 8))]
    assert inputs.shapes_text(inputs.with_batch(inputs.parse_inputs("8x16,8x16:int64"), 1)) == (
        "1x16,1x16:int64"
    )
    arrays = inputs.example_arrays(inputs.parse_inputs("2x3,2x5:int64"))
    assert arrays[0].dtype == np.float32 and arrays[1].dtype == np.int64
    assert arrays[1].min() >= 0 and arrays[1].max() <= 9
    assert np.array_equal(arrays[0], inputs.example_arrays(inputs.parse_inputs("2x3"))[0])


@pytest.mark.parametrize(
    "text, message",
    [
        ("8xx3", "is not a shape"),
        ("8x0x3", "has a zero dimension"),
        ("8x3:complex", "unknown dtype 'complex'"),
        ("", "no input shape given"),
    ],
)
def test_bad_input_shapes_say_how_to_write_them(text, message):
    with pytest.raises(ValueError, match=message) as err:
        inputs.parse_inputs(text)
    assert "batch first" in str(err.value) or "no input shape" in str(err.value)


def test_bad_specs_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="names no builder function"):
        inputs.parse("just_a_name")
    with pytest.raises(ValueError, match="no such file 'missing.py'"):
        inputs.parse("missing.py:build")
    with pytest.raises(ValueError, match=r"has no function 'nothing' \(it defines: .*two_breaks"):
        inputs.build_example(spec("nothing"))
    with pytest.raises(ValueError, match="no module named 'no_such_module'"):
        inputs.build_example("no_such_module:build")
    with pytest.raises(
        ValueError,
        match=r"raises\(\) raised RuntimeError: the weights file is missing "
        rf"\(at explore_models.py:{line_of('the weights file is missing')} in raises\)",
    ):
        inputs.build_example(spec("raises"))
    (tmp_path / "none.py").write_text("def build():\n    pass\n")
    with pytest.raises(ValueError, match=r"returned None; it must return the model"):
        inputs.build_example(f"{tmp_path / 'none.py'}:build")
    (tmp_path / "edited.py").write_text("def build():\n    return 1\n")
    assert inputs.build_example(f"{tmp_path / 'edited.py'}:build")[0] == 1
    (tmp_path / "edited.py").write_text("def build():\n    return 2\n")  # a cell rewrote it
    assert inputs.build_example(f"{tmp_path / 'edited.py'}:build")[0] == 2
    (tmp_path / "broken.py").write_text("import no_such_package_here\n")
    with pytest.raises(ValueError, match="importing it failed: ModuleNotFoundError"):
        inputs.build_example(f"{tmp_path / 'broken.py'}:build")
    assert inputs.parse(spec("clean")).canonical() == f"{FIXTURES}:clean"


def test_framework_of_reads_types_and_file_names_without_importing_frameworks():
    assert frameworks.framework_of("model.onnx") == frameworks.framework_of(ROOT / "m.ONNX")
    assert frameworks.framework_of("model.onnx") == "onnxruntime"
    assert frameworks.framework_of(object()) is None
    assert frameworks.framework_of(lambda x: x) is None
    with pytest.raises(ValueError, match="has no checks for MindSpore models yet"):
        frameworks.explorer("mindspore")


def test_agreement_catches_shape_value_and_nan_differences():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    assert kit.agreement([a + 1e-6], [a])[0]
    ok, worst, why = kit.agreement([a + 0.1], [a])
    assert not ok and worst == pytest.approx(0.1, rel=1e-3) and "differs by up to 0.1" in why
    assert "shape" in kit.agreement([a[:1]], [a])[2]
    assert "NaN" in kit.agreement([a * np.nan], [a])[2]
    assert "2 outputs instead of 1" in kit.agreement([a, a], [a])[2]


def test_variations_change_the_batch_and_the_sequence_or_image_size():
    seq = layout.variations([np.zeros((2, 6, 16), np.float32)])
    assert [v.name for v in seq] == ["batch size", "sequence length"]
    assert seq[0].shapes == ["2x6x16", "3x6x16", "4x6x16", "5x6x16"]
    assert seq[1].shapes[1:] == ["2x7x16", "2x8x16", "2x9x16"]
    img = layout.variations([np.zeros((1, 3, 32, 32), np.float32)])
    assert img[1].name == "image size" and img[1].shapes[1] == "1x3x40x40"
    two = layout.variations([np.zeros((4, 8), np.float32), np.zeros((4,), np.int64)])
    assert [v.name for v in two] == ["batch size"] and two[0].shapes[1] == "5x8,5:int64"


def test_report_reads_as_markdown_and_plain_data():
    r = explore.Report("tiny", "torch", "2x8")
    r.paths = [
        explore.PathResult("eager", "works", "runs"),
        explore.PathResult("torch.export", "fails", "a | pipe", "Unsupported: x"),
    ]
    r.graph_breaks = [explore.GraphBreak("print", "m.py:3 in forward", "print(1)", path="t")]
    r.recompiles = [explore.Recompile("torch.compile", "batch size", ["2x8", "3x8"], [1, 1])]
    md = r.to_markdown()
    assert "| torch.export | **fails** | a \\| pipe | Unsupported: x |" in md
    assert "m.py:3 in forward" in md and "| 1, 1 |" in md
    data = json.loads(json.dumps(r.to_dict()))
    assert data["paths"][1]["status"] == "fails" and data["recompiles"][0]["total"] == 2
    assert r.status("eager") == "works" and "1 works, 1 fails>" in repr(r)
    with pytest.raises(KeyError, match="it has eager, torch.export"):
        r.path("onnx")
    with pytest.raises(ValueError, match="status 'maybe'"):
        explore.PathResult("eager", "maybe", "")
    assert kit.user_location('File "/x/site-packages/t.py", line 1\nFile "/m/my.py", line 7, in f')
    assert kit.first_lines("\x1b[96mstep 1\x1b[0m\n\nstep 2\nstep 3") == "step 1 / step 2"


def _record(mode, median, **cell):
    fields = {
        "framework": "torch",
        "mode": mode,
        "task": "throughput",
        "batch_size": 2,
        "precision": "fp32",
        "image_size": 32,
        "device": "cpu",
        "threads": 2,
        "profile": "smoke",
        **cell,
    }
    extra = {} if results.custom(fields) else {"ceiling_share": 0.1, "ceiling_images_per_s": 1e3}
    return results.make(
        **fields,
        status="ok",
        first_call_s=1.0,
        median_s=median,
        iqr_s=median / 10,
        p90_s=median,
        mean_s=median,
        images_per_s=2 / median,
        peak_rss_mb=100.0,
        repeats=20,  # enough timed work for a valid record under smoke (only valid ones pair)
        warmup=1,
        times_s=[median] * 20,
        **extra,
    )


def test_records_of_a_learners_model_never_mix_with_resnet50s():

    mine = {"model": "/m/block.py:build", "image_size": 0}
    recs = [
        _record("eager", 0.2),
        _record("compile", 0.1),
        _record("eager", 0.04, **mine, input_shape="2x8x64"),
        _record("eager", 0.08, **mine, input_shape="2x16x64"),
        _record("compile", 0.02, **mine, input_shape="2x8x64"),
    ]
    assert results.problems(recs[2]) == []  # no ResNet ceiling for another model
    assert len(results.latest(recs)) == 5  # another shape is another cell
    pairs = {(s["model"], s["input_shape"]): s["speedup"] for s in results.speedups(recs)}
    assert pairs == {("resnet50", ""): pytest.approx(2.0), (mine["model"], "2x8x64"): 2.0}
    table = results.table(recs)
    assert (
        table.splitlines()[0].startswith("model") and "block:build" in table and "2x16x64" in table
    )
    assert results.context(recs[0]) != results.context(recs[2])  # claims pair by it
    import importlib

    from labkit.guide import rules

    evidence = importlib.import_module("labkit.guide.evidence")  # the module, not guide.evidence()
    same = evidence.comparable(recs, "throughput", rules.tables())
    assert {r.get("model") for r in same} in (
        {"resnet50"},
        {mine["model"]},
    )


def test_explore_has_its_docstring_and_names():
    assert explore.__doc__ and all(hasattr(explore, n) for n in explore.__all__)
    assert callable(explore.check) and callable(explore.bench)  # no room shadows them


def test_bad_arguments_to_check_name_the_fix():
    with pytest.raises(ValueError, match="cannot tell which framework"):
        explore.check(object(), "2x3", progress=False)
    with pytest.raises(ValueError, match="timeout_s must be"):
        explore.check(spec("clean"), "2x3x8x8", timeout_s=0, progress=False)


# --------------------------------------------------------------------------------------------
# PyTorch: the known outcomes


@pytest.mark.slow
def test_a_clean_model_works_on_every_path_without_graph_breaks():
    require("torch")
    require("onnxruntime")
    report = explore.check(spec("clean"), "2x3x16x16", progress=False)
    assert [p.path for p in report.paths] == list(frameworks.explorer("torch").CHECKS)
    assert {p.path: p.status for p in report.paths} == {p.path: "works" for p in report.paths}
    assert report.graph_breaks == []
    assert report.path("torch.compile").details["graphs"] == 1
    assert "one graph, no graph break" in report.path("torch.compile").reason
    batch = next(r for r in report.recompiles if r.varied == "batch size")
    assert batch.compiles[0] == 1 and batch.compiles[2:] == [0, 0]  # dynamic after one recompile
    assert "agrees with eager" in report.path("onnx").reason


@pytest.mark.slow
def test_two_graph_breaks_are_named_with_their_reasons_and_lines():
    require("torch")
    report = explore.check(spec("two_breaks"), "4x8", checks=["torch.compile"], progress=False)
    compiled = report.path("torch.compile")
    assert compiled.status == "caveats" and compiled.details["graphs"] == 3
    assert len(report.graph_breaks) == 2
    printed, branch = report.graph_breaks
    assert printed.location == f"explore_models.py:{line_of('# BREAK 1')} in forward"
    assert branch.location == f"explore_models.py:{line_of('# BREAK 2')} in forward"
    assert "print()" in printed.reason and "print" in printed.message
    assert "if/while on a tensor's value" in branch.reason and branch.code.startswith("if y.sum()")
    md = report.to_markdown()
    assert f"explore_models.py:{line_of('# BREAK 2')}" in md and "**Graph breaks** (2)" in md


@pytest.mark.slow
def test_torch_export_rejects_a_data_dependent_branch_and_says_where():
    require("torch")
    report = explore.check(
        f"{ROOT}/notebooks/own_model/examples.py:padded_rnn",
        "2x6x16",
        checks=["torch.export", "torch.export(strict)", "torch.compile"],
        progress=False,
    )
    for name in ("torch.export", "torch.export(strict)"):
        assert report.status(name) == "fails"
        assert "torch.cond" in report.path(name).reason
        assert "examples.py:" in report.path(name).reason
    assert report.path("torch.export(strict)").message.startswith("Unsupported: Data-dependent")
    # the branch sits in a loop: Dynamo skips the whole function, and the report says where
    assert report.path("torch.compile").details["graphs"] == 0
    (skipped,) = report.graph_breaks
    assert "skipped the whole function" in skipped.reason and "step.any()" in skipped.code


@pytest.mark.slow
def test_a_check_that_kills_its_process_is_reported_and_the_others_go_on():
    require("torch")
    pid = os.getpid()
    report = explore.check(
        spec("kills_when_exported"),
        "2x8",
        checks=["torch.export", "torch.jit.trace"],
        progress=False,
    )
    assert os.getpid() == pid  # this process is fine
    export = report.path("torch.export")
    assert export.status == "crashed"
    assert "killed by SIGKILL" in export.reason and "while it ran torch.export" in export.reason
    assert report.status("eager") == "works" and report.status("torch.jit.trace") == "works"


@pytest.mark.slow
@pytest.mark.costly  # 22 s of waiting; tests/test_explore_real holds --timeout 20 on a hanging model
def test_a_check_past_its_time_limit_is_stopped(tmp_path):
    require("torch")
    (tmp_path / "slow.py").write_text(
        "import time, torch\n"
        "class Slow(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        if torch.compiler.is_exporting():\n"
        "            time.sleep(600)\n"
        "        return x * 2\n"
        "def build():\n"
        "    return Slow()\n"
    )
    report = explore.check(
        f"{tmp_path / 'slow.py'}:build",
        "2x3",
        checks=["torch.export"],
        timeout_s=20,
        progress=False,
    )
    assert report.status("torch.export") == "fails"
    assert "did not finish within 20 s" in report.path("torch.export").reason


@pytest.mark.slow
def test_a_live_module_travels_to_the_worker_and_an_unpicklable_one_names_the_fix():
    require("torch")
    import torch

    class Doubler(torch.nn.Module):  # defined here: cloudpickle sends it by value
        def forward(self, x):
            return x * 2

    report = explore.check(Doubler(), torch.ones(2, 3), checks=["torch.export"], progress=False)
    assert report.status("torch.export") == "works"
    assert report.model == "Doubler" and report.inputs == "2x3"
    assert "checked in a worker process" in report.to_markdown()

    locked = Doubler()
    locked.lock = threading.Lock()  # cannot be pickled
    with pytest.raises(ValueError, match=r"cannot be handed to a worker .*'file.py:build_model'"):
        explore.check(locked, "2x3", checks=["torch.export"], progress=False)


# --------------------------------------------------------------------------------------------
# TensorFlow and ONNX


@pytest.mark.slow
def test_a_keras_model_retraces_at_every_new_shape_until_reduce_retracing():
    require("tensorflow")
    report = explore.check(
        spec("keras_dense"), "2x7x16", checks=["tf.function(new shapes)"], progress=False
    )
    assert report.framework == "tensorflow"
    row = report.path("tf.function(new shapes)")
    assert row.status == "caveats" and "traces again at every new batch size" in row.reason
    by = {(r.path, r.varied): r for r in report.recompiles}
    plain = by["tf.function", "batch size"]
    assert plain.compiles == [1, 1, 1, 1] and plain.every_call
    relaxed = by["tf.function(reduce_retracing=True)", "batch size"]
    assert relaxed.compiles[2:] == [0, 0] and relaxed.total < plain.total
    assert by["tf.function(input_signature)", "batch size"].total == 1


def test_an_onnx_file_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "tiny.onnx"
    path.write_bytes(b"not read")
    with pytest.raises(ValueError, match="names no builder function: give the model as 'path/"):
        explore.check(path, "3x8", progress=False)


# --------------------------------------------------------------------------------------------
# the command line and the benchmark


@pytest.mark.parametrize(
    "args, message",
    [
        (["nofile.py:build", "--input", "2x3"], "no such file 'nofile.py'"),
        ([spec("nothing"), "--input", "2x3"], "has no function 'nothing'"),
        ([spec("raises"), "--input", "2x3"], "raised RuntimeError: the weights file is missing"),
        ([spec("clean"), "--input", "2xx3"], "is not a shape"),
    ],
)
def test_explore_command_bad_input_is_one_line_and_status_2(args, message):
    proc = run_labkit("explore", *args, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_explore_command_names_a_shape_the_model_cannot_take(tmp_path):
    require("torch")
    out = tmp_path / "report.json"
    proc = run_labkit("explore", spec("clean"), "--input", "2x5", "--out", str(out), timeout=300)
    assert proc.returncode == 2
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert "does not run on inputs 2x5" in line and "fix: give --input" in line
    assert "Traceback" not in proc.stderr and "| path |" not in proc.stdout
    assert json.loads(out.read_text())["paths"][0]["status"] == "fails"  # the finding is kept


@pytest.mark.slow
@pytest.mark.costly  # notebook 10 runs the explorer under smoke
def test_explore_command_writes_the_report_and_benchmark_records_that_report_reads(tmp_path):
    require("torch")
    require("onnxruntime")
    md, jsonl = tmp_path / "block.md", tmp_path / "block.jsonl"
    proc = run_labkit(
        "explore",
        spec("transformer_block"),
        "--input",
        "2x8x64",
        "--out",
        str(md),
        "--bench",
        "--tasks",
        "throughput",
        "--modes",
        "eager,torchscript,ort",  # a compile cell too is notebook 10's (its own in-process bench)
        "--results",
        str(jsonl),
        env={"LABKIT_PROFILE": "smoke"},
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = md.read_text()
    assert f"### Graph readiness of `{spec('transformer_block')}`" in text  # the spec as given
    assert "| torch.compile | works |" in text and "| torch.export | works |" in text
    records = results.load(jsonl)
    assert {(r["framework"], r["mode"]) for r in records} == {
        ("torch", "eager"),
        ("torch", "torchscript"),
        ("onnxruntime", "ort"),
    }
    for r in records:
        assert r["model"] == f"{FIXTURES}:transformer_block" and r["input_shape"] == "2x8x64"
        assert r["status"] == "ok", r["error"]
        assert r["batch_size"] == 2 and r["image_size"] == 0 and r["ceiling_share"] is None
    # every graph mode pairs with eager (valid or not: the machine may be busy)
    speeds = results.speedups(records, include_invalid=True)
    assert {s["mode"] for s in speeds} == {"torchscript", "ort"}
    report = run_labkit("report", str(jsonl), "--out", str(tmp_path / "figs"), timeout=300)
    assert report.returncode == 0, report.stderr
    assert "explore_models:transformer_block" in report.stdout and "2x8x64" in report.stdout
    assert (tmp_path / "figs").is_dir()
