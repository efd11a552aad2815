"""Apache TVM in the lab (framework-free): a compiler of the ONNX file ONNX Runtime runs."""

from ..contract import FrameworkSpec

__all__ = ["SPEC"]

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
    model_packages=("tvm",),
)
