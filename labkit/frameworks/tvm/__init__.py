"""Apache TVM in the lab: a deployment compiler of exported graphs. ``adapter`` imports the
ResNet-50 that PyTorch exports to ONNX (the file ONNX Runtime runs) into TVM's Relax IR,
compiles it for this CPU (LLVM with the host's instruction set) and runs it in Relax's virtual
machine, so its logits and its speed sit beside ONNX Runtime's and its compile time counts in
the break-even.

This file is framework-free: it declares what the lab knows about TVM and imports nothing.
"""

from ..contract import FrameworkSpec

__all__ = [
    "SPEC",
]

SPEC = FrameworkSpec(
    name="tvm",
    display="Apache TVM",
    import_name="tvm",
    modes=("relax",),
    eager=None,
    color="#8c564b",
    tasks=("latency", "throughput"),
    precisions=("fp32",),
    exported_from="torch",
    extra_packages=("torch", "onnx", "onnxruntime"),
    distributions=("apache-tvm",),
    summary="a compiler of exported graphs: the ONNX export imported into Relax "
    "(relax.frontend.onnx), compiled with LLVM for this CPU, run by the Relax VM",
    model_packages=("tvm",),
)
