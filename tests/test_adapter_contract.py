"""The adapter contract that every framework keeps, checked once for all of them: weights that
do not fit the spec and images the network cannot take fail with an error naming the problem."""
import numpy as np
import pytest

from conftest import require
from labkit import resnet

FRAMEWORKS = ["torch", "tensorflow", "mindspore"]
CLASSES = 10  # the full architecture, a small classifier: cheap to build


@pytest.fixture(scope="module")
def weights():
    return resnet.init_weights(seed=0, num_classes=CLASSES)


@pytest.fixture(scope="module", params=FRAMEWORKS)
def adapter(request):
    return require(request.param)


@pytest.fixture(scope="module")
def model(adapter, weights):
    return adapter.build_resnet50(weights)


@pytest.mark.parametrize("name", ["conv1.weight", "layer3.2.bn2.running_mean",
                                  "layer3.2.bn2.running_var", "fc.weight"])
def test_missing_tensor_is_named(adapter, weights, name):
    broken = {k: v for k, v in weights.items() if k != name}
    with pytest.raises(ValueError, match=rf"missing tensor '{name}'".replace(".", r"\.")):
        adapter.build_resnet50(broken)


def test_misshaped_and_unexpected_tensors_are_named(adapter, weights):
    misshaped = {**weights, "layer2.0.conv2.weight": np.zeros((128, 128, 1, 1), np.float32)}
    with pytest.raises(ValueError, match=r"'layer2\.0\.conv2\.weight' has shape \(128, 128, 1, 1\)"):
        adapter.build_resnet50(misshaped)
    hwio = weights["layer1.0.conv2.weight"].transpose(2, 3, 1, 0)  # a TF layout passed by mistake
    with pytest.raises(ValueError, match=r"'layer1\.0\.conv2\.weight' has shape \(3, 3, 64, 64\), "
                                         r"the spec expects \(64, 64, 3, 3\)"):
        adapter.build_resnet50({**weights, "layer1.0.conv2.weight": hwio})
    with pytest.raises(ValueError, match="unexpected tensor 'fc2.weight'"):
        adapter.build_resnet50({**weights, "fc2.weight": np.zeros((3, 3), np.float32)})


def test_bad_images_fail_clearly(adapter, model, weights):
    for size in (40, 48):
        with pytest.raises(ValueError, match=rf"cannot take {size}x{size} images.*multiple of 32"):
            adapter.predict(model, np.zeros((1, 3, size, size), np.float32))
    with pytest.raises(ValueError, match="NCHW with 3 channels"):
        adapter.predict(model, np.zeros((1, 64, 64, 3), np.float32))
    with pytest.raises(ValueError, match="cannot take 48x48"):
        adapter.prepare(weights, adapter.MODES[0], "latency", 1, image_size=48)
