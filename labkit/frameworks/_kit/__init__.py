"""What the framework packages share, framework-free: a cell's arguments (``cells``), the
explorer's and the code exercises' toolkits (``explore``, ``checks``) and a low precision's
accuracy cost (``accuracy``). Not for notebooks."""

__all__ = ["accuracy", "cells", "checks", "explore"]
