"""Install packages into this Python's environment with uv, from where pip would take them.

``make install`` runs it (``python tools/install.py -e '.[lab,test]'``): uv installs the same
pins as pip, unpacking several wheels at a time (81 s on the 2-core CI machine with uv's cache
empty, bytecode compiled, for what pip takes 2 min 10 s over), but it reads none of pip's
settings. So this reads the sources pip is configured with, ``pip config list`` (its files and
its ``PIP_*`` environment variables: index URL, extra index URLs, find-links folders, a
constraints file, a certificate), passes the ones that exist to ``uv pip install``, and lets uv
weigh every index as pip does. On a machine where the CPU build of PyTorch lies in a find-links
folder, uv takes it from there as pip would.

Exit status: uv's; 3 when uv is not installed. ``make install`` falls back to pip on any
failure, so a machine without uv, or one uv cannot handle, still installs.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

#: pip's setting -> uv's option (a value may hold several, separated by spaces)
OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}


def pip_settings(listing: str) -> dict[str, list[str]]:
    """``{setting: values}`` from ``pip config list``'s lines (``global.find-links='/opt/w'``,
    ``:env:.find-links='/opt/w'``); a later line for the same setting replaces an earlier one,
    as the environment overrides pip's files."""
    settings: dict[str, list[str]] = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        name = key.split(".", 1)[-1]
        settings[name] = shlex.split(value)[0].split() if value.strip() else []
    return settings


def exists(source: str) -> bool:
    """A URL, or a file or folder that is there (pip only warns about a missing one)."""
    if source.startswith("file://"):
        return Path(source[len("file://") :]).exists()
    return "://" in source or Path(source).exists()


def uv_command(settings: dict[str, list[str]], packages: list[str]) -> list[str]:
    command = [sys.executable, "-m", "uv", "pip", "install", "--python", sys.executable]
    for name, option in OPTIONS.items():
        for value in settings.get(name, []):
            if exists(value):
                command += [option, value]
    # compiled as pip compiles them: where PYTHONDONTWRITEBYTECODE is set (CI here) no process
    # writes .pyc files, and every framework import would compile its sources again
    flags = ["--index-strategy", "unsafe-best-match", "--compile-bytecode", "--quiet"]
    return [*command, *flags, *packages]


def main(packages: list[str]) -> int:
    try:
        import uv  # noqa: F401
    except ImportError:
        print("tools/install.py: uv is not installed here", file=sys.stderr)
        return 3
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    settings = pip_settings(listing)
    env = dict(os.environ)
    cert = settings.get("cert")
    if cert and Path(cert[0]).is_file():
        env.setdefault("SSL_CERT_FILE", cert[0])  # the certificate pip trusts, for uv too
    return subprocess.run(uv_command(settings, packages), env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
