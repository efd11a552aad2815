"""A learner's model as the lab names it: a spec (``"file.py:build"``, ``"module:build"``),
input shapes (``"8x16,8x16:int64"``) and example inputs. The builder returns the model or
``(model, example_args[, example_kwargs])``; anything wrong raises ``ValueError``."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..frameworks._kit.explore import at_line, first_lines
from ..frameworks._kit.layout import Call, describe_arrays, random_array

__all__ = [
    "Input",
    "Spec",
    "build_example",
    "child_pythonpath",
    "example_arrays",
    "example_of",
    "parse",
    "parse_inputs",
    "shapes_text",
    "to_batch",
    "with_batch",
]

_DTYPES: tuple[str, ...] = ("float32", "float64", "float16", "int64", "int32", "bool")
_SHAPE_HELP = (
    "write shapes as on the command line: 8x3x224x224 (batch first), several inputs separated "
    "by commas, an optional dtype after a colon (8x16:int64)"
)


# ---------------------------------------------------------------------------------------------
# input shapes


@dataclass(frozen=True)
class Input:
    """One input of a model: its shape (batch first) and dtype name."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    @property
    def batch(self) -> int:
        return self.shape[0]


def _parse_one(text: str) -> Input:
    dims, _, dtype = text.strip().partition(":")
    dtype = dtype.strip() or "float32"
    if dtype not in _DTYPES:
        raise ValueError(
            f"input {text.strip()!r}: unknown dtype {dtype!r} (valid: {', '.join(_DTYPES)}); "
            + _SHAPE_HELP
        )
    dims = dims.lower().replace("×", "x")
    if not re.fullmatch(r"\s*\d+\s*(x\s*\d+\s*)*", dims):
        raise ValueError(f"input shape {text.strip()!r} is not a shape: {_SHAPE_HELP}")
    shape = tuple(map(int, dims.split("x")))
    if any(d < 1 for d in shape):
        raise ValueError(f"input shape {text.strip()!r} has a zero dimension: {_SHAPE_HELP}")
    return Input(shape, dtype)


def parse_inputs(shapes: str) -> list[Input]:
    """The inputs a shape text describes: ``"8x16x32,8x16:int64"``."""
    if not isinstance(shapes, str):
        raise ValueError(f"input shapes {shapes!r}: {_SHAPE_HELP}")
    out = [_parse_one(s) for s in shapes.split(",") if s.strip()]
    if not out:
        raise ValueError(f"no input shape given: {_SHAPE_HELP}")
    return out


#: ``"8x16x32,8x16:int64"``: the inverse of :func:`parse_inputs`
shapes_text = describe_arrays


def with_batch(inputs: Sequence[Input], batch: int) -> list[Input]:
    """The same inputs with a batch of ``batch``."""
    return [Input((batch, *i.shape[1:]), i.dtype) for i in inputs]


def example_arrays(inputs: Sequence[Input], seed: int = 0) -> list[np.ndarray]:
    """Seeded random host arrays of the given inputs' shapes and dtypes."""
    return [random_array(i.shape, i.dtype, seed + k) for k, i in enumerate(inputs)]


# ---------------------------------------------------------------------------------------------
# specs


@dataclass(frozen=True)
class Spec:
    """A parsed spec: a builder in a file or a module."""

    text: str  #: as given
    file: Path | None  #: the Python file
    module: str | None  #: the module, for ``package.module:function``
    function: str  #: the builder's name

    def canonical(self) -> str:
        """The spec with its file made absolute."""
        return f"{self.file or self.module}:{self.function}"


_FIX = (
    "give the model as 'path/to/file.py:build_model' or 'package.module:build_model' (a function "
    "that takes no arguments and returns the model)"
)


def parse(spec: str | os.PathLike) -> Spec:
    """Parse a spec (see the module's docstring); ``ValueError`` names what is wrong."""
    text = os.fspath(spec).strip()
    if not text:
        raise ValueError(f"no model given: {_FIX}")
    where, sep, function = text.rpartition(":")
    if not sep or not where or not function.isidentifier():
        raise ValueError(f"model {text!r} names no builder function: {_FIX}")
    if where.endswith(".py") or os.sep in where or "/" in where:
        path = Path(where).expanduser().resolve()
        if not path.is_file():
            raise ValueError(f"model {text!r}: no such file {where!r} (looked in {path.parent})")
        return Spec(text, path, None, function)
    if not all(part.isidentifier() for part in where.split(".")):
        raise ValueError(f"model {text!r}: {where!r} is neither a .py file nor a module name")
    return Spec(text, None, where, function)


def _module_of_file(path: Path):
    """A Python file imported as a module named after its path and content (imported again
    after a notebook cell rewrote it)."""
    digest = hashlib.sha256(str(path).encode() + path.read_bytes()).hexdigest()[:10]
    name = f"labkit_user_{re.sub(r'[^0-9a-zA-Z_]', '_', path.stem)}_{digest}"
    if name not in sys.modules:
        loader_spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = importlib.util.module_from_spec(loader_spec)
        try:
            loader_spec.loader.exec_module(sys.modules[name])
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


_PLAIN = (bool, int, float, str, type(None))


def example_of(args: object, kwargs: dict | None = None) -> tuple[list[np.ndarray], Call]:
    """Example inputs as host arrays and how the model takes them: ``args`` positionally, the
    tensors of ``kwargs`` by name, its plain values (``use_cache=False``) as constants."""
    if not isinstance(kwargs, dict | None):
        raise ValueError(
            f"example kwargs are a {type(kwargs).__name__}: give a dict, {{'mask': m}}"
        )
    items = list(args) if isinstance(args, tuple | list) else [] if args is None else [args]
    arrays, names, constants = [], [], {}
    for key, value in [*(("", x) for x in items), *(kwargs or {}).items()]:
        if hasattr(value, "shape") and hasattr(value, "dtype"):  # a tensor of any framework
            detach = getattr(value, "detach", None)
            arrays.append(np.asarray(value.detach().cpu() if callable(detach) else value))
            names.append(str(key))
        elif key and isinstance(value, _PLAIN):
            constants[str(key)] = value
        else:
            raise ValueError(
                f"example {f'keyword {key!r}' if key else f'input {len(arrays)}'} is a "
                f"{type(value).__name__}, not a tensor or an array: give tensors (positionally, "
                "or by name: attention_mask=...) and plain values as keyword arguments "
                "(use_cache=False, 3, 'mean', None)"
            )
    return arrays, Call(tuple(names), constants)


def build_example(spec: str | os.PathLike) -> tuple[object, tuple[list[np.ndarray], Call] | None]:
    """The model the spec's builder returns, and its example inputs when it returned them too,
    ``(model, args[, kwargs])`` (a model is never a tuple); ``ValueError`` when the builder
    cannot be imported, raises or returns None."""
    s = parse(spec)
    try:
        module = _module_of_file(s.file) if s.file else importlib.import_module(s.module)
    except Exception as exc:
        name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
        if s.file is None and name and s.module.startswith(name):
            raise ValueError(
                f"model {s.text!r}: no module named {name!r} (it must be importable here: "
                f"installed, or in the current folder); or give its file: path/to/file.py:"
                f"{s.function}"
            ) from exc
        raise ValueError(
            f"model {s.text!r}: importing it failed: {first_lines(exc, lines=1)}{at_line(exc)}"
        ) from exc
    builder = getattr(module, s.function, None)
    if not callable(builder):
        found = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        raise ValueError(
            f"model {s.text!r}: {s.file.name if s.file else s.module} has no function "
            f"{s.function!r} (it defines: {', '.join(found) or 'nothing callable'})"
        )
    try:
        value = builder()
    except Exception as exc:
        raise ValueError(
            f"model {s.text!r}: the builder {s.function}() raised {first_lines(exc, lines=1)}"
            f"{at_line(exc)}; fix the builder (it must take no arguments and return the model)"
        ) from exc
    if value is None:
        raise ValueError(
            f"model {s.text!r}: the builder {s.function}() returned None; it must return the "
            "model: `return MyModel()`"
        )
    if isinstance(value, tuple) and len(value) in (2, 3):
        return value[0], example_of(*value[1:])
    return value, None


def to_batch(arrays: list[np.ndarray], batch: int) -> list[np.ndarray]:
    """``arrays`` with ``batch`` rows: the first ones, repeated when there are fewer."""
    return [a if a.ndim == 0 else np.resize(a, (batch, *a.shape[1:])) for a in arrays]


def child_pythonpath() -> list[str]:
    """What a child process needs on its ``PYTHONPATH`` (after labkit's, which
    :func:`labkit.util.proc.child_env` puts first) to import what this one can."""
    return [p or os.getcwd() for p in sys.path]
