"""PaddlePaddle in the lab (framework-free: what the lab knows about it).

``import_before``: importing ``paddle`` after ``tensorflow`` in one process is a segmentation
fault in Paddle's native library (3.3.1 with TensorFlow 2.21): the registry refuses it.
"""

from ..contract import FrameworkSpec

__all__ = ["SPEC"]

SPEC = FrameworkSpec(
    name="paddle",
    display="PaddlePaddle",
    import_name="paddle",
    modes=("dygraph", "sot", "ast"),
    eager="dygraph",
    color="#2932e1",
    distributions=("paddlepaddle",),
    model_packages=("paddle",),
    code_checks=(
        ("full_graph", "source conversion accepts it (paddle.jit.to_static(full_graph=True))"),
        ("matches_eager", "the converted program's outputs match dygraph"),
    ),
    import_before=("tensorflow",),
)
