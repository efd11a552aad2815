"""The ground floor: small tools every room of labkit uses; nothing here imports labkit.

:mod:`~labkit.util.stats` (quantiles as numpy interpolates them), :mod:`~labkit.util.numeric`
(the lab's one agreement measure), :mod:`~labkit.util.jsonio` (strict JSON, locked appends,
atomic writes), :mod:`~labkit.util.tables`, :mod:`~labkit.util.tempdirs` (private caches),
:mod:`~labkit.util.proc` (child processes: environment, stopping, why they ended),
:mod:`~labkit.util.net` (ports, loopback) and
:mod:`~labkit.util.stdio` (what native code writes, captured).
"""

__all__ = ["jsonio", "net", "numeric", "proc", "stats", "stdio", "tables", "tempdirs"]
