"""What the framework packages share, framework-free: a cell's arguments (``cells``), the
explorer's and the code exercises' toolkits (``explore``, ``checks``), a low precision's accuracy
cost (``accuracy``) and the matrix-multiply probes' timing (``peak``). Not for notebooks."""

__all__ = ["accuracy", "cells", "checks", "explore", "peak"]
