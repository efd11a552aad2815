"""benchmarks/notebook_costs.py: a real kernel runs a notebook whose cell starts a child process;
the peak memory must include the child's, and the generated tables land between their markers."""

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "notebook_costs.py"


def _module():
    spec = importlib.util.spec_from_file_location("notebook_costs", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _notebook(path, cells):
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{i}",
                "metadata": {},
                "outputs": [],
                "source": src,
            }
            for i, src in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


@pytest.mark.slow
def test_peak_memory_counts_the_processes_the_kernel_starts(tmp_path):
    nb = tmp_path / "01_child.ipynb"
    child = "import time; b = b'x' * (400 * 2**20); time.sleep(2.0)"  # 400 MiB, every page touched
    _notebook(
        nb,
        [
            "import subprocess, sys",
            f"subprocess.run([sys.executable, '-c', {child!r}], check=True)\nprint('child done')",
        ],
    )
    out = tmp_path / "costs.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(nb),
            "--profile",
            "smoke",
            "--interval",
            "0.1",
            "--out",
            str(out),
            "--executed",
            str(tmp_path / "executed"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    (row,) = result["notebooks"]
    assert row["status"] == "ok" and result["profile"] == "smoke"
    assert row["peak_pss_mb"] >= 400, row  # the child's 400 MiB are in the tree's peak
    assert row["peak_alone_mb"] >= 400, row  # ... in the figure the tables show too
    assert row["kernel_hwm_mb"] < 400, row  # ... and not in the kernel's own
    assert row["peak_processes"] >= 2
    executed = json.loads((tmp_path / "executed" / nb.name).read_text())
    assert executed["metadata"]["labkit"] == {
        "profile": "smoke",
        "source_sha256": hashlib.sha256(nb.read_bytes()).hexdigest(),
        "executed_by": "benchmarks/notebook_costs.py",
    }
    assert "child done" in "".join(executed["cells"][1]["outputs"][0]["text"])


def test_a_failing_notebook_is_reported_and_not_saved(tmp_path):
    nb = tmp_path / "02_fails.ipynb"
    _notebook(nb, ["raise RuntimeError('broken lesson')"])
    out = tmp_path / "costs.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(nb),
            "--out",
            str(out),
            "--executed",
            str(tmp_path / "x"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1
    (row,) = json.loads(out.read_text())["notebooks"]
    assert row["status"] == "failed" and "broken lesson" in row["error"]
    assert not (tmp_path / "x" / nb.name).exists()


def test_tables_are_rewritten_between_the_markers_only(tmp_path):
    mod = _module()
    doc = tmp_path / "DOC.md"
    doc.write_text(f"# Title\n\nbefore\n\n{mod.BEGIN}\nold table\n{mod.END}\n\nafter\n")
    machine = {"cpu": "Test CPU", "cores": 2, "memory_gb": 8.0}
    rows = [
        {
            "notebook": "00_a.ipynb",
            "status": "ok",
            "wall_s": 30.0,
            "peak_pss_mb": 900,
            "load_1min_before": 0.2,
        },
        {
            "notebook": "05_b.ipynb",
            "status": "ok",
            "wall_s": 200.0,
            "peak_pss_mb": 3500,
            "load_1min_before": 0.3,
        },
    ]
    smoke = {
        "kind": "labkit-notebook-costs",
        "profile": "smoke",
        "measured": "2026-01-02T00:00:00",
        "machine": machine,
        "notebooks": rows,
    }
    standard = {**smoke, "profile": "standard", "notebooks": rows[:1]}
    assert mod.write_tables([smoke, standard], docs=[doc]) == [doc]
    text = doc.read_text()
    assert text.startswith("# Title\n\nbefore\n\n") and text.endswith("\n\nafter\n")
    assert "old table" not in text
    assert "| `00_a.ipynb` | 30 s | 0.9 GB | 30 s | 0.9 GB |" in text
    assert "| `05_b.ipynb` | 3.3 min | 3.4 GB (over 2 GB) | not measured | not measured |" in text
    assert "busy" not in text  # the load stayed under the core count
    assert "`smoke`: largest `05_b.ipynb`, 3.4 GB -> about 4.9 GB per user" in text
    assert "the peak of the sum of PSS" in text  # results written before the 'alone' figure
    assert mod.write_tables([smoke, standard], docs=[doc]) == []  # idempotent
    # the figure as if alone on the machine wins over the PSS sum when a result has it
    alone = [{**r, "peak_alone_mb": r["peak_pss_mb"] + 300} for r in rows]
    assert mod.write_tables([{**smoke, "notebooks": alone}], docs=[doc]) == [doc]
    text = doc.read_text()
    assert "| `00_a.ipynb` | 30 s | 1.2 GB |" in text and "library pages" in text
    bare = tmp_path / "BARE.md"
    bare.write_text("no markers")
    with pytest.raises(ValueError, match="no generated-table markers"):
        mod.write_tables([smoke], docs=[bare])


@pytest.mark.slow
@pytest.mark.parametrize("limit_mb, fails", [(200, True), (0, False)])
def test_nbval_runs_fail_a_notebook_over_the_memory_limit(tmp_path, limit_mb, fails):
    """conftest's NotebookMemory: the nbval run itself samples each notebook's kernel with what
    it starts (no second execution) and fails the notebook's last cell over the limit."""
    nb = tmp_path / "03_child.ipynb"
    child = "import time; b = b'x' * (300 * 2**20); time.sleep(1.5)"  # 300 MiB, every page touched
    _notebook(
        nb,
        [
            "import subprocess, sys",
            f"subprocess.run([sys.executable, '-c', {child!r}], check=True)",
        ],
    )
    env = {
        **os.environ,
        "LABKIT_NOTEBOOK_MEMORY_MB": str(limit_mb),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)]),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider"]
        + ["--nbval-lax", "--nbval-current-env", str(nb), "--rootdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    out = proc.stdout + proc.stderr
    peak = int(re.search(r"03_child\.ipynb: (\d+) MB peak", out).group(1))
    assert peak >= 300, out[-3000:]  # the child's pages are in the notebook's figure
    if fails:
        assert proc.returncode == 1, out[-3000:]
        assert "2 passed, 1 error" in out and "over the limit of 200 MB" in out, out[-3000:]
    else:
        assert proc.returncode == 0, out[-3000:]
