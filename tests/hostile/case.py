"""One hostile input of the command line, and the endings that are good for it.

A :class:`Case` is an argument vector (``{files}`` in a word stands for the case's folder of
files), what its ``prepare`` writes there before the run, and the set of good endings:

``refuse``
    exit code 2 and one line on stderr (bad input, named);
``fail``
    exit code 1 and a reason (a run that did not succeed says so);
``ok``
    exit code 0 with an output that is right (:mod:`tests.hostile.checks`, and the case's
    own ``check``);
``interrupted``
    exit code 130 and one line (Ctrl-C, sent by the runner after ``interrupt_after`` s).

``silent`` says what an exit code 0 means when ``ok`` is not among them (a wrong answer
printed as a right one), or what the case's ``check`` looks for.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: the endings a case may declare good
ENDINGS = ("refuse", "fail", "ok", "interrupted")
#: the kinds of hostility of the corpus
GROUPS = (
    "wrong-answer",
    "contradiction",
    "huge",
    "sweep",
    "lock",
    "cluster",
    "file",
    "overflow",
    "spec",
)

#: ``prepare(files, work)``: write what the case needs (``work`` is the working directory)
Prepare = Callable[[Path, Path], None]


@dataclass(frozen=True)
class Ran:
    """What a run left: its exit code, its output, and its two folders."""

    code: int
    out: str
    err: str
    files: Path
    work: Path


#: ``check(ran)``: why the run's result or leftovers are wrong, None when they are right
Check = Callable[[Ran], "str | None"]


@dataclass(frozen=True)
class Case:
    """A hostile input: argv, the files it needs, and its good endings (module docstring)."""

    id: str
    group: str
    argv: tuple[str, ...]
    expect: frozenset[str]
    silent: str = ""
    prepare: Prepare | None = None
    check: Check | None = None
    timeout: float = 60.0
    interrupt_after: float | None = None
    #: the good error comes after work (a training that diverged): progress lines may precede it
    after_work: bool = False

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(f"{self.id}: group {self.group!r} is none of {GROUPS}")
        if not self.expect or not self.expect <= set(ENDINGS):
            raise ValueError(f"{self.id}: endings {sorted(self.expect)} not among {ENDINGS}")

    def words(self, files: Path) -> list[str]:
        """The argument vector with ``{files}`` replaced by the case's folder."""
        return [w.replace("{files}", str(files)) for w in self.argv]


def case(
    id: str,
    group: str,
    argv: Sequence[str],
    expect: Sequence[str] = ("refuse",),
    **kwargs: object,
) -> Case:
    """A :class:`Case`; ``expect`` defaults to a refusal."""
    return Case(id, group, tuple(argv), frozenset(expect), **kwargs)  # type: ignore[arg-type]


def writes(*files: tuple[str, str | bytes]) -> Prepare:
    """Write ``(relative path, content)`` pairs under the case's folder (parents made)."""

    def prepare(root: Path, work: Path) -> None:
        for name, content in files:
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)

    return prepare


def both(*steps: Prepare) -> Prepare:
    """Run several preparations in order."""

    def prepare(root: Path, work: Path) -> None:
        for step in steps:
            step(root, work)

    return prepare


#: the lock file of an output directory (collabecon/cli/_lock.py)
LOCK = ".collabecon.lock"


def locked(directory: str, owner: object = None, *, in_work: bool = False) -> Prepare:
    """Put a lock file in ``directory`` (under the files, or the working directory).

    ``owner`` is the lock's content: by default a live owner, the runner's own process
    (alive for the whole run), as a concurrent writer; text is written as is.
    """

    def prepare(root: Path, work: Path) -> None:
        folder = (work if in_work else root) / directory
        folder.mkdir(parents=True, exist_ok=True)
        content = owner
        if content is None:
            content = {"pid": os.getpid(), "started": None, "command": ["collabecon", "demo"]}
        text = content if isinstance(content, str) else json.dumps(content)
        (folder / LOCK).write_text(text)

    return prepare


def fifo(name: str) -> Prepare:
    """A named pipe: opening it for reading waits for a writer that never comes."""

    def prepare(root: Path, work: Path) -> None:
        os.mkfifo(root / name)

    return prepare


def lock_left(directory: str) -> Check:
    """A run must not leave its lock behind in ``directory`` (under the files)."""

    def check(ran: Ran) -> str | None:
        if (ran.files / directory / LOCK).exists():
            return f"the lock of {directory} is left behind"
        return None

    return check
