"""The command's log on stderr: one handler on the ``collabecon`` logger for one command.

:func:`configured` puts a handler on the ``collabecon`` logger (:mod:`econ._log`, the
logger of every module of the four packages) for the length of one command and sets the
logger's level from the global flags (:func:`level_of`); afterwards both are as before, so
``main`` can be called again in one process. A record reads like the command's other
lines on stderr::

    collabecon demo: [2/8] complete (15 rounds)
    collabecon sweep: warning: run 3f2a (lr=1e+38, seed=0) failed: DivergedError: ...

the command named by the record's ``command`` attribute where it has one (a phase line of
``bench engine``), else by the subcommand; a warning says ``warning:``. With ``--verbose``
each line starts with its time and level instead::

    2026-11-27 10:41:07,316 DEBUG collabecon train: round 5: train loss 0.41, ...

Lines are written through ``tqdm.write`` when tqdm is loaded, so a progress bar on stderr
is redrawn below them instead of being cut. stdout is never written.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator

from econ._log import NAMESPACE

__all__ = ["configured", "level_of"]

_LABELS = {logging.WARNING: "warning: ", logging.ERROR: "error: ", logging.CRITICAL: "error: "}


def level_of(*, quiet: bool, verbose: bool, json: bool) -> int:
    """The level of the ``collabecon`` logger for a command run with these flags.

    ``--verbose``: ``DEBUG``; ``--quiet``: ``WARNING`` (no progress, warnings and errors
    only); ``--json`` alone: ``WARNING`` as well (stderr carries no progress, stdout only the
    JSON); otherwise ``INFO`` (progress and warnings).
    """
    if quiet and verbose:
        raise ValueError("--quiet and --verbose exclude each other: choose one")
    if verbose:
        return logging.DEBUG
    return logging.WARNING if quiet or json else logging.INFO


class _Format(logging.Formatter):
    """``collabecon COMMAND: message``, after the time and level when ``stamped``."""

    def __init__(self, command: str, *, stamped: bool) -> None:
        super().__init__()
        self.command = command
        self.stamped = stamped

    def format(self, record: logging.LogRecord) -> str:
        command = getattr(record, "command", self.command)
        if self.stamped:
            text = f"{self.formatTime(record)} {record.levelname} collabecon {command}: "
        else:
            text = f"collabecon {command}: {_LABELS.get(record.levelno, '')}"
        text += record.getMessage()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class _Stderr(logging.Handler):
    """Writes each record on the ``sys.stderr`` of the moment, through tqdm when loaded."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            tqdm = sys.modules.get("tqdm")
            if tqdm is not None:
                tqdm.tqdm.write(text, file=sys.stderr)
            else:
                sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def configured(command: str, level: int) -> Iterator[logging.Handler]:
    """The ``collabecon`` logger at ``level``, writing to stderr for ``command``, in the block."""
    logger = logging.getLogger(NAMESPACE)
    handler = _Stderr()
    handler.setFormatter(_Format(command, stamped=level <= logging.DEBUG))
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
