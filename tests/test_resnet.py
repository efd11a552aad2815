"""labkit.resnet without any framework: the spec at ResNet-50's width and narrower."""

from labkit import profiles, resnet

import numpy as np
import pytest


def test_the_default_width_is_resnet50():
    assert resnet.WIDTH == 64 and resnet.features() == 2048
    trainable = [s for n, s in resnet.param_shapes().items() if resnet.is_trainable(n)]
    assert sum(int(np.prod(s)) for s in trainable) == 25_557_032  # torchvision's resnet50
    assert resnet.param_shapes() == resnet.param_shapes(1000, 64)
    assert resnet.flops(224) == resnet.flops(224, width=64) == 2 * 4_089_184_256


def test_a_narrower_network_has_every_layer_with_fewer_channels():
    full, narrow = resnet.param_shapes(), resnet.param_shapes(width=16)
    assert list(narrow) == list(full)  # the same tensors, in the same order
    assert len(resnet.all_convs(16)) == len(resnet.all_convs()) == 53
    assert [b.name for b in resnet.blocks(16)] == [b.name for b in resnet.blocks()]
    # every channel count is a quarter; the classifier keeps its classes
    for name, shape in full.items():
        if name == "fc.weight":
            assert narrow[name] == (1000, 512)
        elif name.endswith(".weight") and len(shape) == 4:
            cin = shape[1] if name == "conv1.weight" else shape[1] // 4
            assert narrow[name] == (shape[0] // 4, cin, *shape[2:]), name
        elif name != "fc.bias":
            assert narrow[name] == (shape[0] // 4,), name
    # convolution weights scale with width squared
    conv = sum(int(np.prod(s)) for n, s in narrow.items() if len(s) == 4)
    conv_full = sum(int(np.prod(s)) for n, s in full.items() if len(s) == 4)
    assert conv_full / conv == pytest.approx(16, rel=0.01)


def test_narrow_weights_validate_and_name_their_width():
    w = resnet.init_weights(0, width=16)
    assert resnet.width_of(w) == 16 and resnet.validate_weights(w) == 1000
    assert sum(a.nbytes for a in w.values()) < 10e6  # ResNet-50's are 102 MB
    with pytest.raises(ValueError, match=r"'layer4\.2\.bn3\.running_var'.*at width 16"):
        resnet.validate_weights({k: v for k, v in w.items() if k != "layer4.2.bn3.running_var"})
    with pytest.raises(ValueError, match="missing tensor 'conv1.weight'"):
        resnet.width_of({})
    for bad in (0, -4, 2.5, True):
        with pytest.raises(ValueError, match="width must be an integer >= 1"):
            resnet.init_weights(0, width=bad)


def test_default_weights_do_not_depend_on_the_width_argument():
    a, b = resnet.init_weights(3), resnet.init_weights(3, width=resnet.WIDTH)
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_only_smoke_narrows_the_network():
    widths = {name: profiles.get(name).resnet_width for name in list(profiles.PROFILES)}
    assert widths == {"smoke": 16, "standard": 64, "full": 64}
