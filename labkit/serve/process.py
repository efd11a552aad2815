"""A server script started as its own process on 127.0.0.1, stopped with its ``with`` block.

:class:`Server` runs ``python <script> <args>`` in a new session, waits for the line
``ready <url>`` it prints once its model is warm, and on leaving sends SIGINT (Ctrl-C: the
script shuts down cleanly), then SIGKILL to what is left of its process group (after
``grace_s`` at most). Should the process that started it die first (a kernel restarted or
killed), the script's group ends with it (:func:`labkit.util.proc.exit_with_parent`). Its
standard error goes to an unnamed temporary file (nothing is left on disk) and is quoted when
the script fails to start.

Not for: the load (:mod:`labkit.serve.loadgen`).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..util import proc

__all__ = ["Server"]

#: runs the script ``argv[2]`` as ``__main__`` once a thread watches the parent ``argv[1]``
_WITH_PARENT = (
    "import runpy, sys; from labkit.util import proc; proc.exit_with_parent(int(sys.argv[1])); "
    "sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


class Server:
    """``with Server(script, ["--backend", "eager"]) as url:`` serves until the block ends."""

    def __init__(self, script: str | Path, args=(), start_s: float = 600.0, grace_s: float = 10.0):
        script = Path(script)
        if not script.is_file():
            raise FileNotFoundError(f"no server script at {script}: give the path to the script")
        self.command = [sys.executable, str(script), *map(str, args)]
        self.start_s, self.grace_s = start_s, grace_s
        self.process: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self) -> str:
        self.log = tempfile.TemporaryFile("w+")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        launch = [sys.executable, "-c", _WITH_PARENT, str(os.getpid()), *self.command[1:]]
        self.process = subprocess.Popen(
            launch, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env,
            start_new_session=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            self.url = self._wait_ready()
        except BaseException:
            self.__exit__()
            raise
        return self.url

    def _wait_ready(self) -> str:
        watch = selectors.DefaultSelector()
        watch.register(self.process.stdout, selectors.EVENT_READ)
        until = time.monotonic() + self.start_s
        while time.monotonic() < until:
            if watch.select(timeout=0.5):
                line = self.process.stdout.readline()
                if line.startswith("ready "):
                    return line.split()[1]
                if not line and self.process.poll() is not None:
                    break
        self.log.seek(0)
        tail = self.log.read()[-1500:]
        state = "did not say ready" if self.process.poll() is None else "ended"
        raise RuntimeError(f"{' '.join(self.command)} {state}; its stderr ends:\n{tail}")

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(self.grace_s)
        if self.process is not None:  # what is left of its group (compile workers) goes too
            proc.kill_group(self.process)
            self.process.stdout.close()
        self.log.close()
