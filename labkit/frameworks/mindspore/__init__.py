"""MindSpore in the lab (framework-free): its spec, a table of labkit/data/frameworks.toml."""

from .. import spec

__all__ = ["SPEC"]

SPEC = spec("mindspore")
