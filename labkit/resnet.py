"""The one ResNet-50 of the course: architecture spec, canonical weights, FLOP count.

ResNet-50 v1.5 with torchvision's parameter names and layouts (kernels ``(out, in, kh, kw)``);
every adapter converts from and to it, so all frameworks load the same numbers. ``width``
(:data:`WIDTH`, 64: ResNet-50 itself) scales every layer's channels: a narrower network keeps
every layer and node with ``(width / 64)**2`` of the weights (the smoke profile's
``resnet_width``); adapters read it from the weights (:func:`width_of`). Pure numpy.
"""

from __future__ import annotations

import numbers
from collections import namedtuple

import numpy as np

__all__ = [
    "BN_EPS",
    "MIN_IMAGE_SIZE",
    "STAGES",
    "WIDTH",
    "Block",
    "Conv",
    "all_convs",
    "blocks",
    "check_count",
    "check_images",
    "features",
    "flops",
    "init_weights",
    "is_trainable",
    "param_shapes",
    "random_batch",
    "stem",
    "validate_weights",
    "width_of",
]

#: (blocks, bottleneck width) of the four stages, at the default width
STAGES: tuple[tuple[int, int], ...] = ((3, 64), (4, 128), (6, 256), (3, 512))
#: ResNet-50's base width: the stem's output channels and the first stage's bottleneck width
WIDTH = 64
EXPANSION = 4
BN_EPS = 1e-5
MIN_IMAGE_SIZE = 32
STRIDE = 32  # total downsampling of the network


#: one convolution (no bias) followed by BatchNorm, named as in torchvision ("layer1.0.conv1",
#: "layer1.0.bn1")
Conv = namedtuple("Conv", ["conv", "bn", "cin", "cout", "kernel", "stride", "padding"])
#: a bottleneck block ("layer2.0"): its three convolutions, 1x1 reduce, 3x3 (carries the
#: stride), 1x1 expand, and its projection shortcut (a Conv, or None)
Block = namedtuple("Block", ["name", "convs", "downsample"])


def check_count(value: object, what: str) -> int:
    """``value`` as an ``int`` if it is a whole number >= 1, else ``ValueError`` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{what} must be an integer >= 1, got {value!r}")
    return int(value)


def features(width: int = WIDTH) -> int:
    """Channels of the last stage's output, the classifier's input (2048 at the default width)."""
    return STAGES[-1][1] * width // WIDTH * EXPANSION


def stem(width: int = WIDTH) -> Conv:
    return Conv("conv1", "bn1", 3, width, 7, 2, 3)


def blocks(width: int = WIDTH) -> list[Block]:
    """The 16 bottleneck blocks in order; ``ValueError`` for a width that is not a whole number
    >= 1 (every walk of the network passes here)."""
    out: list[Block] = []
    cin = check_count(width, "width")
    for stage, (count, full) in enumerate(STAGES, start=1):
        stage_width = full * width // WIDTH
        for i in range(count):
            stride = 2 if (i == 0 and stage > 1) else 1
            name = f"layer{stage}.{i}"
            cout = stage_width * EXPANSION
            convs = (
                Conv(f"{name}.conv1", f"{name}.bn1", cin, stage_width, 1, 1, 0),
                Conv(f"{name}.conv2", f"{name}.bn2", stage_width, stage_width, 3, stride, 1),
                Conv(f"{name}.conv3", f"{name}.bn3", stage_width, cout, 1, 1, 0),
            )
            down = None
            if i == 0:
                down = Conv(f"{name}.downsample.0", f"{name}.downsample.1", cin, cout, 1, stride, 0)
            out.append(Block(name, convs, down))
            cin = cout
    return out


def all_convs(width: int = WIDTH) -> list[Conv]:
    """Every convolution in order: the stem, then each block's three and its projection."""
    return [stem(width), *(c for b in blocks(width) for c in (*b.convs, b.downsample) if c)]


BN_PARAMS = ("weight", "bias")
BN_BUFFERS = ("running_mean", "running_var")


def param_shapes(num_classes: int = 1000, width: int = WIDTH) -> dict[str, tuple[int, ...]]:
    """Canonical name -> shape of every tensor (trainable and BatchNorm running statistics)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for c in all_convs(width):
        shapes[f"{c.conv}.weight"] = (c.cout, c.cin, c.kernel, c.kernel)
        for p in BN_PARAMS + BN_BUFFERS:
            shapes[f"{c.bn}.{p}"] = (c.cout,)
    shapes["fc.weight"] = (num_classes, features(width))
    shapes["fc.bias"] = (num_classes,)
    return shapes


def is_trainable(name: str) -> bool:
    return not name.endswith(BN_BUFFERS)


def init_weights(
    seed: int = 0, num_classes: int = 1000, width: int = WIDTH
) -> dict[str, np.ndarray]:
    """Seeded canonical weights (float32), the same for every framework: random, not trained.

    Convolutions He-normal (fan_out); BatchNorm's four tensors drawn around their defaults, so
    a layout mistake in any of them shows in the cross-check (each block's last one small, to
    keep the residual stream bounded); the classifier uniform(+-1/sqrt(fan_in)).
    """
    check_count(num_classes, "num_classes")
    rng = np.random.default_rng(seed)
    w: dict[str, np.ndarray] = {}
    last_scales = {f"{b.convs[2].bn}.weight" for b in blocks(width)}
    for name, shape in param_shapes(num_classes, width).items():
        if len(shape) == 4:  # a convolution's kernel
            fan_out = shape[0] * shape[2] * shape[3]
            arr = rng.normal(0.0, np.sqrt(2.0 / fan_out), shape)
        elif name.startswith("fc."):
            bound = 1.0 / np.sqrt(features(width))  # the classifier's fan_in
            arr = rng.uniform(-bound, bound, shape)
        elif name.endswith(".weight"):  # BatchNorm scale
            centre = 0.2 if name in last_scales else 1.0
            arr = centre * (1.0 + 0.1 * rng.standard_normal(shape))
        elif name.endswith((".bias", "running_mean")):
            arr = 0.05 * rng.standard_normal(shape)
        else:  # running_var
            arr = rng.uniform(0.8, 1.25, shape)
        w[name] = np.ascontiguousarray(arr, dtype=np.float32)
    return w


def width_of(weights: dict[str, np.ndarray]) -> int:
    """The base width of a set of canonical weights: the stem's output channels (64 for
    ResNet-50 itself)."""
    if "conv1.weight" not in weights:
        raise ValueError(
            "weights are missing tensor 'conv1.weight' (expected shape (width, 3, 7, 7), "
            f"width {WIDTH} for ResNet-50)"
        )
    return check_count(int(np.shape(weights["conv1.weight"])[0]), "width")


def validate_weights(weights: dict[str, np.ndarray]) -> int:
    """Check names and shapes against the spec at the width of ``conv1.weight``; returns the
    class count, or raises ``ValueError`` naming the first wrong tensor."""
    if "fc.bias" not in weights:
        raise ValueError("weights are missing tensor 'fc.bias' (expected shape (num_classes,))")
    num_classes = int(np.shape(weights["fc.bias"])[0])
    width = width_of(weights)
    expected = param_shapes(num_classes, width)
    at = f" at width {width} (read from conv1.weight; ResNet-50's is {WIDTH})"
    at = at if width != WIDTH else ""
    for name, shape in expected.items():
        if name not in weights:
            raise ValueError(f"weights are missing tensor {name!r} (expected shape {shape}{at})")
        got = tuple(np.shape(weights[name]))
        if got != shape:
            raise ValueError(f"tensor {name!r} has shape {got}, the spec expects {shape}{at}")
    extra = sorted(set(weights) - set(expected))
    if extra:
        more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        raise ValueError(f"weights carry unexpected tensor {extra[0]!r}{more}")
    return num_classes


def check_image_size(image_size: int) -> int:
    """ResNet-50 halves the resolution five times: sizes must be multiples of 32, at least 32."""
    if check_count(image_size, "image_size") % STRIDE:  # a positive multiple of 32 is >= 32
        raise ValueError(
            f"ResNet-50 cannot take {image_size}x{image_size} images: it downsamples by {STRIDE}, "
            f"so use a multiple of {STRIDE} that is at least {MIN_IMAGE_SIZE} (e.g. 32, 64, 224)"
        )
    return int(image_size)


def check_images(images: np.ndarray) -> np.ndarray:
    """A host batch (NCHW, 3 channels, sizes ResNet-50 takes) as C-contiguous float32, or a
    ``ValueError`` saying what is wrong."""
    shape = np.shape(images)
    if len(shape) != 4 or shape[1] != 3:
        raise ValueError(
            f"images must be NCHW with 3 channels, e.g. (8, 3, 224, 224); got shape {shape}"
        )
    check_image_size(int(shape[2]))
    check_image_size(int(shape[3]))
    return np.ascontiguousarray(images, dtype=np.float32)


def flops(
    image_size: int = 224, num_classes: int = 1000, training: bool = False, width: int = WIDTH
) -> int:
    """FLOPs of one image: 2 per multiply-accumulate of the forward pass (convolutions and
    classifier); a training step counts about 3x the forward."""
    check_image_size(image_size)  # a multiple of 32: each stride divides the size exactly

    def macs(c: Conv, size: int) -> int:  # ``size``: the convolution's input height and width
        return (size // c.stride) ** 2 * c.cout * c.cin * c.kernel**2

    total = macs(stem(width), image_size)
    size = image_size // 4  # after the stem and the max pool
    for b in blocks(width):
        conv1, conv2, conv3 = b.convs
        total += macs(conv1, size) + macs(conv2, size) + macs(conv3, size // conv2.stride)
        total += macs(b.downsample, size) if b.downsample is not None else 0
        size //= conv2.stride
    total += features(width) * num_classes
    return 2 * total * (3 if training else 1)


def random_batch(batch: int, image_size: int, seed: int = 0, num_classes: int = 1000):
    """A synthetic batch (nothing is downloaded): NCHW float32 images and int64 labels."""
    check_count(batch, "batch size")
    check_image_size(image_size)
    rng = np.random.default_rng(seed + 10_000)
    x = rng.standard_normal((batch, 3, image_size, image_size), dtype=np.float32)
    y = rng.integers(0, num_classes, size=batch, dtype=np.int64)
    return x, y
