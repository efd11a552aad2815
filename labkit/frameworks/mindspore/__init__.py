"""MindSpore in the lab (framework-free: what the lab knows about it)."""

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
    model_packages=("mindspore",),
    code_checks=(
        ("graph_mode", "graph mode accepts it (mindspore.jit(fullgraph=True), no Python fallback)"),
        ("matches_eager", "the graph's outputs match PyNative (eager)"),
    ),
)
