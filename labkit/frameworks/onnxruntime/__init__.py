"""ONNX Runtime in the lab: ``adapter`` (runs the ResNet-50 that PyTorch exports to ONNX, in fp32
or quantised to int8), ``graphs`` (node counts of ONNX files, tensor sizes for a memory plan and
int8 quantisation, notebooks 05 and 07) and ``peak`` (its matrix-multiply kernels, timed).

This file is framework-free: it declares what the lab knows about ONNX Runtime and imports
nothing.
"""

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
    peak_precisions=("fp32", "int8"),
    exported_from="torch",
    extra_packages=("torch", "onnx"),
    summary="an inference engine for exported ONNX graphs (ORT_ENABLE_ALL optimisations)",
    model_packages=("onnx", "onnxruntime"),
    model_files=(".onnx",),
)
