"""Figures of benchmark records (matplotlib without pyplot): each function returns a
:class:`Figure` a notebook shows once, or :class:`Nothing`, the sentence that says why there is
no figure. The latest record of each cell counts; invalid ones are drawn hatched and pale."""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterable
from operator import itemgetter
from pathlib import Path

from matplotlib.figure import Figure as _Figure
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter, FuncFormatter

from . import results
from .frameworks import specs
from .frameworks.contract import TASKS
from .util import data_file, stats

__all__ = [
    "COLORS",
    "FIGURES",
    "Figure",
    "Nothing",
    "break_even",
    "ceiling",
    "measured_peak",
    "save_all",
    "speedup",
    "throughput",
]


class Figure(_Figure):
    """A Figure a notebook shows once, as a PNG. Tick numbers keep math text (a log axis reads
    10^0); every other text is drawn literally: it may come from a results file or a hand-in,
    where a ``$`` must not start math text."""

    def draw(self, renderer):
        numbers = set()  # an axis' offset (1e3), and the tick labels of an axis of numbers
        for axis in (axis for ax in self.axes for axis in (ax.xaxis, ax.yaxis)):
            numbers.add(id(axis.offsetText))
            # tick labels given as strings (set_yticks(ys, labels)) are formatted by these
            if not isinstance(axis.get_major_formatter(), FixedFormatter | FuncFormatter):
                ticks = axis.get_major_ticks() + axis.get_minor_ticks()
                numbers.update(id(t) for k in ticks for t in (k.label1, k.label2))
        for text in self.findobj(Text):
            text.set_parse_math(id(text) in numbers)
        return super().draw(renderer)

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=100)
        return buf.getvalue()


class Nothing(str):
    """No figure: the sentence that says why (a notebook shows it, not an empty frame)."""

    __repr__ = _repr_markdown_ = str.__str__


#: the figures' words (panel titles, the share figures' texts): labkit/data/figures.toml
_WORDS = data_file("figures")
#: each framework's colour, from the registry
COLORS: dict[str, str] = {s.name: s.color for s in specs()}


def _label(r: dict) -> str:
    extra = "" if r["precision"] == "fp32" else f" {r['precision']}"
    flag = "" if r.get("valid") else " [invalid]"  # a pair row: both sides valid
    name = f"{results.model_name(r['model'])}: " if results.custom(r) else ""
    shape = name and r["input_shape"] or f"b{r['batch_size']}"  # a narrow ResNet-50 has none
    return f"{name}{r['framework']} {r['mode']}{extra} ({shape}){flag}"


def _panels(rows, title, what, width, label, xlabel, err=None, line=None, tags=None, **axes):
    """One panel per task: a horizontal bar per row, top to bottom, ``width(row)`` long and
    labelled ``label(row)``, in its framework's colour (pale and hatched when invalid), with
    ``err(row)`` (the error bar's lower and upper length), a dashed line at ``line``, the text
    ``tags(row)`` at the bar's end, and the axes' other settings (``ax.set``)."""
    tasks = [t for t in TASKS if any(r["task"] == t for r in rows)]
    if not tasks:
        return Nothing(f"No figure: no {what} in these results.")
    counts = [sum(r["task"] == t for r in rows) for t in tasks]
    height = max(2.5, sum(0.3 * n + 0.9 for n in counts) + 0.5)
    fig = Figure(figsize=(8, height), layout="constrained")
    panels = fig.subplots(len(tasks), 1, squeeze=False, height_ratios=[n + 2 for n in counts])
    for ax, task in zip(panels[:, 0], tasks):
        rs = [r for r in rows if r["task"] == task]
        bars = {"xerr": list(zip(*map(err, rs))), "capsize": 3} if err else {}
        bars["color"] = [COLORS.get(r["framework"], "grey") for r in rs]
        drawn = ax.barh(range(len(rs)), list(map(width, rs)), **bars)
        for bar, r in zip(drawn, rs):
            if not r.get("valid"):
                bar.set_alpha(0.35)
                bar.set_hatch("//")
        ax.set_yticks(range(len(rs)), list(map(label, rs)))
        ax.invert_yaxis()
        if line is not None:
            ax.axvline(line, color="black", lw=1, ls="--")
        ax.set(xlabel=xlabel, title=_WORDS["task_titles"].get(task, task), **axes)
        if tags:
            ax.bar_label(drawn, list(map(tags, rs)), fontsize=8)
    fig.suptitle(title)
    return fig


def _ips_spread(r: dict) -> tuple[float, float]:
    """Lower and upper error of images/s: at the quartiles of the call times."""
    times, ips = r.get("times_s") or [], r["images_per_s"]
    if len(times) < 2:  # no raw times: the relative IQR around the median
        return (ips * r["iqr_s"] / r["median_s"] / 2,) * 2
    q1, q3 = stats.quantile(times, 0.25), stats.quantile(times, 0.75)
    return max(0.0, ips - r["batch_size"] / q3), max(0.0, r["batch_size"] / q1 - ips)


def throughput(records: Iterable[dict]) -> Figure | Nothing:
    """Images/s per framework and mode, one panel per task, error bars spanning the IQR."""
    rows = results.latest(results.ok(records))
    custom = any(results.custom(r) for r in rows)
    unit, title = ("samples/s", "Throughput") if custom else ("images/s", "ResNet-50 throughput")
    xlabel = f"{unit} (median; bars: interquartile range)"
    ips = itemgetter("images_per_s")
    return _panels(rows, title, "measured cells", ips, _label, xlabel, err=_ips_spread)


#: the span of speedups (largest / smallest) past which the speedup figure's axis is logarithmic
LOG_SPAN = 10.0


def speedup(records: Iterable[dict]) -> Figure | Nothing:
    """Each graph mode's speedup over eager (:func:`labkit.results.speedups`) with its 95%
    interval; a log axis where they span more than :data:`LOG_SPAN`."""
    rows = results.speedups(records, include_invalid=True)
    err = lambda r: (r["speedup"] - r["speedup_low"], r["speedup_high"] - r["speedup"])
    label = lambda r: f"{_label(r)} vs {r['baseline']}"
    scale, log = "", {}
    spans = [v for r in rows for v in (r["speedup"], r["speedup_low"]) if v > 0]
    if spans and max(spans) / min(spans) > LOG_SPAN:  # a 0.0014x bar vanishes beside 2x
        low, high = min(spans + [1.0]) / 2, max([r["speedup_high"] for r in rows] + [1.0]) * 2
        scale, log = ", log scale", {"xscale": "log", "xlim": (low, high)}
    xlabel = f"speedup over eager (x{scale}; bars: 95% confidence interval)"
    what, ratio = "graph/eager pairs", itemgetter("speedup")
    return _panels(rows, "Graph mode vs eager", what, ratio, label, xlabel, err, 1.0, **log)


def break_even(records: Iterable[dict]) -> Figure | Nothing:
    """Extra one-off cost of each graph mode vs the number of calls it needs to pay it back."""
    rows = [r for r in results.break_even_rows(records, include_invalid=True) if r["extra_s"] > 0]
    if not rows:
        return Nothing("No figure: no graph modes slower to start than eager in these results.")
    fig = Figure(figsize=(10, 5), layout="constrained")
    ax = fig.add_subplot()
    finite = [r["break_even_calls"] for r in rows if math.isfinite(r["break_even_calls"])]
    never = max(finite, default=1.0) * 3  # the row where "never pays back" is drawn
    for r in rows:
        n, tag = r["break_even_calls"], f"{r['framework']} {r['mode']} {r['task']}"
        tag += "" if r["valid"] else " [invalid]"
        color = COLORS.get(r["framework"], "grey")
        if math.isfinite(n):
            at = (r["extra_s"], max(n, 1.0))
            ax.scatter(*at, color=color, s=50)
            ax.annotate(tag, at, xytext=(4, 4), textcoords="offset points", fontsize=8)
        else:  # named in the legend: labels on one row would overlap
            ax.scatter(r["extra_s"], never, color=color, marker="x", s=50, label=tag)
    if len(finite) < len(rows):
        ax.legend(**_WORDS["break_even"]["never"])
    ax.set(xscale="log", yscale="log", **_WORDS["break_even"]["axes"])
    return fig


def _shares(records: Iterable[dict], share: str, above: str, xlabel: str, title: str, none: str):
    """Each cell's ``share`` of a ceiling or peak, past 100% flagged "(!)" (``above``)."""
    rows = [r for r in results.latest(results.ok(records)) if r.get(share) is not None]
    if not rows and results.ok(records):
        return Nothing(f"No figure: {none}.")
    width = lambda r: 100 * r[share]
    label = lambda r: _label(r) + (" (!)" if r.get(above) else "")
    tags = lambda r: f" {r['images_per_s']:.1f} images/s"
    return _panels(rows, title, "measured cells", width, label, xlabel, line=100, tags=tags)


def ceiling(records: Iterable[dict]) -> Figure | Nothing:
    """Each CPU cell's share of the estimated ceiling at its precision."""
    return _shares(records, **_WORDS["shares"]["ceiling"])


def measured_peak(records: Iterable[dict]) -> Figure | Nothing:
    """Each CPU cell's share of the measured matrix-multiply peak at its precision."""
    return _shares(records, **_WORDS["shares"]["measured_peak"])


#: every figure of records, by its name
FIGURES: dict[str, Callable[[Iterable[dict]], Figure | Nothing]] = {
    f.__name__: f for f in (throughput, speedup, break_even, ceiling, measured_peak)
}


def save_all(records: Iterable[dict], directory: str | Path) -> list[Path]:
    """Write each figure with something to show as ``<directory>/<name>.png``; the paths."""
    records, paths = list(records), []
    Path(directory).mkdir(parents=True, exist_ok=True)
    for name, make in FIGURES.items():
        fig = make(records)
        if isinstance(fig, Nothing):
            print(f"{name}: {fig}")
        else:
            paths.append(Path(directory, f"{name}.png"))
            fig.savefig(paths[-1], dpi=110)
    return paths
