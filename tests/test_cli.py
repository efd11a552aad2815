"""``python -m labkit bench | report``: bad input gets one clear message and exit status 2, no
results file is ever damaged, and report prints a table and writes the figures."""

import errno
import json
import os
from pathlib import Path

from labkit import cli, plots, results

import pytest
from conftest import run_labkit

CELL = {
    "framework": "torch",
    "mode": "eager",
    "task": "throughput",
    "batch_size": 4,
    "precision": "fp32",
    "image_size": 32,
    "device": "cpu",
    "threads": 2,
    "profile": "smoke",
}


def record(mode="eager", median=0.1, first=1.0, **cell):
    fields = {**CELL, "mode": mode, **cell}
    ips = fields["batch_size"] / median
    return results.make(
        **fields,
        status="ok",
        first_call_s=first,
        prepare_s=1.0,
        median_s=median,
        iqr_s=median / 10,
        p90_s=median * 1.1,
        mean_s=median,
        images_per_s=ips,
        peak_rss_mb=400.0,
        ceiling_share=ips / 1400,
        ceiling_images_per_s=1400.0,
        repeats=5,
        warmup=1,
        times_s=[median] * 5,
    )


@pytest.fixture
def results_file(tmp_path):
    path = tmp_path / "bench.jsonl"
    for r in (
        record(),
        record("compile", 0.05, first=30.0),
        results.make(
            **{**CELL, "framework": "onnxruntime", "mode": "ort", "task": "train"},
            status="failed",
            error="unsupported: ONNX Runtime does not train here",
        ),
    ):
        results.append(path, r)
    return path


SMOKE_CELL = ["bench", "--profile", "smoke", "--frameworks", "torch", "--modes", "eager"]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--frameworks", "torch,jax"],
            (
                "unknown framework 'jax': valid frameworks are torch, tensorflow, "
                "mindspore, paddle, onnxruntime, tvm"
            ),
        ),
        (
            ["--modes", "eager,turbo"],
            (
                "unknown mode 'turbo': valid modes are eager, graph, quick, compile, "
                "torchscript, function, xla, pynative, dygraph, sot, ast, ort, relax"
            ),
        ),
        (
            ["--tasks", "inference"],
            "unknown task 'inference': valid tasks are latency, throughput, train",
        ),
        (
            ["--precision", "int4"],
            "unknown precision 'int4': valid precisions are fp32, bf16, int8",
        ),
        (["--batch-sizes", "8,0"], "batch sizes must be whole numbers >= 1"),
        (["--batch-sizes", "eight"], "batch sizes must be whole numbers >= 1, got ['eight']"),
        (["--profile", "tiny"], "valid profiles are smoke, standard, full"),
        (["--device", "tpu"], "valid devices are cpu, gpu"),
        (["--threads", "0"], "--threads must be >= 1"),
    ],
)
def test_bench_bad_input_exits_2_naming_the_valid_choices(args, message, capsys, tmp_path):
    out = tmp_path / "never.jsonl"
    assert cli.main(["bench", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not out.exists()  # nothing ran


def test_bench_refuses_to_append_to_a_corrupt_file(tmp_path, capsys, results_file):
    text = results_file.read_text()
    lines = text.splitlines(keepends=True)
    results_file.write_text(lines[0] + "{oops\n" + "".join(lines[1:]))
    before = results_file.read_bytes()
    assert (
        cli.main(
            [
                "bench",
                "--profile",
                "smoke",
                "--frameworks",
                "torch",
                "--modes",
                "eager",
                "--tasks",
                "latency",
                "--out",
                str(results_file),
            ]
        )
        == 2
    )
    assert "line 2 is not valid JSON" in capsys.readouterr().err
    assert results_file.read_bytes() == before  # untouched


def test_report_prints_the_table_and_writes_every_figure(tmp_path, results_file):
    out = tmp_path / "figs"
    proc = run_labkit("report", str(results_file), "--out", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "images/s" in proc.stdout and "compile" in proc.stdout
    assert "FAILED: unsupported: ONNX Runtime does not train here" in proc.stdout
    for name in plots.FIGURES:  # drawn, or a sentence says why not
        png = out / f"{name}.png"
        assert (
            png.read_bytes()[:4] == b"\x89PNG"
            if png.exists()
            else f"{name}: No figure" in proc.stdout
        )


def test_report_on_a_truncated_file_reports_what_is_complete_and_exits_2(
    tmp_path, capsys, results_file
):
    with open(results_file, "a") as f:
        f.write(json.dumps(record("torchscript").to_json())[:50])
    before = results_file.read_bytes()
    assert cli.main(["report", str(results_file), "--out", str(tmp_path / "figs")]) == 2
    out, err = capsys.readouterr()
    assert "compile" in out and "torchscript" not in out  # the complete records are reported
    assert "line 4 is truncated" in err and "--resume" in err
    assert results_file.read_bytes() == before  # report never modifies a results file
    assert (tmp_path / "figs" / "throughput.png").exists()


def test_report_on_a_deeply_nested_line_names_it_without_a_traceback(tmp_path, results_file):
    text = results_file.read_text().splitlines(keepends=True)
    results_file.write_text(text[0] + "[" * 5000 + "]" * 5000 + "\n" + "".join(text[1:]))
    proc = run_labkit("report", str(results_file), "--out", str(tmp_path / "figs"), timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(
        f"error: {results_file} line 2 is not valid JSON (nested deeper than 64 levels)"
    )


def test_report_keeps_a_framework_it_does_not_know_with_a_warning(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    for r in (record(), record(framework="jax", mode="jit")):
        results.append(path, r)
    assert cli.main(["report", str(path), "--out", str(tmp_path / "figs")]) == 0
    out, err = capsys.readouterr()
    assert "jax" in out and "jit" in out
    assert err.startswith(
        f"warning: {path} line 2: framework 'jax' (1 record(s)) is not registered"
    )


def test_report_on_a_file_without_a_suffix_writes_the_figures_beside_it(tmp_path, capsys):
    plain = tmp_path / "bench"  # no .jsonl: "FILE without its suffix" is FILE itself
    results.append(plain, record())
    before = plain.read_bytes()
    assert cli.main(["report", str(plain)]) == 0, capsys.readouterr().err
    assert (tmp_path / "bench-figures" / "throughput.png").read_bytes()[:4] == b"\x89PNG"
    assert plain.read_bytes() == before


def test_report_to_an_existing_file_is_a_clear_error(tmp_path, capsys, results_file):
    taken = tmp_path / "notes.txt"
    taken.write_text("mine")
    assert cli.main(["report", str(results_file), "--out", str(taken)]) == 2
    out, err = capsys.readouterr()
    assert (
        f"--out {taken} is a file, not a folder" in err and err.startswith("error: ") and out == ""
    )
    assert taken.read_text() == "mine"


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read results file"),
        (b"", "holds no results"),
        (b"\x00\xff binary", "not UTF-8"),
        (b'{"framework": "torch"}\n', "line 1 is not a labkit benchmark record"),
    ],
)
def test_report_bad_files_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "r.jsonl"
    if content is not None:
        path.write_bytes(content)
    assert cli.main(["report", str(path)]) == 2
    out, err = capsys.readouterr()
    assert message in err and err.startswith("error: ") and out == ""


def test_bad_input_through_the_real_command_line(tmp_path):
    proc = run_labkit(
        "bench", "--frameworks", "caffe", "--out", str(tmp_path / "x.jsonl"), timeout=120
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: unknown framework 'caffe': valid frameworks are torch, "
        "tensorflow, mindspore, paddle, onnxruntime, tvm"
    )


def test_bench_to_an_out_that_cannot_be_written_says_so_before_measuring(tmp_path):
    (tmp_path / "afile").write_text("mine")
    out = tmp_path / "afile" / "r.jsonl"  # under a file: not writable, not even by root
    proc = run_labkit(*SMOKE_CELL, "--out", str(out), timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr  # nothing measured
    assert proc.stderr.startswith(f"error: cannot write results to {out}: {out.parent} is a file")
    assert "fix: choose a results file in a folder you can write to" in proc.stderr
    assert (tmp_path / "afile").read_text() == "mine"


def test_bench_whose_writes_fail_keeps_going_and_says_what_was_not_written(
    tmp_path, capsys, monkeypatch
):
    from labkit import runner

    fields = {"status": "failed", "error": "boom", "wall_s": 1.0}
    monkeypatch.setattr(runner.loop, "run_cell", lambda *a, **k: dict(fields))

    def full(path, record):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(results, "append", full)
    out = tmp_path / "r.jsonl"
    assert cli.main([*SMOKE_CELL, "--tasks", "latency,throughput", "--out", str(out)]) == 1
    got, err = capsys.readouterr()
    assert got.count("FAILED: boom") == 2  # the table shows what was measured
    # the run's last line says what was not written, why, and the fix; so did each failed write
    assert "2 NOT written (OSError: No space left on device): free space, then rerun" in got
    assert f"could not write to {out}" in err and "--resume" in got and not out.exists()


def test_distributed_subcommand_prints_the_commands_for_several_machines():
    proc = run_labkit("distributed", "--framework", "torch", "--hosts", "a,b", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("--rdzv-endpoint a:29500") == 2
    assert "# on b:" in proc.stdout


# ----------------------------------------------------------------------------- golden messages

GOLDEN = [  # the exact last line each bad command prints (kept through labkit's move to rooms)
    (
        ["bench", "--profile", "tiny"],
        (
            "error: unknown profile 'tiny': valid profiles are smoke, standard, full "
            "(e.g. export LABKIT_PROFILE=smoke)"
        ),
    ),
    (
        ["bench", "--tasks", "serve"],
        "error: unknown task 'serve': valid tasks are latency, throughput, train",
    ),
    (
        ["report", "/nonexistent.jsonl"],
        (
            "error: cannot read results file /nonexistent.jsonl: No such file or directory; fix: "
            "give the path of a file written by `python -m labkit bench --out FILE.jsonl`"
        ),
    ),
    (
        ["class", "report", "--db", "/nonexistent.duckdb", "--out", "unused"],
        (
            "error: no class database at /nonexistent.duckdb; fix: "
            "python -m labkit class collect FOLDER --db /nonexistent.duckdb"
        ),
    ),
]


@pytest.mark.parametrize("args,message", GOLDEN, ids=[" ".join(a[:2]) for a, _ in GOLDEN])
def test_golden_error_messages(args, message, tmp_path):
    proc = run_labkit(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == message


def test_golden_message_for_a_missing_model_file(tmp_path):
    proc = run_labkit("explore", "nofile.py:build", "--input", "2x3", cwd=tmp_path)
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert (
        last == f"error: model 'nofile.py:build': no such file 'nofile.py' (looked in {tmp_path})"
    )


# --------------------------------------------------------------------------------------------
# doctor: the estimate and the measured peak side by side

MACHINES = Path(__file__).resolve().parent / "data" / "machines"


def _ceiling_lines(out: str) -> dict[str, list[str]]:
    """precision -> the cells of its row in doctor's ceiling table (Markdown)."""
    head = out.index("Ceiling per precision")
    rows = [line for line in out[head:].splitlines() if line.startswith("| ")][1:4]
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    return {c[0]: c for c in cells}


def test_doctor_on_fixture_trees_shows_the_estimate_beside_the_measured_peak():
    from labkit import doctor

    amx = doctor.markdown(MACHINES / "intel_amx")
    assert "package" not in amx  # no frameworks
    rows = _ceiling_lines(amx)
    assert rows["fp32"][1:4] == ["973", "505 (6)", "52%"]  # estimate, measured (IQR), share
    assert rows["bf16"][1:3] == ["15,565", "2,950 (37)"] and rows["int8"][1] == "31,130"
    assert rows["int8"][2].startswith("5,200") and "matrix units promise" in amx
    vm = doctor.markdown(MACHINES / "container_v1_unknown_clock")
    rows = _ceiling_lines(vm)
    assert rows["fp32"][1] == "unknown" and rows["fp32"][2].startswith("230")
    assert "the clock is unknown (set LABKIT_CPU_MAX_GHZ)" in vm
    laptop = doctor.markdown(MACHINES / "smt_laptop")
    rows = _ceiling_lines(laptop)
    assert rows["fp32"][1:3] == ["243", "280 (4)"] and "above it" in laptop
    assert rows["bf16"][1:3] == ["243", "not measured"] and "no bf16 unit" in laptop
    zen4 = doctor.markdown(MACHINES / "amd_zen4")
    assert "the fixture tree holds no peak-probes.json" in zen4


@pytest.mark.costly  # measures every peak probe (30 s); tests/test_hardware measures one here
def test_doctor_measures_this_machine_once_and_reads_the_cache_after(tmp_path):
    env = {"LABKIT_CACHE_DIR": str(tmp_path / "cache")}
    before = run_labkit("doctor", "--no-measure", env=env, timeout=300)
    assert before.returncode == 0, before.stderr
    assert "not measured yet (python -m labkit doctor measures it)" in before.stdout
    first = run_labkit("doctor", env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    rows = _ceiling_lines(first.stdout)
    assert rows["fp32"][2].split()[0].replace(",", "").isdigit(), first.stdout  # measured
    assert rows["fp32"][4] and "spec-sheet" in rows["fp32"][-1]  # the best kernel, the note
    cache = list((tmp_path / "cache").glob("peaks-*.json"))
    assert len(cache) == 1 and str(cache[0]) in first.stdout
    again = run_labkit("doctor", "--no-measure", env=env, timeout=300)
    assert _ceiling_lines(again.stdout)["fp32"][1:3] == rows["fp32"][1:3]
