"""A Flower run's outcome on disk: ``result.json`` and ``models.pt``.

``result.json`` holds the history, per-client test loss and accuracy and the seconds;
``models.pt`` the final client models, stacked.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import torch

from econ.outputs import plain

__all__ = ["result_dict", "write_result"]


def result_dict(result: Any) -> dict[str, Any]:
    """JSON-ready summary of a run's result (:class:`learning.runtimes.flower.apps.FlowerResult`).

    A result that has a ``to_dict`` (IP-FL's, the duopoly's) is summarised by it instead.
    """
    if hasattr(result, "to_dict"):
        return dict(result.to_dict())
    accuracy = result.accuracy
    return plain(
        {
            "config": result.config.to_dict(),
            "history": [dataclasses.asdict(r) for r in result.history],
            "loss": result.loss,
            "accuracy": accuracy,
            "mean_accuracy": None if accuracy is None else float(accuracy.mean()),
            "seconds": result.seconds,
            "epsilon": result.epsilon,
            "accounting": result.accounting,
        }
    )


def write_result(result: Any, directory: str | os.PathLike[str]) -> Path:
    """Write ``result.json`` and ``models.pt`` to ``directory``; the JSON's path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    models = getattr(result, "models", None) or {}
    torch.save({k: v.cpu() for k, v in models.items()}, directory / "models.pt")
    path = directory / "result.json"
    path.write_text(json.dumps(result_dict(result), indent=2))
    return path
