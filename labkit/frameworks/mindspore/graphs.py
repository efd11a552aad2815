"""Inside MindSpore's graph mode: how many graphs ``mindspore.jit`` compiled, and its capture modes.

- :func:`compiled_graphs`: the number of graphs the default (``capture_mode="ast"``) ``jit``
  has compiled in this process: the size of its compile cache, one entry per function and
  input signature. Counting before and after a few calls shows what triggers a compile (a new
  shape, a new Python scalar value; not a new tensor value, nor a ``mindspore.mutable``).
- :func:`capture_modes`: the ways ``mindspore.jit`` can turn Python into a graph in the
  installed version (2.8: ``"ast"`` parses the source, ``"bytecode"`` reads the bytecode at run
  time, ``"trace"`` runs the Python once and records it), read from MindSpore's own validation.

The compile cache is ``mindspore.common.api.ms_compile_cache``, an internal set; the tests check
it against the pinned MindSpore.
"""

from __future__ import annotations

import re

import mindspore as ms


def compiled_graphs() -> int:
    """Graphs compiled so far in this process by ``jit`` in ``ast`` mode (and ``GRAPH_MODE``)."""
    from mindspore.common import api

    return len(api.ms_compile_cache)


def capture_modes() -> tuple[str, ...]:
    """The ``capture_mode`` values the installed ``mindspore.jit`` accepts, in its own order."""
    try:
        ms.jit(lambda x: x, capture_mode="?")
    except ValueError as err:
        found = re.search(r"must be in '\[(.*?)\]'", str(err))
        if found:
            return tuple(m.strip(" '\"") for m in found.group(1).split(","))
        raise RuntimeError(f"unexpected message from mindspore.jit: {err}") from err
    raise RuntimeError("mindspore.jit accepted capture_mode='?': cannot list its modes")
