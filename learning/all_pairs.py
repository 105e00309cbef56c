r"""Every model on every client's batch: the all-pairs work of Federated-Clustering.

Federated-Clustering needs, each round, the gradient of every client's loss at every
client's model, :math:`g_j(x_i)` for all pairs (Werner et al. 2023, Algorithm 2): client
``j`` draws one minibatch and evaluates every model on it (spec ch2 §2.3.2, item 1).
:func:`pairwise_gradients` does the whole ``M x N`` table in one call,
``vmap`` over the models of ``vmap`` over the batches of ``grad_and_value`` of a
``functional_call``; :func:`pairwise_gradients_loop` is the reference, one pair at a time
with an ``nn.Module`` and autograd. :func:`pairwise_losses` is the forward-only table
(IFCA's and HypCluster's cluster choice). :func:`flatten` and :func:`unflatten` turn stacked
parameters into the vectors that Threshold-Clustering and the attacks work on.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import numpy as np
import torch
from torch.func import functional_call, grad_and_value, vmap

from learning.engine import Engine, Params, ShardedData, sample_batches

__all__ = [
    "client_batches",
    "flatten",
    "pairwise_gradients",
    "pairwise_gradients_loop",
    "pairwise_losses",
    "unflatten",
]


def flatten(params: Mapping[str, torch.Tensor], lead: int = 1) -> torch.Tensor:
    """Concatenate stacked ``params`` into vectors: ``(*lead_shape, P)`` where the first
    ``lead`` axes of every tensor are kept."""
    shape = next(iter(params.values())).shape[:lead]
    return torch.cat([p.reshape(*shape, -1) for p in params.values()], dim=-1)


def unflatten(vectors: torch.Tensor, like: Mapping[str, torch.Tensor], lead: int = 1) -> Params:
    """Inverse of :func:`flatten`: split ``vectors (*lead_shape, P)`` into the shapes of
    ``like`` (whose first ``lead`` axes are replaced by those of ``vectors``)."""
    shape = vectors.shape[:-1]
    out: Params = {}
    start = 0
    for name, p in like.items():
        tail = p.shape[lead:]
        size = int(torch.Size(tail).numel())
        out[name] = vectors[..., start : start + size].reshape(*shape, *tail)
        start += size
    if start != vectors.shape[-1]:
        raise ValueError(f"vectors have {vectors.shape[-1]} entries, the parameters {start}")
    return out


def client_batches(
    data: ShardedData, clients: np.ndarray, batch_size: int, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """One minibatch of ``batch_size`` per client of ``clients``: ``x (n, B, ...)``,
    ``y (n, B, ...)`` (indices from :func:`learning.engine.sample_batches`; a client with
    fewer examples repeats some)."""
    clients = np.asarray(clients, dtype=np.int64)
    local = sample_batches(data.sizes_numpy()[clients], 1, batch_size, rng)[:, 0]
    rows = torch.from_numpy(local + data.offsets.cpu().numpy()[clients][:, None])
    rows = rows.to(data.x.device)
    return data.x[rows], data.y[rows]


def _loss_fn(engine: Engine):  # type: ignore[no-untyped-def]
    def loss(params: Params, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return engine.task.loss(functional_call(engine.model, params, (x,)), y)

    return loss


def pairwise_gradients(
    engine: Engine, params: Params, x: torch.Tensor, y: torch.Tensor
) -> tuple[Params, torch.Tensor]:
    """Gradient and loss of model ``i`` on batch ``j`` for all pairs, in one batched call.

    Parameters
    ----------
    engine : Engine
        Supplies the architecture and the loss.
    params : Params
        ``M`` stacked models.
    x, y : Tensor
        ``N`` batches: ``x`` of shape ``(N, B, ...)``, ``y`` of shape ``(N, B, ...)``.

    Returns
    -------
    grads : Params
        Each tensor of shape ``(M, N, ...)``: entry ``[i, j]`` is :math:`\\nabla \\ell(x_i; B_j)`.
    losses : Tensor (M, N)
    """
    per_batch = vmap(grad_and_value(_loss_fn(engine)), in_dims=(None, 0, 0))
    table = vmap(per_batch, in_dims=(0, None, None))
    grads, losses = table({k: v.detach() for k, v in params.items()}, x, y)
    return grads, losses


def pairwise_gradients_loop(
    engine: Engine, params: Params, x: torch.Tensor, y: torch.Tensor
) -> tuple[Params, torch.Tensor]:
    """The reference of :func:`pairwise_gradients`: one ``nn.Module`` backward per pair."""
    n_models, n_batches = next(iter(params.values())).shape[0], x.shape[0]
    grads = {
        k: torch.empty(n_models, n_batches, *v.shape[1:], device=v.device)
        for k, v in params.items()
    }
    losses = torch.empty(n_models, n_batches, device=x.device)
    model = copy.deepcopy(engine.model)
    named = dict(model.named_parameters())
    for i in range(n_models):
        with torch.no_grad():
            for name, p in named.items():
                p.copy_(params[name][i])
        for j in range(n_batches):
            model.zero_grad()
            loss = engine.task.loss(model(x[j]), y[j])
            loss.backward()
            for name, p in named.items():
                grads[name][i, j] = p.grad  # type: ignore[index]
            losses[i, j] = loss.detach()
    return grads, losses


@torch.no_grad()
def pairwise_losses(
    engine: Engine, params: Params, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """Mean loss of model ``i`` on batch ``j``: ``(M, N)``, forward passes only."""

    def loss(p: Params, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        return engine.task.loss(functional_call(engine.model, p, (xb,)), yb)

    table = vmap(vmap(loss, in_dims=(None, 0, 0)), in_dims=(0, None, None))
    return table(params, x, y)
