"""labkit: the helper package of Graph Lab.

``import labkit`` is fast and imports no deep learning framework (each lives in its adapter
under :mod:`labkit.frameworks`, imported only when asked for). Importing it first makes the
frameworks importable in any order: MindSpore 2.8's generated protobuf code fails after
TensorFlow's ("Descriptors cannot be created directly") unless protobuf's pure-Python
implementation is selected first; and TensorFlow's C++ start-up lines (INFO and WARNING: oneDNN's
note, XLA's service) stay out of the notebooks' stderr. An explicit setting is kept.
"""

import os as _os

_os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

__version__ = "0.1.0"
__all__ = ["__version__"]
