"""Inside PyTorch's graphs: TorchScript before and after freezing and inference optimisation.

Three stages of one model, each a runnable TorchScript module:

- ``traced``: ``torch.jit.trace``; its inlined graph still reads every weight with
  ``prim::GetAttr`` and runs BatchNorm as its own node;
- ``frozen``: ``torch.jit.freeze`` turns weights into constants, then folds BatchNorm into the
  convolution before it and removes what no output needs;
- ``optimized``: ``torch.jit.optimize_for_inference`` on the frozen module: oneDNN (MKLDNN)
  convolutions with their weights pre-packed in oneDNN's layout, and layout conversions.

TorchScript is deprecated in PyTorch 2.x (``torch.compile`` / ``torch.export`` replace it); the
course shows it because it makes a graph compiler's passes easy to see, and older code uses it.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ...graphs import OpCounts
from .adapter import _quiet_torchscript

STAGES: tuple[str, ...] = ("traced", "frozen", "optimized")
#: node kinds that do no arithmetic on tensors
BOOKKEEPING: frozenset[str] = frozenset(
    {
        "prim::Constant",
        "prim::ConstantMKLDNNTensor",
        "prim::GetAttr",
        "prim::ListConstruct",
        "prim::TupleConstruct",
        "prim::ListUnpack",
        "prim::TupleUnpack",
        "prim::NumToTensor",
    }
)


def graph_of(module: torch.jit.ScriptModule) -> torch.Graph:
    """The module's forward graph with every submodule call inlined (what actually runs)."""
    return module.inlined_graph


def kinds(graph: torch.Graph) -> list[str]:
    """Every node's kind (``aten::conv2d``, ``prim::GetAttr``, ...), nested blocks included."""
    out: list[str] = []

    def walk(block) -> None:
        for node in block.nodes():
            out.append(node.kind())
            for sub in node.blocks():
                walk(sub)

    walk(graph)
    return out


def counts(module_or_graph: torch.jit.ScriptModule | torch.Graph) -> OpCounts:
    graph = (
        module_or_graph if isinstance(module_or_graph, torch.Graph) else graph_of(module_or_graph)
    )
    return OpCounts.of(kinds(graph), lambda k: k in BOOKKEEPING)


def stages(model: nn.Module, images: np.ndarray) -> dict[str, torch.jit.ScriptModule]:
    """The model traced, frozen, and optimised for inference (eval mode, on ``images``' shape)."""
    example = torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32))
    model = model.eval()
    with _quiet_torchscript(), torch.no_grad():
        traced = torch.jit.trace(model, example, check_trace=False)
        frozen = torch.jit.freeze(traced)
        optimized = torch.jit.optimize_for_inference(torch.jit.freeze(traced))
    return {"traced": traced, "frozen": frozen, "optimized": optimized}


def run(module: nn.Module, images: np.ndarray) -> np.ndarray:
    """Inference on a host batch: the logits as numpy."""
    with torch.inference_mode():
        return module(torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32))).numpy()
