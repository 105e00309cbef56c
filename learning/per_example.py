r"""Per-example losses of several models on clients' data.

FedSoft's importance estimate (the share of a client's points on which cluster model
:math:`s` has the smallest loss) and FedEM's E-step (:math:`q_i(k|x,y) \propto \pi_{ik}
e^{-\ell(\theta_k; x, y)}`) need the loss of every one of ``K`` models on every example.
:func:`per_example_losses` runs ``vmap`` of ``functional_call`` over the stacked models;
:func:`per_example_losses_loop` is the one-model-at-a-time reference the tests hold it to.
IP-FL's validation (:mod:`learning.drivers.ipfl.evaluation`) uses the same losses.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch.func import functional_call, vmap

from learning.engine import Engine, Params, ShardedData

__all__ = ["client_rows", "per_example_losses", "per_example_losses_loop"]

_CHUNK = 4096


def client_rows(data: ShardedData, clients: np.ndarray) -> tuple[torch.Tensor, np.ndarray]:
    """Global row indices of ``clients``' examples and the client position of each row.

    The examples are concatenated in the order of ``clients``.
    """
    sizes = data.sizes_numpy()[clients]
    starts = data.offsets.cpu().numpy()[clients]
    rows = np.concatenate([s + np.arange(n) for s, n in zip(starts, sizes, strict=True)])
    owner = np.repeat(np.arange(len(clients)), sizes)
    return torch.as_tensor(rows, dtype=torch.long, device=data.x.device), owner


@torch.no_grad()
def per_example_losses(
    engine: Engine, models: Params, data: ShardedData, clients: np.ndarray
) -> tuple[torch.Tensor, np.ndarray]:
    """Loss of each of the ``K`` stacked ``models`` on every example of ``clients``.

    Returns a tensor ``(rows, K)`` and the client position of each row.
    """
    rows, owner = client_rows(data, np.asarray(clients))

    def forward(params: Params, x: torch.Tensor) -> torch.Tensor:
        return functional_call(engine.model, params, (x,))

    batched = vmap(forward, in_dims=(0, None))
    out = []
    for start in range(0, rows.numel(), _CHUNK):
        idx = rows[start : start + _CHUNK]
        logits = batched(models, data.x[idx])  # (K, m, C)
        k, m = logits.shape[0], logits.shape[1]
        y = data.y[idx].expand(k, *data.y[idx].shape).reshape(k * m, *data.y.shape[1:])
        out.append(engine.task.losses(logits.reshape(k * m, -1), y).reshape(k, m).T)
    return torch.cat(out), owner


@torch.no_grad()
def per_example_losses_loop(
    engine: Engine, models: Params, data: ShardedData, clients: np.ndarray
) -> tuple[torch.Tensor, np.ndarray]:
    """Reference of :func:`per_example_losses`: one ``nn.Module`` per model."""
    rows, owner = client_rows(data, np.asarray(clients))
    columns = []
    for k in range(next(iter(models.values())).shape[0]):
        model = copy.deepcopy(engine.model)
        for name, p in model.named_parameters():
            p.copy_(models[name][k])
        columns.append(engine.task.losses(model(data.x[rows]), data.y[rows]))
    return torch.stack(columns, dim=1), owner
