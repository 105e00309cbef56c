"""The processes of a deployment, ended together however the process that started them ends.

A deployment (:func:`learning.runtimes.flower.deploy.launch`) starts a SuperLink, SuperNodes and
``flwr run`` as processes of their own, and they start more: Flower 1.42's SuperLink starts a
SuperExec in a POSIX session of its own, which starts the ServerApp; a SuperNode starts a
SuperExec and a ClientApp per message. :class:`Processes` starts each command in its own
POSIX session (so its own process group) with a token in its environment,
``COLLABECON_DEPLOYMENT=<token>``, which every process it starts inherits, and ends them all
when the ``with`` block ends. What is guaranteed where (POSIX only; ``os.killpg``):

- the block returns or raises: every process of the deployment gets SIGTERM, the ones left
  after ``grace`` seconds SIGKILL, and the block ends once none is left. On Linux "the
  deployment" is every live process whose environment holds the token (read from
  ``/proc/<pid>/environ``), wherever it sits in the process tree; elsewhere it is the
  process groups of the started commands (a process that starts a POSIX session of its own,
  as Flower's SuperExec does, is then left to end by itself: Flower's processes poll their
  parent every 0.2 s and exit when it is gone);
- SIGTERM, SIGHUP or SIGINT reaches the starting process while the block runs (in the main
  thread, for a signal whose handler is the default): :class:`Stopped` is raised there, the
  processes are ended as above and the signal is raised again with its default handler, so
  the starting process still ends by that signal. SIGINT under Python's own handler is a
  ``KeyboardInterrupt`` and ends them the same way;
- the starting process dies without running any handler (SIGKILL, ``os._exit``, a crash): on
  Linux the kernel sends SIGKILL to every started command at once
  (``prctl(PR_SET_PDEATHSIG)``; it fires when the thread that called :meth:`Processes.start`
  ends, so call it from the thread that runs the block). A watchdog, a small process in its
  own POSIX session started with the block, sees the pipe from the starting process close
  without the word that the block ended, and ends the rest of the deployment as above with a
  grace of :data:`ORPHAN_GRACE` seconds; where ``prctl`` is missing it ends the started
  commands too. Killing the watchdog as well (say a SIGKILL to every process of the user)
  leaves only the kernel's part.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

__all__ = ["ORPHAN_GRACE", "TOKEN_VARIABLE", "DeploymentFailed", "Processes", "Stopped"]

#: the environment variable that marks every process of a deployment
TOKEN_VARIABLE = "COLLABECON_DEPLOYMENT"

#: seconds the watchdog waits after SIGTERM before SIGKILL, once the starting process is dead
ORPHAN_GRACE = 1.0

_LINUX = sys.platform.startswith("linux")
_PR_SET_PDEATHSIG = 1
_DONE = b"done\n"
_POLL = 0.05
_KILL_WAIT = 5.0  # seconds for SIGKILLed processes to go


class Stopped(BaseException):
    """The starting process received signal ``args[0]`` while its deployment ran."""


class DeploymentFailed(RuntimeError):
    """A process of a deployment failed, or did not do its part in time (the logs say why)."""


def _carriers(token: str) -> set[int]:
    """Live processes (zombies left out) whose environment holds ``token`` (Linux)."""
    marker = f"{TOKEN_VARIABLE}={token}".encode()
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
            if stat[stat.rindex(b")") + 2 :].startswith((b"Z", b"X")):
                continue
            if marker in Path(entry.path, "environ").read_bytes().split(b"\0"):
                found.add(int(entry.name))
        except (OSError, ValueError):  # ended meanwhile, or not ours to read
            continue
    return found


def _send(groups: Collection[int], token: str, sig: int) -> bool:
    """Send ``sig`` (0: none) to every live process of the deployment; whether there was one.

    On Linux the processes carrying ``token``; elsewhere the process ``groups``.
    """
    if _LINUX:
        targets = _carriers(token)
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        return bool(targets)
    left = False
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, sig)
            left = True
    return left


def _end(
    groups: Collection[int],
    token: str,
    grace: float,
    children: Sequence[subprocess.Popen[bytes]] = (),
) -> None:
    """SIGTERM to every process of the deployment, SIGKILL to those left after ``grace`` seconds.

    Returns when none is left, or :data:`_KILL_WAIT` seconds after the SIGKILL. ``children``
    (the caller's own) are reaped on the way, so that none lingers as a zombie.
    """

    def left(sig: int) -> bool:
        for child in children:
            child.poll()
        return _send(groups, token, sig)

    if not left(signal.SIGTERM):
        return
    end = time.monotonic() + grace
    while time.monotonic() < end:
        time.sleep(_POLL)
        if not left(0):
            return
    end = time.monotonic() + _KILL_WAIT
    while left(signal.SIGKILL) and time.monotonic() < end:
        time.sleep(_POLL)


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the kernel SIGKILL the child when its starter thread ends.

    Linux ``prctl(PR_SET_PDEATHSIG)``; None where there is no ``prctl``.
    """
    if not _LINUX:
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    kill = int(signal.SIGKILL)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, kill)
        if os.getppid() != parent:  # the parent died before prctl
            os.kill(os.getpid(), kill)

    return preexec


class Processes:
    """Commands started for one deployment, each in its own POSIX session, ended together.

    They end when the ``with`` block ends, on SIGTERM/SIGHUP/SIGINT, and by a watchdog and
    the kernel when the starting process is killed (as the module docstring describes).

    Parameters
    ----------
    grace
        Seconds between SIGTERM and SIGKILL when the block ends.

    Raises
    ------
    ValueError
        ``grace`` is negative or not a number.
    RuntimeError
        Not a POSIX system (no process groups).
    """

    def __init__(self, grace: float = 10.0) -> None:
        if not grace >= 0:
            raise ValueError(f"grace must be a number of seconds >= 0, got {grace!r}")
        if not hasattr(os, "killpg"):
            raise RuntimeError("a deployment's processes are handled on POSIX systems only")
        self.grace = float(grace)
        self.token = uuid.uuid4().hex
        self.children: list[subprocess.Popen[bytes]] = []
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._previous: dict[int, Any] = {}
        self._received: int | None = None
        self._ending = False

    def start(
        self,
        args: Sequence[str],
        *,
        stdout: IO[bytes] | int | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start ``args`` in a POSIX session of its own, marked with the deployment's token.

        stderr goes where stdout goes, stdin is ``/dev/null``.
        """
        if self._watchdog is None:
            raise ValueError("Processes.start runs inside its `with` block")
        child = subprocess.Popen(
            list(args),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            env={**(os.environ if env is None else env), TOKEN_VARIABLE: self.token},
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent(),
        )
        self.children.append(child)
        self._tell(f"{child.pid}\n".encode())
        return child

    def pids(self) -> set[int]:
        """The live processes of the deployment.

        On Linux every process carrying the token (those the started commands started
        included); elsewhere the started commands still running.
        """
        if _LINUX:
            return _carriers(self.token)
        return {child.pid for child in self.children if child.poll() is None}

    def _tell(self, line: bytes) -> None:
        assert self._watchdog is not None and self._watchdog.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # a killed watchdog: the block still ends them
            self._watchdog.stdin.write(line)
            self._watchdog.stdin.flush()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._received is None:
            self._received = signum
            if not self._ending:
                raise Stopped(signum)

    def __enter__(self) -> Processes:
        """Start the watchdog and, in the main thread, catch SIGTERM, SIGHUP and SIGINT.

        Only a signal whose handler is the default is caught; while the block runs it raises
        :class:`Stopped`, and one received as the block begins ends it as the block would.
        """
        self._watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", str(Path(__file__).resolve()), self.token],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        if threading.current_thread() is threading.main_thread():
            try:
                for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                    if signal.getsignal(sig) == signal.SIG_DFL:
                        self._previous[sig] = signal.signal(sig, self._on_signal)
            except Stopped as stopped:  # a signal before the block: end as the block would
                self.__exit__(Stopped, stopped, None)
                raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        """End every started process and the watchdog, and restore the signal handlers.

        SIGTERM, then SIGKILL after ``grace`` seconds, to every process of the deployment;
        then the watchdog is told that the block ended. An exception of the block propagates.
        """
        self._ending = True
        assert self._watchdog is not None and self._watchdog.stdin is not None
        try:
            _end([c.pid for c in self.children], self.token, self.grace, self.children)
            for child in self.children:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=self.grace)
            self._tell(_DONE)
            with contextlib.suppress(BrokenPipeError):
                self._watchdog.stdin.close()
            self._watchdog.wait()
        finally:
            for sig, previous in self._previous.items():
                signal.signal(sig, previous)
        if self._received is not None:
            signal.raise_signal(self._received)


def _watch(token: str) -> None:
    """The watchdog: read the started groups from stdin, end the deployment if cut off.

    At the end of stdin without the word that the block ended, end the deployment.
    """
    groups = []
    for line in sys.stdin.buffer:
        if line == _DONE:
            return
        groups.append(int(line))
    _end(groups, token, ORPHAN_GRACE)


if __name__ == "__main__":
    _watch(sys.argv[1])
