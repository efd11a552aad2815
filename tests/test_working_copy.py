"""A learner's runs leave the tracked notebooks unchanged: `make lab` opens a copy of them,
`my-notebooks/` (tools/working_copy.py), which git ignores; the tracked ones are stored stripped."""

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


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_a_saved_run_leaves_the_clone_clean_and_git_pull_updates_it(tmp_path):
    import nbformat

    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    upstream, clone = tmp_path / "upstream", tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ROOT), str(upstream))
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    make_copy = [sys.executable, "tools/working_copy.py", "--to", "my-notebooks"]
    subprocess.run(make_copy, cwd=clone, check=True, capture_output=True)  # what make lab runs
    mine = clone / "my-notebooks" / "00_welcome_and_setup.ipynb"
    nb = nbformat.read(mine, as_version=4)
    for count, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
        cell.execution_count = count + 1  # what JupyterLab writes on save after Run All
    nbformat.write(nb, mine)
    assert git(clone, "status", "--porcelain").stdout == ""
    # the course moves on: a notebook changes upstream and a new one appears
    name = "notebooks/00_welcome_and_setup.ipynb"
    (upstream / name).write_text((upstream / name).read_text() + " ")
    (upstream / "notebooks" / "99_new.ipynb").write_text((upstream / name).read_text())
    git(upstream, "add", "-A")
    git(upstream, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "update")
    git(clone, "pull", "-q")
    subprocess.run(make_copy, cwd=clone, check=True, capture_output=True)
    assert (clone / "my-notebooks" / "99_new.ipynb").exists()  # new: copied
    assert any(c.get("outputs") for c in nbformat.read(mine, as_version=4).cells)  # kept
    fresh = [*make_copy, "--fresh", "00_welcome_and_setup.ipynb"]
    subprocess.run(fresh, cwd=clone, check=True, capture_output=True)
    assert (clone / "my-notebooks" / "00_welcome_and_setup.bak.ipynb").exists()
    assert mine.read_text() == (clone / name).read_text()
    bad = subprocess.run(
        [*make_copy, "--fresh", "nope.ipynb"], check=False, cwd=clone, capture_output=True
    )
    assert bad.returncode == 2 and "no notebook 'nope.ipynb'" in bad.stderr.decode()
