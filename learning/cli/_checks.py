"""Checks of flag values that the subcommands share, made before any work starts."""

from __future__ import annotations

__all__ = ["device_flag", "existing_dir", "fits_in_memory", "needs_checkpoint"]


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


def _physical_memory() -> int | None:
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def _size(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1024
    return f"{nbytes:.3g} PiB"  # pragma: no cover


def fits_in_memory(flags: str, nbytes: float) -> None:
    """Refuse a run whose arrays need more memory than this machine has.

    Parameters
    ----------
    flags : str
        The flags that set the size (``"--consumers 100000000000"``), for the message.
    nbytes : float
        Estimated bytes of the largest arrays the run allocates.

    Raises
    ------
    ValueError
        ``nbytes`` exceeds the physical memory, with both amounts.
    """
    total = _physical_memory()
    if total is not None and nbytes > total:
        raise ValueError(
            f"{flags} needs about {_size(nbytes)} of memory, more than the {_size(total)} "
            "this machine has"
        )


def existing_dir(flag: str, path: str | None) -> None:
    """Refuse a directory flag (``--data-dir``) that names no existing directory.

    Raises
    ------
    ValueError
        ``path`` is missing or is not a directory.
    """
    if path is None:
        return
    from pathlib import Path

    if not Path(path).is_dir():
        state = "is not a directory" if Path(path).exists() else "does not exist"
        raise ValueError(f"{flag} {path!r} {state}")
