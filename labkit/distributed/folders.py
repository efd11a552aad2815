"""Temporary job folders: each holds the workers' files and ``owner.pid``, the process that made
it, so that a folder left by a killed kernel (which never ran its clean-up) can be swept."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["TMP_PREFIX", "new_output_dir", "sweep_orphaned_outputs"]

#: temporary output folders start with this; each holds ``owner.pid``, the process that made it
TMP_PREFIX = "labkit-dp-"


def new_output_dir(framework: str) -> Path:
    """A fresh temporary folder for a job's files, after deleting the folders of dead owners."""
    sweep_orphaned_outputs()
    out = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{framework}-"))
    (out / "owner.pid").write_text(str(os.getpid()))
    return out


def sweep_orphaned_outputs() -> list[Path]:
    """Delete this user's temporary job folders whose owner process is gone (a kernel that was
    killed, not shut down, never ran its clean-up); returns the folders deleted."""
    import psutil

    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{TMP_PREFIX}*"):
        try:
            owner = int((folder / "owner.pid").read_text())
            if folder.stat().st_uid == os.getuid() and not psutil.pid_exists(owner):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
        except (OSError, ValueError):
            continue
    return removed
