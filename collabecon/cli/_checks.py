"""Checks of flag values that the subcommands share, made before any work starts."""

from __future__ import annotations

from econ.validation import fits_in_memory

__all__ = ["data_dir_for", "device_flag", "existing_dir", "fits_in_memory", "needs_checkpoint"]


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
