"""TensorFlow in the lab (framework-free: what the lab knows about it)."""

from ..contract import FrameworkSpec

__all__ = ["SPEC"]

SPEC = FrameworkSpec(
    name="tensorflow",
    display="TensorFlow",
    import_name="tensorflow",
    modes=("eager", "function", "xla"),
    eager="eager",
    color="#ff8f00",
    launcher="TF_CONFIG",
    distributions=("tensorflow-cpu", "tensorflow"),
    model_packages=("keras", "tensorflow"),
    code_checks=(
        ("traces_once", "traces once over varied inputs (tf.function)"),
        ("matches_eager", "the graph's outputs match eager"),
    ),
)
