"""The learner's progress file: which exercises were answered, and which were got right.

One small JSON file in the learner's home, ``~/.graphlab/progress.json`` (never in the course's
folder, so that a ``git pull`` or a fresh clone keeps it); the environment variable
``LABKIT_PROGRESS`` names another file (tests and CI point it at a temporary one), and
``LABKIT_PROGRESS=off`` records nothing. The file holds, per exercise id::

    {"02.python_branch": {"attempts": 3, "right": true, "last_right": true, "updated": "2026-..."}}

``right`` stays true once an answer was right. Recording never interrupts a lesson: a file that
cannot be read or written is reported once as a warning, and the answer is still checked.
"""

from __future__ import annotations

import datetime
import json
import os
import warnings
from pathlib import Path

from ..util import jsonio

__all__ = ["ENV", "forget_warnings", "path", "read", "record"]

ENV = "LABKIT_PROGRESS"
DEFAULT = Path("~/.graphlab/progress.json")
VERSION = 1
_warned: set[str] = set()


def path() -> Path | None:
    """The progress file in use, or None when recording is switched off."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in ("off", "0", "none", "false"):
        return None
    return Path(value).expanduser() if value else DEFAULT.expanduser()


def forget_warnings() -> None:
    """Warn again about problems already reported (each is reported once per process)."""
    _warned.clear()


def _warn(problem: str) -> None:
    if problem not in _warned:
        _warned.add(problem)
        warnings.warn(
            f"exercise progress is not saved: {problem} (set {ENV} to a writable file, "
            f"or {ENV}=off)",
            RuntimeWarning,
            stacklevel=4,
        )


def read(file: Path | None = None) -> dict[str, dict]:
    """Every recorded exercise; an absent file is no progress, a damaged one is reported."""
    file = path() if file is None else file
    if file is None or not file.exists():
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        entries = data["exercises"]
        if not isinstance(entries, dict):
            raise TypeError("'exercises' is not an object")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _warn(f"{file} is not a progress file ({type(exc).__name__}: {exc})")
        return {}
    return {k: v for k, v in entries.items() if isinstance(v, dict)}


def record(exercise_id: str, right: bool) -> None:
    """Add one checked answer of ``exercise_id`` to the progress file."""
    file = path()
    if file is None:
        return
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with jsonio.locked(file.with_name(file.name + ".lock")):  # two notebooks at once
            entries = read(file)
            entry = entries.setdefault(exercise_id, {"attempts": 0, "right": False})
            entry["attempts"] = int(entry.get("attempts", 0)) + 1
            entry["right"] = bool(entry.get("right")) or right
            entry["last_right"] = right
            entry["updated"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            text = json.dumps({"version": VERSION, "exercises": entries}, indent=1, sort_keys=True)
            jsonio.write_atomic(file, text + "\n")
    except OSError as exc:
        _warn(f"cannot write {file} ({exc.strerror or exc})")
