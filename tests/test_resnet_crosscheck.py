"""One ResNet-50, five runtimes, the same function: every framework's eval logits, one
training step and the ONNX export against a float64 reference (PyTorch run in float64).

Each bound is derived, not chosen: a framework may be off by ``labkit.frameworks.crosscheck.FP32_SPREAD``
times PyTorch's own float32 error against the same reference, measured in the same run (see
labkit.frameworks.crosscheck). The logits and training steps are measured in fresh processes
(tests/crosscheck_child.py), with 2 threads (and, in `make test-standard`, with 1 thread and
with oneDNN held to AVX2): each framework's summation order changes with them, and a bound that
held for one order only fails here; no thread count an earlier test left can reach them.
A framework that does not import here is skipped by name (conftest.require).
"""

import json
import os
import subprocess
import sys

from labkit import frameworks, recipe, resnet
from labkit.frameworks import crosscheck as cc

import pytest
from conftest import ROOT, require

pytestmark = pytest.mark.slow

OTHERS = ("tensorflow", "mindspore", "paddle", "onnxruntime")
TRAINING = ("tensorflow", "mindspore", "paddle")
COSTLY_IN_SMOKE = pytest.mark.costly
# the summation orders the checks run under: threads, and oneDNN's instruction set (PyTorch,
# TensorFlow and ONNX Runtime's oneDNN kernels honour ONEDNN_MAX_CPU_ISA; MindSpore's own do not)
RUNS = [
    # 1 thread (45 s here) in make test-standard; CI's own 2 threads under smoke
    pytest.param({"threads": 1}, id="1-thread", marks=COSTLY_IN_SMOKE),
    pytest.param({"threads": 2}, id="2-threads"),
    pytest.param({"threads": 2, "ONEDNN_MAX_CPU_ISA": "AVX2"}, id="avx2", marks=COSTLY_IN_SMOKE),
]


def outside(errors: dict[str, float], limits: dict[str, float]) -> dict[str, tuple[float, float]]:
    """``{name: (error, limit)}`` for each error beyond its limit, a NaN one included."""
    return {n: (err, limits[n]) for n, err in errors.items() if not err <= limits[n]}


@pytest.fixture(scope="module")
def T():
    return require("torch")


@pytest.fixture(scope="module", params=RUNS)
def measured(request, tmp_path_factory):
    """What tests/crosscheck_child.py measured in a fresh process under one of :data:`RUNS`."""
    for name in frameworks.import_order(("torch", *OTHERS)):  # PaddlePaddle before TensorFlow
        require(name)
    run = dict(request.param)
    threads = run.pop("threads")
    out = tmp_path_factory.mktemp("crosscheck") / "measured.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "crosscheck_child.py"), str(threads), str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **run},
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    data["asked_threads"] = threads
    return data


# ----------------------------------------------------------------------------- eval logits


def test_the_checks_ran_with_the_threads_asked_for(measured):
    for name in ("torch", "tensorflow", "paddle", "onnxruntime"):
        assert measured["threads"][name] == {"intra": measured["asked_threads"], "inter": 1}, name


def test_eval_logits_are_as_close_to_float64_as_pytorchs(measured):
    assert len(measured["logits"]) == 4  # three batches of ResNet-50, one of the narrow one
    for case, found in measured["logits"].items():
        errors, limit = found["errors"], found["limit"]
        assert set(errors) == {"torch", *OTHERS}, case
        assert outside(errors, dict.fromkeys(errors, limit)) == {}, (case, found)
        # the regime: float32 logits sit within about 1e-6 of the logit scale, so the bound
        # stays far below the order-1 error of a wrong layout or weight
        assert 0 < errors["torch"] < 1e-5 and limit < 1e-4, case


def test_one_training_step_is_as_close_to_float64_as_pytorchs(measured):
    assert len(measured["steps"]) == 2
    for case, found in measured["steps"].items():
        errors, limits = found["errors"], found["limits"]
        assert set(errors) == {"torch", *TRAINING}, case
        for name in TRAINING:
            assert outside(errors[name], limits) == {}, (case, name)
        # a 10% error of the whole update (a wrong learning rate, say) stays outside the bound
        assert limits["update"] < 0.1, (case, limits["update"])


def test_the_bounds_reject_a_wrong_layout_and_a_wrong_learning_rate(T, monkeypatch):
    """The check has teeth: a transposed kernel or a 10% larger learning rate fails it."""
    # 64 px, batch 3: at 32 px layer4's BatchNorm sees 2 values per channel, and PyTorch's own
    # float32 step is then off by about 100% of the update: no bound can tell right from wrong
    weights = resnet.init_weights(seed=6, num_classes=10)
    images, labels = resnet.random_batch(3, 64, seed=6, num_classes=10)
    exact, limit = cc.reference_logits(weights, images)
    assert cc.max_rel_diff(T.predict(T.build_resnet50(weights), images), exact) <= limit
    transposed = {
        **weights,
        "layer1.0.conv2.weight": weights["layer1.0.conv2.weight"].swapaxes(2, 3),
    }
    wrong = T.predict(T.build_resnet50(transposed), images)
    assert not cc.max_rel_diff(wrong, exact) <= limit

    class WrongRate:  # PyTorch's step with lr 10% too large, posing as another framework
        @staticmethod
        def train_step(w, x, y):
            return T.train_step(w, x, y, lr=1.1 * recipe.TRAIN.lr)

    real_get = frameworks.get
    monkeypatch.setattr(frameworks, "get", lambda n: WrongRate if n == "mindspore" else real_get(n))
    check = cc.step_check(["mindspore"], weights, images, labels)
    errors, limits = check["errors"], check["limits"]
    assert "update" in outside(errors["mindspore"], limits)
    assert not outside(errors["torch"], limits)


def test_crosscheck_rejects_unknown_frameworks():
    with pytest.raises(ValueError, match="unknown framework 'jax'.*torch, tensorflow"):
        cc.crosscheck(["jax"])


def test_crosscheck_defaults_to_every_available_framework(T, monkeypatch):
    monkeypatch.setattr(frameworks, "available", lambda: ["torch"])
    check = cc.crosscheck(batch=1, image_size=32)
    assert list(check["errors"]) == ["torch"] and 0 < check["errors"]["torch"] < 1e-5
    assert check["errors"]["torch"] <= check["limit"] < 1e-4


# ----------------------------------------------------------------------------- exported models


def test_the_onnx_export_reloads_and_agrees_with_float64(T):
    weights = resnet.init_weights(seed=5)
    # torch.onnx.export's file, shared with the ONNX Runtime adapter's cache
    ort_adapter = require("onnxruntime")
    session = ort_adapter.session_from_file(ort_adapter.model_file(weights))
    for batch, size in [(1, 32), (2, 64)]:
        images, _ = resnet.random_batch(batch, size, seed=batch)
        exact, limit = cc.reference_logits(weights, images)
        got = ort_adapter.predict(session, images)
        assert got.shape == exact.shape
        assert cc.max_rel_diff(got, exact) <= limit, (batch, size, limit)
