"""Output and checkpoint directories checked before any work starts.

A subcommand that writes calls :func:`writable_dir` for each of its directory flags first
thing, so an unusable ``--out`` or ``--checkpoint`` is a one-line error (exit code 2) before
any training rather than after it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["directory", "writable_dir"]


def directory(text: str) -> Path:
    """An argparse type for a directory flag: a path that is not empty.

    ``Path("")`` is the working directory; an empty ``--out ''`` is refused instead.

    Raises
    ------
    argparse.ArgumentTypeError
        ``text`` is empty or only white space; argparse names the flag.
    """
    import argparse

    if not text.strip():
        raise argparse.ArgumentTypeError(f"must name a directory, got {text!r}")
    return Path(text)


def _describe(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def writable_dir(flag: str, path: str | os.PathLike[str] | None) -> Path | None:
    """Check that ``path`` is, or can be made, a directory this process can write into.

    A missing directory is created (with its missing parents) and a temporary file is
    written and removed in it; the directories created for the check are removed again, so a
    run that fails later leaves nothing behind. Testing with a real file, rather than the
    permission bits, gives the answer of the operating system (a superuser, a read-only
    file system, an ACL).

    Parameters
    ----------
    flag : str
        The command-line flag that named ``path`` (``"--out"``), for the message.
    path : path or None
        The directory; None (flag not given) is returned unchecked.

    Returns
    -------
    Path or None
        ``path`` as a :class:`~pathlib.Path`.

    Raises
    ------
    ValueError
        One line naming ``flag`` and ``path``: it is a file, lies under a file, or cannot be
        created or written.
    """
    if path is None:
        return None
    directory = Path(path)
    try:
        _check(flag, directory)
    except OSError as exc:  # a name too long, a loop of links
        raise ValueError(f"{flag} {str(directory)!r}: {_describe(exc)}") from None
    return directory


def _check(flag: str, directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{flag} {str(directory)!r} is a file, not a directory")
    for parent in directory.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(
                    f"{flag} {str(directory)!r} lies under {str(parent)!r}, which is a file"
                )
            break
    created = [p for p in (directory, *directory.parents) if not p.exists()]
    try:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"{flag} {str(directory)!r}: the directory cannot be created ({_describe(exc)})"
            ) from None
        try:
            with tempfile.TemporaryFile(dir=directory):
                pass
        except OSError as exc:
            raise ValueError(
                f"{flag} {str(directory)!r}: the directory is not writable ({_describe(exc)})"
            ) from None
    finally:
        for made in created:  # deepest first
            try:
                made.rmdir()
            except OSError:
                break
