"""The progress of a long command: phase lines in the log, counted bars on stderr.

A command builds one :class:`Progress` from its parsed flags (:meth:`Progress.of`) and hands
it, or its :meth:`~Progress.bar`, to the library as the ``progress`` callable. A phase line
names the command and, when the number of phases is known, counts them::

    collabecon demo: [2/8] complete (15 rounds)

A command whose phases take about as long as each other (one training run each) asks for
an estimate of the time left (``eta=True``): from the second phase on, a line ends with
``(about 4 min left)``, the mean time of the phases done times the phases still to run,
once that is ten seconds or more.

A phase line is an ``INFO`` record of the ``collabecon.cli._progress`` logger (under the
``collabecon`` logger of :mod:`econ._log`), carrying the command in its ``command``
attribute; the command line writes it on stderr as above (:mod:`collabecon.cli._log`).
A bar is drawn on stderr only where that logger takes ``INFO`` records.

Both are silent when the command prints JSON (``--json``: stdout carries the result and
stderr nothing but warnings and errors), runs with ``--quiet``, or has its progress switched
off (``train --no-progress``), so the same command serves a terminal and a script. stdout
is never written.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from econ._log import get_logger

_log = get_logger(__name__)

__all__ = ["Progress", "quiet"]


def quiet(args: argparse.Namespace) -> bool:
    """Whether a command run with ``args`` keeps stderr free of progress.

    It does with ``--json``, or with ``--no-progress`` where a command has it.
    """
    return bool(getattr(args, "json", False) or getattr(args, "no_progress", False))


class Progress:
    """Phase lines of command ``command`` (``"demo"``, ``"bench engine"``) on stderr.

    Calling the object with a text logs ``[k/total] text`` (without the count when ``total``
    is None), shown as ``collabecon COMMAND: [k/total] text``, so it can be passed wherever
    the library takes a ``progress`` callable of one string; :meth:`note` logs a line that
    is not counted. ``enabled=False`` silences both and the bars.
    """

    def __init__(
        self, command: str, total: int | None = None, *, enabled: bool = True, eta: bool = False
    ) -> None:
        self.command = command
        self.total = total
        self.wanted = enabled
        self.eta = eta
        self.done = 0
        self._started: float | None = None

    @classmethod
    def of(
        cls, args: argparse.Namespace, command: str, total: int | None = None, *, eta: bool = False
    ) -> Progress:
        """The progress of ``command`` run with ``args``: silent where :func:`quiet` says."""
        return cls(command, total, enabled=not quiet(args), eta=eta)

    @property
    def enabled(self) -> bool:
        """Whether the progress shows: wanted, and the log takes ``INFO`` records."""
        return self.wanted and _log.isEnabledFor(logging.INFO)

    def _left(self) -> str:
        """`` (about 4 min left)`` once ``done - 1`` phases have finished, or nothing."""
        now = time.monotonic()
        if self._started is None:
            self._started = now
        finished = self.done - 1
        if not self.eta or self.total is None or finished < 1:
            return ""
        left = (now - self._started) / finished * (self.total - finished)
        if left < 10:
            return ""
        if left < 90:
            return f" (about {left:.0f} s left)"
        if left < 90 * 60:
            return f" (about {left / 60:.0f} min left)"
        return f" (about {left / 3600:.1f} h left)"

    def _print(self, text: str) -> None:
        if self.wanted:
            _log.info(text, extra={"command": self.command})

    def __call__(self, text: str) -> None:
        """One phase: counted as ``[k/total]`` when the total is known, with the time left."""
        self.done += 1
        counted = text if self.total is None else f"[{self.done}/{self.total}] {text}"
        self._print(counted + self._left())

    def note(self, text: str) -> None:
        """A line that is not a phase (what is about to start, where results go)."""
        self._print(text)

    def bar(self, total: int, *, unit: str = "it", **options: Any) -> Any:
        """A tqdm bar of ``total`` units on stderr, named after the command.

        The bar is disabled when the progress is silent (:attr:`enabled`); ``options`` go to
        tqdm (``leave``, ``delay``, ``mininterval``).
        """
        from tqdm import tqdm

        options.setdefault("desc", f"collabecon {self.command}")
        return tqdm(total=total, unit=unit, file=sys.stderr, disable=not self.enabled, **options)

    @contextlib.contextmanager
    def counting(
        self, total: int, *, unit: str = "it", **options: Any
    ) -> Iterator[Callable[[int], None]]:
        """A callable that moves a :meth:`bar` to ``done`` of ``total`` units.

        The bar appears at the first call, so a command whose input is refused while the
        library prepares (a checkpoint of another run, an unknown name) prints its one-line
        error alone; it is closed on leaving the block.
        """
        bar = None

        def move(done: int) -> None:
            nonlocal bar
            if bar is None:
                bar = self.bar(total, unit=unit, **options)
            bar.update(done - bar.n)

        try:
            yield move
        finally:
            if bar is not None:
                bar.close()
