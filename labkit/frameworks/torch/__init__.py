"""PyTorch in the lab: ``adapter`` (the ResNet-50, its modes, ONNX export), ``graphs`` (TorchScript
graphs for the optimisation notebook), ``distributed`` (the DDP worker that ``torchrun`` starts).

This file is framework-free: it declares what the lab knows about PyTorch and imports nothing.
"""

from ..contract import FrameworkSpec

SPEC = FrameworkSpec(
    name="torch",
    display="PyTorch",
    import_name="torch",
    modes=("eager", "torchscript", "compile"),
    eager="eager",
    color="#ee4c2c",
    formats=("onnx", "torchscript"),
    launcher="torchrun",
    summary="eager nn.Module; TorchScript trace+freeze (deprecated, still met in older code); "
    "torch.compile (Inductor)",
    model_packages=("torch",),
)
