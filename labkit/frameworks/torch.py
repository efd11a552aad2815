"""PyTorch adapter: a hand-written ResNet-50 v1.5, its training step, benchmark modes, ONNX export.

Read this module if PyTorch is the framework you care about; the contract it fulfils is in
:mod:`labkit.frameworks`. The model's ``state_dict`` uses exactly the canonical names of
:func:`labkit.resnet.param_shapes` (plus PyTorch's own ``num_batches_tracked`` counters), so
canonical weights load 1:1 and come back out unchanged.

Modes: ``eager`` (plain ``nn.Module`` calls), ``torchscript`` (``torch.jit.trace``, frozen with
``torch.jit.freeze`` for inference; deprecated in PyTorch 2.x in favour of ``torch.compile`` /
``torch.export``, kept because older code and the course's sources use it) and ``compile``
(``torch.compile`` with the default Inductor backend).
"""
from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import resnet
from ..bench import DEVICES, PRECISIONS, TASKS, Prepared, Unsupported

NAME = "torch"
MODES: tuple[str, ...] = ("eager", "torchscript", "compile")


def version() -> str:
    return torch.__version__


def set_threads(n: int) -> None:
    """Use ``n`` threads inside each operator (PyTorch's intra-op pool)."""
    if n < 1:
        raise ValueError(f"thread count must be >= 1, got {n}")
    torch.set_num_threads(n)


# --------------------------------------------------------------------------------------------
# The network, built from the spec in labkit.resnet (names follow torchvision)


def _conv(c: resnet.Conv) -> nn.Conv2d:
    return nn.Conv2d(c.cin, c.cout, c.kernel, stride=c.stride, padding=c.padding, bias=False)


def _bn(c: resnet.Conv) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(c.cout, eps=resnet.BN_EPS)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (carries the stride: v1.5), 1x1 expand; identity or projection shortcut."""

    def __init__(self, spec: resnet.Block):
        super().__init__()
        c1, c2, c3 = spec.convs
        self.conv1, self.bn1 = _conv(c1), _bn(c1)
        self.conv2, self.bn2 = _conv(c2), _bn(c2)
        self.conv3, self.bn3 = _conv(c3), _bn(c3)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if spec.downsample is not None:
            self.downsample = nn.Sequential(_conv(spec.downsample), _bn(spec.downsample))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet50(nn.Module):
    """ResNet-50 v1.5: stem (7x7 conv, max pool), four stages of bottlenecks, global pool, fc."""

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        stem = resnet.stem()
        self.conv1, self.bn1 = _conv(stem), _bn(stem)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        specs = resnet.blocks()
        for stage in range(1, len(resnet.STAGES) + 1):
            prefix = f"layer{stage}."
            stage_specs = [b for b in specs if b.name.startswith(prefix)]
            setattr(self, f"layer{stage}", nn.Sequential(*(Bottleneck(b) for b in stage_specs)))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512 * resnet.EXPANSION, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# --------------------------------------------------------------------------------------------
# Canonical weights in and out


def build_resnet50(weights: dict[str, np.ndarray]) -> ResNet50:
    """An eval-mode ``ResNet50`` holding ``weights`` (BatchNorm running statistics included).

    A missing, unexpected or misshaped tensor raises ``ValueError`` naming it.
    """
    num_classes = resnet.validate_weights(weights)
    model = ResNet50(num_classes)
    load_canonical(model, weights)
    return model.eval()


def load_canonical(model: nn.Module, weights: dict[str, np.ndarray]) -> None:
    """Copy canonical tensors into ``model`` in place (names map 1:1 to its state_dict)."""
    state = model.state_dict()
    with torch.no_grad():
        for name, arr in weights.items():
            state[name].copy_(torch.from_numpy(np.asarray(arr, dtype=np.float32)))


def to_canonical(model: nn.Module) -> dict[str, np.ndarray]:
    """The model's weights as canonical float32 numpy arrays (exact copies)."""
    state = model.state_dict()
    num_classes = state["fc.bias"].shape[0]
    return {name: state[name].detach().cpu().float().numpy().copy()
            for name in resnet.param_shapes(num_classes)}


def check_images(images: np.ndarray) -> np.ndarray:
    """Images must be an NCHW float array with 3 channels and a size ResNet-50 can take."""
    shape = np.shape(images)
    if len(shape) != 4 or shape[1] != 3:
        raise ValueError(f"images must be NCHW with 3 channels, e.g. (8, 3, 224, 224); got shape {shape}")
    resnet.check_image_size(int(shape[2]))
    resnet.check_image_size(int(shape[3]))
    return np.ascontiguousarray(images, dtype=np.float32)


def predict(model: nn.Module, images: np.ndarray) -> np.ndarray:
    """Eval-mode logits for a host batch (NCHW float32)."""
    x = torch.from_numpy(check_images(images))
    with torch.inference_mode():
        return model(x).float().numpy()


def train_step(weights: dict[str, np.ndarray], images: np.ndarray, labels: np.ndarray,
               lr: float = 0.1, momentum: float = 0.9) -> tuple[float, dict[str, np.ndarray]]:
    """One SGD-with-momentum step on mean cross-entropy, in train mode (batch statistics).

    Returns the loss before the update and the updated canonical weights (running statistics
    updated by PyTorch's convention: momentum 0.1, unbiased batch variance).
    """
    model = build_resnet50(weights).train()
    x = torch.from_numpy(check_images(images))
    y = torch.from_numpy(np.asarray(labels, dtype=np.int64))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return float(loss.item()), to_canonical(model)
