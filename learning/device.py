"""The torch device, chosen once and passed down.

``"cuda"`` when a GPU is available, else ``"cpu"`` (``docs/conventions.md``,
*Randomness and devices*). Nothing in :mod:`learning` moves tensors to a GPU by itself:
every function that allocates takes the device this module resolved.
"""

from __future__ import annotations

import torch

__all__ = ["resolve_device"]


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """The device to train on: ``device`` when given and usable, else the default.

    Parameters
    ----------
    device : str, torch.device or None
        ``"cpu"``, ``"cuda"``, ``"cuda:1"`` ...; None picks ``"cuda"`` when available, else
        ``"cpu"``.

    Raises
    ------
    ValueError
        An unknown device string, or a CUDA device asked for where none is available.
    """
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"device must be 'cpu' or 'cuda[:N]', got {device!r}") from exc
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} asked for, but CUDA is not available here")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(
                f"device {device!r} asked for, but only {torch.cuda.device_count()} CUDA "
                "device(s) exist"
            )
    elif resolved.type != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda[:N]', got {device!r}")
    return resolved
