"""A model's inputs as the checks read them (numpy only): how the model is called, which axes
vary, the new shapes and the probes of the same shapes (a 0/1 mask stays a valid mask)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

#: the kinds of dimension the new-shape checks vary, in order
ROLES: tuple[str, ...] = ("batch size", "sequence length", "image size")


def describe_arrays(arrays: Sequence[np.ndarray]) -> str:
    """``"8x16x32,8x16:int64"`` (a scalar input reads as ``scalar``); of arrays, or of anything
    with a ``shape`` and a ``dtype`` (a dtype name)."""
    return ",".join(
        ("x".join(map(str, a.shape)) or "scalar")
        + ("" if np.dtype(a.dtype) == np.float32 else f":{np.dtype(a.dtype)}")
        for a in arrays
    )


def random_array(shape: Sequence[int], dtype: str | np.dtype, seed: int) -> np.ndarray:
    """Seeded example values: standard normal floats, integers 0..9, random booleans."""
    rng, dt = np.random.default_rng(seed), np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(tuple(shape)).astype(dt)
    return rng.integers(0, 2 if dt.kind == "b" else 10, tuple(shape)).astype(dt)


def is_mask(a: np.ndarray) -> bool:
    """An integer or boolean input holding only 0 and 1 (an attention mask, token types)."""
    a = np.asarray(a)
    return a.dtype.kind in "biu" and a.size > 0 and bool(np.all((a == 0) | (a == 1)))


@dataclass(frozen=True)
class Call:
    """How the example arrays reach the model: ``names`` has one entry per array, "" for a
    positional one (those first); ``constants`` are plain keyword values (``use_cache=False``);
    ``channels`` where image inputs hold their channels (``"first"``, ``"last"``) when the
    learner declared it."""

    names: tuple[str, ...] = ()
    constants: dict = field(default_factory=dict)
    channels: str | None = None

    @property
    def binds(self) -> bool:
        """Whether the model takes anything beyond positional arrays."""
        return any(self.names) or bool(self.constants)

    def name(self, k: int) -> str:
        return self.names[k] if k < len(self.names) and self.names[k] else f"input {k}"

    def split(self, items: Sequence) -> tuple[list, dict]:
        """``items`` (one per array) as positional arguments and keyword arguments."""
        names = list(self.names) + [""] * (len(items) - len(self.names))
        return [x for n, x in zip(names, items) if not n], {n: x for n, x in zip(names, items) if n}

    def text(self, arrays: Sequence[np.ndarray]) -> str:
        """``model(2x16:int64, attention_mask=2x16:int64, use_cache=False)``."""
        pos, named = self.split([describe_arrays([a]) for a in arrays])
        parts = pos + [f"{n}={s}" for n, s in named.items()]
        return f"model({', '.join(parts + [f'{n}={v!r}' for n, v in self.constants.items()])})"


@dataclass
class Axes:
    """Per role (:data:`ROLES`), the ``(input, dimension)`` pairs the new-shape checks vary;
    the roles the signature fixes, with why; how the layout was decided, in notes."""

    roles: dict[str, list[tuple[int, int]]]
    fixed: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def axes(
    arrays: Sequence[np.ndarray],
    declared: Sequence[Sequence[int | None] | None] | None = None,
    channels: str | None = None,
    source: str = "",
    channels_from: str = "",
) -> Axes:
    """Which axes of ``arrays`` are which: every first axis is the batch; a rank-2 integer or a
    rank-3 input has a sequence length on axis 1 (inputs of one length vary together); a rank-4+
    input is an image. ``declared``: the model's own input shapes (``None`` where open), from
    ``source``: a dimension it fixes is not varied. ``channels``: ``"first"``/``"last"`` as
    ``channels_from`` says (default: the learner's layout), else a guess, noted."""
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
            if channels:  # where its channels are, and how that was decided
                where, how = channels, channels_from or "the layout given (layout=, --layout)"
            elif a.shape[-1] in (1, 3, 4) and a.shape[1] not in (1, 3, 4):
                where, how = "last", "guessed: its last axis looks like colour channels"
            else:
                where, how = "first", "assumed: channels-first is PyTorch's and ONNX's convention"
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
            shown = pairs[: 2 if role != "batch size" else 1]
            sizes = "x".join(str(arrays[k].shape[d]) for k, d in shown)
            fixed[role] = f"{source or 'the model'} fixes it at {sizes}"
        roles[role] = keep
    return Axes(roles, fixed, notes)


@dataclass(frozen=True)
class Variation:
    """A series of inputs in which one kind of dimension changes at every call."""

    name: str  #: "batch size", "sequence length" or "image size"
    inputs: list[list[np.ndarray]]  #: the example first, then three new sizes
    dims: tuple[tuple[int, int], ...] = ()  #: the (input, dimension) pairs that change

    @property
    def shapes(self) -> list[str]:
        return [describe_arrays(xs) for xs in self.inputs]


def _drawn(a: np.ndarray, shape: Sequence[int], seed: int) -> np.ndarray:
    """New values of ``a``'s kind: a mask stays a valid padding mask (ones, then zeros, at
    least one one per row), integers stay in the example's range."""
    rng, shape = np.random.default_rng(seed), tuple(shape)
    if is_mask(a) and shape:
        keep = rng.integers(1, shape[-1] + 1, shape[:-1] + (1,))
        return np.broadcast_to(np.arange(shape[-1]) < keep, shape).astype(a.dtype)
    if a.dtype.kind in "iu":
        lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 9)
        return rng.integers(lo, hi + 1, shape).astype(a.dtype)
    return random_array(shape, a.dtype, seed)


def variations(arrays: Sequence[np.ndarray], layout: Axes | None = None) -> list[Variation]:
    """One series per role that ``layout`` (default: :func:`axes` of the shapes) varies: at
    each of three calls the batch grows by 1, other axes by a quarter of their size."""
    layout = layout or axes(arrays)
    out = []
    for role in ROLES:
        pairs = layout.roles.get(role, [])
        if not pairs:
            continue
        series = [list(arrays)]
        for i in (1, 2, 3):
            shapes = [list(a.shape) for a in arrays]
            for k, d in pairs:
                shapes[k][d] += i * (1 if role == "batch size" else max(1, shapes[k][d] // 4))
            seed = (10 if role == "batch size" else 100) * i
            series.append([_drawn(a, s, seed + k) for k, (a, s) in enumerate(zip(arrays, shapes))])
        out.append(Variation(role, series, tuple(pairs)))
    return out


def probes(arrays: Sequence[np.ndarray]) -> list[tuple[str, list[np.ndarray]]]:
    """Other inputs of the same shapes, to catch a graph that froze a data-dependent decision:
    new random values, and all zeros; a 0/1 input (a mask) gets a new valid mask in the first
    and stays as given in the second."""
    new = [_drawn(a, a.shape, 1000 + k) for k, a in enumerate(arrays)]
    zeros = [a.copy() if is_mask(a) else np.zeros_like(a) for a in arrays]
    return [("new values", new), ("zeros", zeros)]


def probe_notes(arrays: Sequence[np.ndarray], call: Call = Call()) -> list[str]:
    """What :func:`probes` did with an input it treated as a mask, in words."""
    masks = ", ".join(call.name(k) for k, a in enumerate(arrays) if is_mask(a))
    if not masks:
        return []
    note = f"the probes keep {masks} a 0/1 mask: new values draw a new padding mask (ones, then "
    return [note + "zeros), and the zeros probe leaves it as given (an all-zero mask hides all)"]
