"""A learner's runs leave the tracked notebooks unchanged (`make strip-outputs`, run by install).

JupyterLab saves outputs, execution counts and metadata into the notebook on every save; the git
filter cleans them as git reads the file, so `git status` stays clean and `git pull` updates the
course, while an edit to a cell's code still shows.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STRIP = [sys.executable, "-m", "nbstripout", "--keep-id", "--extra-keys", "metadata.language_info"]
TRACKED = sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("app/*.ipynb"))


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def test_every_tracked_notebook_is_stored_as_the_filter_leaves_it():
    # a notebook stored otherwise shows as changed after its first save, outputs or not
    done = subprocess.run(
        [*STRIP, "--verify", *map(str, TRACKED)], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, f"not stripped (run {' '.join(STRIP[2:])} on them):\n{done.stdout}"


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("make") is None, reason="no git")
def test_a_saved_run_leaves_git_status_clean_but_an_edit_shows(tmp_path):
    import nbformat

    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ROOT), str(clone))
    venv = Path(sys.prefix)
    subprocess.run(
        ["make", "-s", "strip-outputs", f"VENV={venv}", f"PY={sys.executable}"],
        cwd=clone,
        check=True,
        capture_output=True,
    )
    name = "notebooks/00_welcome_and_setup.ipynb"
    nb = nbformat.read(clone / name, as_version=4)
    for count, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        # what JupyterLab writes on save after Run All
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
        cell.execution_count = count + 1
        cell.metadata["execution"] = {"iopub.status.busy": "2026-12-02T10:00:00Z"}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.2"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    nbformat.write(nb, clone / name)
    assert git(clone, "status", "--porcelain").stdout == ""
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.source += "\nprint('my change')"
    nbformat.write(nb, clone / name)
    assert git(clone, "status", "--porcelain").stdout.split() == ["M", name]
