"""The audit of the articles' claims (labkit/data/sources.toml, labkit.sources.claims): verdicts
computed from records, each within its claim's regime (framework-free, so these tests are fast)."""

import math

from labkit import results
from labkit.frameworks import MODES, NAMES
from labkit.sources import claims

import pytest


def rec(
    framework,
    mode,
    task,
    images_per_s,
    *,
    iqr_frac=0.02,
    batch=8,
    precision="fp32",
    status="ok",
    device="cpu",
    gpus=(),
    image_size=32,
):
    median = batch / images_per_s
    return {
        "framework": framework,
        "mode": mode,
        "task": task,
        "batch_size": batch,
        "precision": precision,
        "status": status,
        "median_s": median,
        "image_size": image_size,
        "iqr_s": median * iqr_frac,
        "device": device,
        "machine": {"gpus": list(gpus), "cpu": "AMD EPYC 9R14", "cores": 2},
        "profile": "smoke",
        "valid": status == "ok",  # judged valid: only valid records are evidence
    }


def on_a100(records, image_size=224, precision="bf16"):
    """The same records as if measured in the seeds' training regime: an A100, 224 px, AMP."""
    return [
        {
            **r,
            "device": "gpu",
            "machine": {"gpus": ["NVIDIA A100-SXM4-80GB"]},
            "image_size": image_size,
            "precision": precision,
        }
        for r in records
    ]


def speedups(task, torch=1.0, tf=1.0, ms=1.0, base=10.0, **kw):
    """Eager at ``base`` images/s and the best graph mode ``factor`` times faster, per framework."""
    return [
        rec("torch", "eager", task, base, **kw),
        rec("torch", "compile", task, base * torch, **kw),
        rec("tensorflow", "eager", task, base, **kw),
        rec("tensorflow", "xla", task, base * tf, **kw),
        rec("mindspore", "pynative", task, base, **kw),
        rec("mindspore", "graph", task, base * ms, **kw),
    ]


def test_claims_compare_the_modes_they_declare_never_the_fastest():
    c = claims.claim("train_5_10")
    declared = [(r.num, r.den) for r in c.ratios]
    assert (("torch", "compile"), ("torch", "eager")) in declared
    assert (("torch", "torchscript"), ("torch", "eager")) in declared  # each graph mode its own
    # TorchScript far faster than compile: compile's ratio is still the one judged for compile
    records = [
        rec("torch", "eager", "train", 10),
        rec("torch", "torchscript", "train", 30),
        rec("torch", "compile", "train", 10.7),
    ]
    by = {m.ratio.num[1]: m for m in claims.check(c, on_a100(records)).measured}
    assert by["compile"].place == "in" and by["torchscript"].place == "above"


def test_invalid_records_are_no_evidence_unless_asked_for():
    c = claims.claim("train_5_10")
    records = speedups("train", 1.07, 1.08, 1.06)
    records[1] = {**records[1], "valid": False, "invalid_reasons": ["busy machine"]}
    v = claims.check(c, records)
    assert [m.ratio.num for m in v.measured] == [("tensorflow", "xla"), ("mindspore", "graph")]
    v = claims.check(c, records, include_invalid=True)
    assert ("torch", "compile") in [m.ratio.num for m in v.measured]
    assert claims.check_all(records)[1].measured == claims.check(c, records).measured


def test_a_claim_is_judged_only_in_its_regime():
    c = claims.claim("train_5_10")  # drawn from the seeds' A100 table (AMP, 224 px)
    assert claims.check(c, on_a100(speedups("train", 1.07, 1.08, 1.06))).verdict == claims.HOLDS
    v = claims.check(c, on_a100(speedups("train", 1.02, 1.03, 0.9)))
    assert v.verdict == claims.FAILS and v.label() == "does not hold here"
    assert [m.place for m in v.measured] == ["below", "below", "below"]
    assert [m.reading for m in v.measured] == ["smaller", "smaller", "opposite"]
    v = claims.check(c, on_a100(speedups("train", 1.07, 1.02, 1.0)))
    assert v.verdict == claims.MIXED
    assert "torch compile / eager (train) 1.07x is in" in v.why
    assert (
        "tensorflow xla / eager (train) 1.02x is below 1.05x-1.1x: the direction, smaller" in v.why
    )
    assert (
        "mindspore graph / pynative (train) 1.00x is below 1.05x-1.1x: the opposite direction"
        in v.why
    )
    # the same ratios from a 2-core CPU at 32 px, fp32: reported, never a verdict on the claim
    v = claims.check(c, speedups("train", 1.07, 1.08, 1.06))
    assert v.verdict == claims.REGIME
    assert v.label() == (
        "different regime (hardware, image size, precision): measured here 1.07x, 1.08x, 1.06x, "
        "not judged"
    )
    assert "2-core AMD EPYC 9R14 here, one and eight NVIDIA A100 GPUs in the claim" in v.why
    assert "32 here, 224 in the claim" in v.why and "neither confirming nor refuting" in v.why


def test_a_ratio_beyond_a_claimed_gain_keeps_the_direction_and_is_never_a_refutation():
    c = claims.claim("train_5_10")
    v = claims.check(c, on_a100(speedups("train", 1.5, 4.23, 1.07)))
    assert v.verdict == claims.LARGER and v.label() == "direction holds, larger than claimed"
    assert [m.reading for m in v.measured] == ["larger", "larger", "in"]
    assert (
        "tensorflow xla / eager (train) 4.23x is above 1.05x-1.1x: the direction, larger" in v.why
    )
    # one ratio the other way round makes it mixed, not a refutation
    v = claims.check(c, on_a100(speedups("train", 1.5, 4.23, 0.8)))
    assert v.verdict == claims.MIXED
    # a claimed loss (ONNX costs 5-10%): a larger loss keeps the direction, a gain is opposite
    onnx = claims.claim("onnx_cost")
    assert onnx.direction == -1 and claims.claim("graph_20_50").direction == 1
    # a figure the seeds' table implies (relative to its value) has no direction to keep
    assert claims.claim("a100_training").direction == 0


def test_noise_is_reported_when_the_interval_crosses_the_range():
    c = claims.claim("train_5_10")
    v = claims.check(c, on_a100(speedups("train", 1.04, 1.04, 1.04, iqr_frac=0.2)))
    assert v.verdict == claims.FAILS  # judged by the median ...
    assert all(m.noisy for m in v.measured) and "within noise" in v.why  # ... but flagged
    v = claims.check(c, on_a100(speedups("train", 1.5, 1.5, 1.5, iqr_frac=0.001)))
    assert not any(m.noisy for m in v.measured) and "within noise" not in v.why


def test_a_large_scale_claim_is_judged_only_at_large_scale():
    c = claims.claim("graph_20_50")  # "in large-scale training and deployment"
    records = speedups("train", 1.3, 4.23, 1.3) + speedups("throughput", 1.1, 1.3, 1.3)
    # one small CPU run (32 px): its ratios stand beside the claim, never a verdict on it
    v = claims.check(c, records)
    assert len(v.measured) == 6 and v.verdict == claims.REGIME
    assert v.label().startswith(
        "different regime (hardware, image size): measured here 1.30x, 4.23x"
    )
    assert "2-core AMD EPYC 9R14, 32 px, batch 8, fp32" in v.row()["measured here"]
    assert "large-scale training and deployment" in v.row()["its regime"]
    # on a GPU at 224 px it is judged, and a ratio above the range keeps the direction
    v = claims.check(c, on_a100(records, precision="fp32"))
    assert v.verdict == claims.MIXED  # 1.1x is below 1.2x-1.5x: faster, by less than claimed
    assert "4.23x is above 1.2x-1.5x: the direction, larger" in v.why
    v = claims.check(c, on_a100(speedups("train", 1.3, 4.23, 1.3), precision="fp32"))
    assert v.verdict == claims.LARGER


def test_the_seeds_untestable_figures_have_rows_that_say_so():
    by_figure = {c.key: c for c in claims.CLAIMS}
    for key in ("training_time_cut", "lite_vs_tflite"):
        c = by_figure[key]
        assert not c.ratios and c.untestable and "cpu" not in c.regime.hardware, key
        v = claims.check(c, speedups("train", 1.07, 1.08, 1.06))
        assert v.verdict == claims.REGIME == claims.UNTESTABLE
        assert v.label().endswith("untestable here") and "untestable here: it needs" in v.why
        assert v.row()["measured here"] == "not measured"
    lite = by_figure["lite_vs_tflite"]
    assert "15-25%" in lite.statement and "MindSpore Lite" in lite.regime.describe()
    assert claims.check(lite, []).label() == "different regime (hardware, runtime): untestable here"
    assert "10-20%" in by_figure["training_time_cut"].statement


def test_nothing_measured_is_not_a_verdict():
    v = claims.check(claims.claim("onnx_cost"), [rec("torch", "eager", "throughput", 10)])
    assert v.verdict == claims.NOT_MEASURED and v.measured == []
    assert "run the benchmark cells" in v.why
    # a claim this machine can never be in: a different regime even before anything is measured
    v = claims.check(claims.claim("a100_training"), [rec("torch", "eager", "throughput", 10)])
    assert (
        v.verdict == claims.REGIME
        and v.label() == "different regime (hardware): nothing measured here"
    )


def test_a_claim_measured_only_invalidly_says_so_and_stays_unjudged():
    """Cells that ran but gave invalid records are not "nothing measured": the row shows what
    they would say, and the verdict stays unjudged (as with nothing at all)."""
    records = [
        rec("torch", "eager", "throughput", 10, image_size=224),
        rec("onnxruntime", "ort", "throughput", 9.2, image_size=224),
    ]
    records[0] = {**records[0], "valid": False, "invalid_reasons": ["spread too wide"]}
    v = claims.check(claims.claim("onnx_cost"), records)
    assert v.verdict == claims.NOT_MEASURED and v.measured == []
    assert [round(m.estimate.value, 2) for m in v.invalid] == [0.92]
    assert "records are invalid" in v.why and "run the benchmark" not in v.why
    assert (
        v.row()["measured here"].startswith("only invalidly: ")
        and "0.92x" in v.row()["measured here"]
    )
    assert claims.check(claims.claim("onnx_cost"), records, include_invalid=True).measured
    # where this machine cannot be in the claim's regime, the label says nothing *valid*
    train = [
        {**rec("torch", "eager", "train", 10, precision="bf16"), "valid": False},
        rec("torch", "torchscript", "train", 12, precision="bf16"),
    ]
    v = claims.check(claims.claim("a100_training"), train)
    assert v.verdict == claims.REGIME and v.invalid and "records are invalid" in v.why
    assert v.label() == "different regime (hardware): nothing validly measured here"


def test_onnx_cost_is_judged_at_the_seeds_image_size_only():
    records = [
        rec("torch", "eager", "throughput", 10, image_size=224),
        rec("torch", "compile", "throughput", 20, image_size=224),
        rec("onnxruntime", "ort", "throughput", 9.2, image_size=224),
    ]
    v = claims.check(claims.claim("onnx_cost"), records)
    assert [round(m.estimate.value, 2) for m in v.measured] == [0.92, 0.46]
    assert v.verdict == claims.LARGER  # 0.92x is in 0.9x-0.95x; against torch.compile 0.46x:
    assert "0.46x is below 0.9x-0.95x: the direction, larger" in v.why
    records[2] = rec("onnxruntime", "ort", "throughput", 12, image_size=224)  # ONNX faster
    v = claims.check(claims.claim("onnx_cost"), records)
    assert v.verdict == claims.MIXED and "1.20x is above 0.9x-0.95x: the opposite" in v.why
    small = [{**r, "image_size": 32} for r in records]
    v = claims.check(claims.claim("onnx_cost"), small)
    assert v.verdict == claims.REGIME and v.label().startswith("different regime (image size)")


def test_cpu_graph_beats_onnx_says_which_runtimes_it_compared():
    c = claims.claim("cpu_graph_beats_onnx")
    assert math.isinf(c.high)
    records = [
        rec("onnxruntime", "ort", "throughput", 10, image_size=224),
        rec("tensorflow", "function", "throughput", 12, image_size=224),
        rec("mindspore", "graph", "throughput", 8, image_size=224),
        rec("mindspore", "pynative", "throughput", 30, image_size=224),
    ]
    v = claims.check(c, records)
    # the seeds' figures came from TF Serving and MindSpore Lite: in-process runtimes measured
    # here cannot confirm or refute them, even on a CPU at 224 px
    assert v.verdict == claims.REGIME
    assert v.label() == "different regime (runtime): measured here 1.20x, 0.80x, not judged"
    assert [m.ratio.num[1] for m in v.measured] == ["function", "graph"]  # pynative: no graph
    row = v.row()
    assert "TF Serving and MindSpore Lite against ONNX Runtime" in row["its regime"]
    assert (
        "in-process here, TF Serving and MindSpore Lite against ONNX Runtime in the claim"
        in (row["why"])
    )
    assert "each in the benchmark's own process" in row["why"]
    assert "TF graph in-process / ONNX Runtime (inference): 1.20x" in row["measured here"]


def test_hardware_claims_need_their_hardware():
    c = claims.claim("a100_training")
    cpu = [
        rec("torch", "eager", "train", 10),
        rec("torch", "torchscript", "train", 10.5),
        rec("tensorflow", "xla", "train", 10.3),
        rec("mindspore", "graph", "train", 10.8),
    ]
    v = claims.check(c, cpu)
    assert v.verdict == claims.REGIME == claims.UNTESTABLE and "A100" in v.why
    assert c.regime.hardware_text == "one and eight NVIDIA A100 GPUs"
    assert len(v.measured) == 3  # the ratios measurable here are still shown ...
    assert "article: 1.05x" in v.row()["measured here"]
    assert "2470 img/s" in v.row()["published"]  # ... beside published figures
    # with an A100, 224 px and mixed precision the same claim is judged, relative to the seeds
    v = claims.check(c, on_a100(cpu))
    assert v.verdict == claims.HOLDS, v.why
    slow_ts = on_a100(cpu[:1] + [{**cpu[1], "median_s": cpu[1]["median_s"] * 2}] + cpu[2:])
    assert claims.check(c, slow_ts).verdict == claims.MIXED
    # an A100 at 32 px, or in fp32, is still not the claim's regime
    assert claims.check(c, on_a100(cpu, image_size=32)).verdict == claims.REGIME
    v = claims.check(c, on_a100(cpu, precision="fp32"))
    assert v.verdict == claims.REGIME and v.label().startswith("different regime (precision)")
    t4 = claims.check(claims.claim("inference_fps"), on_a100(cpu))
    assert t4.verdict != claims.HOLDS  # an A100 is not the claim's T4


@pytest.mark.parametrize("size", [32, 64, 128, 224])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_no_verdict_claims_more_than_the_measurements_regime(size, precision):
    """A CPU at any size and precision can judge no claim made for GPUs or serving runtimes."""
    records = [
        r
        for task in ("train", "throughput")
        for r in speedups(task, 1.07, 1.3, 1.08, image_size=size, precision=precision)
    ] + [
        rec("onnxruntime", "ort", "throughput", 9, image_size=size, precision=precision),
    ]
    for v in claims.check_all(records, precision):
        hw, runtime = v.claim.regime.hardware, v.claim.regime.runtime
        beyond = (hw is not None and "cpu" not in hw) or runtime not in (None, "in-process")
        if beyond:
            assert v.verdict in (claims.REGIME, claims.NOT_MEASURED), (v.claim.key, v.label())
        if v.verdict in (claims.HOLDS, claims.FAILS, claims.MIXED) and v.claim.ratios:
            assert all(not v.claim.regime.differences(m.here) for m in v.measured if m.here)


def test_epoch_times_are_checked_against_the_articles_own_throughputs():
    v = claims.epoch_consistency()
    assert v.verdict == claims.FAILS  # 15.2 min is shorter than 1.2 M images at 1280/s allow
    assert "15.6 min" in v.why and v.label() == "does not hold (the article's own numbers)"


def test_check_all_and_markdown_table():
    vs = claims.check_all(speedups("train", 1.07, 1.08, 1.06))
    assert [v.claim.key for v in vs] == [c.key for c in claims.CLAIMS] + ["epoch_consistency"]
    assert all(v.verdict in claims.VERDICTS for v in vs)
    md = claims.markdown(vs)
    table, _, cited = md.partition("\n\nPublished figures")
    assert table.count("\n") == len(vs) + 1 and table.startswith("| claim | the article |")
    assert "published" not in table.splitlines()[0] and "](http" in cited  # citations below
    assert max(map(len, table.splitlines())) < 1300, "a row a learner cannot read"
    one = claims.Claim("k", "a|b", "", "", 1, 2, (), claims.Regime())
    assert "a\\|b" in claims.markdown([claims.Verdict(one, claims.HOLDS)])
    assert claims.NV_PT.value("gpu1_amp") == 2470 and "MLPerf" in claims.markdown(vs)


def test_read_records_takes_notebooks_06_and_07_of_one_profile(tmp_path):
    failed = results.make(framework="torch", mode="eager", task="train", batch_size=4,
                          precision="fp32", image_size=32, device="cpu", status="failed",
                          error="RuntimeError: x", threads=2, profile="smoke", timestamp="x")  # fmt: skip
    for name in ("06_training-smoke", "07_inference-smoke", "06_training-standard", "bench-smoke"):
        results.append(tmp_path / f"{name}.jsonl", failed)
    records, files = claims.read_records(tmp_path, "smoke")
    assert [f.name for f in files] == ["06_training-smoke.jsonl", "07_inference-smoke.jsonl"]
    assert len(records) == 2 and claims.read_records(tmp_path / "none", "smoke") == ([], [])


def test_claims_data_is_well_formed():
    with pytest.raises(ValueError, match="valid claims are"):
        claims.claim("nope")
    for c in claims.CLAIMS:
        assert c.low < c.high and c.regime.describe()
        assert bool(c.ratios) != bool(c.untestable), f"{c.key}: ratios to measure, or why not"
        for r in c.ratios:
            for fw, mode in (r.num, r.den):
                assert fw in NAMES and mode in MODES[fw], "modes are declared up front"
            if c.relative:
                assert r.seed_value is not None
        for s in c.published:
            assert s.url.startswith("https://")
