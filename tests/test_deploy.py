"""Notebook 07's helpers (notebooks/deployment/deploy.py): artefact sizes, logit agreement, the
formats table (framework-free)."""

import sys

import numpy as np
import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "notebooks" / "deployment"))  # where the notebook's script finds it
import deploy


def test_size_of_files_and_directories(tmp_path):
    (tmp_path / "m.onnx").write_bytes(b"x" * 10)
    d = tmp_path / "saved"
    (d / "variables").mkdir(parents=True)
    (d / "saved_model.pb").write_bytes(b"y" * 7)
    (d / "variables" / "v.data").write_bytes(b"z" * 5)
    assert deploy.size_bytes(tmp_path / "m.onnx") == 10
    assert deploy.size_bytes(d) == 12
    with pytest.raises(FileNotFoundError, match="no model file"):
        deploy.size_bytes(tmp_path / "missing")


def test_agreement():
    ref = np.array([[1.0, 5.0, 2.0], [3.0, 0.0, -10.0]])
    same = deploy.agreement(ref, ref.copy())
    assert (same.max_rel_diff, same.top1, same.n) == (0.0, 1.0, 2)
    other = ref + np.array([[0.0, 0.0, 4.0], [0.0, 0.0, 0.0]])  # row 0 now prefers class 2
    a = deploy.agreement(ref, other)
    assert a.max_rel_diff == pytest.approx(0.4) and a.top1 == 0.5
    assert "top-1 agreement 50% on 2 inputs" in str(a)
    with pytest.raises(ValueError, match="same"):
        deploy.agreement(ref, ref[:1])
    with pytest.raises(ValueError, match=r"the batch not empty: got \(0, 3\)"):
        deploy.agreement(ref[:0], ref[:0])


def test_formats_table_is_complete():
    rows = deploy.FORMATS
    names = [r["name"] for r in rows]
    assert any("ONNX" in n for n in names) and any("SavedModel" in n for n in names)
    assert any("MindIR" in n for n in names) and any("tflite" in n for n in names)
    for r in rows:
        assert all(r[k] for k in ("written_by", "runtime", "server", "mobile", "embedded"))
        assert r["url"].startswith("https://")


def test_record_of_an_in_process_measurement_follows_the_schema(monkeypatch):
    from labkit import bench, hardware, results

    monkeypatch.setenv(hardware.MAX_GHZ_ENV, "3.0")  # a known clock: a ceiling on any machine
    m = bench.measure(
        lambda: sum(range(100)),
        warmup=0,
        min_repeats=3,
        min_time_s=0.0,
        max_repeats=3,
        images_per_call=4,
    )
    r = deploy.record(m, "tensorflow", "savedmodel", "throughput", 32, notes="SavedModel")
    assert results.problems(r) == []
    assert r["batch_size"] == 4 and r["median_s"] == m.median_s and r["repeats"] == 3
    assert r["notes"] == "SavedModel; timed in the notebook's process"
    assert 0 < r["ceiling_share"] == pytest.approx(m.images_per_s / r["ceiling_images_per_s"])
    assert r["cache"] == "warm" and isinstance(r["valid"], bool)
    assert r["above_ceiling"] == (r["ceiling_share"] > 1)
    monkeypatch.delenv(hardware.MAX_GHZ_ENV)
    if hardware.ceiling().peak_gflops is None:  # this machine's clock is unknown
        r = deploy.record(m, "tensorflow", "savedmodel", "throughput", 32)
        assert r["ceiling_share"] is None and not r["above_ceiling"]


def test_a_narrower_resnet50_is_recorded_as_another_model_without_a_ceiling(monkeypatch):
    """The smoke profile's narrow ResNet-50 in notebook 07: its records must not pass for
    ResNet-50's (another model name, no ResNet-50 ceiling)."""
    from labkit import bench, hardware, results

    monkeypatch.setenv(hardware.MAX_GHZ_ENV, "3.0")  # a ceiling exists here for ResNet-50
    m = bench.measure(lambda: None, 0, 3, 0.0, 3, images_per_call=4)
    full = deploy.record(m, "onnxruntime", "ort", "throughput", 32, model=deploy.model_id())
    narrow = deploy.record(m, "onnxruntime", "ort", "throughput", 32, model=deploy.model_id(16))
    assert results.problems(narrow) == []
    assert full["model"] == results.DEFAULT_MODEL and not results.custom(full)
    assert full["ceiling_share"] is not None
    assert narrow["model"] == "resnet50-w16" and results.custom(narrow)
    assert narrow["ceiling_share"] is None and not narrow["above_ceiling"]
