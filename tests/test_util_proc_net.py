"""labkit.util.proc and labkit.util.net, on real processes and real sockets."""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

from labkit.util import net, proc

import psutil
import pytest


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_gone(pids, timeout: float = 15.0) -> list[int]:
    """The pids that still run after ``timeout`` seconds."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        left = [p for p in pids if not _gone(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if not _gone(p)]


def _wait_file(path, timeout: float = 30.0) -> str:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} was not written within {timeout} s")


# ---------------------------------------------------------------------------------------------
# the environment


def test_the_thread_policy_is_explicit(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    lab = proc.child_env(3)
    assert {k: lab[k] for k in proc.THREAD_ENV} == dict.fromkeys(proc.THREAD_ENV, "3")
    assert lab["TF_NUM_INTEROP_THREADS"] == "1"
    own = proc.child_env(None)  # the frameworks' defaults: the user's settings pass through
    assert own["OMP_NUM_THREADS"] == "7" and "TF_NUM_INTEROP_THREADS" not in own


def test_child_env_paths_drops_and_extras(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/elsewhere", "", str(proc.ROOT)]))
    monkeypatch.setenv("STALE_CLUSTER", "x")
    env = proc.child_env(2, path=[tmp_path], extra={"OMP_NUM_THREADS": "5"}, drop=["STALE_CLUSTER"])
    assert env["PYTHONPATH"].split(os.pathsep) == [str(proc.ROOT), str(tmp_path), "/elsewhere"]
    assert "STALE_CLUSTER" not in env and env["OMP_NUM_THREADS"] == "5"
    assert env["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] == "python"


def test_a_child_started_with_it_imports_this_labkit_and_gets_the_threads(tmp_path):
    code = "import json, os, labkit; print(json.dumps([labkit.__file__, os.environ['MKL_NUM_THREADS']]))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=proc.child_env(2),
        cwd=tmp_path,  # nowhere near the checkout: only PYTHONPATH can find labkit
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    where, threads = json.loads(out.stdout)
    assert where == str(proc.ROOT / "labkit" / "__init__.py") and threads == "2"


# ---------------------------------------------------------------------------------------------
# stopping

SPAWN_GRANDCHILD = textwrap.dedent(
    """
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(sys.argv[1], "w") as f:
        f.write(f"{child.pid}\\n")
    time.sleep(120)
    """
)


def test_kill_group_ends_the_child_and_what_it_started(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    child = subprocess.Popen(
        [sys.executable, "-c", SPAWN_GRANDCHILD, str(pid_file)], start_new_session=True
    )
    grandchild = int(_wait_file(pid_file))
    proc.kill_group(child)
    assert child.returncode == -signal.SIGKILL
    assert _wait_gone([grandchild]) == []
    proc.kill_group(child)  # a group already gone is no error


def test_stop_processes_terminates_then_kills_what_ignores_sigterm(tmp_path):
    ignore_term = (
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(120)"
    )
    stubborn = subprocess.Popen(
        [sys.executable, "-c", ignore_term], stdout=subprocess.PIPE, text=True
    )
    polite = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    assert stubborn.stdout.readline().strip() == "ready"  # its SIGTERM handler is in place
    both = [psutil.Process(stubborn.pid), psutil.Process(polite.pid)]
    t0 = time.monotonic()
    proc.stop_processes(both, grace_s=0.5)
    # psutil reaped them and kept how each ended
    assert [p.returncode for p in both] == [-signal.SIGKILL, -signal.SIGTERM]
    assert time.monotonic() - t0 >= 0.4  # the stubborn one had its grace period first
    stubborn.stdout.close()


WATCHED = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from labkit.util import proc
    folder, pids = sys.argv[1], sys.argv[2]
    proc.exit_with_parent(os.getppid(), remove=folder)
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(pids, "w") as f:
        f.write(f"{os.getpid()} {helper.pid}\\n")
    time.sleep(120)
    """
)
#: starts WATCHED in a session of its own (as the runner starts a cell), then waits
PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from labkit.util import proc
    subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]],
                     env=proc.child_env(None), start_new_session=True)
    time.sleep(120)
    """
)


def test_a_child_exits_with_its_parent_killed_by_sigkill(tmp_path):
    folder, pids = tmp_path / "work", tmp_path / "pids.txt"
    folder.mkdir()
    (folder / "scratch.txt").write_text("the dead parent cannot delete this")
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, WATCHED, str(folder), str(pids)], env=proc.child_env(None)
    )
    try:
        child, helper = map(int, _wait_file(pids).split())
        assert not _gone(child) and not _gone(helper)
        parent.kill()
        parent.wait(timeout=10)
        assert _wait_gone([child, helper]) == [], "an orphan kept running"
        assert not folder.exists()
    finally:
        parent.kill()


# ---------------------------------------------------------------------------------------------
# why it ended, what it said


def _exit_status(code: str) -> int:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, check=False).returncode


def test_how_a_real_process_ended_in_words():
    segv = _exit_status("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert proc.ended(segv) == "killed by SIGSEGV"
    assert proc.crash_reason(segv, "", "the cell") == "the cell crashed (killed by SIGSEGV)"
    killed = _exit_status("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    reason = proc.crash_reason(killed, "", fix="use less")
    assert reason.startswith("killed by SIGKILL: most likely the out-of-memory killer")
    assert reason.endswith("; use less")
    three = _exit_status("raise SystemExit(3)")
    assert proc.ended(three) == "exited with status 3"
    assert proc.crash_reason(three, "") == "the process exited with status 3 without a result"
    oom = proc.crash_reason(1, "Traceback...\nMemoryError\n", "the worker")
    assert oom == "out of memory: the worker died (exit status 1) running out of memory"
    assert proc.ended(-77) == "killed by signal 77"


def test_tail_and_last_lines(tmp_path):
    log = tmp_path / "log.txt"
    log.write_bytes(b"x" * 3000 + "\nend é".encode() + b"\xff")  # 8 bytes after the x's
    assert proc.tail(log, 8) == "\nend é\ufffd"  # a byte that is not UTF-8 is replaced
    assert proc.tail(log) == "x" * 1992 + "\nend é\ufffd"
    assert proc.tail(tmp_path / "missing.txt") == ""
    assert proc.last_lines("a\n\n b \nc\n  \n", 2) == [" b ", "c"]
    assert proc.last_lines("a\nb", 0) == []


# ---------------------------------------------------------------------------------------------
# ports and interfaces


def test_free_port_is_free_and_bindable():
    port = net.free_port()
    assert net.check_port(port) == port
    with socket.socket() as s:
        s.bind((net.LOOPBACK, port))


def test_a_port_held_on_the_host_is_refused_with_the_address():
    with socket.socket() as busy:
        busy.bind((net.LOOPBACK, 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(net.PortInUse, match=rf"^port {port} on 127\.0\.0\.1 is already in use"):
            net.check_port(port)


def test_a_port_held_on_every_interface_is_refused():
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(net.PortInUse, match=rf"port {port} .*(already in use)"):
            net.check_port(port)


@pytest.mark.parametrize("bad", [0, 70000, True, "8080", 80.0])
def test_a_number_that_is_not_a_port_is_a_value_error(bad):
    with pytest.raises(ValueError, match="port must be an integer in 1..65535"):
        net.check_port(bad)


def test_interface_of_names_the_loopback_interface():
    name = net.interface_of(net.LOOPBACK)
    assert name in psutil.net_if_addrs()
    assert any(a.address == net.LOOPBACK for a in psutil.net_if_addrs()[name])
    assert net.interface_of("203.0.113.7") is None  # TEST-NET-3: on no interface here
