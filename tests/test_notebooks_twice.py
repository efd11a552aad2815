"""A learner's second *Run All*: every notebook runs top to bottom twice in one kernel, and leaves
nothing beside itself that the learner did not ask for.

Each notebook is copied alone into a temporary ``notebooks/`` folder and executed there (the
kernel's working folder, as in JupyterLab) by nbclient, in a kernel of this environment (as
``nbval --nbval-current-env`` does), all cells, then all cells again. Afterwards that folder may
hold only the notebook and the outputs it is meant to write (06 and 07 write their benchmark
records to ``results/``): framework debris, such as MindSpore's ``rank_0/`` report folder,
fails the test by name.

Cost: each notebook's run time, twice. Measured under ``smoke`` on a busy 2-core machine, both
runs together: 00-04 about 15-20 s each, 05 and 11 about 1 min each, 09 3 s; 06, 07 and 08
(the benchmark and distributed notebooks) 2.5-4 min each, about 10 min together; 10 (checks and
benchmarks of four models) about 3.5 min. ``make test`` (CI, which must stay inside 30 minutes on
2 cores) runs only 09, which keeps the mechanism itself under test; ``make test-standard`` runs
``LABKIT_TWICE=all`` (every notebook, before a release); a comma-separated list (``06,07``)
chooses, ``none`` skips.
"""

import os
import re
import shutil

import pytest
from conftest import NOTEBOOKS, notebook_key

#: what a notebook writes beside itself on purpose (the learner runs it to get these): the
#: benchmark records of 06, 07 and 10, the recommendation 09 exports (outside a checkout, where
#: the folder of the results is the working folder), the class folder of 11
#: the folders of scripts beside the notebooks, which a notebook shows and runs
SCRIPTS = ("serving", "distributed", "deployment")
DECLARED_OUTPUTS = {
    "06": {"results"},
    "07": {"results"},
    "09": {"results"},
    "10": {"results"},
    "11": {"results"},
}
#: run by default (see the module's docstring for the cost of the others)
DEFAULT = "09"


def _selected():
    choice = os.environ.get("LABKIT_TWICE", DEFAULT).strip().lower()
    if choice == "all":
        return NOTEBOOKS
    if choice in ("none", "off", "0"):
        return []
    wanted = {part.strip().zfill(2) for part in choice.split(",") if part.strip()}
    unknown = wanted - {notebook_key(p) for p in NOTEBOOKS}
    if unknown:
        raise ValueError(f"LABKIT_TWICE names unknown notebooks {sorted(unknown)}")
    return [p for p in NOTEBOOKS if notebook_key(p) in wanted]


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)  # the traceback's terminal colours


def _kernel_manager():
    """A kernel of the Python running the tests (nbval's --nbval-current-env does the same)."""
    import ipykernel.kernelspec
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    class CurrentEnv(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return self.kernel_spec_class(
                resource_dir=ipykernel.kernelspec.RESOURCES,
                **ipykernel.kernelspec.get_kernel_dict(),
            )

    return KernelManager(kernel_name="python3", kernel_spec_manager=CurrentEnv())


@pytest.mark.slow
@pytest.mark.parametrize("path", _selected(), ids=notebook_key)
def test_notebook_runs_twice_in_one_kernel_and_leaves_nothing_beside_it(path, tmp_path):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    folder = tmp_path / "notebooks"
    folder.mkdir()
    copy = folder / path.name
    copy.write_bytes(path.read_bytes())
    # the scripts a notebook shows and runs (SCRIPTS) stand beside it
    for d in path.parent.iterdir():
        if d.name in SCRIPTS:
            shutil.copytree(d, folder / d.name, ignore=shutil.ignore_patterns("__pycache__"))
        elif d.suffix == ".py":  # a lesson's module it imports (tracer.py, capture_modes.py)
            shutil.copy2(d, folder / d.name)
    nb = nbformat.read(copy, as_version=4)
    client = NotebookClient(
        nb,
        km=_kernel_manager(),
        timeout=900,
        resources={"metadata": {"path": str(folder)}},
    )
    with client.setup_kernel():
        for run in (1, 2):
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                try:
                    client.execute_cell(cell, index)
                except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
                    pytest.fail(
                        f"{path.name}, run {run}, cell {index} ({cell.get('id')}): "
                        f"{type(exc).__name__}: {_plain(str(exc))[-1500:]}",
                        pytrace=False,
                    )
    modules = {"__pycache__", *(p.name for p in folder.glob("*.py"))}  # Python's, on import
    left = sorted(
        p.name for p in folder.iterdir() if p != copy and p.name not in {*SCRIPTS, *modules}
    )
    unexpected = [
        name for name in left if name not in DECLARED_OUTPUTS.get(notebook_key(path), set())
    ]
    assert not unexpected, (
        f"running {path.name} left {unexpected} beside it: send framework files to a temporary "
        "folder (as labkit.frameworks.mindspore.adapter does with MS_OM_PATH)"
    )
