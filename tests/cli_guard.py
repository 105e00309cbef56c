"""Run ``collabecon.cli.main`` in-process under a guard, and judge the shape of its stderr.

The guard bounds the CPU time a call spends (this process, all its threads; not the wall
clock, which a loaded machine stretches) and, as a last resort, the wall time of a call that
spends none (a wait that never ends). The command-line tests that feed hostile input share it:
``tests/test_cli_bad_inputs.py`` (one row per bad flag) and ``tests/test_cli_fuzz.py``
(argument vectors drawn from each subcommand's parser).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from collabecon.cli import main

#: a progress line: a counted phase, or a drawing of a bar (drawings end in carriage returns)
PROGRESS = re.compile(r"collabecon [\w -]+: (\[\d+/\d+\] |\s*\d+%\|)")


class TooSlow(BaseException):
    """The guarded call spent its CPU (or wall) allowance.

    A ``BaseException``, as ``KeyboardInterrupt`` is: a command that retries what raised an
    ``Exception`` (a sweep's runs) does not swallow it.
    """


def _alarm(signum: int, frame: object) -> None:
    raise TooSlow


@contextlib.contextmanager
def cpu_guard(cpu_s: float, hang_s: int) -> Iterator[None]:
    """Raise :class:`TooSlow` inside the block after ``cpu_s`` CPU or ``hang_s`` wall seconds."""
    previous = signal.signal(signal.SIGPROF, _alarm), signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_PROF, cpu_s)
    signal.alarm(hang_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.alarm(0)
        signal.signal(signal.SIGPROF, previous[0])
        signal.signal(signal.SIGALRM, previous[1])


#: a phase line of :class:`collabecon.cli._progress.Progress` without a count (a note)
PHASE = re.compile(r"collabecon [\w -]+: (?!error: )")


def stderr_fault(err: str, after_work: bool = False) -> str | None:
    """Why ``err`` is not one error line; None when it is.

    The last line must start with ``collabecon`` and end the text. With ``after_work`` (a
    refusal that needs work first: a training that diverged) progress lines may come before
    it: phases, counted or not, and a bar's drawings (:data:`PROGRESS`); otherwise any line
    before it is a fault, a progress line saying the refusal came after work began.
    """
    if "Traceback" in err:
        return "a traceback"
    if not err.endswith("\n"):
        return f"not one line ending in a newline: {err[-200:]!r}"
    *before, last, _ = err.split("\n")
    drawn = [part for line in before for part in line.split("\r") if part.strip()]
    stray = [part for part in drawn if not (PROGRESS.match(part) or PHASE.match(part))]
    if stray:
        return f"{len(stray)} line(s) besides the error, first {stray[0][:200]!r}"
    if drawn and not after_work:
        return f"the refusal came after work began ({len(drawn)} progress line(s), first {drawn[0][:200]!r})"
    if not last.startswith("collabecon"):
        return f"the error does not start with 'collabecon': {last[:200]!r}"
    return None


@dataclass(frozen=True)
class Ending:
    """How one in-process call of the command line ended."""

    code: int | None
    out: str
    err: str
    #: the exception that escaped ``main`` (its type and message), or None
    escaped: str | None = None
    #: the guard stopped the call
    too_slow: bool = False
    #: what the call left in its working directory
    left: tuple[str, ...] = ()


def run_guarded(argv: Sequence[str], cpu_s: float, hang_s: int) -> Ending:
    """``main(argv)`` in a fresh empty working directory, its output captured, under a guard.

    The working directory is removed afterwards; ``COLLABECON_DATA`` is unset for the call.
    """
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    saved = os.environ.pop("COLLABECON_DATA", None)
    code: int | None = None
    escaped = None
    too_slow = False
    with tempfile.TemporaryDirectory(prefix="collabecon-cli-") as work:
        os.chdir(work)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    with cpu_guard(cpu_s, hang_s):
                        try:
                            code = main(list(argv))
                        except SystemExit as stop:
                            code = stop.code if isinstance(stop.code, int) else 1
                except TooSlow:
                    too_slow = True
                except Exception as exc:  # the finding itself: what escaped main
                    escaped = f"{type(exc).__name__}: {exc}"
        finally:
            os.chdir(here)
            if saved is not None:
                os.environ["COLLABECON_DATA"] = saved
        left = sorted(str(p.relative_to(work)) for p in Path(work).rglob("*"))
    return Ending(code, out.getvalue(), err.getvalue(), escaped, too_slow, tuple(left))
