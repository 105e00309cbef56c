"""The clients the engine and DP-SGD benchmarks time, and how far two trainings end apart.

:func:`iid_clients` builds the clients; :func:`max_weight_difference` measures how far two
ways of training them end apart.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from learning.build import build
from learning.engine import Params, ShardedData, Task


class Clients(NamedTuple):
    """``K`` iid clients of a data set on a device, and one model's weights for each."""

    net: torch.nn.Module
    task: Task
    data: ShardedData
    start: Params


def iid_clients(
    dataset: str,
    model: str,
    clients: int,
    device: torch.device,
    data_rng: np.random.Generator,
    model_rng: np.random.Generator,
) -> Clients:
    """``clients`` iid clients of ``dataset``, each starting from the same ``model``.

    The model is built by :func:`learning.build.build`.
    """
    built = build(
        dataset, "iid", clients, model=model, data_rng=data_rng, model_rng=model_rng, device=device
    )
    return Clients(built.model, built.engine.task, built.sharded("train"), built.start())


def max_weight_difference(a: Params, b: Params) -> float:
    r""":math:`\max |a - b|` over every entry of every parameter of ``a`` (``b`` has the same names)."""
    return max(float((a[k] - b[k]).abs().max()) for k in a)
