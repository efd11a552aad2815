"""The selection guide's form: ipywidgets over :mod:`labkit.guide` (``labkit.guide.form``).

``GuideForm()`` shows the source article's four-step decision flow as steps to walk through;
every change of an answer recomputes the recommendation at once, in both voices (the article's
and the course's today). Step 3 runs a quick live
benchmark of the candidate frameworks with :mod:`labkit.runner` (each cell in its own
subprocess, appended to the results file) and feeds the measurements back into the
recommendation. "Export" writes the recommendation as a Markdown file.

The form holds no rules: it only turns widget values into :func:`labkit.guide.recommend`
arguments. The same object serves notebook 09 and the standalone app (``make app``).
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
from .questions import (
    DECISION_FLOW,
    DEFAULT_SCALE,
    EXPERTISE,
    HARDWARE,
    PRIORITIES,
    SCALES,
    SCENARIOS,
    TARGETS,
    Step,
)
from .render import decision_flow_markdown

__all__ = [
    "NOT_GIVEN",
    "QUICK_CANDIDATES",
    "QUICK_PROFILES",
    "GuideForm",
    "default_results",
    "guide_app",
    "project_root",
    "quick_modes",
    "quick_plan",
]

#: profiles the quick benchmark offers (full takes far too long for a "quick" run)
QUICK_PROFILES: tuple[str, ...] = ("smoke", "standard")
#: how many candidates the quick benchmark measures (the decision flow says two or three)
QUICK_CANDIDATES = 2
NOT_GIVEN = "(not given)"  # shown for an unanswered question; its value is "" (None hides it)


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The folder that holds ``pyproject.toml`` above ``start`` (default: the working folder).

    Notebooks run in ``notebooks/`` and the app in ``app/``; both then find the same
    ``results/`` folder as ``python -m labkit bench``. Outside a checkout: the working folder.
    """
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").exists() and (folder / "labkit").is_dir():
            return folder
    return here


def default_results(profile: str | None = None) -> Path:
    """Where ``python -m labkit bench`` writes by default: ``results/bench-<profile>.jsonl``."""
    name = profiles.get(profile).name
    return project_root() / "results" / f"bench-{name}.jsonl"


def quick_modes(framework: str) -> tuple[str, ...]:
    """The eager mode and the first graph mode of a framework (ONNX Runtime: its one mode)."""
    return frameworks.spec(framework).modes[:2]


def quick_plan(
    rec: Recommendation,
    profile: str | profiles.Profile | None = None,
    how_many: int = QUICK_CANDIDATES,
) -> runner.Plan:
    """Step 3 as a benchmark plan: eager vs first graph mode of the top candidates.

    The task is the one that answers the learner's need (``rec.task``; throughput when no
    answer points to one). The first runtime that serves a candidate's exports (PyTorch's
    deployment route, ONNX Runtime) is measured too where it offers the task. Candidates this lab cannot
    run (:data:`labkit.guide.questions.OUTSIDE_LAB`) are left out.
    """
    prof = profile if isinstance(profile, profiles.Profile) else profiles.get(profile)
    task = rec.task or "throughput"
    chosen = [fw for fw in rec.candidates if fw in frameworks.NAMES][:how_many]
    # one runtime of each candidate's exports, the first registered (ONNX Runtime before TVM,
    # whose compile alone takes longer than the rest of a quick benchmark)
    runtimes = {}
    for s in frameworks.specs():
        if s.exported_from in chosen and task in s.tasks:
            runtimes.setdefault(s.exported_from, s.name)
    chosen += list(runtimes.values())
    cells: list[runner.Cell] = []
    for fw in chosen:
        cells += runner.Plan.build([fw], list(quick_modes(fw)), [task], profile=prof).cells
    return runner.Plan(cells, prof)


def _dropdown(
    description: str, table: dict[str, str], value: str | None, optional: bool
) -> W.Dropdown:
    options = ([(NOT_GIVEN, "")] if optional else []) + [(text, key) for key, text in table.items()]
    return W.Dropdown(
        options=options,
        value=value or "",
        description=description,
        style={"description_width": "8em"},
        layout=W.Layout(width="38em"),
    )


class GuideForm:
    """The guide as a form. Display it (last expression of a cell); read ``.recommendation``."""

    def __init__(
        self,
        results: str | os.PathLike | None = None,
        profile: str | None = None,
        export_path: str | os.PathLike | None = None,
        scenario: str | None = "research",
        **answers: Any,
    ):
        prof = profiles.get(profile).name
        self.results = Path(results) if results is not None else default_results(prof)
        self.export_path = Path(export_path or project_root() / "results" / "framework_choice.md")
        self.recommendation: Recommendation | None = None
        self.error = ""
        self._quiet = False
        self._make_answers()
        self._make_bench(prof)
        self._make_page()
        for w in self._inputs():
            w.observe(self.update, names="value")
        self.bench_button.on_click(lambda _: self.run_quick_benchmark())
        self.export_button.on_click(lambda _: self.export())
        self.profile.observe(self.update, names="value")
        self.set(scenario=scenario, **answers)  # validates the answers, then shows the advice

    # -- layout -----------------------------------------------------------------------------

    def _make_answers(self) -> None:
        """One widget per answer the guide takes (steps 1, 2 and 4)."""
        self.scenario = _dropdown("Scenario", SCENARIOS, None, optional=True)
        self.priority = _dropdown("Matters most", PRIORITIES, None, optional=True)
        self.expertise = _dropdown("Team knows", EXPERTISE, None, optional=True)
        self.hardware = _dropdown("Hardware", HARDWARE, "cpu", optional=False)
        self.scale = W.ToggleButtons(
            options=[(k, k) for k in SCALES],
            value=DEFAULT_SCALE,
            description="Data/model",
            style={"description_width": "8em"},
            tooltips=list(SCALES.values()),
        )
        self.targets = {
            t: W.Checkbox(value=False, description=text, indent=False, layout=W.Layout(width="9em"))
            for t, text in TARGETS.items()
        }

    def _make_bench(self, prof: str) -> None:
        """Step 3's widgets: the profile, the button, the progress bar, the plan and the status."""
        self.profile = W.ToggleButtons(
            options=list(QUICK_PROFILES),
            value=prof if prof in QUICK_PROFILES else "standard",
            description="Profile",
            style={"description_width": "8em"},
        )
        self.bench_button = W.Button(
            description="Run a quick benchmark of my candidates",
            button_style="primary",
            icon="play",
            layout=W.Layout(width="24em"),
        )
        self.progress = W.IntProgress(
            value=0,
            min=0,
            max=1,
            description="",
            bar_style="",
            layout=W.Layout(width="30em", visibility="hidden"),
        )
        self.bench_plan = W.HTML()
        self.bench_status = W.HTML()

    def _make_page(self) -> None:
        """The steps as an accordion, the export button and the recommendation's view."""
        self.export_button = W.Button(
            description="Export as Markdown", icon="download", layout=W.Layout(width="16em")
        )
        self.export_status = W.HTML()
        self.view = W.Output(layout=W.Layout(border="1px solid #ccc", padding="0 1em"))
        self.view.add_class("labkit-guide-recommendation")
        self.steps = W.Accordion(
            children=[self._step(i, s) for i, s in enumerate(DECISION_FLOW)],
            titles=tuple(f"Step {i}: {s.title}" for i, s in enumerate(DECISION_FLOW, 1)),
            selected_index=0,
        )
        self.widget = W.VBox(
            [
                W.HTML(
                    "<b>Describe your project</b>: walk through the four steps; the recommendation "
                    "below follows every change."
                ),
                self.steps,
                W.HBox([self.export_button, self.export_status]),
                self.view,
            ]
        )

    def _step(self, index: int, step: Step) -> W.Widget:
        parts: list[W.Widget] = [W.HTML(f"<p>{html.escape(step.question)}</p>")]
        for name in step.inputs:
            if name == "targets":
                parts.append(
                    W.HBox(
                        [W.Label("Targets", layout=W.Layout(width="8em")), *self.targets.values()]
                    )
                )
            elif name == "results":
                parts += [
                    self.bench_plan,
                    W.HBox([self.profile]),
                    W.HBox([self.bench_button, self.progress]),
                    self.bench_status,
                ]
            else:
                parts.append(getattr(self, name))
        if index + 1 < len(DECISION_FLOW):
            nxt = W.Button(description=f"Next: step {index + 2}", layout=W.Layout(width="12em"))
            nxt.on_click(lambda _, i=index + 1: setattr(self.steps, "selected_index", i))
            parts.append(nxt)
        return W.VBox(parts)

    def _inputs(self) -> list[W.Widget]:
        return [
            self.scenario,
            self.priority,
            self.expertise,
            self.hardware,
            self.scale,
            *self.targets.values(),
        ]

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    # -- answers and the recommendation -----------------------------------------------------

    def answers(self) -> dict[str, Any]:
        """The form's answers as :func:`labkit.recommend` keywords."""
        return {
            "scenario": self.scenario.value or None,
            "expertise": self.expertise.value or None,
            "targets": tuple(t for t, box in self.targets.items() if box.value),
            "hardware": self.hardware.value,
            "priority": self.priority.value or None,
            "scale": self.scale.value,
        }

    def set(self, **answers: Any) -> Recommendation:
        """Change answers as a learner would (validated by the guide); returns the new advice."""
        known = self.answers()
        unknown = set(answers) - set(known)
        if unknown:
            raise ValueError(
                f"unknown answer {', '.join(sorted(unknown))}: valid answers are {', '.join(known)}"
            )
        checked = check_inputs(**{**known, **answers})
        self._quiet = True  # one update for all the changes, not one per widget
        try:
            for name, value in checked.items():
                if name == "targets":
                    for t, box in self.targets.items():
                        box.value = t in value
                else:
                    getattr(self, name).value = value or ""
        finally:
            self._quiet = False
        return self.update()

    def update(self, change: Any = None) -> Recommendation:
        """Recompute the recommendation from the answers and the results file; show it."""
        if self._quiet:  # set() is changing several answers: it updates once at the end
            return self.recommendation
        self.error = ""
        try:
            rec = recommend(**self.answers(), results=self.results)
        except ValueError as exc:  # a corrupt results file: say so, advise without it
            self.error = str(exc)
            rec = recommend(**self.answers())
        self.recommendation = rec
        self.view.outputs = ()
        text = rec.to_markdown()
        if self.error:
            text = f"**Results file not used**: {self.error}\n\n" + text
        self.view.append_display_data(Markdown(text))
        plan = quick_plan(rec, self.profile.value)
        names = ", ".join(dict.fromkeys(frameworks.spec(c.framework).display for c in plan))
        self.bench_plan.value = html.escape(
            f"The quick benchmark measures {names}: eager vs the first graph mode, "
            f"{plan.cells[0].task} task, {len(plan)} cells under the {plan.profile.name} profile."
        )
        return rec

    # -- step 3: a quick live benchmark ------------------------------------------------------

    def run_quick_benchmark(
        self, profile: str | None = None, plan: runner.Plan | None = None
    ) -> list[dict]:
        """Measure the candidates (``quick_plan``) cell by cell, appending to the results file.

        Cells already in the file are not measured again. The progress bar shows the cell being
        measured; when done, the recommendation is recomputed with the new measurements.
        Returns the records this run appended.
        """
        rec = self.recommendation or self.update()
        plan = plan or quick_plan(rec, profile or self.profile.value)
        self.bench_button.disabled = True
        self.progress.layout.visibility = "visible"
        self.progress.max, self.progress.value, self.progress.bar_style = len(plan), 0, "info"
        records: list[dict] = []
        t0 = time.perf_counter()
        try:
            for cell in plan:
                self.bench_status.value = (
                    f"measuring <code>{html.escape(cell.label())}</code> "
                    f"({self.progress.value + 1}/{len(plan)}) ..."
                )
                res = runner.run(
                    runner.Plan([cell], plan.profile), self.results, resume=True, progress=False
                )
                records += res.records
                self.progress.value += 1
                if res.interrupted:
                    break
        except ValueError as exc:  # the results file is corrupt: nothing was measured
            self.progress.bar_style = "danger"
            self.bench_status.value = html.escape(f"not run: {exc}")
            return records
        finally:
            self.bench_button.disabled = False
        failed = [r for r in records if r["status"] != "ok"]
        self.progress.bar_style = "warning" if failed else "success"
        self.bench_status.value = html.escape(
            f"{len(records)} cells measured in {time.perf_counter() - t0:.0f} s"
            f" ({len(failed)} failed), {len(plan) - len(records)} already measured; "
            f"appended to {self.results}. The recommendation below now uses them."
        )
        self.update()
        return records

    # -- export ------------------------------------------------------------------------------

    def export(self, path: str | os.PathLike | None = None) -> Path:
        """Write the current recommendation and the decision flow as Markdown; link it.

        The link carries the file's content (a data URL), so "download" works in JupyterLab and
        in the standalone app alike; the path is shown too.
        """
        target = Path(path or self.export_path).resolve()
        rec = self.recommendation or self.update()
        text = (
            "# Framework choice\n\n"
            + rec.to_markdown()
            + "\n## The decision flow\n\n"
            + decision_flow_markdown()
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        data = base64.b64encode(text.encode("utf-8")).decode("ascii")
        self.export_status.value = (
            f"Saved to <code>{html.escape(str(target))}</code> &middot; "
            f'<a download="{html.escape(target.name)}" style="text-decoration: underline" '
            f'href="data:text/markdown;charset=utf-8;base64,{data}">download {html.escape(target.name)}</a>'
        )
        return target


def guide_app(**kwargs: Any) -> W.Widget:
    """The standalone app: a title, the form, and where the advice comes from."""
    form = GuideForm(**kwargs)
    head = W.HTML(
        "<h2>Graph Lab: which deep learning framework fits your project?</h2>"
        "<p>Answer the four steps. Two voices rank the frameworks side by side: what the "
        "course's source article recommends, and what the course recommends today, each rule "
        "with its dated source (notebook 09 prints every table). A valid measurement from your "
        "own benchmark can move the course's ranking; the article's claims are shown, labelled, "
        "and never vote.</p>"
    )
    box = W.VBox([head, form.widget])
    box.form = form  # type: ignore[attr-defined]  # reachable for tests and scripts
    return box
