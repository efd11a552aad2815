"""TensorFlow in the lab: ``adapter`` (the Keras 3 ResNet-50, its modes),
and ``launch`` (the ``TF_CONFIG`` of each of notebook 08's workers).

This file is framework-free: it declares what the lab knows about TensorFlow and imports nothing.
"""

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
    summary="eager Keras calls; tf.function (a traced graph, Grappler-optimised); "
    "tf.function(jit_compile=True) (XLA)",
    model_packages=("keras", "tensorflow"),
    code_checks=(
        ("traces_once", "traces once over varied inputs (tf.function)"),
        ("matches_eager", "the graph's outputs match eager"),
    ),
)
