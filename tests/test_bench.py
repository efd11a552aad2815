"""labkit.bench statistics and timing, labkit.results schema and queries, labkit.plots figures.

No framework and no speed assertion here: known inputs, fake steps, synthetic records.
"""

import dataclasses
import gc
import json
import math
import os
import re
import subprocess
import sys
import time
import warnings

from labkit import bench, plots, profiles, results
from labkit.frameworks import contract
from labkit.util import stats

import numpy as np
import pytest
from conftest import ROOT, SCHEMA_1_FIELDS, WRITER, start_together

DATA = ROOT / "tests" / "data"

# ----------------------------------------------------------------------------- statistics


@pytest.mark.parametrize(
    "values", [[3, 1, 4, 1, 5, 9, 2, 6], [7.5], [2, 2, 2, 10], list(range(11))]
)
def test_quantiles_match_numpy_linear_interpolation(values):
    for q in (0.0, 0.25, 0.5, 0.75, 0.9, 1.0):
        assert stats.quantile(values, q) == pytest.approx(np.percentile(values, 100 * q))
    assert stats.median(values) == pytest.approx(np.median(values))
    assert stats.iqr(values) == pytest.approx(np.subtract(*np.percentile(values, [75, 25])))


def test_statistics_of_known_values():
    xs = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert stats.median(xs) == 3.0
    assert stats.iqr(xs) == 2.0  # 4 - 2
    assert stats.quantile(xs, 0.9) == pytest.approx(4.6)
    with pytest.raises(ValueError, match="no values"):
        stats.median([])
    with pytest.raises(ValueError, match="0..1"):
        stats.quantile(xs, 1.5)


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
        contract.Prepared(step, batch_size=4),
        warmup=2,
        min_repeats=5,
        min_time_s=0.0,
        max_repeats=100,
        label="fake",
    )
    assert step.calls == 1 + 2 + 5  # first + warm-up + timed
    assert m.repeats == 5 and m.warmup == 2 and len(m.times_s) == 5
    assert m.first_call_s >= 0.15 > max(m.times_s)  # the slow first call is not in the times
    d = m.as_dict()
    assert m.median_s == stats.median(m.times_s) and d["p90_s"] == stats.quantile(m.times_s, 0.9)
    assert m.images_per_s == pytest.approx(4 / m.median_s)
    assert d["mean_s"] == pytest.approx(sum(m.times_s) / 5)
    assert d["times_s"] == m.times_s and d["repeats"] == 5
    assert "Median" in repr(m) and "fake" in repr(m)


def test_measure_repeats_until_min_time_but_not_past_max_repeats():
    m = bench.measure(
        Counter(first=0, dt=0.01),
        warmup=0,
        min_repeats=2,
        min_time_s=0.1,
        max_repeats=1000,
        images_per_call=1,
    )
    assert sum(m.times_s) >= 0.1 and m.repeats >= 2 and m.number_per_run == 1
    step = Counter(first=0, dt=0.01)
    m = bench.measure(step, 1, min_repeats=2, min_time_s=0.0, max_repeats=4, images_per_call=1)
    assert m.repeats == 2 and step.calls == 1 + 1 + 2  # no minimum time: no block, no calibration
    m = bench.measure(step, 1, min_repeats=2, min_time_s=0.01, max_repeats=4, images_per_call=1)
    assert m.number_per_run == 1  # a call that alone takes a sample's target is timed alone


class Spin:
    """A step of about ``dt`` seconds that burns the CPU (a sleep cannot be this short)."""

    def __init__(self, dt):
        self.dt, self.calls = dt, 0

    def __call__(self):
        self.calls += 1
        end = time.perf_counter() + self.dt
        while time.perf_counter() < end:
            pass


def test_a_call_too_fast_for_max_repeats_is_timed_in_blocks_that_reach_the_minimum_time():
    """A 0.2 ms call under a 0.2 s minimum and 20 samples at most: one by one, 20 calls take 4 ms
    and the record could never be valid; in blocks (torch.utils.benchmark's number_per_run) the
    20 samples reach the minimum, and the times stay seconds per call."""
    step = Spin(2e-4)
    m = bench.measure(step, 1, 3, 0.2, max_repeats=20, images_per_call=1, label="fast")
    assert m.number_per_run > 1 and 3 <= m.repeats <= 20
    assert sum(m.times_s) * m.number_per_run >= 0.2  # seconds of timed calls
    assert all(t >= 2e-4 for t in m.times_s)  # per call: never shorter than the call itself
    # every call is accounted for: first, warm-up (the fastest sized the block), then samples
    assert step.calls == 1 + m.warmup + m.repeats * m.number_per_run
    assert f"each the mean of {m.number_per_run} calls" in repr(m)
    assert m.as_dict()["number_per_run"] == m.number_per_run
    assert not [r for r in m.judge(threads=1) if "timed calls" in r or "timed samples" in r]


class SpeedsUp:
    """A step of 1.5 ms for its first ``slow`` calls (warm-up, sizing the block), then 20 us."""

    def __init__(self, slow=9):
        self.calls, self.slow = 0, slow

    def __call__(self):
        self.calls += 1
        Spin(1.5e-3 if self.calls <= self.slow else 2e-5)()


def test_blocks_sized_too_small_are_grown_once_so_the_minimum_time_is_still_met():
    """A step that gets faster after its block was sized (a cache warmed, another process gone):
    200 samples of the small block fall short of 0.2 s, so they become warm-up and the timing
    runs once more with larger blocks."""
    step = SpeedsUp()
    m = bench.measure(step, 1, 3, 0.2, max_repeats=200, images_per_call=1)
    assert sum(m.times_s) * m.number_per_run >= 0.2 and m.repeats <= 200 and m.number_per_run > 2
    assert step.calls == 1 + m.warmup + m.repeats * m.number_per_run
    assert not [r for r in m.judge(threads=1) if "required" in r]


def test_the_verdict_counts_a_blocks_calls():
    # 10 samples of 0.001 s per call, 50 calls each: 0.5 s of timed calls
    per_call = [0.001] * 10
    assert bench.verdict(per_call, 5, 0.4, 1, 0.0, None, 4, number_per_run=50) == []
    short = bench.verdict(per_call, 5, 0.4, 1, 0.0, None, 4)  # the same times as single calls
    assert short and "0.01 s of timed calls, less than the 0.4 s required" in short[0]
    few = bench.verdict(per_call[:3], 5, 0.0, 1, 0.0, None, 4, number_per_run=50)
    assert few == ["3 timed samples of 50 calls, fewer than the 5 required"]


def test_measure_rejects_bad_settings():
    with pytest.raises(ValueError, match="images_per_call"):
        bench.measure(lambda: None, 0, 1, 0, 1)
    with pytest.raises(ValueError, match="min_repeats"):
        bench.measure(lambda: None, 0, 5, 0, 2, images_per_call=1)


def test_peak_rss_is_a_high_water_mark():
    # in a fresh process: this one's peak may already exceed what the block adds (earlier tests)
    code = (
        "import numpy as np; from labkit import bench; before = bench.peak_rss_mb(); "
        "block = np.ones(64 * 2**20 // 8); after = bench.peak_rss_mb(); del block; "
        "print(before, after)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    before, after = map(float, out.stdout.split())
    assert before > 10 and after >= before + 32  # 64 MiB touched


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


def test_garbage_collection_is_off_only_while_calls_are_timed():
    seen = []
    bench.measure(lambda: seen.append(gc.isenabled()), 2, 5, 0.0, 5, images_per_call=1)
    assert seen == [True, True, True, False, False, False, False, False]  # first, warm-up, timed
    assert gc.isenabled()


def test_a_measurement_keeps_what_its_verdict_needs():
    m = bench.measure(Counter(first=0, dt=0.002), 0, 3, 0.01, 100, images_per_call=1)
    assert (m.min_repeats, m.min_time_s) == (3, 0.01)
    if os.path.exists("/proc/stat"):
        assert m.others_cpus is not None and m.others_cpus >= 0
    assert set(m.as_dict()) >= {"others_cpus", "load_1min", "times_s"}
    assert isinstance(m.judge(threads=1), list)


def test_other_processes_busy_cpus_from_two_samples():
    # 10 s apart, the machine was busy for 25 CPU-seconds, this process for 5: others kept 2
    assert bench.busy_elsewhere((0.0, 100.0, 1.0), (10.0, 125.0, 6.0)) == pytest.approx(2.0)
    assert bench.busy_elsewhere(None, (1.0, 2.0, 3.0)) is None
    if os.path.exists("/proc/stat"):
        wall, busy, own = bench.cpu_sample()
        assert wall > 0 and busy > 0 and own > 0


def test_validity_verdict_names_each_rule_broken():
    steady = [0.1] * 20  # 2 s, no spread
    assert bench.verdict(steady, 5, 2.0, threads=2, others=0.0, load=None, cpu_count=4) == []
    few = bench.verdict(steady[:3], 5, 0.1, threads=2, others=None, load=None, cpu_count=4)
    assert few == ["3 timed calls, fewer than the 5 required"]
    short = bench.verdict(steady, 5, 10.0, threads=2, others=None, load=None, cpu_count=4)
    assert short and "2.00 s of timed calls, less than the 10 s required" in short[0]
    noisy = [0.1, 0.1, 0.2, 0.2, 0.1, 0.2]  # IQR/median 100% / 150%
    assert any("spread too wide" in r for r in bench.verdict(noisy, 3, 0.0, 1, None, None, 4))
    # 2 threads on 4 CPUs leave 2 free: others may keep 2 + 10% of 2 = 2.2 busy
    assert bench.verdict(steady, 5, 2.0, threads=2, others=2.1, load=None, cpu_count=4) == []
    busy = bench.verdict(steady, 5, 2.0, threads=2, others=2.5, load=None, cpu_count=4)
    assert busy == [
        (
            "busy machine: other processes kept 2.50 CPUs busy while timing "
            "(at most 2.20 with 2 threads on 4 CPUs)"
        )
    ]
    # without /proc/stat: the load average when timing started, below the CPU count
    loaded = bench.verdict(steady, 5, 2.0, threads=2, others=None, load=4.5, cpu_count=4)
    assert loaded == ["busy machine: 1-minute load 4.5 >= 4 CPUs when timing started"]


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
    times = [median - iqr / 2] * 2 + [median] * 4 + [median + iqr / 2] * 2
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
    assert results.problems(ok) == [] and set(ok.to_json()) == set(results.FIELDS)
    assert {f.name for f in dataclasses.fields(results.Record)} == set(results.FIELDS)
    assert ok.schema == results.schema.SCHEMA_VERSION == 2 and ok.model == "resnet50"
    assert ok.threads == {"intra": 2, "inter": None}  # a bare number: the intra-op count
    assert ok.valid is True and ok.invalid_reasons == []  # judged from its own fields
    assert results.Record.from_json(json.loads(json.dumps(ok.to_json()))) == ok
    shown = repr(ok)
    assert "median 100.0 ± 10.0 ms" in shown and "valid" in shown and "first call" in shown
    assert str(ok) in shown and str(ok).startswith("torch eager throughput b8 fp32 32px cpu: ")
    assert ok._repr_html_().startswith("<div><b>torch eager throughput b8 fp32 32px cpu</b>: ")
    hostile = results.make(**{**CELL, "model": "net<i>.py:Net"}, status="failed", error="e")
    assert "<i>" not in hostile._repr_html_() and "net&lt;i&gt;" in hostile._repr_html_()
    bad = results.make(**CELL, status="failed", error="unsupported: no bf16 here")
    assert bad["unsupported"] is True and bad["median_s"] is None
    assert results.make(**CELL, status="failed", error="boom")["unsupported"] is False
    assert any("median_s" in p for p in results.problems({**ok, "median_s": None}))
    assert any("error" in p for p in results.problems({**bad, "error": ""}))
    assert any("status" in p for p in results.problems({**ok, "status": "done"}))
    assert any("batch_size" in p for p in results.problems({**ok, "batch_size": "8"}))
    no_device = {k: v for k, v in ok.items() if k != "device"}  # a spec field
    assert results.problems(no_device) == ["missing field 'device'"]
    with pytest.raises(ValueError, match="invalid benchmark record"):
        results.make(**CELL, status="ok")  # no numbers
    no_ceiling = {**ok, "ceiling_share": None, "ceiling_images_per_s": None}
    assert results.problems({**no_ceiling, "device": "gpu"}) == []  # no GPU ceiling estimate
    assert results.problems(no_ceiling) == []  # nor where the CPU's clock is unknown
    assert "-" in results.table([{**no_ceiling, "device": "gpu"}])
    assert any("finite" in p for p in results.problems({**ok, "median_s": math.nan}))
    assert any("cache must be one of" in p for p in results.problems({**ok, "cache": "hot"}))
    assert any("must say why" in p for p in results.problems({**ok, "valid": False}))
    assert any(
        "no invalid_reasons" in p for p in results.problems({**ok, "invalid_reasons": ["x"]})
    )
    assert bad["valid"] is False and bad["invalid_reasons"] == ["unsupported here"]
    assert any(
        "cannot be valid" in p
        for p in results.problems({**bad, "valid": True, "invalid_reasons": []})
    )


def test_a_record_is_judged_from_its_own_fields():
    # smoke: at least 5 calls and 0.2 s; 8 calls of 10 ms are 0.08 s
    short = measured(0.01)
    assert not short["valid"] and "less than the 0.2 s required" in short["invalid_reasons"][0]
    busy = measured(
        0.1, others_cpus=1.9, threads={"intra": 2, "inter": 1}, machine={"logical_cpus": 2}
    )
    assert not busy["valid"] and "busy machine" in busy["invalid_reasons"][0]
    given = measured(0.1, valid=False, invalid_reasons=["said so"])
    assert given["invalid_reasons"] == ["said so"]  # a verdict given is kept
    assert (
        results.valid([busy, given, measured(0.1)]) == [measured(0.1)]
        or len(results.valid([busy, given, measured(0.1)])) == 1
    )
    measured_ones = results.ok([busy, given, measured(0.1)])
    assert len([r for r in measured_ones if not results.is_valid(r)]) == 2


def test_schema_1_files_still_load_with_missing_fields_filled_in():
    records = results.load(DATA / "results-v1.jsonl")
    assert len(records) == 6 and all(results.problems(r) == [] for r in records)
    by = {(r["mode"], r["task"]): r for r in records}
    eager = by["eager", "throughput"]
    assert eager["schema"] == 1 and eager["model"] == "resnet50" and eager["cache"] == "unknown"
    assert eager["threads"] == {"intra": 2, "inter": None} and eager["recipe"] is None
    assert eager["export_s"] is None and eager["others_cpus"] is None
    assert eager["valid"] and by["compile", "throughput"]["valid"]
    # judged on loading, by today's rules, from what they recorded
    assert "spread too wide" in by["torchscript", "throughput"]["invalid_reasons"][0]
    assert "1-minute load 3.5" in by["eager", "train"]["invalid_reasons"][0]
    assert by["eager", "latency"]["above_ceiling"] and by["eager", "latency"]["ceiling_note"]
    assert by["ort", "train"]["unsupported"] and not by["ort", "train"]["valid"]
    # the queries work on them: compile against eager, with an interval from the raw times
    (row,) = results.speedups(records)
    assert row["mode"] == "compile" and row["speedup"] == pytest.approx(0.4 / 0.25)
    assert row["speedup_low"] < row["speedup"] < row["speedup_high"] and row["significant"]
    assert row["reading"] == "faster"
    text = results.table(records)
    assert "flags:" in text and "spread too wide" in text and "(!)" in text


def test_append_and_load_round_trip(tmp_path):
    path = tmp_path / "sub" / "r.jsonl"
    recs = [measured(0.1), measured(0.05, mode="compile")]
    for r in recs:
        results.append(path, r)
    assert results.load(path) == recs
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_a_record_written_before_the_model_field_reads_as_resnet50(tmp_path):
    """Schema 1 had no model or input shape: such a line loads as the ResNet-50 it measured."""
    path = tmp_path / "old.jsonl"
    old = {k: v for k, v in measured(0.1).items() if k in SCHEMA_1_FIELDS}
    old.update(schema=1, threads=2)
    assert results.problems(old) == []
    path.write_text(json.dumps(old) + "\n")
    (loaded,) = results.load(path)
    assert (loaded["model"], loaded["input_shape"]) == ("resnet50", "")
    assert measured(0.1)["model"] == "resnet50"
    assert any("'model' has type" in p for p in results.problems({**measured(0.1), "model": 7}))


def test_a_record_written_before_number_per_run_reads_as_calls_timed_alone(tmp_path):
    """Schema-2 records written before blocks of calls existed lack number_per_run: they load,
    and are judged, as one call per timed sample."""
    path = tmp_path / "before-blocks.jsonl"
    old = {k: v for k, v in measured(0.1).items() if k != "number_per_run"}
    assert results.problems(old) == [] and results.schema.DEFAULTS["number_per_run"] == 1
    path.write_text(json.dumps(old) + "\n")
    (loaded,) = results.load(path)
    assert loaded["number_per_run"] == 1 and results.judge(loaded) == results.judge(old)
    assert measured(0.1)["number_per_run"] == 1
    assert any(
        "'number_per_run' has type" in p for p in results.problems({**old, "number_per_run": "x"})
    )
    # the same raw times in blocks of 10 calls: ten times the timed work
    short = {**measured(0.01), "profile": "standard"}  # 8 x 0.01 s < standard's 2 s
    assert any("less than the 2 s required" in r for r in results.judge(short))
    assert not any("required" in r for r in results.judge({**short, "number_per_run": 40}))


#: fields added to schema 2 after its first records were written
ADDED_IN_2 = (
    "number_per_run",
    "measured_peak",
    "measured_peak_images_per_s",
    "measured_peak_share",
    "above_measured_peak",
    "measured_peak_note",
    "accuracy",
)


def test_a_schema_2_file_written_before_the_measured_peak_fields_still_loads(tmp_path):
    """Records written before the measured peak and the accuracy cost existed load with those
    fields filled in (no measured peak, no accuracy cost); a field of the wrong type is named."""
    path = tmp_path / "before.jsonl"
    old = {k: v for k, v in measured(0.1).items() if k not in ADDED_IN_2}
    assert old["schema"] == 2 and results.problems(old) == []
    path.write_text(json.dumps(old) + "\n")
    (loaded,) = results.load(path)
    assert all(loaded[k] == results.schema.DEFAULTS[k] for k in ADDED_IN_2)
    assert loaded.to_json() == measured(0.1).to_json() | {"timestamp": old["timestamp"]}
    assert set(ADDED_IN_2) <= set(results.FIELDS)  # documented with the others
    bad = {**measured(0.1), "measured_peak_share": "high"}
    assert results.problems(bad) == ["field 'measured_peak_share' has type str"]
    int8 = measured(0.1, precision="int8", accuracy={"top1_agreement": 1.0})
    assert results.problems(int8) == [] and results.load(path)  # int8 is a precision


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
    line = json.dumps(measured(0.2, mode="compile").to_json())
    with open(path, "a") as f:
        f.write(line[:40])  # an interrupted write
    with pytest.warns(UserWarning, match="line 2 is truncated"):
        assert results.load(path) == [first]
    results.append(path, measured(0.3, mode="torchscript"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r["mode"] for r in results.load(path)] == ["eager", "torchscript"]
    assert (tmp_path / "r.jsonl.partial").read_text() == line[:40] + "\n"


def _lines(path, *values):
    path.write_text("".join(v + "\n" for v in values))
    return path


def test_a_hostile_line_is_an_error_naming_it_never_a_recursion_error(tmp_path):
    good = json.dumps(measured(0.1).to_json())
    deep = "[" * 5000 + "]" * 5000
    for bad, why in [
        (deep, "nested deeper than 64 levels"),
        (good.replace('"median_s": 0.1', '"median_s": NaN'), "NaN is not a number"),
        (good.replace('"median_s": 0.1', '"median_s": -Infinity'), "-Infinity is not a number"),
        (good.replace('"median_s": 0.1', '"median_s": 1e999'), "1e999 is too large"),
        ('{"n": ' + "9" * 5000 + "}", "digits"),
    ]:
        path = _lines(tmp_path / "r.jsonl", good, bad, good)
        with pytest.raises(ValueError, match=rf"r.jsonl line 2 is not valid JSON \(.*{why}"):
            results.load(path)
        # the reader the class collector shares says which line, and why
        with pytest.raises(results.BadLine, match=f"line 2 is not JSON.*{why}") as caught:
            results.parse_lines(path.read_text())
        assert caught.value.line == 2
    # a deep last line without its newline is not an interrupted write: still refused
    with pytest.raises(results.BadLine, match="line 2 .*nested deeper"):
        results.parse_lines(good + "\n" + deep)
    nested = {
        "a": [[[[{"b": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}]]]]
    }
    assert results.parse_lines(json.dumps(nested) + "\n") == ([(1, nested)], None)  # in a string


def test_load_refuses_impossible_times_and_a_newer_schema_naming_the_line(tmp_path):
    ok = measured(0.1).to_json()
    path = tmp_path / "r.jsonl"
    for field, value, why in [
        ("median_s", -0.1, "field 'median_s' must be > 0, got -0.1"),
        ("images_per_s", -100.0, "field 'images_per_s' must be > 0"),
        ("first_call_s", 0, "field 'first_call_s' must be > 0, got 0"),
        ("iqr_s", -0.01, "field 'iqr_s' must be >= 0"),
        ("wall_s", -3.0, "field 'wall_s' must be >= 0"),
        ("times_s", [0.1, 0.0, -0.2], "'times_s' holds 2 value(s) that are not times > 0"),
    ]:
        _lines(path, json.dumps(ok), json.dumps({**ok, field: value}))
        why = re.escape(why)
        with pytest.raises(ValueError, match=f"line 2 is not a labkit benchmark record: .*{why}"):
            results.load(path)
        with pytest.raises(ValueError, match=why):
            results.append(tmp_path / "other.jsonl", {**ok, field: value})
    assert results.problems({**ok, "iqr_s": 0.0, "prepare_s": 0.0}) == []  # zero spread is fine
    _lines(path, json.dumps(ok), json.dumps({**ok, "schema": 3, "hologram": True}))
    with pytest.raises(ValueError) as caught:
        results.load(path)
    assert str(caught.value).startswith(f"{path} line 2 was written by a newer labkit")
    assert "results schema 3; this labkit reads schemas 1 to 2" in str(caught.value)
    assert "upgrade labkit" in str(caught.value)


def test_an_unregistered_framework_is_kept_with_a_warning_naming_it(tmp_path):
    path = tmp_path / "r.jsonl"
    theirs = [measured(0.1, framework="jax", mode="jit"), measured(0.2, framework="jax")]
    for r in [measured(0.1), *theirs]:
        results.append(path, r)
    with pytest.warns(results.UnregisteredFramework) as caught:
        loaded = results.load(path)
    assert loaded[1:] == theirs and len(caught) == 1
    assert "line 2: framework 'jax' (2 record(s)) is not registered" in str(caught[0].message)
    assert "jax" in results.table(loaded) and results.speedups(loaded) == []


def test_two_processes_appending_to_one_file_lose_nothing(tmp_path):
    path, n = tmp_path / "shared.jsonl", 3000
    procs = start_together(
        *([sys.executable, "-c", WRITER, str(path), who, str(n)] for who in ("a", "b"))
    )
    for p in procs:
        assert p.wait(timeout=120) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no truncated line either
        records = results.load(path)
    notes = [r["notes"] for r in records]
    for who in ("a", "b"):  # every record, each writer's in its order
        assert [x for x in notes if x.startswith(who)] == [f"{who} {i}" for i in range(n)]
    assert len(records) == 2 * n and not (tmp_path / "shared.jsonl.partial").exists()


def test_a_writer_that_dies_holding_the_lock_releases_it(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    path = tmp_path / "r.jsonl"
    holder = (
        "import sys, time; from labkit.util import jsonio\n"
        "with jsonio.locked(sys.argv[1]):\n"
        "    print('ready', flush=True); time.sleep(120)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", holder, str(path)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        with open(path, "ab") as f, pytest.raises(BlockingIOError):
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held
    finally:
        proc.kill()
        proc.wait(timeout=30)
    results.append(path, measured(0.1))  # would wait for ever on a lock left behind
    assert len(results.load(path)) == 1


def test_latest_best_and_summary():
    old, new = measured(0.2), measured(0.1)
    graph = measured(0.05, mode="compile")
    failed = results.make(**{**CELL, "mode": "torchscript"}, status="failed", error="boom")
    recs = [old, graph, new, failed]
    assert results.latest(recs) == [graph, new, failed]
    assert results.best(recs, "torch", "throughput") is graph
    assert results.best(recs, "torch", "train") is None
    text = results.table(recs)
    assert "FAILED: boom" in text and "compile" in text and text.count("\n") == 4
    rows = [line.split() for line in text.split("\n")[2:]]
    assert [r[1] for r in rows] == ["eager", "compile", "torchscript"]  # the framework's order
    assert rows[0][8] == "100.0"  # the median in ms


def test_speedups_carry_a_bootstrap_interval_from_the_raw_times():
    eager = measured(0.2, iqr=0.02)
    graph = measured(0.1, iqr=0.02, mode="compile")
    ort = measured(0.08, iqr=0.0, framework="onnxruntime", mode="ort")
    other = measured(0.1, iqr=0.01, mode="compile", precision="bf16")  # no bf16 eager: skipped
    rows = {r["framework"]: r for r in results.speedups([eager, graph, ort, other])}
    assert rows["torch"]["speedup"] == pytest.approx(2.0)
    low, high = rows["torch"]["speedup_low"], rows["torch"]["speedup_high"]
    assert (
        low < 2.0 < high
        and rows["torch"]["significant"]
        and "bootstrap" in rows["torch"]["interval"]
    )
    assert rows["onnxruntime"]["baseline"] == "torch eager"
    assert rows["onnxruntime"]["speedup"] == pytest.approx(2.5)
    assert len(results.speedups([eager, graph, ort, other])) == 2
    # seeded: the same records give the same interval
    again = results.speedups([eager, graph])[0]
    assert (again["speedup_low"], again["speedup_high"]) == (low, high)
    # an invalid side leaves the pair out, unless asked for (then the row says so)
    noisy = measured(0.1, mode="compile", valid=False, invalid_reasons=["busy"])
    assert results.speedups([eager, noisy]) == []
    (row,) = results.speedups([eager, noisy], include_invalid=True)
    assert row["valid"] is False


def test_ratio_intervals():
    fast = measured(0.1, iqr=0.002, mode="compile")
    slow = measured(0.1, iqr=0.002)
    same = results.ratio(fast, slow)
    assert same.value == pytest.approx(1.0) and same.reading == "cannot tell"
    assert results.Estimate(1.5, 1.2, 1.8).reading == "faster"
    assert results.Estimate(0.5, 0.4, 0.7).reading == "slower"
    # no raw times: the two relative IQRs, propagated
    bare = {"batch_size": 8, "median_s": 0.1, "iqr_s": 0.003}
    est = results.ratio({**bare, "median_s": 0.05}, {**bare, "iqr_s": 0.004})
    assert est.value == pytest.approx(2.0) and "propagated" in est.method
    assert est.high - est.value == pytest.approx(2.0 * math.hypot(0.06, 0.04))
    with pytest.raises(ValueError, match="non-positive median"):
        results.ratio({**bare, "median_s": 0.0}, bare)
    assert est.low <= est.value <= est.high and same.low <= same.value <= same.high


def test_pair_compares_declared_modes_like_with_like():
    records = [
        measured(0.2),
        measured(0.1, mode="compile"),
        measured(0.05, mode="compile", precision="bf16"),
        measured(0.05, mode="compile", image_size=64),  # no eager at 64: not compared
        measured(0.4, mode="compile", valid=False, invalid_reasons=["busy"], batch_size=16),
        measured(0.8, batch_size=16),
    ]
    num, den = results.pair(records, ("torch", "compile"), ("torch", "eager"), "throughput")
    assert (num["mode"], den["mode"], num["batch_size"]) == ("compile", "eager", 8)
    # the invalid batch-16 pair counts only when asked for; then the larger batch wins
    num, _ = results.pair(
        records, ("torch", "compile"), ("torch", "eager"), "throughput", include_invalid=True
    )
    assert num["batch_size"] == 16
    assert results.pair(records, ("torch", "compile"), ("torch", "eager"), "train") is None
    assert results.pair(records, ("torch", "torchscript"), ("torch", "eager"), "throughput") is None


def test_break_even_is_one_formula():
    eager = measured(0.2, first=1.0, prepare=1.0)
    slow_start = measured(0.1, first=20.0, prepare=2.0, mode="compile")  # 20 s extra, 0.1 s/call
    b = results.break_even(slow_start, eager)
    assert (b.extra_s, b.saving_s, b.calls) == (
        pytest.approx(20.0),
        pytest.approx(0.1),
        pytest.approx(200.0),
    )
    never = measured(0.3, first=5.0, mode="torchscript")  # slower per call
    assert results.break_even(never, eager).calls == math.inf
    # an export before the cell is part of the one-off cost
    exported = {
        **measured(0.1, first=1.0, prepare=1.0, framework="onnxruntime", mode="ort"),
        "export_s": 30.0,
    }
    assert results.break_even(exported, eager).calls == pytest.approx(300.0)
    assert results.break_even(eager, slow_start).calls == 0.0  # nothing to repay
    with pytest.raises(ValueError, match="median_s"):
        results.break_even({**eager, "median_s": None}, eager)
    rows = {r["mode"]: r for r in results.break_even_rows([eager, slow_start, never, exported])}
    assert rows["compile"]["break_even_calls"] == pytest.approx(200.0)
    assert rows["torchscript"]["break_even_calls"] == math.inf
    assert rows["ort"]["extra_s"] == pytest.approx(30.0)


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
    drawn = [name for name, make in plots.FIGURES.items() if isinstance(make(recs), plots.Figure)]
    assert drawn == ["throughput", "speedup", "break_even", "ceiling"]  # no measured peak
    assert len(plots.throughput(recs).axes) == 3  # one panel per task
    paths = plots.save_all(recs, tmp_path / "figs")
    assert sorted(p.name for p in paths) == sorted(f"{n}.png" for n in drawn)
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)
    nothing = plots.speedup([recs[0]])  # nothing to compare: not drawn, a sentence says why
    assert isinstance(nothing, plots.Nothing) and "graph/eager pairs" in repr(nothing)
    shares = [
        {**measured(0.2), "measured_peak_share": 0.3},
        {
            **measured(0.1, precision="bf16"),
            "measured_peak_share": 1.2,
            "above_measured_peak": True,
        },
    ]
    ax = plots.measured_peak(shares).axes[0]
    assert [round(b.get_width()) for b in ax.patches] == [30, 120]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["torch eager (b8)", "torch eager bf16 (b8) (!)"]
    assert {t.get_text() for t in ax.texts} == {" 40.0 images/s", " 80.0 images/s"}
    assert "python -m labkit doctor" in plots.measured_peak(recs)
    assert plots.throughput(recs)._repr_png_()[:4] == b"\x89PNG"  # a notebook shows it, no pyplot
    # invalid records are drawn and labelled; a figure above the ceiling is marked
    flagged = [
        measured(0.2, valid=False, invalid_reasons=["busy machine"]),
        {**measured(0.1, mode="compile"), "above_ceiling": True, "ceiling_share": 1.3},
    ]
    labels = [t.get_text() for t in plots.throughput(flagged).axes[0].get_yticklabels()]
    assert any("[invalid]" in t for t in labels)
    labels = [t.get_text() for t in plots.ceiling(flagged).axes[0].get_yticklabels()]
    assert any("(!)" in t for t in labels)
    unknown = [{**r, "ceiling_share": None, "ceiling_images_per_s": None} for r in flagged]
    assert "unknown" in plots.ceiling(unknown)


def test_the_speedup_figure_agrees_with_its_table():
    """Each bar is a row of results.speedups: its length, its label and, only where the table
    says a side is invalid, its hatching and "[invalid]" (pairs have no ``status`` of their own)."""
    recs = [
        measured(0.2, iqr=0.01),
        measured(0.1, iqr=0.01, mode="compile"),
        measured(0.15, iqr=0.01, mode="torchscript"),
        measured(0.3, iqr=0.01, task="train"),
        measured(0.6, iqr=0.01, task="train", mode="compile", valid=False, invalid_reasons=["x"]),
    ]
    table = results.speedups(recs, include_invalid=True)
    assert [r["valid"] for r in table] == [True, True, False]
    fig = plots.speedup(recs)
    drawn = []
    for ax in fig.axes:
        labels = [t.get_text() for t in ax.get_yticklabels()]
        drawn += [(lab, bar.get_width(), bar.get_hatch()) for lab, bar in zip(labels, ax.patches)]
    assert len(drawn) == len(table)
    by_width = {round(w, 9): (lab, hatch) for lab, w, hatch in drawn}
    for row in table:
        label, hatch = by_width[round(row["speedup"], 9)]
        assert ("[invalid]" in label) is (not row["valid"]), label
        assert (hatch == "//") is (not row["valid"]), label


def test_a_speedup_figure_spanning_ratios_uses_a_log_axis_and_still_agrees_with_its_table():
    """A 700x slowdown beside a 2x speedup: on a linear axis the 0.0014x bar vanishes; the axis
    turns logarithmic past plots.LOG_SPAN, and every bar is still its table row."""
    recs = [
        measured(0.001, iqr=0.0001),
        measured(0.0005, iqr=0.00005, mode="compile"),
        measured(0.7, iqr=0.01, mode="torchscript"),
    ]
    table = results.speedups(recs, include_invalid=True)
    speedups = [r["speedup"] for r in table]
    assert min(speedups) < 0.01 and max(speedups) > 1
    fig = plots.speedup(recs)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and "log scale" in ax.get_xlabel()
    low, high = ax.get_xlim()
    assert low <= min(r["speedup_low"] for r in table) and high >= 1.0
    widths = sorted(round(bar.get_width(), 9) for bar in ax.patches)
    assert widths == sorted(round(r["speedup"], 9) for r in table)
    assert plots.speedup(recs[:2]).axes[0].get_xscale() == "linear"  # 2x alone: linear
    # the log axis' tick labels read as numbers: math text that renders 10^k at tick 10^k
    fig.canvas.draw()  # tick labels exist once drawn (the agg canvas, no pyplot)
    shown = [t for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]
    assert shown
    for t in shown:
        exponent = re.fullmatch(r"\$\\mathdefault\{10\^\{(-?\d+)\}\}\$", t.get_text())
        assert exponent and t._preprocess_math(t.get_text())[1] is True, t.get_text()
        assert 10 ** int(exponent[1]) == pytest.approx(t.get_position()[0])


def test_the_spread_limit_is_the_profiles():
    """A 20% spread is invalid under standard's 10% and valid under smoke's 25%; a record is
    judged by its own profile's limit."""
    times = [0.08, 0.09, 0.1, 0.11, 0.12] * 2  # IQR/median 20%
    assert bench.verdict(times, 5, 0.2, 1, 0.0, None, 2) == [
        "spread too wide: IQR/median 20% > 10%"
    ]
    smoke = profiles.get("smoke")
    assert bench.verdict(times, 5, 0.2, 1, 0.0, None, 2, max_rel_iqr=smoke.max_spread) == []
