"""One ResNet-50, four runtimes, the same numbers: PyTorch is the reference for TensorFlow,
MindSpore and ONNX Runtime (eval logits, one training step, exported models).

A framework that does not import here is skipped by name (conftest.require).
All four run in this one process: labkit sets protobuf's pure-Python implementation first.
"""

from labkit import frameworks, resnet
from labkit.crosscheck import crosscheck

import numpy as np
import pytest
from conftest import require

pytestmark = pytest.mark.slow

OTHERS = ("tensorflow", "mindspore", "onnxruntime")
TRAINING = ("tensorflow", "mindspore")
# Under smoke, test_tensorflow_adapter and test_mindspore_adapter already check that their
# exports reload and match their own models, which match PyTorch (above): exporting again
# here (about 25 s on 2 cores) is left to `make test-standard` (skipped under smoke: conftest).
COSTLY_IN_SMOKE = pytest.mark.costly
EXPORTERS = [
    "torch",  # ONNX, run by ONNX Runtime
    pytest.param("tensorflow", marks=COSTLY_IN_SMOKE),  # SavedModel
    pytest.param("mindspore", marks=COSTLY_IN_SMOKE),  # MindIR
]


@pytest.fixture(scope="module")
def T():
    return require("torch")


# ----------------------------------------------------------------------------- eval logits


@pytest.mark.parametrize("seed,batch,size", [(0, 2, 64), (1, 1, 32), (2, 3, 32)])
@pytest.mark.parametrize("name", OTHERS)
def test_eval_logits_agree_with_torch(T, name, seed, batch, size):
    require(name)
    result = crosscheck([name, "torch"], seed=seed, batch=batch, image_size=size)
    assert result["torch"] == 0.0
    assert 0.0 <= result[name] < 1e-3, result


@pytest.mark.parametrize("name", OTHERS)
def test_a_narrower_resnet50_agrees_with_torch_too(T, name):
    """The smoke profile's narrow ResNet-50 (width 16): every adapter builds it from the
    weights' shapes and computes PyTorch's function; ONNX Runtime's comes from its own export."""
    require(name)
    result = crosscheck([name, "torch"], seed=3, batch=2, image_size=32, width=16)
    assert 0.0 <= result[name] < 1e-3, result


def test_crosscheck_rejects_unknown_frameworks():
    with pytest.raises(ValueError, match="unknown framework 'jax'.*torch, tensorflow"):
        crosscheck(["jax"])


def test_crosscheck_defaults_to_every_available_framework(T, monkeypatch):
    monkeypatch.setattr(frameworks, "available", lambda: ["torch"])
    assert crosscheck(batch=1, image_size=32) == {"torch": 0.0}


# ----------------------------------------------------------------------------- one training step


@pytest.fixture(scope="module")
def train_case():
    weights = resnet.init_weights(seed=4)
    images, labels = resnet.random_batch(3, 64, seed=4)
    return weights, images, labels


@pytest.fixture(scope="module")
def torch_step(T, train_case):
    return T.train_step(*train_case)


@pytest.mark.parametrize("name", TRAINING)
def test_one_training_step_agrees_with_torch(name, train_case, torch_step):
    adapter = require(name)
    weights = train_case[0]
    loss, new = adapter.train_step(*train_case)  # both with the recipe (labkit.recipe.TRAIN)
    ref_loss, ref = torch_step
    assert np.isfinite(ref_loss) and loss == pytest.approx(ref_loss, rel=1e-4)
    assert list(new) == list(weights)
    # Trainable weights only: BatchNorm running statistics follow each framework's convention
    # (Keras folds the biased batch variance into running_var, PyTorch the unbiased one).
    for tensor in resnet.trainable_names():
        update, ref_update = new[tensor] - weights[tensor], ref[tensor] - weights[tensor]
        assert np.linalg.norm(ref_update) > 0, tensor
        assert np.linalg.norm(update - ref_update) < 1e-2 * np.linalg.norm(ref_update), tensor


# ----------------------------------------------------------------------------- exported models


@pytest.mark.parametrize("name", EXPORTERS)
def test_exported_model_reloads_and_agrees_with_torch(T, name, tmp_path):
    adapter = require(name)
    weights = resnet.init_weights(seed=5)
    if name == "torch":  # torch.onnx.export's file, shared with the ONNX Runtime adapter's cache
        path = require("onnxruntime").model_file(weights)
    else:
        path = adapter.export(adapter.build_resnet50(weights), tmp_path)
    run = adapter.load_exported(path)
    reference = T.build_resnet50(weights)
    for batch, size in [(1, 32), (2, 64)]:
        images, _ = resnet.random_batch(batch, size, seed=batch)
        ref = T.predict(reference, images)
        got = np.asarray(run(images))
        assert got.shape == ref.shape
        assert np.abs(got - ref).max() < 1e-3 * np.abs(ref).max(), (name, batch, size)
