"""What the framework packages share, so that each one imports only downward.

A framework package (``labkit/frameworks/<name>/``) imports only :mod:`labkit.util`, this kit,
:mod:`labkit.frameworks.contract`, its own modules, :mod:`labkit.resnet`, :mod:`labkit.recipe`
and :mod:`labkit.profiles`; what several of them need lives here:

- :mod:`~labkit.frameworks._kit.cells`: the argument checks of ``prepare`` and ``set_threads``;
- :mod:`~labkit.frameworks._kit.explore`: the toolkit of the graph-readiness checks
  (``<name>/explore.py``): answers, agreement with eager, probe inputs, the eager session;
- :mod:`~labkit.frameworks._kit.checks`: the toolkit of the code-exercise checks
  (``<name>/checks.py``): comparing outputs, condensing an error, unwrapping a decorator;
- :mod:`~labkit.frameworks._kit.worker`: the side of a data-parallel worker
  (``<name>/distributed.py``): its command line, watchdog, data, faults and result files;
- :mod:`~labkit.frameworks._kit.graphs`: the plain data a graph becomes (op counts, steps);
- :mod:`~labkit.frameworks._kit.accuracy`: the accuracy cost of a low-precision step against
  the framework's fp32 model;
- :mod:`~labkit.frameworks._kit.peak`: sizing, timing and the command line of the
  matrix-multiply probes (``<name>/peak.py``);
- :mod:`~labkit.frameworks._kit.serving`: a serving mode that runs an exported model
  (``<name>/serving.py``).

Framework-free: nothing here imports a framework. Not for notebooks: the rooms above that use
the kit (:mod:`labkit.explore`, :mod:`labkit.exercises`, :mod:`labkit.distributed`,
:mod:`labkit.lessons.graphs`) show a learner what they need under their own names. Nor for
anything that orchestrates the frameworks.
"""

__all__ = ["accuracy", "cells", "checks", "explore", "graphs", "peak", "serving", "worker"]
