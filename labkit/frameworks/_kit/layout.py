"""A model's inputs as the checks read them (numpy only): how the model is called
(:class:`Call`), which axes are the batch, a sequence length or an image's height and width
(:func:`axes`: from the model's own input signature where it has one, else the shapes, a guess
said so), the series of new shapes the new-shape checks call (:func:`variations`) and other
inputs of the same shapes (:func:`probes`), a 0/1 input (a mask) kept a valid mask in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = [
    "ROLES",
    "Axes",
    "Call",
    "Variation",
    "axes",
    "describe_arrays",
    "is_mask",
    "probe_notes",
    "probes",
    "random_array",
    "resized",
    "variations",
]

#: the kinds of dimension the new-shape checks vary, in order
ROLES: tuple[str, ...] = ("batch size", "sequence length", "image size")
_LAYOUTS = dict.fromkeys(("nchw", "channels_first", "first"), "first") | dict.fromkeys(
    ("nhwc", "channels_last", "last"), "last"
)


def describe_arrays(arrays: Sequence[np.ndarray]) -> str:
    """``"8x16x32,8x16:int64"`` for host arrays (a scalar input reads as ``scalar``)."""
    return ",".join(
        ("x".join(map(str, a.shape)) or "scalar") + ("" if a.dtype == np.float32 else f":{a.dtype}")
        for a in arrays
    )


def random_array(shape: Sequence[int], dtype: str | np.dtype, seed: int) -> np.ndarray:
    """Seeded example values: standard normal floats, integers 0..9, random booleans."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(tuple(shape)).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, tuple(shape)).astype(bool)
    return rng.integers(0, 10, tuple(shape)).astype(dt)


def is_mask(a: np.ndarray) -> bool:
    """An integer or boolean input holding only 0 and 1 (an attention mask, token types)."""
    a = np.asarray(a)
    return a.dtype.kind in "biu" and a.size > 0 and bool(np.all((a == 0) | (a == 1)))


def _prefix_mask(shape: Sequence[int], dtype: np.dtype, seed: int) -> np.ndarray:
    """A valid padding mask: along the last axis, ones then zeros, at least one one per row."""
    shape = tuple(shape)
    rng = np.random.default_rng(seed)
    length = shape[-1] if shape else 1
    keep = rng.integers(1, length + 1, shape[:-1] or (1,)).reshape(shape[:-1] + (1,))
    mask = np.arange(length) < keep
    return np.broadcast_to(mask, shape).astype(dtype) if shape else np.array(1, dtype)


# ---------------------------------------------------------------------------------------------
# how the model is called


@dataclass
class Call:
    """How the example arrays reach the model: ``names`` has one entry per array, "" for a
    positional one (those come first); ``constants`` are keyword arguments that are not arrays
    (``use_cache=False``); ``layout`` is an image layout the learner declared."""

    names: tuple[str, ...] = ()
    constants: dict = field(default_factory=dict)
    layout: str | None = None

    def __post_init__(self) -> None:
        self.names = tuple(self.names)
        named = [n for n in self.names if n]
        if any(not n for n in self.names[len(self.names) - len(named) :]):
            raise ValueError("positional inputs come before the keyword ones")
        if self.layout is not None and self.layout.lower() not in _LAYOUTS:
            raise ValueError(
                f"layout {self.layout!r} is not one of NCHW, NHWC (channels_first, channels_last)"
            )

    @property
    def binds(self) -> bool:
        """Whether the model takes anything beyond positional arrays."""
        return any(self.names) or bool(self.constants)

    @property
    def channels(self) -> str | None:
        """``"first"`` or ``"last"`` when the learner declared a layout."""
        return _LAYOUTS[self.layout.lower()] if self.layout else None

    def name(self, k: int) -> str:
        return self.names[k] if k < len(self.names) and self.names[k] else f"input {k}"

    def split(self, items: Sequence) -> tuple[list, dict]:
        """``items`` (one per array) as positional arguments and keyword arguments."""
        names = list(self.names) + [""] * (len(items) - len(self.names))
        return [x for n, x in zip(names, items) if not n], {n: x for n, x in zip(names, items) if n}

    def text(self, arrays: Sequence[np.ndarray]) -> str:
        """``model(2x16:int64, attention_mask=2x16:int64, use_cache=False)``."""
        shapes = [describe_arrays([a]) for a in arrays]
        pos, named = self.split(shapes)
        parts = pos + [f"{n}={s}" for n, s in named.items()]
        parts += [f"{n}={v!r}" for n, v in self.constants.items()]
        return f"model({', '.join(parts)})"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> Call:
        return cls(**(data or {}))


# ---------------------------------------------------------------------------------------------
# which axes are which


@dataclass
class Axes:
    """Per role (:data:`ROLES`), the ``(input, dimension)`` pairs the new-shape checks vary;
    the roles the signature fixes, with why; and how the layout was decided, in words."""

    roles: dict[str, list[tuple[int, int]]]
    fixed: dict[str, str] = field(default_factory=dict)
    source: str = ""
    notes: list[str] = field(default_factory=list)


def _channels(a: np.ndarray, declared, channels: str | None, told: str) -> tuple[str, str]:
    """Where an image input's channels are (``"first"``/``"last"``) and how that was decided."""
    if channels:
        return channels, told or "as declared"
    n = a.ndim
    if declared is not None:
        open_dims = [d for d in range(1, n) if declared[d] is None]
        if open_dims == list(range(1, n - 1)):
            return "last", "its signature leaves the axes before the last open"
        if open_dims == list(range(2, n)):
            return "first", "its signature leaves the axes after the second open"
    small = (1, 3, 4)
    if a.shape[-1] in small and a.shape[1] not in small:
        return "last", "guessed from the shape: the last axis looks like colour channels"
    return "first", "assumed: channels-first is PyTorch's and ONNX's convention"


def axes(
    arrays: Sequence[np.ndarray],
    declared: Sequence[Sequence[int | None] | None] | None = None,
    channels: str | None = None,
    source: str = "",
    channels_from: str = "",
) -> Axes:
    """Which axes of ``arrays`` are which (see :class:`Axes`).

    Every input's first axis is the batch; a rank-2 integer input (token ids, a mask) and a
    rank-3 input (batch, time, features) have a sequence length on axis 1 (inputs with the
    same length vary together); a rank-4+ input is an image whose height and width are the
    axes beside the channels. ``declared``: the model's own input shapes (``None`` where a
    dimension is open), from ``source`` (e.g. ``"Keras model.inputs"``): a dimension it fixes
    is not varied. ``channels``: ``"first"``/``"last"`` when the framework or the learner says
    (``channels_from`` says who); otherwise the signature's open axes, else a guess, noted.
    """
    declared = list(declared) if declared is not None else [None] * len(arrays)
    roles: dict[str, list[tuple[int, int]]] = {r: [] for r in ROLES}
    notes: list[str] = []
    seq = img = None
    for k, a in enumerate(arrays):
        if a.ndim == 0:
            continue
        roles["batch size"].append((k, 0))
        if a.ndim == 3 or (a.ndim == 2 and a.dtype.kind in "biu"):
            seq = a.shape[1] if seq is None else seq
            if a.shape[1] == seq:
                roles["sequence length"].append((k, 1))
        elif a.ndim >= 4:
            where, how = _channels(a, declared[k], channels, channels_from)
            dims = tuple(range(1, a.ndim - 1)) if where == "last" else tuple(range(2, a.ndim))
            size = tuple(a.shape[d] for d in dims)
            img = size if img is None else img
            if size == img:
                roles["image size"] += [(k, d) for d in dims]
            layout = "channels-last (NHWC)" if where == "last" else "channels-first (NCHW)"
            notes.append(f"input {k} ({describe_arrays([a])}) is read as {layout}: {how}")
    fixed = {}
    for role, pairs in roles.items():
        keep = [(k, d) for k, d in pairs if declared[k] is None or declared[k][d] is None]
        if pairs and not keep:
            sizes = "x".join(
                str(arrays[k].shape[d]) for k, d in pairs[: 2 if role != "batch size" else 1]
            )
            fixed[role] = f"{source or 'the model'} fixes it at {sizes}"
        roles[role] = keep
    return Axes(roles, fixed, source, notes)


# ---------------------------------------------------------------------------------------------
# other inputs: of new shapes, of the same shapes


@dataclass(frozen=True)
class Variation:
    """A series of inputs in which one kind of dimension changes at every call."""

    name: str  #: "batch size", "sequence length" or "image size"
    inputs: list[list[np.ndarray]]  #: the example first, then three new sizes
    dims: tuple[tuple[int, int], ...] = ()  #: the (input, dimension) pairs that change

    @property
    def shapes(self) -> list[str]:
        return [describe_arrays(xs) for xs in self.inputs]

    def changing(self, k: int) -> tuple[int, ...]:
        """The dimensions of input ``k`` that change in this series."""
        return tuple(d for i, d in self.dims if i == k)


def _drawn(a: np.ndarray, shape: Sequence[int], seed: int) -> np.ndarray:
    """New values of ``a``'s kind: a mask stays a mask, integers stay in the example's range."""
    if is_mask(a):
        return _prefix_mask(shape, a.dtype, seed)
    if a.dtype.kind in "iu":
        lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 9)
        return np.random.default_rng(seed).integers(lo, hi + 1, tuple(shape)).astype(a.dtype)
    return random_array(shape, a.dtype, seed)


def resized(arrays: Sequence[np.ndarray], dims: dict[int, dict[int, int]], seed: int):
    """``arrays`` with the sizes in ``dims`` (input -> {dim: size}), values drawn anew."""
    out = []
    for k, a in enumerate(arrays):
        shape = list(a.shape)
        for d, size in dims.get(k, {}).items():
            shape[d] = size
        out.append(_drawn(a, shape, seed + k))
    return out


def variations(arrays: Sequence[np.ndarray], layout: Axes | None = None) -> list[Variation]:
    """The series the new-shape checks call, one per role that ``layout`` (by default
    :func:`axes` of the shapes alone) varies: each axis grows by a quarter of its size (at
    least 1) at each of three calls; the batch by 1."""
    layout = layout or axes(arrays)
    out = []
    for role in ROLES:
        pairs = layout.roles.get(role, [])
        if not pairs:
            continue
        series = [list(arrays)]
        for i in (1, 2, 3):
            sizes: dict[int, dict[int, int]] = {}
            for k, d in pairs:
                n = arrays[k].shape[d]
                sizes.setdefault(k, {})[d] = n + i * (1 if role == "batch size" else max(1, n // 4))
            series.append(resized(arrays, sizes, (10 if role == "batch size" else 100) * i))
        out.append(Variation(role, series, tuple(pairs)))
    return out


def probes(arrays: Sequence[np.ndarray]) -> list[tuple[str, list[np.ndarray]]]:
    """Other inputs of the same shapes, to catch a graph that froze a data-dependent decision:
    new random values, and all zeros (padding, an empty sequence). A 0/1 input (a mask) gets a
    new valid mask in the first, and stays as given in the second (all zeros would hide every
    position, which no real input does)."""
    new = [_drawn(a, a.shape, 1000 + k) for k, a in enumerate(arrays)]
    zeros = [a.copy() if is_mask(a) else np.zeros_like(a) for a in arrays]
    return [("new values", new), ("zeros", zeros)]


def probe_notes(arrays: Sequence[np.ndarray], call: Call | None = None) -> list[str]:
    """What :func:`probes` changed, in words, when it treated an input as a mask ([] if none)."""
    call = call or Call()
    masks = [call.name(k) for k, a in enumerate(arrays) if is_mask(a)]
    if not masks:
        return []
    note = (
        f"the probes keep {', '.join(masks)} a 0/1 mask: new values draw a new padding mask "
        "(ones, then zeros), and the zeros probe leaves it as given (an all-zero mask hides "
        "every position)"
    )
    return [note]
