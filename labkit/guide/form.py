"""The selection guide's form (ipywidgets): the four steps, the advice redrawn on every change,
step 3's quick benchmark (:mod:`labkit.runner`, a subprocess per cell) and a Markdown export.
It holds no rules; notebook 09 and the app (``make app``) show it. No icon font, so no CDN.
"""

from __future__ import annotations

import base64
import html
import os
import time
from pathlib import Path
from typing import Any

import ipywidgets as W
from IPython.display import Markdown

from .. import frameworks, profiles, runner
from .engine import Recommendation, check_inputs, recommend
from .render import decision_flow_markdown
from .rules import Step, tables

__all__ = ["GuideForm", "default_results", "project_root", "quick_plan"]

NOT_GIVEN = "(not given)"  # an unanswered question; its value is ""
WIDE = {"description_width": "8em"}


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The checkout above ``start`` (notebooks/ and app/ share its results/), else ``start``."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").exists() and (folder / "labkit").is_dir():
            return folder
    return here


def default_results(profile: str | None = None) -> Path:
    """Where ``python -m labkit bench`` writes by default: ``results/bench-<profile>.jsonl``."""
    return project_root() / "results" / f"bench-{profiles.get(profile).name}.jsonl"


def quick_plan(rec: Recommendation, profile: Any = None, how_many: int = 2) -> runner.Plan:
    """Step 3 as a plan: the eager and first graph mode of the first ``how_many`` candidates the
    lab can run, on the need's task (throughput when none), plus the first runtime of their
    exports (ONNX Runtime for PyTorch) where it offers the task."""
    prof = profile if isinstance(profile, profiles.Profile) else profiles.get(profile)
    task = rec.task or "throughput"
    chosen = [r.framework for r in rec.ranking if r.framework in frameworks.NAMES][:how_many]
    runtimes: dict[str, str] = {}
    for s in frameworks.specs():
        if s.exported_from in chosen and task in s.tasks:
            runtimes.setdefault(s.exported_from, s.name)
    cells: list[runner.Cell] = []
    for fw in chosen + list(runtimes.values()):
        modes = list(frameworks.spec(fw).modes[:2])
        cells += runner.Plan.build([fw], modes, [task], profile=prof).cells
    return runner.Plan(cells, prof)


def _dropdown(label: str, table: dict[str, str], value: str | None, optional: bool) -> W.Dropdown:
    options = ([(NOT_GIVEN, "")] if optional else []) + [(text, k) for k, text in table.items()]
    return W.Dropdown(options=options, value=value or "", description=label, style=WIDE,
                      layout=W.Layout(width="38em"))  # fmt: skip


class GuideForm:
    """The guide as a form. Display it (last expression of a cell); read ``.recommendation``."""

    def __init__(self, results=None, profile=None, export_path=None, scenario="research", **answers):  # fmt: skip
        prof = profiles.get(profile).name
        self.results = Path(results) if results is not None else default_results(prof)
        self.export_path = Path(export_path or project_root() / "results" / "framework_choice.md")
        self.recommendation: Recommendation | None = None
        self.error, self._quiet, t = "", False, tables()
        self.scenario = _dropdown("Scenario", t.scenarios, None, True)
        self.priority = _dropdown("Matters most", t.answers["priority"], None, True)
        self.expertise = _dropdown("Team knows", t.expertise, None, True)
        self.hardware = _dropdown("Hardware", t.answers["hardware"], t.defaults["hardware"], False)
        self.scale = W.ToggleButtons(options=list(t.answers["scale"]), value=t.defaults["scale"],
                                     description="Data/model", style=WIDE,
                                     tooltips=list(t.answers["scale"].values()))  # fmt: skip
        self.targets = {k: W.Checkbox(value=False, description=text, indent=False,
                                      layout=W.Layout(width="9em"))
                        for k, text in t.answers["targets"].items()}  # fmt: skip
        self.profile = "smoke" if prof == "smoke" else "standard"  # full is no quick benchmark
        self.bench_button = W.Button(description="Run a quick benchmark of my candidates",
                                     button_style="primary", layout=W.Layout(width="24em"))  # fmt: skip
        self.progress = W.IntProgress(value=0, min=0, max=1,
                                      layout=W.Layout(width="30em", visibility="hidden"))  # fmt: skip
        self.bench_plan, self.bench_status, self.export_status = W.HTML(), W.HTML(), W.HTML()
        self.export_button = W.Button(description="Export as Markdown", layout=W.Layout(width="16em"))  # fmt: skip
        self.view = W.Output(layout=W.Layout(border="1px solid #ccc", padding="0 1em"))
        self.view.add_class("labkit-guide-recommendation")
        self.steps = W.Accordion(children=[self._step(s) for s in t.steps],
                                 titles=[f"Step {i}: {s.title}" for i, s in enumerate(t.steps, 1)],
                                 selected_index=0)  # fmt: skip
        intro = W.HTML("<b>Describe your project</b>: the advice below follows every change.")
        self.widget = W.VBox([intro, self.steps, W.HBox([self.export_button, self.export_status]),
                              self.view])  # fmt: skip
        for w in [self.scenario, self.priority, self.expertise, self.hardware, self.scale,
                  *self.targets.values()]:  # fmt: skip
            w.observe(self.update, names="value")
        self.bench_button.on_click(lambda _: self.run_quick_benchmark())
        self.export_button.on_click(lambda _: self.export())
        self.set(scenario=scenario, **answers)

    def _step(self, step: Step) -> W.Widget:
        parts: list[W.Widget] = [W.HTML(f"<p>{html.escape(step.question)}</p>")]
        for name in step.inputs:
            if name == "targets":
                label = W.Label("Targets", layout=W.Layout(width="8em"))
                parts.append(W.HBox([label, *self.targets.values()]))
            elif name == "results":
                bench = W.HBox([self.bench_button, self.progress])
                parts += [self.bench_plan, bench, self.bench_status]
            else:
                parts.append(getattr(self, name))
        return W.VBox(parts)

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def answers(self) -> dict[str, Any]:
        """The form's answers as :func:`labkit.guide.recommend` keywords."""
        got = {k: getattr(self, k).value or None for k in ("scenario", "expertise", "priority")}
        targets = tuple(k for k, box in self.targets.items() if box.value)
        return {
            **got,
            "targets": targets,
            "hardware": self.hardware.value,
            "scale": self.scale.value,
        }

    def set(self, **answers: Any) -> Recommendation:
        """Change answers as a learner would (validated by the guide); returns the new advice."""
        known = self.answers()
        if unknown := sorted(set(answers) - set(known)):
            raise ValueError(f"unknown answer {', '.join(unknown)}: valid are {', '.join(known)}")
        checked = check_inputs(**{**known, **answers})
        self._quiet = True  # one update for all the changes
        try:
            for name, value in checked.items():
                if name == "targets":
                    for k, box in self.targets.items():
                        box.value = k in value
                else:
                    getattr(self, name).value = value or ""
        finally:
            self._quiet = False
        return self.update()

    def update(self, change: Any = None) -> Recommendation:
        """Recompute the recommendation from the answers and the results file; show it."""
        if self._quiet:
            return self.recommendation
        self.error = ""
        try:
            rec = recommend(**self.answers(), results=self.results)
        except ValueError as exc:  # a corrupt results file: say so, advise without it
            self.error, rec = str(exc), recommend(**self.answers())
        self.recommendation = rec
        text = rec.to_markdown()
        if self.error:
            text = f"**Results file not used**: {self.error}\n\n" + text
        self.view.outputs = ()
        self.view.append_display_data(Markdown(text))
        plan = quick_plan(rec, self.profile)
        names = ", ".join(dict.fromkeys(frameworks.spec(c.framework).display for c in plan))
        self.bench_plan.value = html.escape(
            f"The quick benchmark measures {names}: eager vs the first graph mode, "
            f"{plan.cells[0].task} task, {len(plan)} cells under the {plan.profile.name} profile."
        )
        return rec

    def run_quick_benchmark(self, profile: str | None = None, plan: Any = None) -> list[dict]:
        """Measure :func:`quick_plan` (cells already in the results file are not measured
        again), then redraw the advice. Returns the records this run appended."""
        plan = plan or quick_plan(self.recommendation or self.update(), profile or self.profile)
        bar, t0 = self.progress, time.perf_counter()
        bar.layout.visibility, bar.max, bar.value, bar.bar_style = "visible", len(plan), 0, "info"
        self.bench_button.disabled = True
        self.bench_status.value = f"measuring {len(plan)} cells, each in its own process ..."

        def done(record: dict) -> None:
            bar.value += 1
            self.bench_status.value = html.escape(f"{bar.value}/{len(plan)}: {record['framework']} "
                                                  f"{record['mode']} {record['status']}")  # fmt: skip

        try:
            res = runner.run(plan, self.results, resume=True, progress=False, on_record=done)
        except ValueError as exc:  # a corrupt results file: nothing was measured
            bar.bar_style, self.bench_status.value = "danger", html.escape(f"not run: {exc}")
            return []
        finally:
            self.bench_button.disabled = False
        failed = sum(r["status"] != "ok" for r in res.records)
        bar.bar_style = "warning" if failed else "success"
        self.bench_status.value = html.escape(
            f"{len(res.records)} cells measured in {time.perf_counter() - t0:.0f} s ({failed} "
            f"failed), {len(res.skipped)} already measured; appended to {self.results}."
        )
        self.update()
        return res.records

    def export(self, path: str | os.PathLike | None = None) -> Path:
        """Write the page and the decision flow as Markdown, linked as a data URL (a download)."""
        target = Path(path or self.export_path).resolve()
        rec = self.recommendation or self.update()
        flow = decision_flow_markdown()
        text = f"# Framework choice\n\n{rec.to_markdown()}\n## The decision flow\n\n{flow}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        data = base64.b64encode(text.encode("utf-8")).decode("ascii")
        name = html.escape(target.name)
        self.export_status.value = (
            f"Saved to <code>{html.escape(str(target))}</code> &middot; <a download='{name}' "
            f"style='text-decoration: underline' href='data:text/markdown;charset=utf-8;base64,"
            f"{data}'>download {name}</a>"
        )
        return target
