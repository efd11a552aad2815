"""Folders labkit reuses in the shared temporary directory are this user's own
(:mod:`labkit.util.tempdirs`).

Each test points the temporary directory at a folder of its own (``tempfile.tempdir``), plants
what another user of a shared machine could plant there, and checks that labkit refuses it
with a message naming the folder, its owner and mode, and the fix, before reading anything.
"""

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from labkit import resnet, runner
from labkit.util import tempdirs
from labkit.util.tempdirs import UnsafeFolder

import pytest
from conftest import ROOT, require

OTHER_UID = 12345


@pytest.fixture
def tmp_root(tmp_path, monkeypatch):
    """The temporary directory, for this test only."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def planted(root: Path, name: str, mode: int = 0o777, uid: int | None = None) -> Path:
    """``name``'s folder of this user, made first by someone else: mode ``mode``, owner ``uid``."""
    folder = root / f"{name}-{os.getuid()}"
    folder.mkdir()
    (folder / "planted.onnx").write_bytes(b"not yours")
    os.chmod(folder, mode)
    if uid is not None:
        try:
            os.chown(folder, uid, -1)
        except PermissionError:
            pytest.skip("changing a folder's owner needs root (the tests run as root in CI)")
    return folder


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_fresh_folder_is_created_0700_and_named_for_this_user(tmp_root):
    umask = os.umask(0o000)  # a permissive umask (restored below: process-wide state)
    try:
        folder = tempdirs.private_dir("labkit-x")
    finally:
        os.umask(umask)
    assert folder == tmp_root / f"labkit-x-{os.getuid()}" and folder.is_dir()
    assert mode_of(folder) == 0o700 and os.lstat(folder).st_uid == os.getuid()
    (folder / "kept").write_text("1")
    assert tempdirs.private_dir("labkit-x") == folder and (folder / "kept").exists()


def test_a_folder_others_can_write_to_is_refused(tmp_root):
    folder = planted(tmp_root, "labkit-x", mode=0o777)
    with pytest.raises(UnsafeFolder) as info:
        tempdirs.private_dir("labkit-x")
    message = str(info.value)
    assert str(folder) in message and "can be written by other users" in message
    assert "mode 0777" in message and f"rm -rf {folder}" in message and "TMPDIR" in message
    assert isinstance(info.value, ValueError)  # the command line: one line, exit 2
    os.chmod(folder, 0o775)  # group-writable is refused too
    with pytest.raises(UnsafeFolder, match="can be written by other users"):
        tempdirs.private_dir("labkit-x")


def test_a_folder_of_another_user_is_refused(tmp_root):
    folder = planted(tmp_root, "labkit-x", mode=0o700, uid=OTHER_UID)
    with pytest.raises(UnsafeFolder) as info:
        tempdirs.private_dir("labkit-x")
    message = str(info.value)
    assert f"{folder} belongs to user {OTHER_UID}" in message
    assert f"owner {OTHER_UID}" in message and "ask the machine's administrator" in message


def test_a_symbolic_link_is_refused(tmp_root, tmp_path_factory):
    target = tmp_path_factory.mktemp("elsewhere")
    os.chmod(target, 0o700)
    (tmp_root / f"labkit-x-{os.getuid()}").symlink_to(target)
    with pytest.raises(UnsafeFolder, match=f"is a symbolic link \\(to {target}\\)"):
        tempdirs.private_dir("labkit-x")


def test_the_shared_compile_caches_refuse_a_planted_folder(tmp_root):
    """Inductor loads compiled libraries from ``cache="warm"``'s folder: a run refuses it
    before any cell runs."""
    planted(tmp_root, "labkit-compile-cache", mode=0o777)
    with pytest.raises(UnsafeFolder, match="labkit-compile-cache"):
        runner.loop.shared_cache_dir()
    with pytest.raises(UnsafeFolder, match="labkit-compile-cache"):
        runner.loop.cache_env("warm", tmp_root / "cell")
    plan = runner.Plan.build(["torch"], ["eager"], ["latency"])
    with pytest.raises(UnsafeFolder, match="labkit-compile-cache"):
        runner.run(plan, tmp_root / "out.jsonl", cache="warm", progress=False)
    assert not (tmp_root / "out.jsonl").exists()
    bench = subprocess.run(
        [sys.executable, "-m", "labkit", "bench", "--frameworks", "torch", "--modes", "eager"]
        + ["--tasks", "latency", "--cache", "warm", "--out", str(tmp_root / "cli.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_root)},
        check=False,
    )
    last = bench.stderr.strip().splitlines()[-1]
    assert bench.returncode == 2 and "Traceback" not in bench.stderr, bench.stderr
    assert last.startswith("error: ") and last.endswith("set TMPDIR to a folder of your own")
    assert (
        "labkit-compile-cache" in bench.stderr and "can be written by other users" in bench.stderr
    )
    assert not (tmp_root / "cli.jsonl").exists()
    runner.loop.cache_env("cold", tmp_root / "cell")  # a cold run does not use it
    assert not (tmp_root / "cache").exists(), "checking the cache value made folders"


def test_the_onnx_export_cache_refuses_a_planted_model(tmp_root):
    require("onnxruntime")
    from labkit.frameworks.onnxruntime import adapter

    folder = planted(tmp_root, "labkit-onnx-cache", mode=0o777)
    with pytest.raises(UnsafeFolder, match="labkit-onnx-cache"):
        adapter.model_file(resnet.init_weights(0, 10, 16))
    assert sorted(p.name for p in folder.iterdir()) == ["planted.onnx"]  # nothing written


def test_mindspores_scratch_folder_refuses_a_planted_folder(tmp_path, monkeypatch):
    require("mindspore")
    from labkit.frameworks.mindspore import adapter  # its import makes the real scratch folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted(tmp_path, "graphlab", mode=0o700, uid=OTHER_UID)
    with pytest.raises(UnsafeFolder, match="graphlab"):
        adapter.scratch_folder()


def test_bound_keeps_a_cache_under_its_size_least_recently_used_first(tmp_path):
    import os

    from labkit.util import tempdirs

    (tmp_path / "sub").mkdir()
    paths = [tmp_path / "a", tmp_path / "sub" / "b", tmp_path / "c", tmp_path / "d"]
    for age, path in enumerate(paths):  # a is the newest, d the oldest
        path.write_bytes(b"x" * 100)
        os.utime(path, (1_000_000 - age, 1_000_000 - age))
    removed = tempdirs.bound(tmp_path, 250, keep=paths[3])
    assert removed == [paths[2], paths[1]]  # d is kept although oldest: it is in use
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["a", "d"]
    assert tempdirs.bound(tmp_path, 1000) == []


def test_a_notebooks_scratch_folder_goes_when_its_process_exits(tmp_path):
    code = (
        "import sys; from labkit.util import tempdirs; "
        "path = tempdirs.scratch('graphlab-test-'); (path / 'f.txt').write_text('x'); print(path)"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=False)
    assert out.returncode == 0, out.stderr
    made = Path(out.stdout.decode().strip())
    assert made.parent == tmp_path and made.name.startswith("graphlab-test-")
    assert list(tmp_path.iterdir()) == []  # removed, with the file in it, at exit
