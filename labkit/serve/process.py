"""Servers and load runs as processes of their own, pinned to separate CPUs where the machine
has them, that never outlive the job that started them.

:class:`Server` starts ``python -m labkit serve`` (a context manager: it is stopped on leaving
the block, on an error and on Ctrl-C), waits until the model is ready and gives its URL;
:func:`run_load` runs ``python -m labkit load`` against it and returns the records;
:func:`measure` does both for one framework, mode and batching. Both processes listen or
connect on 127.0.0.1 only, lead their own process group (stopping it stops what they
started) and end by themselves when this process is gone.

Pinning (:func:`cpu_split`): client and server on the same few cores compete, and a client
starved of CPU sends late, which looks like server latency; with two or more CPUs the client
gets one and the server the others, at the price of the server's threads: on a 2-CPU machine
it runs on one.

Not for: what the processes do (:mod:`labkit.serve.app`, :mod:`labkit.serve.sweep`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from .. import hardware, profiles, results
from ..util import net, proc
from .model import MODEL_NAME
from .sweep import Plan

__all__ = ["Server", "cpu_split", "cpus_for", "measure", "parse_cpus", "pin", "run_load", "target"]


def cpu_split() -> tuple[list[int] | None, list[int] | None, str]:
    """``(server CPUs, client CPUs, why)``: the client on the first CPU this process may use,
    the server on the others; ``(None, None, why)`` on a machine with one CPU (both share it)."""
    cpus = hardware.usable_cpus()
    if len(cpus) < 2:
        return None, None, f"one CPU ({cpus}): the server and the client share it, not pinned"
    server, client = cpus[1:], cpus[:1]
    why = (
        f"server pinned to CPU(s) {server} ({len(server)} thread(s)), client to CPU {client[0]}: "
        f"they no longer compete, and the server has {len(server)} of the {len(cpus)} CPUs"
    )
    return server, client, why


def parse_cpus(text: str | None) -> list[int] | None:
    """The CPUs of ``--cpus`` (``"1"``, ``"0-1"``, ``"0,2"``), None for none; ``ValueError``
    names CPUs this process may not use."""
    if not text:
        return None
    try:
        cpus = hardware.parse_cpu_list(text)
    except ValueError:
        cpus = []
    usable = hardware.usable_cpus()
    if not cpus or not set(cpus) <= set(usable):
        raise ValueError(
            f"--cpus {text!r}: give CPUs this process may use ({','.join(map(str, usable))}), "
            "e.g. --cpus 1"
        )
    return cpus


def pin(cpus: str | list[int] | None) -> list[int] | None:
    """Pin this process to ``cpus`` (a list, or ``--cpus`` text) before anything starts its
    threads; the CPUs, or None when none are given (then nothing changes)."""
    cpus = parse_cpus(cpus) if isinstance(cpus, str) else cpus
    if cpus:
        os.sched_setaffinity(0, cpus)
    return cpus or None


def cpus_for(text: str | None, started: bool) -> tuple[list[int] | None, list[int] | None]:
    """``(server CPUs, client CPUs)`` of ``python -m labkit load --cpus text``: ``auto`` (the
    default when it starts the server itself) splits them as :func:`cpu_split` does; CPUs given
    pin the client only."""
    if text == "auto" or (text is None and started):
        server, client, _why = cpu_split()
        return (server if started else None), client
    return None, parse_cpus(text)


@contextlib.contextmanager
def target(url: str | None, serve: str | None, cpus: list[int] | None, args) -> Iterator[str]:
    """The URL a load run drives: ``url``, or that of a server of ``serve`` (``F/M``) started
    here on ``cpus`` with ``args``' batching and stopped when the block ends, however it ends."""
    if serve is None:
        yield url
        return
    framework, _, mode = serve.partition("/")
    with Server(
        framework,
        mode,
        max_batch=args.max_batch,
        max_wait_ms=args.max_wait_ms,
        pad=args.pad,
        cpus=cpus,
    ) as server:
        print(f"labkit load: {server.log(400).strip().splitlines()[-1]}", file=sys.stderr)
        yield server.url


def _cpu_text(cpus: list[int] | None) -> list[str]:
    return [] if not cpus else ["--cpus", ",".join(map(str, cpus))]


def _env() -> dict[str, str]:
    return proc.child_env(None, extra={"LABKIT_PROFILE": profiles.current().name})


class Server:
    """A ``python -m labkit serve`` process: ``with Server("torch", "eager") as s: s.url``.

    ``cpus`` pins it (``"auto"``: :func:`cpu_split`'s server CPUs; None: not pinned); the
    other arguments are the ``serve`` command's. It runs in a private temporary folder
    (removed when it stops); :meth:`log` is what it said.
    """

    def __init__(
        self,
        framework: str,
        mode: str,
        *,
        max_batch: int = 1,
        max_wait_ms: float = 0.0,
        pad: bool | None = None,
        max_queue: int = 32,
        cpus: list[int] | str | None = "auto",
        threads: int | None = None,
        ready_timeout_s: float = 600.0,
    ):
        self.framework, self.mode = framework, mode
        self.cpus = cpu_split()[0] if cpus == "auto" else cpus
        self.args = ["--framework", framework, "--mode", mode, "--max-batch", str(max_batch)]
        self.args += ["--max-wait-ms", f"{max_wait_ms:g}", "--max-queue", str(max_queue)]
        self.args += _cpu_text(self.cpus)
        if pad is not None:
            self.args.append("--pad" if pad else "--no-pad")
        if threads is not None:
            self.args += ["--threads", str(threads)]
        self.ready_timeout_s = ready_timeout_s
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self.folder: Path | None = None
        self.command: list[str] = []  #: the command line it runs, as one would type it
        self._said = ""

    @property
    def url(self) -> str:
        return f"http://{net.LOOPBACK}:{self.port}"

    def log(self, chars: int = 4000) -> str:
        """The end of what the server wrote (kept after it stopped)."""
        if self.folder is not None:
            return proc.tail(self.folder / "server.log", chars)
        return self._said[-chars:]

    def start(self) -> Server:
        """Start the process and wait until the model is ready; ``RuntimeError`` with the end
        of its log when it dies or is not ready in time (it is stopped then)."""
        self.port = net.free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="labkit-serve-"))
        self.command = ["python", "-m", "labkit", "serve", *self.args, "--port", str(self.port)]
        command = [sys.executable, *self.command[1:], "--parent", str(os.getpid())]
        with open(self.folder / "server.log", "wb") as log:
            self.process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_env(),
                start_new_session=True,
                cwd=self.folder,
            )
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise RuntimeError(
                    f"the server ({self.framework}/{self.mode}) "
                    f"{proc.ended(self.process.returncode)}: {self.log(1500)}"
                )
            if self._ready():
                return self
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(
            f"the server ({self.framework}/{self.mode}) was not ready within "
            f"{self.ready_timeout_s:g} s: {self.log(1500)}"
        )

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/v2/models/{MODEL_NAME}/ready", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def metadata(self) -> dict:
        """The model's metadata (``GET /v2/models/resnet50``)."""
        with urllib.request.urlopen(f"{self.url}/v2/models/{MODEL_NAME}", timeout=10) as r:
            return json.loads(r.read())

    def stop(self) -> int | None:
        """Ctrl-C to the server, then its whole process group killed after 10 s; its exit
        status (None when it never started)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGINT)
                self.process.wait(timeout=10)
            except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
                pass
        proc.kill_group(self.process)
        if self.folder is not None:
            self._said = self.log()
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        return self.process.returncode

    def __enter__(self) -> Server:  # noqa: PYI034 - start() returns this very object
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def run_load(url: str, plan: Plan, cpus: list[int] | str | None = "auto") -> list[dict]:
    """Run ``python -m labkit load url`` with ``plan`` (pinned to ``cpus``; ``"auto"``:
    :func:`cpu_split`'s client CPU) and return its records, also appended to ``plan.out`` when
    it names a file. ``RuntimeError`` with its message when it fails without a record."""
    cpus = cpu_split()[1] if cpus == "auto" else cpus
    plan.check()
    with tempfile.TemporaryDirectory(prefix="labkit-load-") as tmp:
        part = Path(tmp) / "steps.jsonl"
        command = [sys.executable, "-m", "labkit", "load", url, *plan.arguments()]
        command += ["--out", str(part), "--parent", str(os.getpid()), *_cpu_text(cpus)]
        child = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=_env(),
            start_new_session=True,
        )
        try:
            text, _ = child.communicate(timeout=plan.seconds() + 60)
        except subprocess.TimeoutExpired:
            text = f"stopped after {plan.seconds() + 60:.0f} s"
        finally:
            proc.kill_group(child)
        found = results.load(part) if part.exists() else []
    if child.returncode != 0 and not found:
        raise RuntimeError(f"python -m labkit load {proc.ended(child.returncode)}: {text[-1500:]}")
    for record in found if plan.out is not None else ():
        results.append(plan.out, record)
    return found


def measure(
    framework: str,
    mode: str,
    plan: Plan,
    *,
    max_batch: int = 1,
    max_wait_ms: float = 0.0,
    pad: bool | None = None,
    pin: bool = True,
) -> list[dict]:
    """Serve ``framework``/``mode`` with that batching and drive it through ``plan``: the
    records (appended to ``plan.out``); the server is stopped afterwards whatever happens.
    ``pin``: server and client on separate CPUs (:func:`cpu_split`)."""
    cpus = "auto" if pin else None
    with Server(
        framework, mode, max_batch=max_batch, max_wait_ms=max_wait_ms, pad=pad, cpus=cpus
    ) as server:
        return run_load(server.url, plan, cpus=cpus)
