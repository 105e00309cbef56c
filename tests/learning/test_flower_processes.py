"""A deployment's processes end with it: on return, on error, and when the process that
started them gets SIGTERM, SIGHUP, SIGINT or SIGKILL (:mod:`learning.runtimes.flower.processes`).

The fast tests start stand-ins for the SuperLink and SuperNodes: a Python process that
starts one ``sleep`` in its own process group and one in a POSIX session of its own (as Flower's
SuperLink starts its SuperExec). The slow test kills a real deployment mid-run. Whether a
process is left is read from ``/proc`` (a zombie counts as gone), so the tests run on Linux.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import learning
from learning.runtimes.flower.processes import TOKEN_VARIABLE, Processes

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads processes from /proc"
)

ROOT = Path(learning.__file__).resolve().parents[1]

#: a SuperLink's stand-in: one child in its own group, one in a POSIX session of its own; it
#: notes a SIGTERM in the file ``argv[1]`` and ends
STAND_IN = (
    "import signal, subprocess, sys, time\n"
    "def end(signum, frame):\n"
    "    with open(sys.argv[1], 'a') as log:\n"
    "        log.write('SIGTERM\\n')\n"
    "    raise SystemExit(0)\n"
    "signal.signal(signal.SIGTERM, end)\n"
    "subprocess.Popen(['sleep', '600'])\n"
    "subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
    "time.sleep(600)\n"
)

#: the same, deaf to SIGTERM (its children inherit the ignored signal)
DEAF_STAND_IN = STAND_IN.replace(
    "signal.signal(signal.SIGTERM, end)", "signal.signal(signal.SIGTERM, signal.SIG_IGN)"
)

#: starts two stand-ins (``argv[1]``: the file they note a SIGTERM in), prints the token
#: and waits to be killed
LAUNCHER = (
    "import sys, time\n"
    "from learning.runtimes.flower.processes import Processes\n"
    "with Processes() as processes:\n"
    "    for _ in range(2):\n"
    "        processes.start([sys.executable, '-c', sys.argv[1], sys.argv[2]])\n"
    "    print(processes.token, flush=True)\n"
    "    time.sleep(600)\n"
)


def _live(marked: Callable[[bytes, bytes], bool]) -> set[int]:
    """Live processes (zombies left out) whose environment and command line satisfy
    ``marked``."""
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
            if stat[stat.rindex(b")") + 2 :].startswith((b"Z", b"X")):
                continue
            environ = Path(entry.path, "environ").read_bytes()
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        if marked(environ, cmdline):
            found.add(int(entry.name))
    return found


def _of_token(token: str) -> set[int]:
    """The deployment's processes (the token in the environment) and its watchdog (the
    token on the command line)."""
    marker = f"{TOKEN_VARIABLE}={token}".encode()
    return _live(lambda environ, cmdline: marker in environ or token.encode() in cmdline)


#: how long a poll waits before it calls the process hung: generous, so that a loaded
#: machine cannot fail a test that an idle one passes (no test bounds a duration from above)
HANG_S = 120.0


def _eventually(condition: Callable[[], bool], seconds: float = HANG_S) -> bool:
    """Poll ``condition`` until it holds (True) or ``seconds`` have passed (False)."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


def _signals_as_in_a_terminal() -> None:
    """The launcher starts with SIGINT's and SIGHUP's default dispositions, as from a
    terminal, whatever the test runner inherited: a process started in the background of a
    non-interactive shell ignores SIGINT, one started under ``nohup`` ignores SIGHUP, and so
    would a launcher started from either (it leaves an ignored signal ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _kill(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("raises", [False, True])
def test_the_block_ends_every_process_it_started_and_theirs(raises, tmp_path):
    log = tmp_path / "sigterm.log"
    processes = Processes()
    try:
        with pytest.raises(RuntimeError) if raises else contextlib.nullcontext(), processes:
            for _ in range(2):
                processes.start([sys.executable, "-c", STAND_IN, str(log)])
            # two stand-ins, two sleeps each, the watchdog
            assert _eventually(lambda: len(_of_token(processes.token)) == 7)
            if raises:
                raise RuntimeError("the run failed")
        assert not _of_token(processes.token)
        assert [child.returncode for child in processes.children] == [0, 0]
        assert log.read_text() == "SIGTERM\n" * 2
    finally:
        _kill(_of_token(processes.token))


def test_a_process_deaf_to_sigterm_is_killed_after_the_grace(tmp_path):
    processes = Processes(grace=0.3)
    try:
        with processes:
            processes.start([sys.executable, "-c", DEAF_STAND_IN, str(tmp_path / "log")])
            assert _eventually(lambda: len(_of_token(processes.token)) == 4)
            start = time.monotonic()
        seconds = time.monotonic() - start
        assert not _of_token(processes.token)
        assert processes.children[0].returncode == -signal.SIGKILL
        assert seconds >= 0.3  # it had its grace; the SIGKILL above shows it got no more
    finally:
        _kill(_of_token(processes.token))


@pytest.mark.parametrize(
    "sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name
)
def test_a_killed_launcher_leaves_no_process_of_its_deployment(sig, tmp_path):
    """The launcher ends by the signal it got, and then nothing it started is left.
    SIGTERM, SIGHUP and SIGINT end the stand-ins in order (each notes its SIGTERM) before
    the launcher goes; after SIGKILL the kernel kills the stand-ins and the watchdog their
    children."""
    log = tmp_path / "sigterm.log"
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, STAND_IN, str(log)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        preexec_fn=_signals_as_in_a_terminal,
    )
    token = ""
    try:
        assert launcher.stdout is not None
        token = launcher.stdout.readline().decode().strip()
        assert _eventually(lambda: len(_of_token(token)) == 7)
        launcher.send_signal(sig)
        assert launcher.wait(timeout=HANG_S) == -sig
        assert _eventually(lambda: not _of_token(token)), _of_token(token)
        if sig != signal.SIGKILL:
            assert log.read_text() == "SIGTERM\n" * 2
    finally:
        launcher.kill()
        launcher.wait()
        if token:
            _kill(_of_token(token))


def test_bad_use_is_refused():
    with pytest.raises(ValueError, match="grace"):
        Processes(grace=-1.0)
    with pytest.raises(ValueError, match="with"):
        Processes().start(["true"])


def _deployment_processes(home: Path) -> set[int]:
    """The processes of a deployment whose ``FLWR_HOME`` is ``home``."""
    marker = f"FLWR_HOME={home}".encode()
    return _live(lambda environ, cmdline: marker in environ.split(b"\0"))


@pytest.mark.slow
@pytest.mark.flower
def test_a_deployment_killed_mid_run_leaves_no_process(tmp_path):
    """A real SuperLink and two SuperNodes; the process running :func:`deploy` gets SIGKILL
    while a ClientApp trains: then none of the deployment's processes is left (the
    SuperLink, SuperNodes, ``flwr run``, the SuperExecs, the ServerApp, the ClientApps)."""
    script = (
        "import sys\n"
        "from learning.train import TrainConfig\n"
        "from learning.runtimes.flower.deploy import deploy\n"
        "config = TrainConfig(algorithm='fedavg', dataset='digits', model='mlp', clients=2,\n"
        "                     rounds=50, local_steps=2)\n"
        "deploy(config, sys.argv[1], port=8730)\n"
    )
    home = tmp_path / "flwr-home"
    launcher = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def client_app_running() -> bool:
        return any(
            b"flwr-clientapp" in Path(f"/proc/{pid}/cmdline").read_bytes()
            for pid in _deployment_processes(home)
        )

    try:
        assert _eventually(client_app_running, 600), "no ClientApp started"
        seen = len(_deployment_processes(home))
        launcher.kill()
        launcher.wait()
        assert _eventually(lambda: not _deployment_processes(home)), _deployment_processes(home)
        print(f"{seen} processes, none left after the SIGKILL")
    finally:
        launcher.kill()
        launcher.wait()
        _kill(_deployment_processes(home))
