"""The foundation: install metadata, fast import, profiles, doctor, notebook conventions, make lab."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request

import pytest
from conftest import NOTEBOOKS, ROOT, free_port, run_labkit

FRAMEWORK_MODULES = (
    "torch",
    "tensorflow",
    "mindspore",
    "paddle",
    "onnxruntime",
    "tvm",
    "onnx",
    "keras",
    "jax",
)


def test_import_labkit_is_fast_and_imports_no_framework():
    code = (
        "import sys, time; t = time.perf_counter(); import labkit, labkit.profiles, "
        "labkit.hardware, labkit.resnet, labkit.frameworks; dt = time.perf_counter() - t; "
        f"bad = [m for m in {FRAMEWORK_MODULES!r} if m in sys.modules]; print(dt, bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    dt, bad = out.stdout.split(" ", 1)
    assert bad.strip() == "[]", f"import labkit pulled in frameworks: {bad}"
    assert float(dt) < 1.0, f"import labkit took {float(dt):.2f} s"


def test_onnxruntime_after_import_labkit_leaves_nothing_in_the_temp_folder(tmp_path):
    """ONNX Runtime 1.32's telemetry writes ``$TMPDIR/.ses`` (not on every run, so its absence
    alone proves nothing); ``import labkit``, which a learner's notebook does first, turns it off
    unless the learner set ``ORT_DISABLE_TELEMETRY`` themselves."""
    pytest.importorskip("onnxruntime")
    code = (
        "import os, labkit, numpy as np, onnxruntime as ort; from onnx import helper, TensorProto as T\n"
        "x = helper.make_tensor_value_info('x', T.FLOAT, [1]); "
        "y = helper.make_tensor_value_info('y', T.FLOAT, [1])\n"
        "graph = helper.make_graph([helper.make_node('Relu', ['x'], ['y'])], 'g', [x], [y])\n"
        "s = ort.InferenceSession(helper.make_model(graph).SerializeToString())\n"
        "print(s.run(None, {'x': np.array([-2.0], np.float32)})[0][0], "
        "os.environ['ORT_DISABLE_TELEMETRY'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    for setting, seen in ((None, "1"), ("0", "0")):  # labkit's default; the learner's own
        tmp = tmp_path / f"tmp-{setting}"
        tmp.mkdir()
        extra = {} if setting is None else {"ORT_DISABLE_TELEMETRY": setting}
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**env, **extra, "TMPDIR": str(tmp)},
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.split() == ["0.0", seen]
        if setting is None:
            assert list(tmp.iterdir()) == []


def test_profiles_select_by_environment(monkeypatch):
    from labkit import profiles

    monkeypatch.setenv("LABKIT_PROFILE", "full")
    assert profiles.current().image_size == 224
    monkeypatch.setenv("LABKIT_PROFILE", "smoke")
    smoke = profiles.current()
    assert smoke.name == "smoke" and smoke.image_size < profiles.get("standard").image_size
    monkeypatch.delenv("LABKIT_PROFILE")
    assert profiles.current().name == "standard"


def test_bad_profile_names_the_valid_ones(monkeypatch):
    from labkit import profiles

    monkeypatch.setenv("LABKIT_PROFILE", "huge")
    with pytest.raises(ValueError, match="huge.*smoke, standard, full"):
        profiles.current()


def test_bad_profile_in_a_subprocess_is_a_clear_error():
    proc = subprocess.run(
        [sys.executable, "-c", "import labkit.profiles as p; p.current()"],
        capture_output=True,
        text=True,
        env={**os.environ, "LABKIT_PROFILE": "huge"},
        check=False,
    )
    assert proc.returncode != 0
    assert "LABKIT_PROFILE='huge'" in proc.stderr and "smoke, standard, full" in proc.stderr


def test_doctor_lists_every_framework_with_versions_and_the_ceiling():
    proc = run_labkit("doctor", timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for pkg in ("torch", "tensorflow", "mindspore", "onnx", "onnxruntime"):
        assert re.search(rf"^\| {pkg} \| \d+\.\d+", out, re.MULTILINE), (
            f"{pkg} missing from doctor:\n{out}"
        )
    assert "how the ceiling is estimated" in out and "FLOP/cycle" in out
    for precision in ("fp32", "bf16", "int8"):
        assert re.search(rf"^\| {precision} peak \| (\S+ GFLOP/s|unknown)", out, re.MULTILINE), out
    assert "benchmark threads" in out and "1 inter-op" in out


def test_doctor_names_a_framework_that_fails_to_import(tmp_path):
    # A package shadowing mindspore that raises on import: doctor reports it and does not crash.
    (tmp_path / "mindspore").mkdir()
    (tmp_path / "mindspore" / "__init__.py").write_text(
        "raise ImportError('libmindspore.so: cannot open shared object')\n"
    )
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    proc = run_labkit("doctor", env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "import fails" in proc.stdout
    assert "libmindspore.so" in proc.stdout and "make install" in proc.stdout


def test_framework_probes_are_cached_until_the_environment_changes(tmp_path):
    # Stand-ins for every framework (empty packages) keep the imports fast.
    from labkit import frameworks

    def env(fakes):
        for pkg in [*frameworks.PACKAGES.values(), *frameworks.EXTRA_PACKAGES]:
            (fakes / pkg).mkdir(parents=True, exist_ok=True)
            (fakes / pkg / "__init__.py").write_text("")
        path = f"{fakes}{os.pathsep}{ROOT}"
        return {**os.environ, "PYTHONPATH": path, "LABKIT_CACHE_DIR": str(tmp_path / "cache")}

    def ask(env, fresh=False):
        code = f"from labkit import frameworks; frameworks.probe_all({fresh}); "
        code += "print(','.join(frameworks.available()))"
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip().split(",")

    first = env(tmp_path / "a")
    assert ask(first) == list(frameworks.NAMES)
    [cache] = (tmp_path / "cache").glob("probes-*.json")
    probes = json.loads(cache.read_text())
    probes["mindspore"].update(importable=False, error="written into the cache by this test")
    cache.write_text(json.dumps(probes))
    assert "mindspore" not in ask(first)  # the answer came from the cache
    assert "mindspore" in ask(env(tmp_path / "b"))  # another PYTHONPATH: imported again
    assert "mindspore" in ask(first, fresh=True)  # as labkit doctor asks: imported again


def _requirements(lines):
    return sorted(
        r.strip().strip('"') for r in lines if re.match(r'^"?[A-Za-z0-9_.-]+==', r.strip())
    )


def _yml_pins(path):
    lines = [ln.strip()[2:] for ln in path.read_text().splitlines() if ln.strip().startswith("- ")]
    return _requirements(lines)


def test_environment_files_carry_the_pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    assert all("==" in r for r in reqs), "every requirement is an exact pin"
    expected = _requirements(reqs)
    assert _yml_pins(ROOT / "environment.yml") == expected
    assert _yml_pins(ROOT / "binder" / "environment.yml") == expected


def test_installed_versions_are_the_pins():
    from labkit import frameworks

    for package in (*frameworks.PACKAGES.values(), *frameworks.EXTRA_PACKAGES, "numpy"):
        pinned = frameworks.requirement(package).split("==")[1]
        installed = frameworks.installed_version(package)
        assert installed and installed.split("+")[0] == pinned, (package, installed, pinned)


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


# ---- notebook conventions --------------------------------------------------------------------


def test_notebook_names_are_numbered_in_course_order():
    """NN_topic.ipynb, or NNx_topic.ipynb for a lesson placed after NN (07b after 07): the file
    names sort in course order."""
    assert NOTEBOOKS, "no notebooks found"
    numbers = []
    for nb in NOTEBOOKS:  # NN_topic, or NNx_topic for one inserted after NN (04b)
        m = re.fullmatch(r"(\d\d)([a-z]?)_[a-z0-9_]+\.ipynb", nb.name)
        assert m, f"{nb.name} is not named NN_topic.ipynb (or NNx_topic.ipynb)"
        numbers.append((int(m.group(1)), m.group(2)))
    assert numbers == sorted(set(numbers)), "notebook numbers repeat"
    assert numbers[0] == (0, "")


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_conventions(nb):
    data = json.loads(nb.read_text())
    cells = data["cells"]
    for cell in cells:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, (
                f"{nb.name}: outputs must be stripped before committing"
            )
    first = "".join(cells[0]["source"])
    assert cells[0]["cell_type"] == "markdown" and first.lstrip().startswith("# ")
    for needed in ("learn", "Prerequisites", "Estimated time"):
        assert needed.lower() in first.lower(), f"{nb.name}: first cell lacks {needed!r}"
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown").lower()
    for heading in ("key takeaways", "self-check", "further reading"):
        assert heading in text, f"{nb.name}: no {heading!r} section"
    assert nb.name in (ROOT / "README.md").read_text(), f"{nb.name} is not in README's course map"


# ---- make lab --------------------------------------------------------------------------------


@pytest.mark.slow
def test_make_lab_serves_jupyterlab():
    port = free_port()
    token = "graphlabtest"
    proc = subprocess.Popen(
        [
            "make",
            "lab",
            f"PORT={port}",
            f"LAB_ARGS=--no-browser --ServerApp.token={token} --ServerApp.ip=127.0.0.1",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 180
        body = ""
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/lab?token={token}", timeout=5
                ) as r:
                    body = r.read().decode()
                    break
            except OSError:
                assert proc.poll() is None, proc.stdout.read().decode()
                time.sleep(1)
        assert "JupyterLab" in body or "jupyter-config-data" in body
        assert (ROOT / "my-notebooks" / "00_welcome_and_setup.ipynb").exists()  # the copy it opens
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
