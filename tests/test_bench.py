"""labkit.bench statistics and timing, labkit.results schema and queries, labkit.plots figures.

No framework and no speed assertion here: known inputs, fake steps, synthetic records.
"""

import json
import math
import subprocess
import sys
import time
import warnings

from labkit import bench, plots, results

import numpy as np
import pytest

# ----------------------------------------------------------------------------- statistics


@pytest.mark.parametrize(
    "values", [[3, 1, 4, 1, 5, 9, 2, 6], [7.5], [2, 2, 2, 10], list(range(11))]
)
def test_quantiles_match_numpy_linear_interpolation(values):
    for q in (0.0, 0.25, 0.5, 0.75, 0.9, 1.0):
        assert bench.quantile(values, q) == pytest.approx(np.percentile(values, 100 * q))
    assert bench.median(values) == pytest.approx(np.median(values))
    assert bench.iqr(values) == pytest.approx(np.subtract(*np.percentile(values, [75, 25])))


def test_statistics_of_known_values():
    xs = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert bench.median(xs) == 3.0
    assert bench.iqr(xs) == 2.0  # 4 - 2
    assert bench.quantile(xs, 0.9) == pytest.approx(4.6)
    with pytest.raises(ValueError, match="no values"):
        bench.median([])
    with pytest.raises(ValueError, match="0..1"):
        bench.quantile(xs, 1.5)


class Counter:
    """A step whose first call is slow (like a compilation) and then takes ``dt`` seconds."""

    def __init__(self, first=0.15, dt=0.005):
        self.calls, self.first, self.dt = 0, first, dt

    def __call__(self):
        self.calls += 1
        time.sleep(self.first if self.calls == 1 else self.dt)


def test_measure_times_the_first_call_apart_and_counts_calls():
    step = Counter()
    m = bench.measure(
        bench.Prepared(step, batch_size=4),
        warmup=2,
        min_repeats=5,
        min_time_s=0.0,
        max_repeats=100,
        label="fake",
    )
    assert step.calls == 1 + 2 + 5  # first + warm-up + timed
    assert m.repeats == 5 and m.warmup == 2 and len(m.times_s) == 5
    assert m.first_call_s >= 0.15 > max(m.times_s)  # the slow first call is not in the times
    assert m.median_s == bench.median(m.times_s) and m.p90_s == bench.quantile(m.times_s, 0.9)
    assert m.images_per_s == pytest.approx(4 / m.median_s)
    assert m.mean_s == pytest.approx(sum(m.times_s) / 5)
    d = m.as_dict()
    assert d["times_s"] == m.times_s and d["repeats"] == 5
    assert "first call timed apart" in m.how and "Median" in repr(m) and "fake" in repr(m)


def test_measure_repeats_until_min_time_but_not_past_max_repeats():
    m = bench.measure(
        Counter(first=0, dt=0.01),
        warmup=0,
        min_repeats=2,
        min_time_s=0.1,
        max_repeats=1000,
        images_per_call=1,
    )
    assert sum(m.times_s) >= 0.1 and m.repeats >= 2
    m = bench.measure(
        Counter(first=0, dt=0.01),
        warmup=0,
        min_repeats=2,
        min_time_s=100,
        max_repeats=4,
        images_per_call=1,
    )
    assert m.repeats == 4


def test_measure_rejects_bad_settings():
    with pytest.raises(ValueError, match="images_per_call"):
        bench.measure(lambda: None, 0, 1, 0, 1)
    with pytest.raises(ValueError, match="min_repeats"):
        bench.measure(lambda: None, 0, 5, 0, 2, images_per_call=1)


def test_peak_rss_is_a_high_water_mark():
    before = bench.peak_rss_mb()
    block = np.ones(64 * 2**20 // 8)  # 64 MiB, touched
    after = bench.peak_rss_mb()
    del block
    assert before > 10 and after >= before + 32


def test_a_child_process_reports_its_own_peak_not_its_parents():
    # getrusage's ru_maxrss survives fork+exec on Linux: a cell started from a big notebook
    # kernel must not report the kernel's peak as its own
    block = np.ones(512 * 2**20 // 8)  # 512 MiB in this (parent) process
    code = "from labkit import bench; print(bench.peak_rss_mb())"
    child = float(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    del block
    assert child < 400, f"child reported {child:.0f} MiB: inherited the parent's high-water mark"


def test_ceiling_scales_with_image_size_and_task():
    infer = bench.ceiling_images_per_s(224, "throughput")
    assert bench.ceiling_images_per_s(64, "latency") > 10 * infer  # ~ (224/64)^2
    assert bench.ceiling_images_per_s(224, "train") == pytest.approx(infer / 3, rel=0.01)
    assert bench.ceiling_images_per_s(224, "throughput", "bf16") >= infer


# ----------------------------------------------------------------------------- results

CELL = {
    "framework": "torch",
    "mode": "eager",
    "task": "throughput",
    "batch_size": 8,
    "precision": "fp32",
    "image_size": 32,
    "device": "cpu",
    "threads": 2,
    "profile": "smoke",
}


def measured(median, iqr=0.0, first=1.0, prepare=1.0, **cell):
    times = [median - iqr / 2, median, median, median + iqr / 2]
    fields = {**CELL, **cell}
    ips = fields["batch_size"] / median
    return results.make(
        **fields,
        status="ok",
        first_call_s=first,
        prepare_s=prepare,
        median_s=median,
        iqr_s=iqr,
        p90_s=median + iqr / 2,
        mean_s=median,
        images_per_s=ips,
        peak_rss_mb=500.0,
        ceiling_share=ips / 1000,
        ceiling_images_per_s=1000.0,
        repeats=len(times),
        warmup=1,
        times_s=times,
    )


def test_records_follow_the_schema():
    ok = measured(0.1, 0.01)
    assert results.problems(ok) == [] and set(ok) == set(results.FIELDS)
    bad = results.make(**CELL, status="failed", error="unsupported: no bf16 here")
    assert bad["unsupported"] is True and bad["median_s"] is None
    assert results.make(**CELL, status="failed", error="boom")["unsupported"] is False
    assert any("median_s" in p for p in results.problems({**ok, "median_s": None}))
    assert any("error" in p for p in results.problems({**bad, "error": ""}))
    assert any("status" in p for p in results.problems({**ok, "status": "done"}))
    assert any("batch_size" in p for p in results.problems({**ok, "batch_size": "8"}))
    assert any(
        "missing" in p for p in results.problems({k: v for k, v in ok.items() if k != "machine"})
    )
    with pytest.raises(ValueError, match="invalid benchmark record"):
        results.make(**CELL, status="ok")  # no numbers
    no_ceiling = {**ok, "ceiling_share": None, "ceiling_images_per_s": None}
    assert results.problems({**no_ceiling, "device": "gpu"}) == []  # no GPU ceiling estimate
    assert any("ceiling_share" in p for p in results.problems(no_ceiling))
    assert "-" in results.table([{**no_ceiling, "device": "gpu"}])


def test_append_and_load_round_trip(tmp_path):
    path = tmp_path / "sub" / "r.jsonl"
    recs = [measured(0.1), measured(0.05, mode="compile")]
    for r in recs:
        results.append(path, r)
    assert results.load(path) == recs
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_a_record_written_before_the_model_field_reads_as_resnet50(tmp_path):
    path = tmp_path / "old.jsonl"
    old = {k: v for k, v in measured(0.1).items() if k != "model"}
    assert results.problems(old) == []
    path.write_text(json.dumps(old) + "\n")
    (loaded,) = results.load(path)
    assert loaded["model"] == "resnet50" and measured(0.1)["model"] == "resnet50"
    assert any("'model' has type" in p for p in results.problems({**old, "model": 7}))


def test_load_names_the_file_line_and_fix(tmp_path):
    path = tmp_path / "r.jsonl"
    with pytest.raises(ValueError, match="cannot read results file .*r.jsonl.*fix"):
        results.load(path)
    results.append(path, measured(0.1))
    with open(path, "a") as f:
        f.write("{not json\n")
    results.append(path, measured(0.2))
    with pytest.raises(ValueError, match=r"r.jsonl line 2 is not valid JSON.*fix"):
        results.load(path)
    path.write_text(json.dumps({"framework": "torch"}) + "\n")
    with pytest.raises(ValueError, match="line 1 is not a labkit benchmark record: missing"):
        results.load(path)
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="not UTF-8"):
        results.load(path)


def test_a_truncated_last_line_is_skipped_with_a_warning_and_repaired_on_append(tmp_path):
    path = tmp_path / "r.jsonl"
    first = measured(0.1)
    results.append(path, first)
    line = json.dumps(measured(0.2, mode="compile"))
    with open(path, "a") as f:
        f.write(line[:40])  # an interrupted write
    with pytest.warns(UserWarning, match="line 2 is truncated"):
        assert results.load(path) == [first]
    results.append(path, measured(0.3, mode="torchscript"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r["mode"] for r in results.load(path)] == ["eager", "torchscript"]
    assert (tmp_path / "r.jsonl.partial").read_text() == line[:40] + "\n"


def test_latest_best_and_summary():
    old, new = measured(0.2), measured(0.1)
    graph = measured(0.05, mode="compile")
    failed = results.make(**{**CELL, "mode": "torchscript"}, status="failed", error="boom")
    recs = [old, graph, new, failed]
    assert results.latest(recs) == [graph, new, failed]
    assert results.best(recs, "torch", "throughput") is graph
    assert results.best(recs, "torch", "train") is None
    rows = results.summary_rows(recs)
    assert [r["mode"] for r in rows] == ["eager", "torchscript", "compile"]  # the framework's order
    assert rows[0]["median_ms"] == pytest.approx(100) and rows[1]["error"] == "boom"
    text = results.table(recs)
    assert "FAILED: boom" in text and "compile" in text and text.count("\n") == 4


def test_speedups_propagate_the_relative_iqrs():
    eager = measured(0.2, iqr=0.02)  # 10 % relative IQR
    graph = measured(0.1, iqr=0.02, mode="compile")  # 20 %
    ort = measured(0.08, iqr=0.0, framework="onnxruntime", mode="ort")
    other = measured(0.1, iqr=0.01, mode="compile", precision="bf16")  # no bf16 eager: skipped
    rows = {r["framework"]: r for r in results.speedups([eager, graph, ort, other])}
    assert rows["torch"]["speedup"] == pytest.approx(2.0)
    assert rows["torch"]["speedup_iqr"] == pytest.approx(2.0 * math.hypot(0.1, 0.2))
    assert rows["onnxruntime"]["baseline"] == "torch eager"
    assert rows["onnxruntime"]["speedup"] == pytest.approx(2.5)
    assert len(results.speedups([eager, graph, ort, other])) == 2


def test_break_even_calls():
    eager = measured(0.2, first=1.0, prepare=1.0)
    slow_start = measured(0.1, first=20.0, prepare=2.0, mode="compile")  # 20 s extra, 0.1 s/call
    never = measured(0.3, first=5.0, mode="torchscript")  # slower per call
    rows = {r["mode"]: r for r in results.break_even([eager, slow_start, never])}
    assert rows["compile"]["extra_s"] == pytest.approx(20.0)
    assert rows["compile"]["break_even_calls"] == pytest.approx(200.0)
    assert rows["torchscript"]["break_even_calls"] == math.inf


# ----------------------------------------------------------------------------- plots


def test_every_figure_draws_and_saves(tmp_path):
    recs = [
        measured(0.2, iqr=0.02),
        measured(0.1, iqr=0.01, mode="compile", first=20),
        measured(0.3, iqr=0.01, task="train"),
        measured(0.25, mode="torchscript", task="train"),
        measured(0.5, task="latency", batch_size=1),
        measured(0.1, framework="onnxruntime", mode="ort"),
    ]
    for name, make in plots.FIGURES.items():
        fig = make(recs)
        assert fig.axes, name
    assert len(plots.throughput(recs).axes) == 3  # one panel per task
    paths = plots.save_all(recs, tmp_path / "figs")
    assert sorted(p.name for p in paths) == sorted(f"{n}.png" for n in plots.FIGURES)
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)
    assert plots.speedup([recs[0]]).axes[0].texts  # nothing to compare: says so
    assert plots.ceiling(recs)._repr_png_()[:4] == b"\x89PNG"  # a notebook shows it, no pyplot
