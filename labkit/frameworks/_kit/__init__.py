"""What the framework packages share, framework-free, so that each one imports only downward:
argument checks of a cell (``cells``), the explorer's toolkit (``explore``), the code-exercise
checks' toolkit (``checks``), the accuracy cost of a low
precision (``accuracy``) and the matrix-multiply probes' sizing and timing (``peak``).

Not for notebooks: the rooms that use the kit (:mod:`labkit.explore`, :mod:`labkit.exercises`,
:mod:`labkit.lessons.graphs`) show a learner what they need under their own names.
"""

__all__ = ["accuracy", "cells", "checks", "explore", "peak"]
