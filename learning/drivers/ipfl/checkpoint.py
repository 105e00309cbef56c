"""IP-FL's checkpoint: the driver's state as tensors, numbers, strings, lists and dicts.

The state is written atomically by :func:`learning.loop.write_checkpoint` and read weights-only
by :func:`learning.loop.read_checkpoint`, checked against the run before any data is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from games.ipfl import Ledger, RefundTracker, TokenState
from learning.drivers.ipfl.config import IPFLRun
from learning.loop import read_checkpoint

__all__ = ["CHECKPOINT_NAME", "checkpoint_payload", "read_ipfl_checkpoint", "restore_state"]

CHECKPOINT_NAME = "ipfl_checkpoint.pt"
_CHECKPOINT_FORMAT = 2
#: numpy arrays of the driver's state, stored as tensors of the same dtype.
_TOKEN_ARRAYS = ("psi", "omega", "explored", "improved")


def _plain(value: Any) -> Any:
    """``value`` with numpy scalars turned into Python numbers (lists and dicts walked)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def checkpoint_payload(run: IPFLRun, state: dict[str, Any]) -> dict[str, Any]:
    """The driver's state as tensors, numbers, strings, lists and dicts only.

    That is what :func:`learning.loop.read_checkpoint` (``torch.load(weights_only=True)``)
    rebuilds. numpy arrays become tensors of the same dtype, so a resumed run is bitwise the
    same.
    """
    tokens: TokenState = state["tokens"]
    ledger = tokens.ledger
    groups = state["groups"]
    return {
        "format": _CHECKPOINT_FORMAT,
        "run": _plain(run.fingerprint()),
        "state": {
            "round": int(state["round"]),
            "entropy": int(state["entropy"]),
            "start": {key: v.cpu() for key, v in state["start"].items()},
            "models": {key: v.cpu() for key, v in state["models"].items()},
            "groups": None if groups is None else [torch.from_numpy(np.array(g)) for g in groups],
            "tokens": torch.from_numpy(np.array(ledger.tokens)),
            "pools": torch.from_numpy(np.array(ledger.pools)),
            "acc_max": [None if a is None else float(a) for a in tokens.tracker.acc_max],
            **{key: torch.from_numpy(np.array(getattr(tokens, key))) for key in _TOKEN_ARRAYS},
            "best": torch.from_numpy(np.array(state["best"])),
            "history": _plain(state["history"]),
        },
    }


def read_ipfl_checkpoint(path: Path, run: IPFLRun) -> dict[str, Any]:
    """The saved state at ``path`` (weights only), checked against ``run``'s fingerprint."""
    saved = read_checkpoint(path)
    if saved.get("format") != _CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not an IP-FL checkpoint of this version")
    if saved.get("run") != _plain(run.fingerprint()):
        raise ValueError(f"{path} belongs to another run configuration")
    if not isinstance(saved.get("state"), dict):
        raise ValueError(f"{path} is not a complete IP-FL checkpoint: it lacks the state")
    return saved["state"]


def restore_state(path: Path, saved: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """The driver's state from :func:`checkpoint_payload`'s ``state``, on ``device``."""
    try:
        groups = saved["groups"]
        return {
            "round": int(saved["round"]),
            "entropy": int(saved["entropy"]),
            "start": {key: v.to(device) for key, v in saved["start"].items()},
            "models": {key: v.to(device) for key, v in saved["models"].items()},
            "groups": None if groups is None else [g.numpy() for g in groups],
            "tokens": TokenState(
                Ledger(saved["tokens"].numpy(), saved["pools"].numpy()),
                RefundTracker(tuple(saved["acc_max"])),
                **{key: saved[key].numpy() for key in _TOKEN_ARRAYS},
            ),
            "best": saved["best"].numpy(),
            "history": list(saved["history"]),
        }
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(
            f"{path} is not a complete IP-FL checkpoint: {type(exc).__name__}: {exc}"
        ) from None
