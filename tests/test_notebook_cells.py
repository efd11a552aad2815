"""benchmarks/notebook_cells.py: code cells counted by what they call, on a fixture notebook
whose every cell has a known kind, through the real command line."""

import json
import subprocess
import sys

from conftest import ROOT, write_notebook

SCRIPT = ROOT / "benchmarks" / "notebook_cells.py"

#: (source, the kind the script must give it)
CELLS = [
    ("import labkit\nfrom labkit import exercises, lessons\nimport tensorflow as tf", "other"),
    ("%matplotlib inline\nfrom mindspore import nn\nimport torch.fx\nimport numpy as np", "other"),
    # framework calls, decorators and calls of calls included; NumPy counts for neither
    ("@tf.function\ndef f(x):\n    return tf.sin(x)\n\ny = tf.function(f)(np.ones(3))", "direct"),
    ("layer = nn.Dense(2, 3)\ngraph = torch.fx.symbolic_trace(lambda x: x)", "direct"),
    # helpers: labkit's own calls, from a module bound by `from labkit import ...`
    ("m = lessons.timed(lambda: None)\nprint(lessons.us(m))", "helper"),
    ("from labkit.lessons import graphs as lg\nlg.markdown([])", "helper"),
    ("lessons.timed(lambda: torch.sin(torch.ones(2)))", "direct"),  # 2 torch calls, 1 helper
    ("lessons.timed(lambda: tf.ones(2))", "mixed"),
    # measure: labkit's measuring modules (a benchmark plan, its results, its figure)
    ("from labkit import plots, runner\nrun = runner.run(plan)\nplots.throughput(run)", "measure"),
    ("plots.throughput(tf.ones(2))", "direct"),  # a framework call beside a measure call
    ("q1 = exercises.load('00.profile')\nq1", "exercise"),
    ("q1.check(None)", "exercise"),
    ("model = build()\nmodel.fit(x)\nplt.plot([1])", "other"),  # the notebook's own objects
]


def _run(*args):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_each_cell_is_counted_by_the_calls_it_makes(tmp_path):
    nb = tmp_path / "05_fixture.ipynb"
    write_notebook(nb, [src for src, _ in CELLS], "# Title")
    proc = _run(nb, "--cells")
    assert proc.returncode == 0, proc.stderr
    kinds = [line.split()[3] for line in proc.stdout.splitlines() if line.startswith("  cell ")]
    assert kinds == [kind for _, kind in CELLS]
    assert "cell   7 c6                       direct    framework 2, helper 1" in proc.stdout
    kinds = ("direct", "helper", "mixed", "measure")
    expected = {k: sum(kind == k for _, kind in CELLS) for k in kinds}
    assert expected == {"direct": 4, "helper": 2, "mixed": 1, "measure": 1}
    assert "measure   framework 0, helper 0, measure 2, exercise 0" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.startswith("05_fixture"))
    assert row.split() == ["05_fixture.ipynb", "4", "2", "1", "1", "2", "3", "yes"]
    counts = json.loads(_run(nb, "--json").stdout)
    assert counts == {
        "05_fixture.ipynb": {
            "direct": 4,
            "helper": 2,
            "mixed": 1,
            "measure": 1,
            "exercise": 2,
            "other": 3,
        }
    }


def test_more_helper_cells_than_direct_ones_reads_no(tmp_path):
    nb = tmp_path / "06_helpers.ipynb"
    write_notebook(nb, ["from labkit import lessons, runner", "lessons.timed()", "lessons.us()"])
    row = _run(nb).stdout.splitlines()[-1]
    assert row.split() == ["06_helpers.ipynb", "0", "2", "0", "0", "0", "1", "no"]


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    proc = _run(tmp_path / "missing.ipynb")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"error: no such notebook: {tmp_path / 'missing.ipynb'}\n"
    broken = tmp_path / "07_broken.ipynb"
    write_notebook(broken, ["x = 1", "def f(:\n    pass"])
    proc = _run(broken)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: 07_broken.ipynb cell 1 (id 'c1') is not Python: " + (
        "invalid syntax, line 1"
    )
    notjson = tmp_path / "08_text.ipynb"
    notjson.write_text("not a notebook")
    proc = _run(notjson)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: {notjson}: not a notebook")


def test_the_course_notebooks_are_all_counted():
    proc = _run()
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert [line.split()[0] for line in proc.stdout.splitlines()[2:]] == names


def test_a_notebook_without_framework_work_reads_not_applicable(tmp_path):
    nb = tmp_path / "09_guide.ipynb"
    write_notebook(nb, ["from labkit import guide", "guide.recommend('research')"])
    row = _run(nb).stdout.splitlines()[-1]
    assert row.split() == ["09_guide.ipynb", "0", "0", "0", "1", "0", "1", "n/a"]
