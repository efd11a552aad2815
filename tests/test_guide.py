"""labkit.guide: the source article's advice as table-driven rules, evidence from results files,
and the widget form over it (including a real quick benchmark through labkit.runner)."""

import itertools
import subprocess
import sys

from labkit import guide, results

import pytest

# ---- the source article's five scenarios --------------------------------------------------------

# (scenario, other answers, the recommendation, the alternative): the seeds' guidance, plus the
# conditions under which the seeds say the alternative is preferred.
SEED_ADVICE = [
    ("research", {}, "torch", "tensorflow"),
    ("research", {"scale": "small", "priority": "debugging"}, "torch", "tensorflow"),
    ("research", {"expertise": "tensorflow"}, "tensorflow", "torch"),  # "team knows TF"
    ("large_scale_training", {}, "tensorflow", "torch"),
    ("large_scale_training", {"hardware": "gpu", "scale": "large"}, "tensorflow", "torch"),
    ("large_scale_training", {"hardware": "ascend"}, "mindspore", "torch"),
    ("large_scale_training", {"expertise": "torch"}, "torch", "tensorflow"),  # "team knows PyTorch"
    ("deployment", {"targets": ("server", "mobile", "embedded")}, "tensorflow", "torch"),
    ("deployment", {"targets": ("mobile", "embedded"), "hardware": "ascend"}, "mindspore", "torch"),
    ("small_team", {}, "torch", "tensorflow"),
    (
        "small_team",
        {"priority": "maintenance"},
        "tensorflow",
        "torch",
    ),  # "industrial deployment coming"
    ("special_hardware", {"hardware": "ascend"}, "mindspore", "paddlepaddle"),
    ("special_hardware", {"hardware": "other_accelerator"}, "paddlepaddle", "mindspore"),
    ("special_hardware", {}, "mindspore", "paddlepaddle"),  # privacy needs on ordinary hardware
]


@pytest.mark.parametrize(
    "scenario,answers,top,alternative",
    SEED_ADVICE,
    ids=[f"{s}-{'-'.join(map(str, a.values())) or 'defaults'}" for s, a, _, _ in SEED_ADVICE],
)
def test_seed_scenarios_give_their_recommendation_and_alternative(
    scenario, answers, top, alternative
):
    rec = guide.recommend(scenario, **answers)
    assert (rec.top, rec.alternative) == (top, alternative), rec.to_markdown()
    assert rec.alternative_when
    assert rec.ranking[0].score >= rec.ranking[1].score


@pytest.mark.parametrize(
    "scenario,primary",
    [
        ("research", {"torch"}),
        ("large_scale_training", {"tensorflow", "mindspore"}),
        ("deployment", {"tensorflow", "mindspore"}),
        ("small_team", {"torch"}),
        ("special_hardware", {"mindspore", "paddlepaddle"}),
    ],
)
def test_the_scenarios_recommended_frameworks_lead_with_default_answers(scenario, primary):
    ranking = [r.framework for r in guide.recommend(scenario).ranking]
    assert set(ranking[: len(primary)]) == primary


def test_toolchains_follow_the_seeds():
    tf = guide.recommend("deployment", targets=["server", "mobile", "browser"])
    assert tf.top == "tensorflow"
    text = " ".join(tf.toolchain)
    assert "SavedModel -> TF Serving" in text and "TF Lite" in text and "TensorFlow.js" in text
    assert "ONNX Runtime" in guide.recommend("research").toolchain[1]
    ms = guide.recommend("deployment", hardware="ascend", targets=["embedded"])
    assert "MindSpore Lite" in ms.toolchain[1]


def test_paddlepaddle_is_ranked_and_flagged_as_not_in_the_lab():
    rec = guide.recommend("special_hardware", hardware="other_accelerator")
    assert rec.top == "paddlepaddle"
    assert any("not installed in this lab" in n for n in rec.notes)
    assert "paddlepaddle" not in rec.candidates  # the lab cannot benchmark it
    assert any(
        "paddlepaddle" in e.frameworks and "not installed" in e.statement for e in rec.evidence
    )


def test_every_score_is_the_sum_of_its_reasons_and_every_reason_is_a_rule():
    rule_texts = {r.reason for r in guide.RULES}
    for scenario in guide.SCENARIOS:
        for r in guide.recommend(scenario, targets=["browser"], priority="debugging").ranking:
            assert r.score == sum(p for p, _, _ in r.reasons)
            assert all(text in rule_texts for _, text, _ in r.reasons)


def test_changing_a_rule_row_changes_the_advice(monkeypatch):
    rows = [
        r._replace(points=0)
        if (r.field, r.value, r.framework) == ("scenario", "research", "torch")
        else r
        for r in guide.RULES
    ]
    monkeypatch.setattr(guide, "RULES", tuple(rows))
    assert guide.recommend("research").top == "tensorflow"


# ---- bad, empty and contradictory answers -------------------------------------------------------


@pytest.mark.parametrize(
    "field,value,valid",
    [
        ("scenario", "gaming", guide.SCENARIOS),
        ("expertise", "jax", guide.EXPERTISE),
        ("targets", ["server", "fridge"], guide.TARGETS),
        ("hardware", "tpu", guide.HARDWARE),
        ("priority", "price", guide.PRIORITIES),
        ("scale", "huge", guide.SCALES),
        ("hardware", 3, guide.HARDWARE),
    ],
)
def test_unknown_values_raise_naming_the_valid_ones(field, value, valid):
    args = {"scenario": "research", field: value}
    with pytest.raises(ValueError) as err:
        guide.recommend(**args)
    assert ", ".join(valid) in str(err.value)


def test_spellings_are_forgiven():
    rec = guide.recommend(
        " Large-Scale Training ",
        expertise="PyTorch",
        targets="Mobile",
        hardware="GPU",
        priority="none",
    )
    assert rec.inputs["scenario"] == "large_scale_training" and rec.inputs["expertise"] == "torch"
    assert rec.inputs["targets"] == ("mobile",) and rec.inputs["priority"] is None


@pytest.mark.parametrize(
    "kwargs,note",
    [
        ({"scenario": None}, "No scenario chosen"),
        (
            {"scenario": "", "expertise": "", "targets": None, "priority": ""},
            "every candidate scores 0",
        ),
        (
            {"scenario": "deployment", "expertise": "mindspore", "targets": ["browser"]},
            "MindSpore has no browser runtime",
        ),
        ({"scenario": "large_scale_training", "priority": "debugging"}, "develop in eager mode"),
        ({"scenario": "special_hardware", "hardware": "cpu"}, "privacy"),
        ({"scenario": "research", "scale": "large"}, "prototype eagerly"),
        ({"scenario": "research", "targets": ["server", "mobile"]}, "tie at"),
        ({"scenario": "research", "results": "does/not/exist.jsonl"}, "No results file at"),
    ],
)
def test_empty_or_contradictory_answers_get_a_clear_answer(kwargs, note):
    rec = guide.recommend(**kwargs)
    assert rec.top in guide.CANDIDATES and rec.alternative in guide.CANDIDATES
    assert rec.top != rec.alternative
    assert any(note in n for n in rec.notes), rec.notes
    assert note in rec.to_markdown().replace("\n", " ")


def test_browser_target_lowers_mindspore_even_for_a_mindspore_team():
    rec = guide.recommend("deployment", expertise="mindspore", targets=["browser"])
    assert rec.top == "tensorflow"
    ms = next(r for r in rec.ranking if r.framework == "mindspore")
    assert any(p < 0 and "browser" in t for p, t, _ in ms.reasons)


def test_no_combination_of_answers_raises():
    target_sets = [
        c for n in range(len(guide.TARGETS) + 1) for c in itertools.combinations(guide.TARGETS, n)
    ]
    count = 0
    for scenario, expertise, hardware, priority, scale in itertools.product(
        [None, *guide.SCENARIOS],
        [None, *guide.EXPERTISE],
        guide.HARDWARE,
        [None, *guide.PRIORITIES],
        guide.SCALES,
    ):
        for targets in target_sets[::3]:
            rec = guide.recommend(scenario, expertise, targets, hardware, priority, scale=scale)
            assert rec.top != rec.alternative and rec.toolchain and rec.evidence
            count += 1
    assert count == 6 * 4 * 4 * 5 * 3 * 6


# ---- evidence -------------------------------------------------------------------------------


def _ok(fw, mode, task, ips, batch=4, size=32):
    median = batch / ips
    return results.make(
        framework=fw,
        mode=mode,
        task=task,
        batch_size=batch,
        precision="fp32",
        image_size=size,
        device="cpu",
        status="ok",
        error=None,
        first_call_s=0.5,
        median_s=median,
        iqr_s=0.02 * median,
        p90_s=1.1 * median,
        images_per_s=ips,
        peak_rss_mb=400.0,
        ceiling_share=0.1,
        ceiling_images_per_s=10 * ips,
        repeats=30,  # at least the smoke profile's 0.2 s of timed calls: a valid record
        threads=2,
        profile="smoke",
        timestamp="2031-05-04T10:00:00+00:00",
    )


def _failed(fw, mode, task, error="RuntimeError: out of luck"):
    return results.make(
        framework=fw,
        mode=mode,
        task=task,
        batch_size=4,
        precision="fp32",
        image_size=32,
        device="cpu",
        status="failed",
        error=error,
        threads=2,
        profile="smoke",
        timestamp="2031-05-04T10:00:00+00:00",
    )


def _write(path, records):
    for r in records:
        results.append(path, r)
    return path


def test_without_results_the_evidence_is_claimed_and_published_and_says_so():
    rec = guide.recommend("large_scale_training")
    assert not rec.measured and rec.evidence
    assert all(not e.measured for e in rec.evidence)
    sources = {e.source.split(",")[0].split(":")[0] for e in rec.evidence}
    assert sources == {guide.CLAIMED, guide.PUBLISHED}
    assert "1380" in " ".join(e.statement for e in rec.evidence)  # the seeds' A100 table
    assert "claimed by the course's source article" in rec.to_markdown()


def test_measured_results_become_evidence_and_vote(tmp_path):
    path = _write(
        tmp_path / "r.jsonl",
        [
            _ok("torch", "eager", "train", 10),
            _ok("torch", "torchscript", "train", 14),
            _ok("tensorflow", "eager", "train", 9),
            _ok("tensorflow", "function", "train", 18),
            _ok("mindspore", "pynative", "train", 2),
            _ok("mindspore", "graph", "train", 6),
        ],
    )
    base = guide.recommend("large_scale_training")
    rec = guide.recommend("large_scale_training", results=path)
    assert rec.measured
    score = {r.framework: r.score for r in rec.ranking}
    before = {r.framework: r.score for r in base.ranking}
    assert score["tensorflow"] == before["tensorflow"] + 1  # fastest: 18 images/s
    assert score["mindspore"] == before["mindspore"] - 1  # 6 < half of 18
    assert score["torch"] == before["torch"]  # 14: neither fastest nor under half
    mine = [e for e in rec.evidence if e.measured]
    assert {e.source for e in mine} == {"measured on your machine on 2031-05-04"}
    tf_line = next(e.statement for e in mine if e.frameworks == ("tensorflow",))
    assert "18 images/s with function" in tf_line and "2.00x" in tf_line
    assert "measured on your machine on 2031-05-04" in rec.to_markdown()


def test_a_results_file_with_missing_frameworks_is_used_for_what_it_has(tmp_path):
    path = _write(
        tmp_path / "r.jsonl",
        [_ok("tensorflow", "eager", "throughput", 5), _ok("tensorflow", "xla", "throughput", 9)],
    )
    rec = guide.recommend("deployment", results=path)
    assert (rec.top, rec.alternative) == ("tensorflow", "torch")
    by_fw = {fw: [e for e in rec.evidence if fw in e.frameworks] for fw in ("tensorflow", "torch")}
    assert by_fw["tensorflow"] and all(e.measured for e in by_fw["tensorflow"])
    assert any("not in your results file" in e.statement for e in by_fw["torch"])
    assert any(e.source.startswith(guide.CLAIMED) for e in by_fw["torch"])
    assert any("fewer than two frameworks measured alike" in n for n in rec.notes)
    assert [r.score for r in rec.ranking] == [
        r.score for r in guide.recommend("deployment").ranking
    ]


def test_onnx_runtime_counts_for_pytorch_and_failures_cost_a_point(tmp_path):
    records = [
        _ok("torch", "eager", "latency", 20, batch=1),
        _ok("onnxruntime", "ort", "latency", 60, batch=1),
        _ok("tensorflow", "eager", "latency", 25, batch=1),
        _failed("mindspore", "pynative", "latency"),
        _failed("mindspore", "graph", "latency"),
    ]
    rec = guide.recommend("deployment", priority="inference_latency", results=records)  # loaded
    torch = next(r for r in rec.ranking if r.framework == "torch")
    assert any("fastest" in t and "ONNX Runtime" in t for _, t, _ in torch.reasons)
    ms = next(r for r in rec.ranking if r.framework == "mindspore")
    assert any(p == -1 and "failed" in t for p, t, _ in ms.reasons)
    line = next(e.statement for e in rec.evidence if e.frameworks == ("torch",) and e.measured)
    assert "ONNX Runtime runs 3.00x" in line and "torch eager" in line


def test_only_like_is_compared_with_like(tmp_path):
    # torch at 32 px is "faster" than TensorFlow at 128 px: not a fair race, so no points.
    records = [
        _ok("torch", "eager", "train", 40, size=32),
        _ok("torch", "compile", "train", 60, size=32),
        _ok("tensorflow", "eager", "train", 3, size=128),
        _ok("tensorflow", "xla", "train", 5, size=128),
    ]
    rec = guide.recommend("large_scale_training", results=records)
    assert [r.score for r in rec.ranking] == [
        r.score for r in guide.recommend("large_scale_training").ranking
    ]
    assert any("measured alike" in n for n in rec.notes)
    both = records + [_ok("tensorflow", "xla", "train", 30, size=32)]
    rec = guide.recommend("large_scale_training", results=both)
    torch = next(r for r in rec.ranking if r.framework == "torch")
    assert any("fastest" in t and "32 px" in t for _, t, _ in torch.reasons)


def test_a_corrupt_results_file_is_the_loaders_clear_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"framework": "torch"}\n')
    with pytest.raises(ValueError, match="bad.jsonl line 1"):
        guide.recommend("research", results=path)


# ---- rendering --------------------------------------------------------------------------------


def test_markdown_shows_the_recommendation_the_alternative_and_every_reason():
    rec = guide.recommend("small_team", targets=["mobile"], priority="maintenance")
    md = rec.to_markdown()
    assert md.startswith(
        f"## Recommended: {guide.DISPLAY[rec.top]} ({rec.ranking[0].score} points)"
    )
    assert f"**Alternative: {guide.DISPLAY[rec.alternative]}**" in md
    for r in rec.ranking:
        for points, text, _ in r.reasons:
            assert f"{points:+d} {text}" in md
    assert all(step in md for step in rec.toolchain)


def test_the_rule_table_lists_every_rule_alternative_and_conflict():
    table = guide.rules_markdown()
    for r in guide.RULES:
        assert f"| {r.field} | {r.value} | {guide.DISPLAY[r.framework]} | {r.points:+d} |" in table
    for alts in guide.ALTERNATIVES.values():
        assert all(a.when in table for a in alts)
    assert all(c.message.split(":")[0] in table for c in guide.CONFLICTS)
    flow = guide.decision_flow_markdown()
    assert flow.count("\n") == 4 and "Measure two or three candidates" in flow


def test_the_guide_imports_no_framework_and_no_ui():
    code = (
        "import sys, labkit.guide; bad = [m for m in ('torch', 'tensorflow', 'mindspore', "
        "'onnxruntime', 'ipywidgets') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---- the widget form -------------------------------------------------------------------------


def _shown(form):
    return form.view.outputs[0]["data"]["text/markdown"]


def test_the_form_updates_the_recommendation_live(tmp_path):
    from labkit import widgets

    form = widgets.GuideForm(results=tmp_path / "none.jsonl")
    assert form.recommendation.top == "torch" and "Recommended: PyTorch" in _shown(form)
    form.scenario.value = "deployment"  # as a learner's click does
    assert form.recommendation.top == "tensorflow" and "Recommended: TensorFlow" in _shown(form)
    form.hardware.value = "ascend"
    assert "Recommended: MindSpore" in _shown(form)
    form.set(scenario="special_hardware", hardware="other_accelerator")
    assert form.recommendation.top == "paddlepaddle"
    with pytest.raises(ValueError, match="valid values are"):
        form.set(hardware="tpu")
    with pytest.raises(ValueError, match="unknown answer"):
        form.set(budget="low")


def test_the_form_exports_markdown(tmp_path):
    from labkit import widgets

    form = widgets.GuideForm(results=tmp_path / "none.jsonl", scenario="small_team")
    path = form.export(tmp_path / "out" / "choice.md")
    text = path.read_text()
    assert "Recommended: PyTorch" in text and "The decision flow" in text
    assert str(path) in form.export_status.value and "base64," in form.export_status.value
    assert widgets.GuideForm().export_path.parent.name == "results"  # git ignores results/


def test_the_form_reports_a_corrupt_results_file_and_advises_anyway(tmp_path):
    from labkit import widgets

    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    form = widgets.GuideForm(results=bad)
    assert "Results file not used" in _shown(form) and "bad.jsonl line 1" in form.error
    assert form.recommendation.top == "torch"


def test_quick_plan_measures_eager_and_a_graph_mode_of_the_candidates():
    from labkit import widgets

    plan = widgets.quick_plan(guide.recommend("deployment"), "smoke")
    cells = {(c.framework, c.mode) for c in plan}
    assert cells == {
        ("tensorflow", "eager"),
        ("tensorflow", "function"),
        ("torch", "eager"),
        ("torch", "torchscript"),
        ("onnxruntime", "ort"),
    }
    assert {c.task for c in plan} == {"throughput"} and {c.image_size for c in plan} == {32}
    train = widgets.quick_plan(guide.recommend("large_scale_training", hardware="ascend"), "smoke")
    assert {c.framework for c in train} == {"mindspore", "torch"} and {c.task for c in train} == {
        "train"
    }


@pytest.mark.slow
def test_quick_benchmark_runs_real_cells_and_feeds_the_recommendation(tmp_path):
    """The button's code path: real subprocess cells through labkit.runner, then new advice."""
    from labkit import runner, widgets

    form = widgets.GuideForm(
        results=tmp_path / "quick.jsonl", scenario="deployment", priority="inference_latency"
    )
    assert not form.recommendation.measured
    plan = runner.Plan.build(["torch", "tensorflow"], ["eager"], ["latency"], profile="smoke")
    records = form.run_quick_benchmark(plan=plan)
    assert len(records) == 2 and form.progress.value == 2
    assert all(r["status"] == "ok" for r in records), [r["error"] for r in records]
    rec = form.recommendation
    assert rec.measured and rec.task == "latency"
    fastest = max(records, key=lambda r: r["images_per_s"])["framework"]
    reasons = next(r.reasons for r in rec.ranking if r.framework == fastest)
    assert any(source == guide.MEASURED and "fastest" in text for _, text, source in reasons)
    assert "measured on your machine" in _shown(form)
    again = form.run_quick_benchmark(plan=plan)  # resumes: nothing measured twice
    assert again == [] and "already measured" in form.bench_status.value
