"""The ground floor: small tools every room of labkit uses, and nothing of labkit itself.

- :mod:`~labkit.util.stats`: quantiles, medians and the interquartile range (one definition:
  linear interpolation between order statistics, numpy's default).
- :mod:`~labkit.util.numeric`: how far one array is from another (the largest difference over
  the reference's largest value: the lab's one agreement measure).
- :mod:`~labkit.util.jsonio`: strict JSON for text labkit did not write (NaN, huge numbers and deep
  nesting refused), a locked append for files several processes share, an atomic write.
- :mod:`~labkit.util.tables`: Markdown and HTML tables, and the escape for a table cell.
- :mod:`~labkit.util.tempdirs`: this user's own folders in the shared temporary directory (mode
  0700; one that someone else made or can write to is refused), for caches reused across
  processes.
- :mod:`~labkit.util.proc`: child processes: the one environment builder (the thread policy an
  explicit parameter), stopping a process group or a set of processes, exiting with the parent,
  and why a child ended (signal name, crash reason, the tail of its log).
- :mod:`~labkit.util.lookup`: one item of a table by its key, or an error listing the keys.
- :mod:`~labkit.util.net`: a free port, whether a port is free on every address, the interface
  that holds an address.
- :mod:`~labkit.util.stdio`: what native (C/C++) code writes to this process's standard output
  or error, captured.

Not for: anything that knows a framework, a record or a profile. Nothing here imports labkit.
"""

__all__ = ["jsonio", "lookup", "net", "numeric", "proc", "stats", "stdio", "tables", "tempdirs"]
