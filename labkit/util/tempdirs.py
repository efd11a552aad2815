"""This user's own folders in the shared temporary directory, for what labkit reuses between
processes (compile caches, the ONNX export cache). On a shared machine a fixed name could be
made first by someone else, who would then plant what labkit loads and runs: :func:`private_dir`
names it for this user, makes it 0700 and refuses one that is not a private folder of this user's.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import stat
import tempfile
from pathlib import Path

__all__ = ["UnsafeFolder", "bound", "private_dir", "scratch"]


class UnsafeFolder(ValueError):
    """A folder labkit would reuse can be written by someone else: it is not used."""


def owner_name(uid: int) -> str:
    """``uid`` and, where the system knows it, the user's name: ``"1001 (alice)"``."""
    try:
        return f"{uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return str(uid)


def private_dir(name: str) -> Path:
    """``<temporary directory>/<name>-<uid>``, created 0700, or reused if it is a folder of this
    user's that nobody else can write to, else :class:`UnsafeFolder` (naming the folder, its
    owner and mode, and the fix)."""
    path = Path(tempfile.gettempdir()) / f"{name}-{os.getuid()}"
    try:
        path.mkdir(mode=0o700)
        os.chmod(path, 0o700)  # the umask may only have removed bits; say exactly what it is
        return path
    except FileExistsError:
        st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        problem = f"is a symbolic link (to {os.readlink(path)})"
    elif not stat.S_ISDIR(st.st_mode):
        problem = "is not a folder"
    elif st.st_uid != os.getuid():
        problem = f"belongs to user {owner_name(st.st_uid)}, not to you ({owner_name(os.getuid())})"
    elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = "can be written by other users"
    else:
        return path
    raise UnsafeFolder(
        f"{path} {problem} (owner {owner_name(st.st_uid)}, mode {stat.S_IMODE(st.st_mode):04o}): "
        "labkit does not reuse files that someone else could have put there. Remove it "
        f"(`rm -rf {path}`; if it is not yours, ask the machine's administrator), or set TMPDIR "
        "to a folder of your own"
    )


def bound(folder: Path, max_bytes: int, keep: Path | None = None) -> list[Path]:
    """Keep a cache folder's files under ``max_bytes``, removing the least recently modified
    first, never ``keep``; returns what was removed."""
    files = []
    for path in folder.rglob("*"):
        with contextlib.suppress(FileNotFoundError):  # removed by another process meanwhile
            if path.is_file() and not path.is_symlink():
                st = path.stat()
                files.append((st.st_mtime, st.st_size, path))
    total = sum(size for _, size, _ in files)
    removed = []
    for _, size, path in sorted(files):
        if total <= max_bytes:
            break
        if path == keep:
            continue
        path.unlink(missing_ok=True)
        total -= size
        removed.append(path)
    return removed


def scratch(prefix: str) -> Path:
    """A new folder of this process's own, removed when the process (a kernel) exits."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
