"""The source articles as data (labkit/data/sources.toml, read by labkit.sources.seeds): the
figures match the articles, each is typed once, and the one-screen introduction (articles())."""

import ast
import re
from pathlib import Path

from labkit import guide, sources
from labkit.sources import claims, seeds
from labkit.util import stats

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _seed_dir() -> Path | None:
    """The articles live beside the repository (``shared/seeds``), not in it."""
    for parent in ROOT.parents:
        if (parent / "shared" / "seeds").is_dir():
            return parent / "shared" / "seeds"
    return None


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    where = _seed_dir()
    if where is None:
        pytest.skip("the source articles (shared/seeds/*.txt) are not beside this checkout")
    return {a.key: (where / a.file).read_text(encoding="utf-8") for a in seeds.ARTICLES}


def _numbers(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", line)]


def _table_rows(text: str, header_start: str) -> list[str]:
    """The tab-separated data rows under the table whose header line starts with header_start."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(header_start))
    rows = []
    for ln in lines[start + 1 :]:
        if "\t" not in ln:
            break
        rows.append(ln)
    return rows


def test_the_training_table_is_the_articles(texts):
    rows = _table_rows(texts["000"], "框架\t单 GPU 训练")
    assert len(rows) == len(seeds.TRAINING)
    for row, ours in zip(rows, seeds.TRAINING):
        got = [n for n in _numbers(row.split("\t", 1)[1])]
        assert got[:3] == [ours.one_gpu, ours.eight_gpus, ours.epoch_min], (row, ours)


def test_the_inference_table_is_the_articles(texts):
    rows = _table_rows(texts["000"], "框架\tCPU 推理")
    assert len(rows) == len(seeds.INFERENCE)
    for row, ours in zip(rows, seeds.INFERENCE):
        got = _numbers(row.split("\t", 1)[1])
        assert got[:3] == [ours.cpu_fps, ours.gpu_fps, ours.embedded_fps], (row, ours)


def test_the_prose_percentages_are_the_articles(texts):
    for f in seeds.FIGURES:
        low, high = f.percent.rstrip("%").split("-")
        assert f"{low}%~{high}%" in texts["000"], f.key
    assert "120 万张" in texts["000"] and seeds.EPOCH_IMAGES == 1_200_000
    dates = {a["key"]: a["date"] for a in sources.articles()}
    assert "2026年1月8日" in texts["003"] and dates == {"000": "", "003": "2026-01-08"}


def test_the_comparison_table_has_the_articles_six_rows(texts):
    table = _table_rows(texts["000"], "对比维度")
    assert len(table) == len(seeds.COMPARISON) == 6


def test_figures_render_as_the_article_writes_them():
    assert seeds.figure("static_speedup").percent == "20-50%"
    assert seeds.figure("onnx_kept").percent == "5-10%"
    assert seeds.figure("training_time_cut").statement.endswith("by 10-20%")
    with pytest.raises(ValueError, match="no figure nope: there are static_speedup"):
        seeds.figure("nope")


def test_articles_introduce_the_two_sources_in_one_screen():
    found = sources.articles()
    assert [a["key"] for a in found] == ["000", "003"]
    for a in found:
        assert a["title"] and a["about"] and len(a["argues"]) == 4
        assert "{" not in " ".join(a["argues"])  # every quoted figure filled from the tables
    assert "20-50%" in found[0]["argues"][1] and "2023" in found[0]["written_for"]


def test_ratios_the_tables_imply():
    assert seeds.training_ratio(("torch", "torchscript"), ("torch", "eager")) == 1350 / 1280
    assert seeds.inference_ratio("tensorflow", "torch") == 52 / 45
    assert seeds.scaling_efficiency(seeds.training("torch", "eager")) == 9800 / (8 * 1280)
    with pytest.raises(
        ValueError, match="no training table row torch/compile: there are torch/eager"
    ):
        seeds.training("torch", "compile")
    with pytest.raises(ValueError, match="device must be one of cpu_fps"):
        seeds.inference_ratio("tensorflow", "torch", device="tpu")


def test_one_scaling_efficiency_serves_the_seeds_table():
    assert stats.scaling_efficiency(400.0, 100.0, 4) == 1.0  # linear
    assert stats.scaling_efficiency(300.0, 100.0, 4) == 0.75
    row = seeds.training("mindspore", "graph")
    assert seeds.scaling_efficiency(row) == stats.scaling_efficiency(row.eight_gpus, row.one_gpu, 8)


def test_the_claims_are_built_from_the_tables():
    a100 = claims.claim("a100_training")
    assert [r.seed_value for r in a100.ratios] == [1350 / 1280, 1320 / 1280, 1380 / 1280]
    assert "1280" in a100.statement and "10500" in a100.statement and "{" not in a100.statement
    assert claims.claim("graph_20_50").low == 1.2 and claims.claim("train_5_10").high == 1.10
    assert "1.16x" in claims.claim("cpu_graph_beats_onnx").seed_figure  # 52 / 45, computed


def test_every_percentage_of_the_seeds_prose_has_a_claim_row():
    rows = {c["figure"]: c["key"] for c in seeds.DATA["claim"] if "figure" in c}
    missing = [f.key for f in seeds.FIGURES if f.key not in rows]
    assert not missing, f"figures of the prose without a claim in sources.toml: {missing}"
    for f in seeds.FIGURES:
        c = claims.claim(rows[f.key])
        assert f.percent in c.statement and (c.low, c.high) == (f.low, f.high), f.key
        assert c.section == f.where


def test_no_figure_of_the_tables_is_typed_again_in_labkit():
    distinctive = {r.one_gpu for r in seeds.TRAINING} | {r.eight_gpus for r in seeds.TRAINING}
    distinctive |= {r.epoch_min for r in seeds.TRAINING} | {r.gpu_fps for r in seeds.INFERENCE}
    distinctive -= {10000}  # too round to tell apart from other uses
    found = []
    data = (ROOT / "labkit" / "data" / "sources.toml").read_text()
    start, end = data.index("[training]"), data.index("# ---- article 000, parts 3 and 4")
    for name, text in (("sources.toml", data[:start] + data[end:]),
                       ("guide.toml", (ROOT / "labkit" / "data" / "guide.toml").read_text())):  # fmt: skip
        found += [
            f"{name}: {n:g}"
            for n in distinctive
            if re.search(rf"(?<![\d.]){re.escape(f'{n:g}')}(?![\d.])", text)
        ]
    for path in sorted((ROOT / "labkit").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Constant)
                and type(node.value) in (int, float)
                and node.value in distinctive
            ):
                found.append(f"{path.relative_to(ROOT)} line {node.lineno}: {node.value}")
    assert not found, found


def test_scenarios_are_the_guides_and_name_known_frameworks():
    assert [s.key for s in seeds.SCENARIOS] == list(guide.SCENARIOS)
    for s in seeds.SCENARIOS:
        for fw in (*s.recommended, s.alternative):
            assert fw == "" or fw in guide.CANDIDATES, (s.key, fw)
        assert "{" not in " ".join(s.reasons)
        assert bool(s.alternative) == bool(s.alternative_when), s.key
    assert len(seeds.DECISION_FLOW) == 4


def test_comparison_markdown_gives_each_dimension_both_verdicts():
    md = seeds.comparison_markdown()
    assert "| learning cost | **" in md and "| **high**: graph concepts" in md
    assert md.count("\n") == len(seeds.COMPARISON) + 1
    assert md.count("**") == 4 * len(seeds.COMPARISON)


def test_published_values_are_typed_once_and_fill_the_figure():
    assert claims.NV_PT.value("gpu8_amp") == 16621
    assert "16621 img/s mixed precision" in claims.NV_PT.figure
    with pytest.raises(ValueError, match="gives no value 'gpu4'.*gpu1_tf32"):
        claims.NV_TF.value("gpu4")


def test_scenarios_flow_and_comparisons_render_with_display_names():
    md = seeds.scenarios_markdown()
    assert md.count("\n") == len(seeds.SCENARIOS) + 1
    assert "| TensorFlow or MindSpore |" in md and "| MindSpore or PaddlePaddle |" in md
    assert "PyTorch, if the team already" not in md  # research's alternative is TensorFlow
    assert seeds.decision_flow_markdown().startswith("1. **Name the core need**")
    for rows in (seeds.DISTRIBUTED, seeds.MOBILE):
        out = seeds.capability_markdown(rows)
        assert "| TensorFlow |" in out and "| PyTorch |" in out
    assert seeds.display("paddle") == "PaddlePaddle" and seeds.display("torch") == "PyTorch"
    with pytest.raises(ValueError, match="unknown framework 'jax'"):
        seeds.display("jax")


def test_the_guides_article_voice_agrees_with_the_articles_scenarios():
    for s in seeds.SCENARIOS:
        rec = guide.recommend(s.key)
        assert rec.article_leaders == (s.recommended[0],), s.key
        ranked = tuple(r.framework for r in rec.article_ranking)
        assert ranked[: len(s.recommended)] == s.recommended, s.key


def test_what_the_lab_cannot_run_says_why_what_would_and_the_articles_figure():
    entries = {e.key: e for e in seeds.OUT_OF_REACH}
    assert set(entries) == {"tensorrt", "mindspore_lite", "tf_serving", "ascend", "jetson"}
    for e in entries.values():
        assert e.needs and e.command and e.claim and e.where.startswith("seed 00"), e.key
    # the figures are the articles' tables, read from them, not typed again
    lite, serving = seeds.inference("mindspore"), seeds.inference("tensorflow")
    assert f"{lite.cpu_fps:g} on the CPU" in entries["mindspore_lite"].claim
    assert seeds.figure("lite_vs_tflite").percent in entries["mindspore_lite"].claim
    assert f"{serving.gpu_fps:g} on the GPU (T4)" in entries["tf_serving"].claim
    for fw in ("torch", "tensorflow", "mindspore"):
        assert f"{seeds.inference(fw).embedded_fps:g}" in entries["jetson"].claim
    assert entries["tensorrt"].claim.startswith("no figure")
    assert "trtexec --onnx=" in entries["tensorrt"].command
    assert "converter_lite --fmk=MINDIR" in entries["mindspore_lite"].command
    with pytest.raises(ValueError, match="no system out of reach tpu: there are tensorrt"):
        seeds.out_of_reach("tpu")
    table = seeds.out_of_reach_markdown()
    assert table.count("\n") == len(entries) + 1 and "| TensorFlow Serving |" in table
