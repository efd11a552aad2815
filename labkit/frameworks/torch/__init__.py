"""PyTorch in the lab (framework-free: what the lab knows about it)."""

from ..contract import FrameworkSpec

__all__ = ["SPEC"]

SPEC = FrameworkSpec(
    name="torch",
    display="PyTorch",
    import_name="torch",
    modes=("eager", "compile", "torchscript"),
    eager="eager",
    color="#ee4c2c",
    peak_precisions=("fp32", "bf16", "int8"),
    launcher="torchrun",
    model_packages=("torch",),
    code_checks=(
        ("no_graph_breaks", "zero graph breaks (torch._dynamo.explain)"),
        ("fullgraph", "compiles as one graph (torch.compile(fullgraph=True))"),
        ("exports", "exports as one graph that gives the eager outputs (torch.export)"),
        ("matches_eager", "the compiled function's outputs match eager (torch.compile)"),
        ("equals_reference", "run eagerly, it gives the outputs of the original"),
        ("max_ops", "calls few PyTorch operations per call (each pays eager dispatch)"),
        ("avoids_ops", "leaves out the operations the exercise names"),
        ("data_parallel", "data-parallel gradients match one process on the whole batch"),
    ),
)
