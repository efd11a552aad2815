"""labkit: the helper package of Graph Lab.

``import labkit`` is fast and imports no deep learning framework (each lives in its adapter
under :mod:`labkit.frameworks`, imported only when asked for). Importing it first makes the
frameworks importable in any order: MindSpore 2.8's generated protobuf code fails after
TensorFlow's ("Descriptors cannot be created directly") unless protobuf's pure-Python
implementation is selected first; and TensorFlow's C++ start-up lines (INFO and WARNING: oneDNN's
note, XLA's service) stay out of the notebooks' stderr; ONNX Runtime's telemetry (on by default
in its 1.32 Linux wheel) stays off, and with it the ``.ses`` file it writes in the temp folder.
An explicit setting is kept.
"""

import os as _os

_os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

__version__ = "0.1.0"
__all__ = ["__version__"]
