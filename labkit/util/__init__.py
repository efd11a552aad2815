"""The ground floor: small tools every room of labkit uses, and nothing of labkit itself.

- :mod:`~labkit.util.stats`: quantiles, medians and the interquartile range (one definition:
  linear interpolation between order statistics, numpy's default).
- :mod:`~labkit.util.jsonio`: strict JSON for text labkit did not write (NaN, huge numbers and deep
  nesting refused), a locked append for files several processes share, an atomic write.
- :mod:`~labkit.util.tables`: Markdown and HTML tables, and the escape for a table cell.
- :mod:`~labkit.util.tempdirs`: this user's own folders in the shared temporary directory (mode
  0700; one that someone else made or can write to is refused), for caches reused across
  processes.

Not for: anything that knows a framework, a record or a profile. Nothing here imports labkit.
"""

__all__ = ["jsonio", "stats", "tables", "tempdirs"]
