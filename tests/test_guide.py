"""labkit.guide: the source article's advice as table-driven rules, evidence from results files,
and the widget form over it (including a real quick benchmark through labkit.runner)."""

import datetime
import itertools
import subprocess
import sys

from labkit import guide, results
from labkit.sources import claims

import pytest

# ---- two voices: the article's advice and the course's today ---------------------------------

# (scenario, other answers, what the article recommends): the seeds' guidance, including the
# conditions under which the article says its alternative is preferred.
ARTICLE_ADVICE = [
    ("research", {}, "torch"),
    ("research", {"scale": "small", "priority": "debugging"}, "torch"),
    ("research", {"expertise": "tensorflow"}, "tensorflow"),  # "team knows TF"
    ("large_scale_training", {}, "tensorflow"),
    ("large_scale_training", {"hardware": "gpu", "scale": "large"}, "tensorflow"),
    ("large_scale_training", {"hardware": "ascend"}, "mindspore"),
    ("large_scale_training", {"expertise": "torch"}, "torch"),  # "team knows PyTorch"
    ("deployment", {"targets": ("server", "mobile", "embedded")}, "tensorflow"),
    ("deployment", {"targets": ("mobile", "embedded"), "hardware": "ascend"}, "mindspore"),
    ("small_team", {}, "torch"),
    ("small_team", {"priority": "maintenance"}, "tensorflow"),  # "industrial deployment coming"
    ("special_hardware", {"hardware": "ascend"}, "mindspore"),
    ("special_hardware", {"hardware": "other_accelerator"}, "paddle"),
    ("special_hardware", {}, "mindspore"),  # privacy needs on ordinary hardware
]

# (scenario, other answers, what the course recommends today, its alternative)
COURSE_ADVICE = [
    ("research", {}, "torch", "tensorflow"),
    ("research", {"expertise": "tensorflow"}, "tensorflow", "torch"),
    ("large_scale_training", {}, "tensorflow", "torch"),  # level: the article's order decides
    ("large_scale_training", {"hardware": "ascend"}, "mindspore", "torch"),
    ("large_scale_training", {"expertise": "torch"}, "torch", "tensorflow"),
    ("deployment", {"targets": ("server", "mobile", "embedded")}, "tensorflow", "torch"),
    ("deployment", {"targets": ("mobile", "embedded"), "hardware": "ascend"}, "mindspore", "torch"),
    ("small_team", {}, "torch", "tensorflow"),
    ("small_team", {"priority": "maintenance"}, "torch", "tensorflow"),  # the voices part here
    ("special_hardware", {"hardware": "ascend"}, "mindspore", "paddle"),
    ("special_hardware", {"hardware": "other_accelerator"}, "paddle", "mindspore"),
    ("special_hardware", {}, "mindspore", "paddle"),
]


def _ids(cases):
    return [f"{c[0]}-{'-'.join(map(str, c[1].values())) or 'defaults'}" for c in cases]


@pytest.mark.parametrize("scenario,answers,top", ARTICLE_ADVICE, ids=_ids(ARTICLE_ADVICE))
def test_the_article_voice_gives_the_articles_advice(scenario, answers, top):
    rec = guide.recommend(scenario, **answers)
    assert rec.article_top == top, rec.to_markdown()
    assert rec.article_ranking[0].score >= rec.article_ranking[1].score


@pytest.mark.parametrize("scenario,answers,top,alternative", COURSE_ADVICE, ids=_ids(COURSE_ADVICE))
def test_the_course_voice_gives_todays_advice(scenario, answers, top, alternative):
    rec = guide.recommend(scenario, **answers)
    assert (rec.top, rec.alternative) == (top, alternative), rec.to_markdown()
    assert rec.alternative_when and rec.ranking[0].score >= rec.ranking[1].score


@pytest.mark.parametrize("scenario", list(guide.SCENARIOS))
def test_each_scenario_gives_both_voices_side_by_side(scenario):
    rec = guide.recommend(scenario)
    assert {r.framework for r in rec.ranking} == {r.framework for r in rec.article_ranking}
    assert set(guide.CANDIDATES) == {r.framework for r in rec.ranking}
    md = rec.to_markdown()
    assert guide.VOICES[guide.ARTICLE] in md and guide.VOICES[guide.COURSE] in md
    side = md[md.index("### The two voices side by side") :]
    for i, (a, c) in enumerate(zip(rec.article_ranking, rec.ranking), 1):
        assert (
            f"| {i} | {guide.DISPLAY[a.framework]} | {a.score} | "
            f"{guide.DISPLAY[c.framework]} | {c.score} |" in side
        )
    # every course reason in the page carries its dated source
    for r in rec.ranking:
        for _, _, source in r.reasons:
            for key in source.split("+"):
                if key in guide.SOURCES:
                    s = guide.SOURCES[key]
                    assert f"[{s.title}]({s.url}), {s.date}" in md


def test_where_the_voices_disagree_the_page_says_so_and_why():
    rec = guide.recommend("small_team", priority="maintenance")
    assert (rec.article_top, rec.top) == ("tensorflow", "torch")
    md = rec.to_markdown()
    assert "The two voices disagree" in md and "### Where the voices differ" in md
    assert "The article recommends TensorFlow, the course today PyTorch" in md
    maintenance = next(d for d in guide.DISAGREEMENTS if d.topic == "long-term maintenance")
    assert maintenance in rec.disagreements and maintenance.course in md
    agree = guide.recommend("research")
    assert agree.top == agree.article_top and "The two voices agree." in agree.to_markdown()


def test_the_disagreement_on_graph_compilation_quotes_the_articles_own_table():
    rec = guide.recommend("large_scale_training")
    md = rec.to_markdown()
    spread = max(s for _, s, _ in claims.SEED_TRAINING) / min(s for _, s, _ in claims.SEED_TRAINING)
    assert f"within {spread - 1:.0%} of each other" in md  # 1380 / 1280: computed, not typed
    assert "level" in " ".join(rec.notes)  # the course ties and says how it breaks the tie


def test_every_course_rule_has_a_dated_checkable_source_and_the_table_prints_it():
    table = guide.rules_markdown()
    for r in guide.COURSE_RULES:
        keys = r.source.split("+")
        assert keys and all(k in guide.SOURCES for k in keys), r
        for k in keys:
            s = guide.SOURCES[k]
            assert s.url.startswith("https://") and s.title and s.dated
            assert datetime.date.fromisoformat(s.date) <= datetime.date.today()
            assert s.url in table and s.date in table
    for d in guide.DISAGREEMENTS:
        assert d.sources and all(k in guide.SOURCES for k in d.sources)
    assert all(r.source.startswith("article, part") for r in guide.ARTICLE_RULES)
    assert {r.voice for r in guide.RULES} == {guide.ARTICLE, guide.COURSE, guide.BOTH}
    # every source is cited by some rule or disagreement
    cited = {k for r in guide.COURSE_RULES for k in r.source.split("+")}
    assert cited | {k for d in guide.DISAGREEMENTS for k in d.sources} == set(guide.SOURCES)


@pytest.mark.parametrize(
    "scenario,primary",
    [
        ("research", {"torch"}),
        ("large_scale_training", {"tensorflow", "mindspore"}),
        ("deployment", {"tensorflow", "mindspore"}),
        ("small_team", {"torch"}),
        ("special_hardware", {"mindspore", "paddle"}),
    ],
)
def test_the_articles_recommended_frameworks_lead_its_ranking(scenario, primary):
    ranking = [r.framework for r in guide.recommend(scenario).article_ranking]
    assert set(ranking[: len(primary)]) == primary


def test_toolchains_follow_the_course():
    tf = guide.recommend("deployment", targets=["server", "mobile", "browser"])
    assert tf.top == "tensorflow"
    text = " ".join(tf.toolchain)
    assert "SavedModel -> TF Serving" in text and "LiteRT" in text and "TensorFlow.js" in text
    assert "ONNX Runtime" in guide.recommend("research").toolchain[1]
    ms = guide.recommend("deployment", hardware="ascend", targets=["embedded"])
    assert "MindSpore Lite" in ms.toolchain[1]


def test_paddlepaddle_is_ranked_benchmarked_and_answered_from_measurements():
    """PaddlePaddle is a registered framework: step 3 benchmarks it, and its rows of evidence
    and points come from the learner's records like every other candidate's."""
    rec = guide.recommend("special_hardware", hardware="other_accelerator")
    assert rec.top == "paddle" == rec.article_top
    assert "paddle" in rec.candidates and not any("not installed" in n for n in rec.notes)
    from labkit.guide import form as widgets

    quick = {(c.framework, c.mode) for c in widgets.quick_plan(rec, "smoke")}
    assert {("paddle", "dygraph"), ("paddle", "sot")} <= quick
    records = [
        _ok("paddle", "dygraph", "train", 2),
        _ok("paddle", "ast", "train", 4),
        _ok("mindspore", "pynative", "train", 3),
        _ok("mindspore", "graph", "train", 10),
    ]
    rec = guide.recommend(
        "special_hardware",
        hardware="other_accelerator",
        priority="training_throughput",
        results=records,
    )
    line = next(e.statement for e in rec.evidence if e.frameworks == ("paddle",) and e.measured)
    assert "best 4 images/s with ast" in line and "2.00x" in line and "dygraph" in line
    assert [g.framework for g in rec.gaps] == ["paddle"]  # 4 against 10 images/s: -3 points
    assert "PaddlePaddle ast" in rec.gaps[0].slower


def test_every_score_is_the_sum_of_its_reasons_and_every_reason_is_a_rule_of_its_voice():
    voice_texts = {
        v: {r.reason for r in guide.RULES if r.voice in (v, guide.BOTH)}
        for v in (guide.ARTICLE, guide.COURSE)
    }
    for scenario in guide.SCENARIOS:
        rec = guide.recommend(scenario, targets=["browser"], priority="debugging")
        for voice, ranking in ((guide.ARTICLE, rec.article_ranking), (guide.COURSE, rec.ranking)):
            for r in ranking:
                assert r.score == sum(p for p, _, _ in r.reasons)
                assert all(text in voice_texts[voice] for _, text, _ in r.reasons)


def test_changing_a_rule_row_changes_the_advice(monkeypatch):
    rows = [
        r._replace(points=0)
        if (r.voice, r.field, r.value, r.framework) == ("course", "scenario", "research", "torch")
        else r
        for r in guide.RULES
    ]
    monkeypatch.setattr(guide.rules, "RULES", tuple(rows))
    rec = guide.recommend("research")
    assert rec.top == "tensorflow" and rec.article_top == "torch"  # only the course's row moved


def test_a_tpu_is_an_answer_and_the_guide_says_what_the_course_could_not_measure():
    """The article's large-scale scenario names GPU/TPU clusters: TPU is a hardware answer. The
    article gives TensorFlow and MindSpore its clusters; the course, with dated sources, TPUStrategy
    and PyTorch/XLA, and no TPU backend for MindSpore. Nothing in the lab ran on a TPU: a note
    says so, and the voices' disagreement is shown."""
    rec = guide.recommend("large_scale_training", hardware="tpu", scale="large")
    assert rec.inputs["hardware"] == "tpu" and rec.top == "tensorflow"
    assert rec.score("tensorflow") > rec.score("torch") > rec.score("mindspore")
    article = {r.framework: r.score for r in rec.article_ranking}
    plain = {r.framework: r.score for r in guide.recommend("large_scale_training").article_ranking}
    assert article["tensorflow"] > plain["tensorflow"] and article["mindspore"] > plain["mindspore"]
    assert any("measured nothing on a TPU" in n and "step 3" in n for n in rec.notes), rec.notes
    assert [d.topic for d in rec.disagreements if d.topic == "TPUs"] == ["TPUs"]
    for reason in (x for r in rec.ranking for x in r.reasons if "TPU" in x.text):
        assert all(key in guide.SOURCES for key in reason.source.split("+")), reason
    page = rec.to_markdown()
    assert "Google TPU" in page and "measured nothing on a TPU" in page
    assert guide.recommend("research", hardware=" TPU ").inputs["hardware"] == "tpu"
    # hardware the lab measures on gets no such note
    assert not any("measured nothing" in n for n in guide.recommend("research").notes)


# ---- bad, empty and contradictory answers -------------------------------------------------------


@pytest.mark.parametrize(
    "field,value,valid",
    [
        ("scenario", "gaming", guide.SCENARIOS),
        ("expertise", "jax", guide.EXPERTISE),
        ("targets", ["server", "fridge"], guide.TARGETS),
        ("hardware", "abacus", guide.HARDWARE),
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
        ({"scenario": "large_scale_training"}, "tie at"),
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
    assert count == 6 * 5 * len(guide.HARDWARE) * 5 * 3 * 6  # expertise: none, or one of four


# ---- evidence -------------------------------------------------------------------------------

VALID, INVALID, UNJUDGED = "valid", "invalid", "unjudged"


def _ok(fw, mode, task, ips, batch=4, size=32, verdict=VALID):
    """A measured record; ``verdict``: valid, invalid (with a reason) or unjudged (the older
    schema, written before records carried a validity verdict)."""
    median = batch / ips
    rec = results.make(
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
    rec.pop("valid", None)
    rec.pop("invalid_reasons", None)
    if verdict == VALID:
        rec.update(valid=True, invalid_reasons=[])
    elif verdict == INVALID:
        rec.update(valid=False, invalid_reasons=["IQR is 40% of the median (limit 10%)"])
    return rec


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


def _training(verdict=VALID, mindspore=20.0):
    """Training records in which MindSpore's graph mode is far ahead of the others."""
    return [
        _ok("torch", "eager", "train", 10, verdict=verdict),
        _ok("torch", "compile", "train", 12, verdict=verdict),
        _ok("tensorflow", "eager", "train", 8, verdict=verdict),
        _ok("tensorflow", "xla", "train", 9, verdict=verdict),
        _ok("mindspore", "pynative", "train", 2, verdict=verdict),
        _ok("mindspore", "graph", "train", mindspore, verdict=verdict),
    ]


def _order(rec):
    return [r.framework for r in rec.ranking]


def test_without_results_the_evidence_is_claimed_and_published_and_says_so():
    rec = guide.recommend("large_scale_training")
    assert not rec.measured and rec.evidence and rec.moved_by == ()
    assert all(not e.measured for e in rec.evidence)
    sources = {e.source.split(",")[0].split(":")[0] for e in rec.evidence}
    assert sources == {guide.CLAIMED, guide.PUBLISHED}
    assert "1380" in " ".join(e.statement for e in rec.evidence)  # the seeds' A100 table
    assert "claimed by the course's source article" in rec.to_markdown()


def test_a_large_valid_difference_moves_the_courses_ranking_and_the_page_names_it(tmp_path):
    path = _write(tmp_path / "r.jsonl", _training())
    base = guide.recommend("large_scale_training", priority="training_throughput")
    rec = guide.recommend("large_scale_training", priority="training_throughput", results=path)
    assert base.top == "tensorflow" and rec.top == "mindspore"  # 20 images/s vs 12 and 9
    assert rec.article_ranking == base.article_ranking  # the article's voice never moves
    moved = {g.framework: g for g in rec.moved_by}
    assert set(moved) == {"torch", "tensorflow"}
    assert moved["torch"].ratio == pytest.approx(20 / 12)
    assert all(g.points == guide.EVIDENCE_POINTS for g in rec.moved_by)
    score = {r.framework: r.score for r in rec.ranking}
    before = {r.framework: r.score for r in base.ranking}
    assert score["torch"] == before["torch"] + guide.EVIDENCE_POINTS
    assert score["mindspore"] == before["mindspore"]
    md = rec.to_markdown()
    assert "Moved the course's ranking" in md
    assert "PyTorch compile, 12 images/s (train, batch 4, 32 px, fp32, cpu)" in md
    assert "MindSpore graph, 20 images/s" in md and "1.67x slower" in md
    mine = [e for e in rec.evidence if e.measured]
    assert {e.source for e in mine} == {"measured on your machine on 2031-05-04"}
    ms_line = next(e.statement for e in mine if e.frameworks == ("mindspore",))
    assert "20 images/s with graph" in ms_line and "10.00x" in ms_line and "valid" in ms_line


@pytest.mark.parametrize("verdict", [INVALID, UNJUDGED])
def test_an_invalid_or_unjudged_measurement_changes_nothing(verdict):
    base = guide.recommend("large_scale_training", priority="training_throughput")
    rec = guide.recommend(
        "large_scale_training", priority="training_throughput", results=_training(verdict)
    )
    assert rec.measured and rec.ranking == base.ranking and rec.moved_by == rec.gaps == ()
    said = {INVALID: "are invalid", UNJUDGED: "carry no validity verdict"}[verdict]
    assert any(said in n for n in rec.notes), rec.notes
    assert any(e.measured for e in rec.evidence)  # still shown, flagged
    flag = {INVALID: "invalid: IQR is 40%", UNJUDGED: "no validity verdict"}[verdict]
    assert flag in " ".join(e.statement for e in rec.evidence)


def test_an_invalid_record_counts_as_missing():
    records = [r for r in _training() if r["framework"] != "tensorflow"]
    records[-1] = {**records[-1], "valid": False, "invalid_reasons": ["too few calls"]}
    rec = guide.recommend("large_scale_training", priority="training_throughput", results=records)
    # MindSpore's fast graph record is invalid: its best valid record is pynative, 2 images/s,
    # exactly as if the graph record had never been written
    without = [r for r in records if r is not records[-1]]
    assert (
        rec.ranking
        == guide.recommend(
            "large_scale_training", priority="training_throughput", results=without
        ).ranking
    )
    assert [g.framework for g in rec.gaps] == ["mindspore"] and "pynative" in rec.gaps[0].slower


def test_a_missing_measurement_changes_nothing():
    base = guide.recommend("large_scale_training", priority="training_throughput")
    only_torch = [r for r in _training() if r["framework"] == "torch"]
    rec = guide.recommend(
        "large_scale_training", priority="training_throughput", results=only_torch
    )
    assert rec.ranking == base.ranking and rec.moved_by == ()
    assert any("fewer than two frameworks measured alike" in n for n in rec.notes)
    none = guide.recommend("large_scale_training", priority="training_throughput", results=[])
    assert none.ranking == base.ranking and not none.measured


def test_a_small_valid_difference_changes_nothing():
    records = _training(mindspore=12 * (1 + guide.EVIDENCE_MARGIN) * 0.99)  # under the margin
    records = [r for r in records if r["framework"] != "tensorflow"]
    base = guide.recommend("large_scale_training", priority="training_throughput")
    rec = guide.recommend("large_scale_training", priority="training_throughput", results=records)
    assert rec.ranking == base.ranking and rec.gaps == ()
    assert any("within 20% of the fastest" in n for n in rec.notes), rec.notes


def test_a_gap_that_does_not_reorder_is_shown_but_moves_nothing():
    records = [
        _ok("torch", "eager", "latency", 10, batch=1),
        _ok("tensorflow", "eager", "latency", 30, batch=1),
    ]
    answers = {"expertise": "tensorflow", "priority": "inference_latency"}
    rec = guide.recommend("research", **answers, results=records)
    assert _order(rec) == _order(guide.recommend("research", **answers))  # TF 5, PyTorch 4 - 3
    assert rec.moved_by == () and [g.framework for g in rec.gaps] == ["torch"]
    assert any("the course's order stands" in n for n in rec.notes)
    assert "the order did not change" in rec.to_markdown()


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
    assert rec.ranking == guide.recommend("deployment").ranking


def test_onnx_runtime_counts_for_pytorch_and_failures_are_evidence_not_votes():
    records = [
        _ok("torch", "eager", "latency", 20, batch=1),
        _ok("onnxruntime", "ort", "latency", 60, batch=1),
        _ok("tensorflow", "eager", "latency", 25, batch=1),
        _failed("mindspore", "pynative", "latency"),
        _failed("mindspore", "graph", "latency"),
    ]
    rec = guide.recommend("deployment", priority="inference_latency", results=records)  # loaded
    assert [g.framework for g in rec.gaps] == ["tensorflow"]  # 60 (ONNX Runtime) vs 25
    assert "ONNX Runtime" in rec.gaps[0].faster
    assert rec.top != "tensorflow" and rec.article_top == "tensorflow"
    assert rec.moved_by == rec.gaps  # level scenario points: the measurement decided
    ms = next(r for r in rec.ranking if r.framework == "mindspore")
    assert not any(s == guide.MEASURED for _, _, s in ms.reasons)  # a failure is no measurement
    line = next(e.statement for e in rec.evidence if e.frameworks == ("torch",) and e.measured)
    assert "ONNX Runtime runs 3.00x" in line and "torch eager" in line


def test_only_like_is_compared_with_like():
    # torch at 32 px is "faster" than TensorFlow at 128 px: not a fair race, so no points.
    records = [
        _ok("torch", "eager", "train", 40, size=32),
        _ok("torch", "compile", "train", 60, size=32),
        _ok("tensorflow", "eager", "train", 3, size=128),
        _ok("tensorflow", "xla", "train", 5, size=128),
    ]
    rec = guide.recommend("large_scale_training", results=records)
    assert rec.ranking == guide.recommend("large_scale_training").ranking
    assert any("measured alike" in n for n in rec.notes)
    both = records + [_ok("tensorflow", "xla", "train", 30, size=32)]
    rec = guide.recommend("large_scale_training", results=both)
    tf = next(g for g in rec.gaps if g.framework == "tensorflow")
    assert "32 px" in tf.slower and "PyTorch compile, 60 images/s" in tf.faster


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
    from labkit.guide import form as widgets

    form = widgets.GuideForm(results=tmp_path / "none.jsonl")
    assert form.recommendation.top == "torch" and "Recommended: PyTorch" in _shown(form)
    form.scenario.value = "deployment"  # as a learner's click does
    assert form.recommendation.top == "tensorflow" and "Recommended: TensorFlow" in _shown(form)
    form.hardware.value = "ascend"
    assert "Recommended: MindSpore" in _shown(form)
    form.set(scenario="special_hardware", hardware="other_accelerator")
    assert form.recommendation.top == "paddle"
    form.set(hardware="tpu")  # the seeds' GPU/TPU clusters: an answer like any other
    assert form.recommendation.inputs["hardware"] == "tpu"
    with pytest.raises(ValueError, match="valid values are"):
        form.set(hardware="abacus")
    with pytest.raises(ValueError, match="unknown answer"):
        form.set(budget="low")


def test_the_form_exports_markdown(tmp_path):
    from labkit.guide import form as widgets

    form = widgets.GuideForm(results=tmp_path / "none.jsonl", scenario="small_team")
    path = form.export(tmp_path / "out" / "choice.md")
    text = path.read_text()
    assert "Recommended: PyTorch" in text and "The decision flow" in text
    assert str(path) in form.export_status.value and "base64," in form.export_status.value
    assert widgets.GuideForm().export_path.parent.name == "results"  # git ignores results/


def test_the_form_reports_a_corrupt_results_file_and_advises_anyway(tmp_path):
    from labkit.guide import form as widgets

    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    form = widgets.GuideForm(results=bad)
    assert "Results file not used" in _shown(form) and "bad.jsonl line 1" in form.error
    assert form.recommendation.top == "torch"


def test_quick_plan_measures_eager_and_a_graph_mode_of_the_candidates():
    from labkit.guide import form as widgets

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
    from labkit import runner
    from labkit.guide import form as widgets

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
    shown = {e.frameworks for e in rec.evidence if e.measured}
    # step 3 in the course's voice: only valid records vote, and only a gap beyond the margin
    fast, slow = sorted(records, key=lambda r: -r["images_per_s"])
    counts = all(guide.is_valid(r) for r in records)
    far = fast["images_per_s"] > (1 + guide.EVIDENCE_MARGIN) * slow["images_per_s"]
    measured = [t for r in rec.ranking for _, t, s in r.reasons if s == guide.MEASURED]
    if counts and far:  # valid and far apart: the ranking may move, the evidence follows it
        assert [g.framework for g in rec.gaps] == [slow["framework"]] and len(measured) == 1
        assert shown and shown <= {("torch",), ("tensorflow",)}
    else:
        assert shown == {("torch",), ("tensorflow",)}
        assert rec.gaps == () and measured == [] and rec.notes  # a note says why not
        assert rec.ranking == guide.recommend("deployment", priority="inference_latency").ranking
    assert "measured on your machine" in _shown(form)
    again = form.run_quick_benchmark(plan=plan)  # resumes: nothing measured twice
    assert again == [] and "already measured" in form.bench_status.value


def test_the_guide_says_plainly_what_the_lab_cannot_run_for_these_answers():
    rec = guide.recommend("deployment", targets=["server", "embedded"], hardware="gpu")
    assert [e.key for e in rec.out_of_reach] == [
        "tensorrt",
        "mindspore_lite",
        "tf_serving",
        "jetson",
    ]
    text = rec.to_markdown()
    assert "### What this lab cannot run here" in text and "`trtexec --onnx=" in text
    assert "not evidence" in text
    ascend = guide.recommend("large_scale_training", hardware="ascend")
    assert [e.key for e in ascend.out_of_reach] == ["ascend"]
    assert "msrun --worker_num 8" in ascend.to_markdown()
    plain = guide.recommend("research")
    assert plain.out_of_reach == () and "cannot run here" not in plain.to_markdown()
