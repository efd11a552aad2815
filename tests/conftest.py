"""Shared test setup. The protobuf setting must precede any framework import (see labkit/__init__)."""
import os
import socket
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
os.environ.setdefault("LABKIT_PROFILE", "smoke")

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_labkit(*args: str, env: dict | None = None, timeout: float = 600,
               cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m labkit ...`` in a real subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "labkit", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=cwd or ROOT)


def require(name: str):
    """Skip the test, naming the reason, when a framework does not import here."""
    from labkit import frameworks

    probe = frameworks.probe_all()[frameworks.PACKAGES[name]]
    if not probe.importable:
        pytest.skip(f"{name} is not importable here: {probe.error}")
    return frameworks.get(name)
