"""labkit.exercises: the exercise types, the bank the notebooks load from, the learner's progress,
and the code exercises (each reference solution passes, each starting code fails, by name)."""

import ast
import json
import os
import re
import subprocess
import sys

from labkit import exercises, frameworks, guide
from labkit.exercises import core
from labkit.exercises.code import function_from_source

import pytest
from conftest import NOTEBOOKS, ROOT, notebook_key, require


@pytest.fixture(autouse=True)
def progress_file(tmp_path, monkeypatch):
    """Every test records into its own progress file, never the learner's home."""
    path = tmp_path / "progress.json"
    monkeypatch.setenv(core.ENV, str(path))
    return path


def choice():
    return exercises.Choice(
        "How often does a Python print run in a tf.function called 3 times?",
        explanation="It runs while tracing only.",
        hint="Think tracing.",
        choices={"a": "once", "b": "3 times"},
        answer="a",
        wrong={"b": "That is tf.print."},
    )


def test_choice_right_wrong_and_bad_input():
    q = choice()
    assert q.check("A").correct and "tracing only" in str(q.check("a"))
    fb = q.check("b")
    assert not fb and "tf.print" in fb.message and "solution" in fb.message
    assert "not one of the choices (a, b)" in q.check("z").message
    empty = q.check(None)
    assert not empty and "No answer yet" in empty.message and "Think tracing" in empty.message
    assert q.attempts == 4  # None does not count as an attempt
    assert "(a) once" in q.solution().message


def test_number_and_text():
    n = exercises.Number("Speed-up?", explanation="ratio of medians", answer=2.0, rel_tol=0.1)
    assert n.check("2.1").correct
    assert "too high" in n.check(3).message and "too low" in n.check(1).message
    assert "not a number" in n.check("fast").message
    t = exercises.Text("Which op?", explanation="AutoGraph emits it.", accepted=("tf.cond", "cond"))
    assert t.check(" `TF.Cond` ").correct and not t.check("if").correct


def test_author_mistakes_are_errors():
    with pytest.raises(ValueError, match="not among the choices"):
        exercises.Choice("?", explanation="", choices={"a": "x"}, answer="b")
    with pytest.raises(ValueError, match="accepted"):
        exercises.Text("?", explanation="")


# --------------------------------------------------------------------------------------------
# the bank: every exercise builds, and the notebooks show questions, never answer keys

MEASURED = {"01.overhead": 1.5, "10.unrolled": 4, "07b.http_cost": 3.0}
CODE_IDS = [i for i in exercises.ids() if exercises.entry(i)["type"] == "code"]


@pytest.mark.parametrize("exercise_id", exercises.ids())
def test_every_exercise_of_the_bank_builds(exercise_id):
    q = exercises.load(exercise_id, measured=MEASURED.get(exercise_id))
    assert q.id == exercise_id and q.prompt
    assert q._repr_markdown_().startswith("**Exercise")
    assert q.solution().correct and len(q.solution().message) > len("Solution: ")
    if isinstance(q, (exercises.Choice, exercises.Number)):
        assert q.check(q.answer).correct
    elif isinstance(q, exercises.Text):
        assert q.check(q.accepted[0]).correct
    else:
        assert q.starter and q.solution_code and q.hints
        assert q.solution_code.strip() in q.solution().message


def test_each_notebook_has_exercises_and_code_exercises_as_the_course_requires():
    per_notebook = {nb: exercises.ids(nb) for nb in exercises.notebooks()}
    assert set(per_notebook) >= {f"{i:02d}" for i in range(10)}
    for nb, ids in per_notebook.items():
        code = [i for i in ids if i in CODE_IDS]
        wanted = 2 if nb in ("01", "02", "03", "04") else 1 if nb in ("05", "06", "07", "08") else 0
        assert len(code) >= wanted, f"notebook {nb}: {len(code)} code exercises, {wanted} wanted"


def test_load_names_the_problem():
    with pytest.raises(ValueError, match="not an exercise id.*'02.one_graph'"):
        exercises.load("retrace")
    with pytest.raises(ValueError, match="notebook 02 has no exercise 'nope'; it has: .*one_graph"):
        exercises.load("02.nope")
    with pytest.raises(ValueError, match="no exercises for notebook '42'"):
        exercises.load("42.anything")
    with pytest.raises(ValueError, match="answered from your own run.*measured="):
        exercises.load("01.overhead")
    with pytest.raises(ValueError, match="has a fixed answer"):
        exercises.load("00.ceiling", measured=3.0)
    assert exercises.load("01.overhead", measured=2.5).check(2.6).correct


def _code_cells(path):
    nb = json.loads(path.read_text())
    return [(c.get("id"), "".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "code"]


ANSWER_KEYWORDS = {"answer", "explanation", "wrong", "accepted", "solution", "hints", "choices"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[notebook_key(p) for p in NOTEBOOKS])
def test_no_notebook_shows_an_answer_key(path):
    """Questions come from the bank by id: no constructor with its answer, no solution code."""
    loaded = []
    for cell_id, source in _code_cells(path):
        tree = ast.parse(
            "\n".join(ln for ln in source.splitlines() if not ln.startswith(("%", "!")))
        )
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            assert name not in ("Choice", "Number", "Text", "Code"), (
                f"{path.name} cell {cell_id} builds an exercise in the notebook: load it by id"
            )
            owner = getattr(getattr(func, "value", None), "id", None)
            if name == "load" and owner == "exercises":
                keys = {k.arg for k in node.keywords} & ANSWER_KEYWORDS
                assert not keys, f"{path.name} cell {cell_id} passes an answer key: {keys}"
                loaded.append(node.args[0].value)
    nb = notebook_key(path)
    expected = exercises.ids(nb) if nb in exercises.notebooks() else []
    assert loaded == expected, f"{path.name} loads {loaded}, its bank file has {expected}"
    text = path.read_text()
    for exercise_id in loaded:
        q = exercises.load(exercise_id, measured=MEASURED.get(exercise_id))
        if isinstance(q, exercises.Code):
            body = q.solution_code.strip().splitlines()
            shown = "\n".join(s for _, s in _code_cells(path))
            assert "\n".join(body) not in shown, f"{exercise_id}: the solution is in the notebook"
        elif isinstance(q, (exercises.Choice, exercises.Number)):
            assert json.dumps(q.explanation)[1:-1] not in text, f"{exercise_id}: explanation shown"


@pytest.mark.parametrize("exercise_id", CODE_IDS)
def test_the_starting_code_is_what_the_notebook_shows_and_checks(exercise_id):
    q = exercises.load(exercise_id)
    path = next(p for p in NOTEBOOKS if notebook_key(p) == exercise_id.split(".")[0])
    cells = [s for _, s in _code_cells(path) if q.starter.strip() in s]
    assert len(cells) == 1, f"{path.name} does not show the starting code of {exercise_id}"
    assert re.search(rf"^q\d+\.check\({q.entry}\)$", cells[0], re.MULTILINE), cells[0]


def test_the_selection_guide_agrees_with_the_answers_of_notebook_09():
    """Notebook 09's answers and the margin its prose states follow from labkit.guide's rules: a
    rule change must update them."""
    tf_team = exercises.load("09.tf_team")
    top = guide.recommend("research", expertise="tensorflow").top
    assert tf_team.choices[tf_team.answer].startswith(guide.DISPLAY[top])
    points = guide.recommend("deployment", expertise="mindspore", targets=["browser"])
    assert exercises.load("09.browser_points").answer == points.score("mindspore")
    nb09 = next(p for p in NOTEBOOKS if notebook_key(p) == "09").read_text(encoding="utf-8")
    assert f"more than the file's margin ({guide.EVIDENCE_MARGIN:.0%})" in nb09


# --------------------------------------------------------------------------------------------
# progress


def test_progress_records_answers_right_and_tried(progress_file):
    assert exercises.progress().counts()[1] == 0 and not progress_file.exists()
    q = exercises.load("00.profile")
    q.check(None)  # no answer: not recorded
    assert not progress_file.exists()
    q.check("b")
    q.check("a")
    q.check("c")  # wrong after right: still got right once
    exercises.load("02.python_branch").check("b")
    p = exercises.progress()
    assert p.status["00.profile"] == "right" and p.status["02.python_branch"] == "tried"
    assert p.status["00.ceiling"] == "open"
    assert p.counts("00") == (len(exercises.ids("00")), 1, 1)
    assert p.counts() == (len(exercises.ids()), 2, 1)
    table = p.markdown()
    assert "| 00 Welcome to Graph Lab |" in table and "✓ `profile`" in table
    assert "✗ `python_branch`" in table and str(progress_file) in table
    saved = json.loads(progress_file.read_text())["exercises"]["00.profile"]
    assert saved == {"attempts": 3, "right": True}


def test_progress_off_and_a_broken_file_never_stop_a_lesson(progress_file, monkeypatch):
    monkeypatch.setenv(core.ENV, "off")
    assert exercises.load("00.profile").check("a").correct
    assert not progress_file.exists() and "not recorded" in exercises.progress().source
    monkeypatch.setenv(core.ENV, str(progress_file))
    progress_file.write_text("{ not json")
    with pytest.warns(RuntimeWarning, match="is not a progress file"):
        broken = exercises.progress()
    assert broken.counts()[1] == 0
    blocked = progress_file.parent / "a-file"
    blocked.write_text("")
    monkeypatch.setenv(core.ENV, str(blocked / "progress.json"))  # its folder is a file
    q = exercises.load("00.profile")
    with pytest.warns(RuntimeWarning, match="cannot write"):
        answer = q.check("a")
    assert answer.correct


def test_a_hostile_progress_file_is_reported_or_rewritten_never_trusted(progress_file):
    progress_file.write_text("[" * 100_000 + "]" * 100_000)  # deeper than json can parse
    with pytest.warns(RuntimeWarning, match="is not a progress file"):
        assert exercises.progress().counts()[1] == 0
    odd = {"attempts": "lots", "right": "yes", "extra": [1, 2]}
    progress_file.write_text(json.dumps({"exercises": {"00.profile": odd, "00.ceiling": 3}}))
    p = exercises.progress()
    assert p.status["00.profile"] == "tried" and p.status["00.ceiling"] == "open"
    assert exercises.load("00.profile").check("b").correct is False
    saved = json.loads(progress_file.read_text())["exercises"]["00.profile"]
    assert saved["attempts"] == 1 and saved["right"] is False and "extra" not in saved


def test_progress_is_kept_in_the_home_folder_by_default(monkeypatch, tmp_path):
    monkeypatch.delenv(core.ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert core.path() == tmp_path / ".graphlab" / "progress.json"


# --------------------------------------------------------------------------------------------
# code exercises, checked by each framework's own checker


def _framework(name):
    """The framework. Its thread count is left as it is: the checkers' verdicts do not depend
    on it, and TensorFlow and MindSpore would keep a count set here for every later test."""
    return require(name)


def _function(q, which):
    source = {"starter": q.starter, "solution": q.solution_code}[which]
    namespace = frameworks.checks(q.check_spec.framework).namespace()
    return function_from_source(source, q.entry, namespace, f"{q.id} {which}")


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", CODE_IDS)
def test_code_exercise_solution_passes_and_starter_fails_naming_the_property(
    exercise_id, progress_file
):
    q = exercises.load(exercise_id)
    _framework(q.check_spec.framework)
    solved = q.check(_function(q, "solution"))
    assert solved.correct and solved.failed is None, solved.message
    assert all(q.check_spec.describe(p) in solved.message for p in q.check_spec.properties)
    broken = q.check(_function(q, "starter"))
    assert not broken.correct, broken.message
    assert broken.failed in q.check_spec.properties
    assert f"*{q.check_spec.describe(broken.failed)}* failed" in broken.message
    assert "starting code, unchanged" in broken.message and "Hint:" in broken.message
    assert q.attempts == 1  # the unchanged starter is explained, not counted
    assert exercises.progress().status[exercise_id] == "right"


def test_code_feedback_for_a_wrong_edit_a_crash_and_a_non_function(progress_file):
    _framework("torch")
    q = exercises.load("03.branch_in_graph")
    scope = frameworks.checks("torch").namespace()
    wrong = function_from_source("def gate(x):\n    return x * 2\n", "gate", scope, "wrong")
    fb = q.check(wrong)  # compiles as one graph, but the branch is gone
    assert not fb and fb.failed == "matches_eager" and "differs from eager" in fb.message
    assert "✓ compiles as one graph" in fb.message
    crash = function_from_source("def gate(x):\n    return x.reshape(2, 2)\n", "gate", scope, "c")
    fb = q.check(crash)
    assert not fb and fb.failed == "fullgraph" and "input 1" in fb.message
    assert q.attempts == 2 and exercises.progress().status[q.id] == "tried"
    assert "not a function" in q.check(wrong(scope["torch"].ones(3))).message
    assert "No answer yet" in q.check(None).message and q.attempts == 2
    assert "Hint:" in fb.message and q.hints[1] in fb.message  # the second hint, second failure
    fold = exercises.load("05.fold_bn")
    unfolded = function_from_source(fold.check_spec.reference, fold.entry, scope, "unfolded")
    fb = fold.check(unfolded)  # right outputs, but the BatchNorm is still there
    assert fb.failed == "avoids_ops" and "it still calls `batch_norm`" in fb.message


def test_a_code_exercise_built_by_hand(progress_file):
    _framework("torch")
    q = exercises.Code(
        "Count at most one operation.",
        check={
            "framework": "torch",
            "properties": ["max_ops"],
            "inputs": "[(np.ones(3, np.float32),)]",
            "options": {"limit": 1},
        },
        starter="def f(x):\n    return (x + 1) * 2\n",
        solution="def f(x):\n    return x.add(1)\n",
        hints=["One operation only."],
    )
    assert q.check_spec.options == {"limit": 1} and q.entry == "f"
    assert q.check(lambda x: x.add(1)).correct and not q.id
    fb = q.check(lambda x: (x + 1) * 2)
    assert fb.failed == "max_ops" and "2 operations in one call" in fb.message
    assert not progress_file.exists()  # an exercise without an id is not recorded
    with pytest.raises(ValueError, match="unknown properties \\['fast'\\]"):
        exercises.Code(
            "?",
            check={"framework": "torch", "properties": ["fast"], "inputs": "[]"},
            starter="def f(x):\n    return x\n",
            solution="def f(x):\n    return x\n",
        )
    with pytest.raises(ValueError, match="the solution must define 'f'"):
        exercises.Code(
            "?",
            check=q.check_spec,
            starter="def f(x):\n    return x\n",
            solution="def g(x):\n    return x\n",
        )


def test_a_code_exercise_for_an_unavailable_framework_says_so_instead_of_raising(monkeypatch):
    q = exercises.load("03.no_breaks")

    def unavailable(name):
        raise frameworks.FrameworkUnavailable(f"{name} is not available here (ImportError)")

    monkeypatch.setattr(frameworks, "checks", unavailable)
    fb = q.check(lambda x: x)
    assert not fb and fb.failed == "available" and "not available here" in fb.message


# --------------------------------------------------------------------------------------------
# framework debris stays out of the learner's folders


def test_a_failed_mindspore_compile_leaves_nothing_in_the_working_folder(tmp_path):
    require("mindspore")
    work, scratch = tmp_path / "notebooks", tmp_path / "scratch"
    work.mkdir()
    code = (
        "import labkit\n"
        "from labkit import frameworks\n"
        "import mindspore as ms, numpy as np\n"
        "frameworks.get('mindspore')  # keeps the MS_OM_PATH it is given\n"
        "def f(x):\n"
        "    try:\n"
        "        return x / 0\n"
        "    except ZeroDivisionError:\n"
        "        return x\n"
        "try:\n"
        "    ms.jit(f)(ms.Tensor(np.ones(2, np.float32)))\n"
        "except RuntimeError as e:\n"
        "    print('failed as expected:', str(e).splitlines()[0])\n"
    )
    script = tmp_path / "fail.py"
    script.write_text(code)
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MS_OM_PATH": str(scratch)},
        check=False,
    )
    assert "failed as expected: Unsupported statement 'Try'" in out.stdout, out.stderr[-2000:]
    assert list(work.iterdir()) == [], "MindSpore wrote beside the notebook"
    assert list(scratch.rglob("analyze_fail.ir")), "the report went to the scratch folder"


def test_importing_the_mindspore_adapter_redirects_its_reports_by_default(tmp_path):
    require("mindspore")
    env_code = (
        "import os, labkit; from labkit import frameworks; "
        "frameworks.get('mindspore'); print(os.environ['MS_OM_PATH'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", env_code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "MS_OM_PATH"},
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    folder = out.stdout.strip().splitlines()[-1]
    assert "graphlab-" in folder and not folder.startswith(str(ROOT))


def test_every_data_file_of_the_package_is_declared_package_data():
    """A wheel carries the exercise bank only if pyproject.toml lists it as package data."""
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["labkit"]
    data = [
        p.relative_to(ROOT / "labkit")
        for p in (ROOT / "labkit").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc")
    ]
    assert data, "the bank's files"
    packaged = {p.relative_to(ROOT / "labkit") for d in declared for p in (ROOT / "labkit").glob(d)}
    missing = [str(p) for p in data if p not in packaged]
    assert not missing, f"add to [tool.setuptools.package-data] in pyproject.toml: {missing}"


def test_a_whole_graph_check_names_the_first_input_that_raised():
    """The loop the whole-graph checks share (MindSpore graph_mode, Paddle full_graph, torch
    fullgraph): every input runs, or the first that raised is named with its signature."""
    from labkit.frameworks._kit.checks import same_outputs

    import numpy as np

    def run(case):
        if case[0].ndim > 1:
            raise ValueError("boom")

    cases = [(np.zeros(3),), (np.zeros((2, 2)),), (np.zeros((4, 4)),)]
    ok, why = same_outputs(run, None, cases[:1], passed="ran on all 1 inputs")
    assert ok and why == "ran on all 1 inputs"
    ok, why = same_outputs(run, None, cases, passed="unused")
    assert not ok and why.startswith("input 2 (") and "(2, 2)" in why and "boom" in why
