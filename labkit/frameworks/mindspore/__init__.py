"""MindSpore in the lab: ``adapter`` (the ``nn.Cell`` ResNet-50, PyNative and graph mode),
and ``launch`` (``msrun`` for notebook 08's workers).

This file is framework-free: it declares what the lab knows about MindSpore and imports nothing.
"""

from ..contract import FrameworkSpec

__all__ = ["SPEC"]

SPEC = FrameworkSpec(
    name="mindspore",
    display="MindSpore",
    import_name="mindspore",
    modes=("pynative", "graph"),
    eager="pynative",
    color="#1f77b4",
    launcher="msrun",
    summary="PyNative (eager, the default in 2.x); GRAPH_MODE / mindspore.jit (parsed source)",
    model_packages=("mindspore",),
    code_checks=(
        ("graph_mode", "graph mode accepts it (mindspore.jit(fullgraph=True), no Python fallback)"),
        ("matches_eager", "the graph's outputs match PyNative (eager)"),
    ),
)
