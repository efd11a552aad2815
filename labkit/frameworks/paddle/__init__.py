"""PaddlePaddle in the lab: ``adapter`` (the ``paddle.nn.Layer`` ResNet-50 in dygraph, under
``paddle.jit.to_static`` with its two capture paths, and the saved inference program run by
Paddle Inference), ``graphs`` (what ``to_static`` makes of Python control flow, for the
PaddlePaddle lesson) and ``checks`` (the properties its code exercises verify).

This file is framework-free: it declares what the lab knows about PaddlePaddle and imports
nothing. ``import_before``: importing ``paddle`` after ``tensorflow`` in one process crashes it
(a segmentation fault in Paddle's native library, seen with 3.3.1 and TensorFlow 2.21), so the
registry refuses to import Paddle there; the benchmark runner gives every cell a fresh process.
"""

from ..contract import FrameworkSpec

__all__ = [
    "SPEC",
]

SPEC = FrameworkSpec(
    name="paddle",
    display="PaddlePaddle",
    import_name="paddle",
    modes=("dygraph", "sot", "ast", "inference"),
    eager="dygraph",
    color="#2932e1",
    formats=("paddle_inference",),
    distributions=("paddlepaddle",),
    summary="dygraph (eager, the default); paddle.jit.to_static with bytecode capture (SOT) or "
    "source conversion (AST, full_graph=True); the saved program run by Paddle Inference",
    model_packages=("paddle",),
    code_checks=(
        ("full_graph", "source conversion accepts it (paddle.jit.to_static(full_graph=True))"),
        ("matches_eager", "the converted program's outputs match dygraph"),
    ),
    import_before=("tensorflow",),
)
