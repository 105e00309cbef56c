"""The ports of a deployment: in range, free before it starts, held by its own processes.

A deployment on this machine (:func:`learning.runtimes.flower.deploy.launch`) listens on
``port`` (the SuperLink: Fleet, Control and runtime APIs) and on ``port + 100 + k`` (the
runtime API of SuperNode ``k``), all on ``127.0.0.1``. Before any process starts,
:func:`refuse_taken` binds each port once itself and refuses a port another process holds;
nothing is sent to that process (a bind, not a connection). Once a process of the
deployment listens, :func:`wait_until_listening` checks on Linux, from ``/proc/net/tcp`` and
``/proc/net/tcp6`` and the socket links under ``/proc/<pid>/fd``, that every socket listening
on that port at an address a client of ``127.0.0.1`` could reach (``127.0.0.1``, the
wildcards ``0.0.0.0`` and ``::``, ``::ffff:127.0.0.1``) belongs to a process of the
deployment. Elsewhere the wait is a plain TCP connection, and the run's TLS certificate is
what tells the deployment's clients the SuperLink from another listener.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Collection
from pathlib import Path

from learning.runtimes.flower.processes import DeploymentFailed

__all__ = [
    "LOOPBACK",
    "check_ports",
    "listening_inodes",
    "node_port",
    "refuse_taken",
    "socket_inodes",
    "wait_until_listening",
]

#: the address every process of a deployment on this machine binds and dials
LOOPBACK = "127.0.0.1"

_HIGHEST = 65535
_NODE_OFFSET = 100
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
_REACHABLE = {
    ipaddress.ip_address("127.0.0.1"),
    ipaddress.ip_address("0.0.0.0"),
    ipaddress.ip_address("::"),
    ipaddress.ip_address("::ffff:127.0.0.1"),
}


def node_port(port: int, k: int) -> int:
    """The port of SuperNode ``k``'s runtime API: ``port + 100 + k``."""
    return int(port) + _NODE_OFFSET + int(k)


def _ports(port: int, nodes: int) -> list[tuple[str, int]]:
    """``(what, number)`` of every port of a deployment of ``nodes`` SuperNodes."""
    return [("the SuperLink's", int(port))] + [
        (f"SuperNode {k}'s, --port + {_NODE_OFFSET + k}", node_port(port, k))
        for k in range(int(nodes))
    ]


def check_ports(flag: str, port: int, nodes: int) -> None:
    """Refuse a ``port`` outside 1-65535, or one whose SuperNodes' ports pass 65535.

    Parameters
    ----------
    flag : str
        The flag that gave ``port`` (``"--port"``), for the message.
    port : int
        The SuperLink's port.
    nodes : int
        The number of SuperNodes (0: the SuperLink's port alone).

    Raises
    ------
    ValueError
        One line naming ``flag`` and the port out of range.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= _HIGHEST:
        raise ValueError(f"{flag} must be a port number in 1-{_HIGHEST}, got {port!r}")
    last = node_port(port, nodes - 1) if nodes > 0 else port
    if last > _HIGHEST:
        highest = _HIGHEST - _NODE_OFFSET - nodes + 1
        fix = (
            f"choose --port <= {highest}"
            if highest >= 1
            else f"at most {_HIGHEST - _NODE_OFFSET} SuperNodes have ports"
        )
        raise ValueError(
            f"{flag} {port}: SuperNode {nodes - 1}'s port would be {last} (--port + "
            f"{_NODE_OFFSET + nodes - 1}), above {_HIGHEST}; {fix}"
        )


def refuse_taken(flag: str, port: int, nodes: int, host: str = LOOPBACK) -> None:
    """Refuse the deployment when another process holds one of its ports on ``host``.

    Each port is bound once (``SO_REUSEADDR``, as the SuperLink and SuperNodes bind) and
    released at once; a port held by a listening socket, or one this process may not bind,
    is refused. No connection is made.

    Raises
    ------
    ValueError
        One line naming ``flag``, the port, whose port it is and why it cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for what, number in _ports(port, nodes):
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, number))
            except OSError as exc:
                reason = exc.strerror or type(exc).__name__
                raise ValueError(
                    f"{flag} {port}: port {number} ({what}) on {host} cannot be used: "
                    f"{reason}; choose another --port"
                ) from None


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as ``/proc/net/tcp*`` prints it: 32-bit words in host byte order."""
    words = [int(hex_address[i : i + 8], 16) for i in range(0, len(hex_address), 8)]
    return ipaddress.ip_address(b"".join(struct.pack("=I", w) for w in words))


def listening_inodes(port: int) -> set[int] | None:
    """Inodes of the sockets listening on ``port`` at an address a loopback client reaches.

    Read from ``/proc/net/tcp`` and ``/proc/net/tcp6``; None where they do not exist (not
    Linux).
    """
    found: set[int] = set()
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if not any(t.exists() for t in tables):
        return None
    for table in tables:
        with contextlib.suppress(FileNotFoundError):
            for line in table.read_text().splitlines()[1:]:
                fields = line.split()
                address, _, hex_port = fields[1].partition(":")
                if (
                    fields[3] == _LISTEN
                    and int(hex_port, 16) == port
                    and _address(address) in _REACHABLE
                ):
                    found.add(int(fields[9]))
    return found


def socket_inodes(pids: Collection[int]) -> set[int]:
    """Inodes of the sockets that processes ``pids`` hold open (Linux, ``/proc/<pid>/fd``)."""
    found = set()
    for pid in pids:
        try:
            entries = list(os.scandir(f"/proc/{pid}/fd"))
        except OSError:  # ended meanwhile, or not ours to read
            continue
        for entry in entries:
            with contextlib.suppress(OSError):
                target = os.readlink(entry.path)
                if target.startswith("socket:["):
                    found.add(int(target[len("socket:[") : -1]))
    return found


def wait_until_listening(
    flag: str,
    port: int,
    what: str,
    process: subprocess.Popen[bytes],
    ours: Callable[[], Collection[int]],
    timeout: float,
) -> None:
    """Wait until ``process`` listens on ``port``, and check that no other process does.

    Parameters
    ----------
    flag : str
        The flag that chose the ports (``"--port"``), for the messages.
    port : int
        The port.
    what : str
        Whose port it is (``"the SuperLink"``), for the messages.
    process : subprocess.Popen
        The process that should listen.
    ours : callable
        The process ids of the deployment (the listening socket may be held by any of them).
    timeout : float
        Seconds to wait.

    Raises
    ------
    ValueError
        Another process listens on ``port`` (Linux), or ``process`` exited while another
        process holds the port; one line naming ``flag`` and the port.
    DeploymentFailed
        ``process`` exited, or did not listen within ``timeout`` seconds.
    """
    end = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            try:
                refuse_taken(flag, port, 0)
            except ValueError:
                raise ValueError(
                    f"{flag}: port {port} was taken by another process as {what} started"
                ) from None
            raise DeploymentFailed(f"{what} exited with code {process.returncode}")
        listening = listening_inodes(port)
        if listening is None:  # no /proc/net: a connection tells that something listens
            with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), 1.0):
                return
        elif listening:
            strangers = listening - socket_inodes(ours())
            if strangers:
                raise ValueError(
                    f"{flag}: another process listens on port {port} beside {what}; "
                    "refusing to send it the run"
                )
            return
        if time.monotonic() > end:
            raise DeploymentFailed(f"{what} did not listen on port {port} within {timeout:g} s")
        time.sleep(0.2)
