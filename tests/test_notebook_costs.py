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
from conftest import ROOT, write_notebook

SCRIPT = ROOT / "benchmarks" / "notebook_costs.py"


def _module():
    spec = importlib.util.spec_from_file_location("notebook_costs", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_peak_memory_counts_the_processes_the_kernel_starts(tmp_path):
    nb = tmp_path / "01_child.ipynb"
    child = "import time; b = b'x' * (400 * 2**20); time.sleep(2.0)"  # 400 MiB, every page touched
    write_notebook(
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
    write_notebook(nb, ["raise RuntimeError('broken lesson')"])
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
    write_notebook(
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


def test_a_run_of_some_notebooks_updates_their_rows_and_keeps_the_others(tmp_path):
    mod = _module()
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for name in ("00_a.ipynb", "05_b.ipynb", "07b_new.ipynb"):
        (notebooks / name).write_text("{}")
    machine = {"cpu": "Test CPU", "cores": 2, "memory_gb": 8.0}

    def result(profile, rows):
        return {
            "kind": "labkit-notebook-costs",
            "profile": profile,
            "measured": "2026-01-02T00:00:00",
            "machine": machine,
            "notebooks": [
                {"notebook": n, "status": "ok", "wall_s": t, "peak_alone_mb": mb, "peak_pss_mb": mb}
                for n, t, mb in rows
            ],
        }

    everything = [
        result(
            "smoke", [("00_a.ipynb", 20, 800), ("05_b.ipynb", 61, 3500), ("09_gone.ipynb", 3, 90)]
        ),
        result("standard", [("00_a.ipynb", 11, 800), ("05_b.ipynb", 114, 3700)]),
    ]
    doc = tmp_path / "DOC.md"
    doc.write_text(f"{mod.BEGIN}\n{mod.END}\n")
    mod.write_tables(everything, docs=[doc], notebooks=notebooks)
    before = mod.read_table(doc.read_text())
    assert before["05_b.ipynb"] == {
        "smoke": ("61 s", "3.4 GB (over 2 GB)"),
        "standard": ("1.9 min", "3.6 GB (over 2 GB)"),
    }
    assert "09_gone.ipynb" in before  # still measured by these results
    # one new notebook measured under smoke only: only its smoke cells change
    mod.write_tables(
        [result("smoke", [("07b_new.ipynb", 95, 1200)])], docs=[doc], notebooks=notebooks
    )
    text = doc.read_text()
    after = mod.read_table(text)
    assert after["07b_new.ipynb"] == {
        "smoke": ("1.6 min", "1.2 GB"),
        "standard": ("not measured", "not measured"),
    }
    assert after["05_b.ipynb"] == before["05_b.ipynb"]  # both profiles, as they were
    assert after["00_a.ipynb"] == before["00_a.ipynb"]
    assert "09_gone.ipynb" not in after  # its notebook no longer exists
    assert (
        "`smoke`: measured 2026-01-02 on Test CPU (2 cores, 8.0 GB) (the rows of `00_a.ipynb`, "
        "`05_b.ipynb`: from the earlier table, not re-measured); `standard`: measured 2026-01-02 "
        "on Test CPU (2 cores, 8.0 GB)." in text
    )  # the standard column's sentence is the earlier table's
    assert "`smoke`: largest `05_b.ipynb`, 3.4 GB -> about 4.9 GB per user" in text
    assert "`standard`: largest `05_b.ipynb`, 3.6 GB" in text
    assert mod.read_table("no table here") == {}


# ---- every notebook's header states the run time of the one table ----------------------------

#: how a header states a run time: "about 32 s under `smoke`, 35 s under `standard`"
RUN_TIME = re.compile(r"(\d+(?:\.\d+)? (?:s|min)|not measured) under `(\w+)`")
COSTS = "python benchmarks/notebook_costs.py"


def _header(path):
    return "".join(json.loads(path.read_text())["cells"][0]["source"])


def _wanted(times):
    said = ", ".join(f"{t} under `{p}`" for p, t in times.items())
    return f"'**Run time:** about {said} (measured; README's notebook-costs table).'"


@pytest.mark.parametrize("nb", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_notebook_header_states_the_run_time_the_table_gives(nb):
    table = _module().read_table((ROOT / "README.md").read_text())
    assert table, "README.md has no notebook-costs table between its markers"
    if nb.name not in table:
        pytest.fail(
            f"{nb.name} is not in README's notebook-costs table yet. Measure it under each "
            f"profile: `{COSTS} notebooks/{nb.name} --profile smoke --out "
            f"results/notebook-costs-smoke.json` and `{COSTS} notebooks/{nb.name} --profile "
            f"standard --out results/notebook-costs-standard.json`, then `{COSTS} --tables "
            "results/notebook-costs-smoke.json results/notebook-costs-standard.json` (it adds "
            "that row and keeps the others); then write the header's run time from the row",
            pytrace=False,
        )
    times = {p: t for p, (t, _) in table[nb.name].items()}
    header = _header(nb)
    line = next((ln for ln in header.splitlines() if "Run time" in ln), "")
    said = {p: t for t, p in RUN_TIME.findall(line)}
    assert line and said, (
        f"{nb.name}: the first cell must state the run time README's table gives, on a line of "
        f"its own: {_wanted(times)}"
    )
    wrong = {p: said.get(p) for p, t in times.items() if said.get(p) != t}
    assert not wrong, (
        f"{nb.name}: the header says {said}, README's notebook-costs table gives {times}: write "
        f"{_wanted(times)}"
    )
    assert set(said) <= set(times), f"{nb.name}: the table has no profile {set(said) - set(times)}"
