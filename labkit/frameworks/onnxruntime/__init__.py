"""ONNX Runtime in the lab (framework-free): it runs the ResNet-50 PyTorch exports to ONNX."""

from ..contract import FrameworkSpec

__all__ = ["SPEC"]

SPEC = FrameworkSpec(
    name="onnxruntime",
    display="ONNX Runtime",
    import_name="onnxruntime",
    modes=("ort",),
    eager=None,
    color="#5c5c5c",
    tasks=("latency", "throughput"),
    precisions=("fp32", "int8"),
    exported_from="torch",
    extra_packages=("torch", "onnx"),
    model_packages=("onnx", "onnxruntime"),
    model_files=(".onnx",),
)
