"""A results table that fills in while a benchmark plan runs: no blind waits in a notebook.

::

    table = live.LiveTable(plan, runner.forecast(plan, history))
    table.show()  # the whole plan, each cell "waiting", and how long it should take
    runner.run(plan, out, on_record=table)  # each result appears the moment it is written

In a notebook the table is one output that is updated in place (an IPython display handle);
elsewhere each result is printed as a line. Every row says whether the record is valid (and
why not) and where it stands against the ceiling, so a learner sees the first figure within a
minute of starting and can stop a plan that would take too long (interrupt the kernel: the
results written so far stay in the file). The table is the run's progress display (the runner
shows no progress bar beside it and marks the cell that is running); when the plan ends, even
interrupted, :meth:`LiveTable.finish` shows the final table as an output of its own, which is
what a copy of the executed notebook keeps (updates to a display are not saved in the file, so
the first display there still reads "waiting").
"""

from __future__ import annotations

import time

from .. import results
from ..util import tables
from .duration import Forecast, minutes
from .plan import Cell, Plan

__all__ = ["LiveTable"]


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


def _cell(c: Cell) -> str:
    extra = "" if c.precision == "fp32" else f" {c.precision}"
    return f"{c.framework} {c.mode} {c.task}{extra} b{c.batch_size}"


def _verdict(r: dict) -> str:
    if r["status"] != "ok":
        return "unsupported" if r["unsupported"] else "failed"
    if r["valid"]:
        return "valid"
    return "invalid: " + "; ".join(r["invalid_reasons"])


def _ceiling(r: dict) -> str:
    """The share of the estimated ceiling, then of the measured peak, each flagged when above."""
    if r["status"] != "ok":
        return "-"
    out = []
    for share, above, note, name in (
        (r.get("ceiling_share"), r["above_ceiling"], r["ceiling_note"], "estimate"),
        (
            r.get("measured_peak_share"),
            r.get("above_measured_peak"),
            r.get("measured_peak_note"),
            "measured peak",
        ),
    ):
        text = "unknown" if share is None else f"{share:.0%}" + (f" (!) {note}" if above else "")
        out.append(f"{text} of the {name}")
    return "; ".join(out)


class LiveTable:
    """The rows of a running plan: measured, failed, or waiting with their forecast seconds."""

    def __init__(self, plan: Plan, forecast: Forecast | None = None, title: str = ""):
        self.plan = plan
        self.forecast = forecast
        self.title = title
        self.records: list[dict] = []
        self.started = time.perf_counter()
        self.running: Cell | None = None  #: the cell being measured now
        self.finished = False
        self.interrupted = False
        self.ended: float | None = None  #: when the plan ended (perf_counter)
        self._handle = None

    # -- what it shows

    def status(self) -> str:
        done, total = len(self.records), len(self.plan)
        elapsed = (self.ended or time.perf_counter()) - self.started
        line = f"{done} of {total} cells, {minutes(elapsed)} so far"
        if self.finished:
            return f"{done} of {total} cells in {minutes(elapsed)}; " + (
                "interrupted: the cells not measured are kept out" if self.interrupted else "done"
            )
        if self.forecast is not None and done < total:
            left = self.forecast.remaining_s(done, elapsed)
            line += f"; about {minutes(left)} to go ({self.forecast})"
        elif done == total:
            line += "; done"
        return line

    def rows(self) -> list[list[str]]:
        done = {results.key(r): r for r in self.records}
        expected = {}
        if self.forecast is not None:
            expected = {c.key(): s for c, s, _ in self.forecast.cells}
        out = []
        for cell in self.plan:
            r = done.get(cell.key())
            if r is None:
                wait = expected.get(cell.key())
                about = f" (about {minutes(wait)})" if wait else ""
                if self.finished:
                    eta = "not measured in this run"
                elif self.running is not None and cell.key() == self.running.key():
                    eta = "running" + about
                else:
                    eta = "waiting" + about
                out.append([_cell(cell), "", "", "", eta, ""])
            elif r["status"] != "ok":  # an unsupported cell's error already says so
                why = r["error"] if r["unsupported"] else f"failed: {r['error']}"
                out.append([_cell(cell), "", "", "", why, ""])
            else:
                out.append(
                    [
                        _cell(cell),
                        f"{r['images_per_s']:.2f}",
                        f"{r['median_s'] * 1e3:.1f} ± {r['iqr_s'] * 1e3:.1f}",
                        f"{r['first_call_s']:.1f}",
                        _verdict(r),
                        _ceiling(r),
                    ]
                )
        return out

    def markdown(self) -> str:
        head = ["cell", "images/s", "median ± IQR, ms", "first call, s", "verdict", "ceiling"]
        lines = [(f"**{self.title}**: " if self.title else "") + self.status(), ""]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(tables.escape(c) for c in row) + " |" for row in self.rows()]
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return self.markdown()

    # -- showing it

    def show(self) -> LiveTable:
        """Display the table (in a notebook: one output that later results update)."""
        if _in_kernel():
            from IPython.display import Markdown, display

            self._handle = display(Markdown(self.markdown()), display_id=True)
        else:
            print(self.status(), flush=True)
        return self

    def _update(self) -> None:
        if self._handle is not None:
            from IPython.display import Markdown

            self._handle.update(Markdown(self.markdown()))

    def start(self, cell: Cell) -> None:
        """Mark ``cell`` as the one being measured (:func:`labkit.runner.run` calls it)."""
        self.running = cell
        self._update()

    def finish(self, interrupted: bool = False) -> None:
        """The plan has ended (:func:`labkit.runner.run` calls it, also when interrupted): show
        the final table as a new output (in a notebook; the live display above it then says
        where to look), else print its status line."""
        self.finished, self.interrupted, self.running = True, interrupted, None
        self.ended = time.perf_counter()
        if self._handle is None:
            print(self.status(), flush=True)
            return
        from IPython.display import Markdown, display

        title = f"**{self.title}**: " if self.title else ""
        self._handle.update(Markdown(f"{title}{self.status()}: the final table follows"))
        display(Markdown(self.markdown()))

    def __call__(self, record: dict) -> None:
        """Add a record as it arrives (pass the table as ``runner.run(..., on_record=table)``)."""
        self.records.append(record)
        self.running = None
        if self._handle is not None:
            self._update()
        else:
            cell = next((c for c in self.plan if c.key() == results.key(record)), None)
            row = next(
                (x for x in self.rows() if cell is not None and x[0] == _cell(cell)),
                None,
            )
            print(" | ".join(x for x in (row or [str(results.key(record))]) if x), flush=True)
