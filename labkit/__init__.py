"""labkit: the helper package of Graph Lab.

``import labkit`` is fast and imports no deep learning framework: each framework lives in its
own adapter under :mod:`labkit.frameworks` and is imported only when asked for.

Importing labkit first also makes the frameworks importable in any order: MindSpore 2.8's
generated protobuf code fails when TensorFlow was imported first ("Descriptors cannot be
created directly") unless protobuf's pure-Python implementation is selected before either
framework loads, which is what the line below does; and TensorFlow's C++ start-up lines (oneDNN's
note, XLA's service: INFO and WARNING) stay out of the notebooks' stderr (errors still show).
An explicit setting of either variable is kept.
"""

import os as _os

_os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

__version__ = "0.1.0"
__all__ = ["__version__"]
