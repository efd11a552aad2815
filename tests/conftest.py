"""Shared test setup. The protobuf setting must precede any framework import (see labkit/__init__)."""

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
os.environ.setdefault("LABKIT_PROFILE", "smoke")
# exercise progress of test runs (and of the notebooks nbval runs in this session) goes to a
# temporary file, never the home folder of whoever runs the tests
_PROGRESS_DIR = tempfile.TemporaryDirectory(prefix="graphlab-test-progress-")
os.environ.setdefault("LABKIT_PROGRESS", os.path.join(_PROGRESS_DIR.name, "progress.json"))

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_labkit(
    *args: str, env: dict | None = None, timeout: float = 600, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """Run ``python -m labkit ...`` in a real subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "labkit", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=cwd or ROOT,
        check=False,
    )


#: under CI a framework or tool that is missing fails the run instead of skipping its tests
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def skip_or_fail(reason: str) -> None:
    """Skip (on a learner's machine: the lesson says what is missing) or, under ``CI=true``, fail:
    CI must never turn green because a framework or Chromium silently went missing."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: a missing dependency fails the run)", pytrace=False)
    pytest.skip(reason)


def require(name: str):
    """The adapter of ``name``; skips (fails under CI) when the framework does not import here."""
    from labkit import frameworks

    probe = frameworks.probe_all()[frameworks.PACKAGES[name]]
    if not probe.importable:
        skip_or_fail(f"{name} is not importable here: {probe.error}")
    return frameworks.get(name)
