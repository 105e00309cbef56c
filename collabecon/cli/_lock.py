"""One writer per output directory: a lock file that names its owner.

A subcommand that writes into ``--out`` or ``--checkpoint`` holds the lock file
``.collabecon.lock`` in that directory for the whole run. The file holds the owner's process
id, the start time of that process (so a recycled process id is not mistaken for the owner)
and its command line. A second run that asks for the same directory while the owner lives is
refused with one line; a lock whose owner is gone (killed, crashed, machine restarted) is
taken over with a warning in the log (:mod:`econ._log`; the command line shows it on stderr).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from econ._log import get_logger

_log = get_logger(__name__)

__all__ = ["LOCK_NAME", "holding", "output_lock", "refuse_if_held"]

#: the lock file's name inside the directory it guards
LOCK_NAME = ".collabecon.lock"


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: split after it
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(owner: dict[str, object]) -> bool:
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # gone, or no process id at all
        return False
    except PermissionError:  # a process of another user holds the id
        pass
    started = owner.get("started")
    return started is None or _start_time(pid) in (None, started)


def _read_owner(lock: Path) -> dict[str, object]:
    try:
        owner = json.loads(lock.read_text())
    except (OSError, ValueError):
        return {}
    return owner if isinstance(owner, dict) else {}


def _create(lock: Path, text: str) -> bool:
    """Create ``lock`` holding ``text`` unless it exists (atomic); True when created."""
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return True


@contextlib.contextmanager
def output_lock(flag: str, path: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the lock of the output directory ``path`` for the duration of the block.

    The directory is created if missing; on exit the lock file is removed, and so are the
    directories the lock created if the run left them empty.

    Parameters
    ----------
    flag : str
        The flag that named the directory (``"--out"``), for the messages.
    path : path
        The directory.

    Yields
    ------
    Path
        The directory.

    Raises
    ------
    ValueError
        One line: ``path`` is empty, or a live process (named by its id and command) holds
        the directory.
    """
    if str(path).strip() == "":
        raise ValueError(f"{flag} must name a directory, got an empty path")
    from collabecon.cli._paths import writable_dir

    directory = Path(path)
    writable_dir(flag, directory)
    created = [p for p in (directory, *directory.parents) if not p.exists()]
    directory.mkdir(parents=True, exist_ok=True)
    lock = directory / LOCK_NAME
    if lock.is_symlink() or (lock.exists() and not lock.is_file()):
        raise ValueError(
            f"{flag} {str(directory)!r} holds {LOCK_NAME}, which is not a plain file: "
            "remove it, or choose another directory"
        )
    me = {"pid": os.getpid(), "started": _start_time(os.getpid()), "command": sys.argv}
    text = json.dumps(me)
    while not _create(lock, text):
        owner = _read_owner(lock)
        if _alive(owner):
            argv = owner.get("command")
            command = " ".join(str(a) for a in argv) if isinstance(argv, list) else ""
            raise ValueError(
                f"{flag} {str(directory)!r} is in use by a running process "
                f"(pid {owner['pid']}: {command or 'unknown command'}); wait for it to finish "
                "or choose another directory"
            )
        _log.warning(
            "taking over the stale lock of %s %r (process %s is gone)",
            flag,
            str(directory),
            owner.get("pid", "?"),
        )
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
    try:
        yield directory
    finally:
        if _read_owner(lock).get("pid") == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
        for made in created:  # deepest first
            try:
                made.rmdir()
            except OSError:
                break


def refuse_if_held(flag: str, path: str | os.PathLike[str]) -> None:
    """Refuse a directory whose lock a live process holds, without taking the lock.

    For a command that writes into a directory of its own below ``path`` (a sweep's
    ``OUT/CONFIG.runs``) and so holds that one's lock.

    Raises
    ------
    ValueError
        One line naming ``flag``, the directory and the owner's process id.
    """
    lock = Path(path) / LOCK_NAME
    if not lock.is_file():
        return
    owner = _read_owner(lock)
    if _alive(owner):
        raise ValueError(
            f"{flag} {str(path)!r} is in use by a running process (pid {owner['pid']}); "
            "wait for it to finish or choose another directory"
        )


@contextlib.contextmanager
def holding(outputs: Sequence[tuple[str, object]]) -> Iterator[None]:
    """Hold the locks of every ``(flag, directory)`` pair whose directory is given."""
    with contextlib.ExitStack() as stack:
        seen: set[Path] = set()
        for flag, path in outputs:
            if path is None:
                continue
            if not isinstance(path, (str, os.PathLike)):
                raise TypeError(f"{flag}: a directory path, got {type(path).__name__}")
            resolved = Path(path).resolve() if str(path).strip() else Path(str(path))
            if resolved in seen:
                continue
            seen.add(resolved)
            stack.enter_context(output_lock(flag, path))
        yield
