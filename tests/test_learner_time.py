"""README's course map and every notebook's header take their times from tools/learner_time.py."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("learner_time", ROOT / "tools" / "learner_time.py")
learner_time = importlib.util.module_from_spec(spec)
sys.modules["learner_time"] = learner_time
spec.loader.exec_module(learner_time)


def test_readme_and_headers_agree_with_the_estimate():
    rows = learner_time.estimates()
    assert rows, "no notebooks found"
    assert learner_time.problems(rows, budgets=False) == []


def test_the_estimate_counts_what_a_notebook_holds(tmp_path):
    import json

    (tmp_path / "notebooks").mkdir()
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "**Path:** core\n" + "word " * 130},
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": "\n".join(f"x{i} = {i}" for i in range(15)) + '\nexercises.load("00.a")\n',
        },
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "notebooks" / "00_x.ipynb").write_text(json.dumps(nb))
    readme = "<!-- notebook-costs:begin x -->\n| notebook | standard: run time |\n|---|---|\n"
    readme += "| `00_x.ipynb` | 90 s |\n<!-- notebook-costs:end -->\n"
    (tmp_path / "README.md").write_text(readme)
    (e,) = learner_time.estimates(tmp_path)
    assert (e.path, e.words, e.code_lines, e.exercises, e.run_min) == ("core", 132, 16, 1, 1.5)
    # 132/130 + 16/15 + 1.5 + 1.5 = 5.1 min, rounded up to 10
    assert e.minutes == 10
