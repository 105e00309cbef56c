"""Checks of flag values that the subcommands share, made before any work starts."""

from __future__ import annotations

import argparse
from fractions import Fraction

from econ.validation import fits_in_memory
from learning.threads import cpus, default_threads

__all__ = [
    "cpus",
    "data_dir_for",
    "device_flag",
    "exact_number",
    "existing_dir",
    "finite_float",
    "fits_in_memory",
    "needs_checkpoint",
    "threads_argument",
    "threads_flag",
    "workers_flag",
]


def counts_at_least(args: object, flags: tuple[str, ...], low: int = 1) -> None:
    """Refuse a count flag below ``low`` before any work (``flags`` are argparse dests)."""
    for dest in flags:
        value = getattr(args, dest)
        if value < low:
            name = "--" + dest.replace("_", "-")
            raise ValueError(f"{name} must be an integer >= {low}, got {value}")


def device_flag(flag: str, value: str | None) -> None:
    """Refuse a ``--device`` that is neither ``cpu`` nor an available ``cuda[:N]``.

    Raises
    ------
    ValueError
        One line naming ``flag`` and the value.
    """
    if value is None:
        return
    from learning.device import resolve_device

    try:
        resolve_device(value)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None


def needs_checkpoint(resume: bool, checkpoint: str | None) -> None:
    """``--resume`` reads ``--checkpoint``: refuse it alone.

    Raises
    ------
    ValueError
        ``--resume`` was given without ``--checkpoint``.
    """
    if resume and checkpoint is None:
        raise ValueError("--resume needs --checkpoint DIR (the directory to resume from)")


def existing_dir(flag: str, path: str | None) -> None:
    """Refuse a directory flag (``--data-dir``) that names no existing directory.

    Raises
    ------
    ValueError
        ``path`` is empty (it would name the working directory), missing or not a directory.
    """
    if path is None:
        return
    if not str(path).strip():
        raise ValueError(f"{flag} must name a directory, got an empty path")
    from pathlib import Path

    if not Path(path).is_dir():
        state = "is not a directory" if Path(path).exists() else "does not exist"
        raise ValueError(f"{flag} {path!r} {state}")


def finite_float(text: str) -> float:
    """An argparse type: a finite float (``nan``, ``inf`` and ``1e400``, which overflows, refused).

    Raises
    ------
    argparse.ArgumentTypeError
        ``text`` is no number or not a finite one; argparse names the flag.
    """
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{_clip(text)} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{_clip(text)} is not a finite number")
    return value


def exact_number(text: str) -> Fraction:
    """An argparse type: a finite number as an exact fraction (``0.25``, ``1/4``, ``25e-2``).

    Refused: no number, a zero denominator (``1/0``), ``nan`` and ``inf``, an exponent beyond
    :data:`EXPONENT_LIMIT` (no float comes near, and ``1e-99999999`` would take minutes to
    build exactly), and a value beyond the largest float (``1e300/1e-300``: every exact
    quantity is also shown as a float).

    Raises
    ------
    argparse.ArgumentTypeError
        One of the above; argparse names the flag.
    """
    import re

    exponent = re.search(r"[eE]([+-]?\d+)\s*$", text)
    if exponent is not None and abs(int(exponent.group(1))) > EXPONENT_LIMIT:
        raise argparse.ArgumentTypeError(
            f"{_clip(text)} has an exponent beyond {EXPONENT_LIMIT}, outside the range of a float"
        )
    try:
        value = Fraction(text)
    except ZeroDivisionError:
        raise argparse.ArgumentTypeError(f"{_clip(text)} divides by zero") from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"{_clip(text)} is not a finite number") from None
    try:
        float(value)
    except OverflowError:
        raise argparse.ArgumentTypeError(f"{_clip(text)} lies beyond the largest float") from None
    return value


def _clip(text: str) -> str:
    """``text`` quoted for a one-line message, at most 40 characters of it."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


#: The largest decimal exponent :func:`exact_number` reads (floats span about 1e-324 to 1e308).
EXPONENT_LIMIT = 400


def data_dir_for(dataset: str, data_dir: str | None, flag: str = "--dataset") -> None:
    """Refuse ``--data-dir`` with a dataset that reads no files (embedded or synthetic).

    Raises
    ------
    ValueError
        ``data_dir`` is given and ``dataset`` is not one of
        :data:`learning.data.FILE_BASED`; the message names both flags.
    """
    from learning.data import FILE_BASED

    if data_dir is not None and dataset not in FILE_BASED:
        raise ValueError(
            f"--data-dir has no effect with {flag} {dataset}, which reads no files "
            f"(the datasets read from files: {', '.join(sorted(FILE_BASED))})"
        )


def workers_flag(value: int | None, flag: str = "--workers") -> None:
    """Refuse a number of worker processes below 1 or above :func:`cpus`.

    Raises
    ------
    ValueError
        One line naming ``flag``, the value and the CPUs.
    """
    if value is not None:
        _one_to_cpus(value, flag)


def _one_to_cpus(value: int, flag: str) -> None:
    """Refuse a count of processes or threads below 1 or above :func:`cpus`, naming ``flag``."""
    if value < 1:
        raise ValueError(f"{flag} must be an integer >= 1, got {value}")
    if value > cpus():
        raise ValueError(f"{flag} {value} is more than the {cpus()} CPUs this process may use")


#: what ``--threads`` sets, for the help of every command that declares it
THREADS_HELP = (
    "torch's CPU threads, an integer from 1 to the CPUs this process may use "
    "(default: OMP_NUM_THREADS when set, else its physical cores)"
)


def threads_argument(
    parser: argparse.ArgumentParser, help_: str = THREADS_HELP, default: int | None = None
) -> None:
    """Declare ``--threads N`` on a training command's ``parser`` (default None: the cores).

    :func:`collabecon.cli.main` checks it (:func:`threads_flag`) and sets torch's threads
    (:func:`learning.threads.use_threads`) before the command's work starts.
    """
    parser.add_argument("--threads", type=int, default=default, metavar="N", help=help_)


def threads_flag(value: int | None, flag: str = "--threads") -> int:
    """The thread count of ``--threads``: ``value``, or :func:`default_threads` when None.

    At most :func:`cpus`, the logical CPUs of this process's affinity: a second thread per
    core (SMT) may be asked for, more threads than CPUs only wait for each other.

    Raises
    ------
    ValueError
        One line naming ``flag``: ``value`` below 1 or above :func:`cpus`.
    """
    if value is None:
        return default_threads()
    _one_to_cpus(value, flag)
    return value
