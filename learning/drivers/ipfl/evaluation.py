"""Evaluation of IP-FL's cluster models.

Accuracies per client and per source distribution, importance weights, the personalised models
of Eq. 8 (and the output mixture), hold-out gradients for the profiler, the purity of the bids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.func import functional_call, vmap

from games.ipfl import importance_weights
from learning.algorithms.fedsoft import argmin_shares
from learning.engine import Engine, Params, ShardedData, select
from learning.per_example import client_rows, per_example_losses

if TYPE_CHECKING:
    from learning.drivers.ipfl.config import IPFLRun
    from learning.drivers.ipfl.setup import Setup

__all__ = [
    "accuracy_matrix",
    "bidder_purity",
    "cluster_accuracy",
    "flat",
    "holdout_gradient",
    "importance",
    "mixture_accuracy",
    "personalise",
    "personalised_accuracy",
    "predictions_on",
]


def flat(params: Params, rows: Sequence[int] | np.ndarray) -> np.ndarray:
    """Rows ``rows`` of stacked ``params`` as flat float64 vectors, shape ``(len(rows), P)``.

    Each row of every parameter tensor is flattened and the tensors are concatenated in the
    order of ``params``: the parameter vectors :math:`W_i` of Eq. 15-16 (App. H).
    """
    idx = torch.as_tensor(
        np.asarray(rows), dtype=torch.long, device=next(iter(params.values())).device
    )
    return (
        torch.cat([p.index_select(0, idx).reshape(len(idx), -1) for p in params.values()], 1)
        .double()
        .cpu()
        .numpy()
    )


def accuracy_matrix(engine: Engine, models: Params, data: ShardedData) -> np.ndarray:
    """(N, K): accuracy of cluster model k on client i's examples of ``data``."""
    n, k = data.n_clients, next(iter(models.values())).shape[0]
    out = np.zeros((n, k))
    for c in range(k):
        ev = engine.evaluate(select(models, np.full(n, c)), data)
        assert ev.accuracy is not None
        out[:, c] = ev.accuracy
    return out


def personalise(models: Params, weights: np.ndarray) -> Params:
    r"""Eq. 8 on tensors: :math:`P_i = \sum_k w_{ik} M_k` for every client (rows of ``weights``)."""
    w = torch.as_tensor(
        weights, dtype=next(iter(models.values())).dtype, device=next(iter(models.values())).device
    )
    return {name: torch.tensordot(w, p, dims=([1], [0])) for name, p in models.items()}


def importance(engine: Engine, models: Params, val: ShardedData, kind: str) -> np.ndarray:
    r"""Importance :math:`\upsilon_{ik}` (N, K) on the validation data.

    The accuracy of :math:`M_k` (Eq. 7) or FedSoft's share of points where :math:`M_k` has the
    smallest loss (zero counts smoothed to :math:`10^{-4} n_i`; rows sum to 1).
    """
    if kind == "accuracy":
        return accuracy_matrix(engine, models, val)
    losses, owner = per_example_losses(engine, models, val, np.arange(val.n_clients))
    return argmin_shares(losses, owner, val.n_clients, 1e-4)


def _forward_common(engine: Engine) -> Any:
    return vmap(lambda p, x: functional_call(engine.model, p, (x,)), in_dims=(0, None))


@torch.no_grad()
def mixture_accuracy(
    engine: Engine, models: Params, weights: np.ndarray, data: ShardedData
) -> np.ndarray:
    r"""Accuracy of every client's output mixture :math:`p_i(y|x) = \sum_k w_{ik}\, p_k(y|x)`.

    Each client's mixture is scored on its own examples of ``data`` (an option of collabecon,
    not the paper's Eq. 8).
    """
    rows, owner = client_rows(data, np.arange(data.n_clients))
    forward = _forward_common(engine)
    w = torch.as_tensor(weights, dtype=next(iter(models.values())).dtype, device=data.x.device)
    hits = np.zeros(data.n_clients)
    step = 4096
    for start in range(0, rows.numel(), step):
        idx = rows[start : start + step]
        who = torch.as_tensor(owner[start : start + step], device=data.x.device)
        probs = torch.softmax(forward(models, data.x[idx]), dim=-1)  # (K, m, C)
        mix = torch.einsum("mk,kmc->mc", w[who], probs)
        correct = (mix.argmax(dim=-1) == data.y[idx]).double().cpu().numpy()
        np.add.at(hits, owner[start : start + step], correct)
    return hits / np.maximum(data.sizes_numpy(), 1)


def personalised_accuracy(
    engine: Engine, models: Params, setup: Setup, run: IPFLRun
) -> tuple[np.ndarray, np.ndarray]:
    r"""f_i on D_i^test and the weights :math:`w_{ik}` (normalised importance on D_i^val).

    The personalised model is Eq. 8's :math:`P_i = \sum_k w_{ik} M_k`, or the output mixture.
    """
    weights = importance_weights(importance(engine, models, setup.val, run.importance))
    if run.personalize == "output_mixture":
        return mixture_accuracy(engine, models, weights, setup.ctx.test), weights
    accuracy = engine.evaluate(personalise(models, weights), setup.ctx.test).accuracy
    assert accuracy is not None
    return accuracy, weights


def cluster_accuracy(
    engine: Engine, models: Params, sources: Sequence[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray:
    """(K, D): accuracy of every cluster model on every source test distribution ``(x, y)``."""
    cols = []
    for x, y in sources:
        ev = engine.evaluate_on(models, x, y)
        assert ev.accuracy is not None
        cols.append(ev.accuracy)
    return np.stack(cols, axis=1)


def holdout_gradient(
    engine: Engine,
    model: Params,
    val: ShardedData,
    clients: np.ndarray,
    per_client: int,
    rng: np.random.Generator,
) -> np.ndarray:
    r"""The flat gradient :math:`g` of the mean loss of ``model`` on a hold-out of ``clients``.

    The hold-out holds up to ``per_client`` rows of each client's validation data ``val``
    (a permutation drawn from ``rng``, client by client). :math:`g` is the gradient of the
    first-order Shapley contribution :math:`\psi_i = -g^\top \lambda_i (W_i - W_M)`
    (:func:`games.ipfl.shapley_first_order`); ``model`` is the aggregate :math:`W_M`.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, App. H (a small
    hold-out set per tier, Eq. 15-16).
    """
    sizes = val.sizes_numpy()[clients]
    starts = val.offsets.cpu().numpy()[clients]
    rows = np.concatenate(
        [s + rng.permutation(n)[: min(n, per_client)] for s, n in zip(starts, sizes, strict=True)]
    )
    idx = torch.as_tensor(rows, dtype=torch.long, device=val.x.device)
    grads, _ = engine.gradients(model, val.x[idx][None], val.y[idx][None])
    return flat(grads, [0])[0]


@torch.no_grad()
def predictions_on(engine: Engine, models: Params, x: np.ndarray) -> np.ndarray:
    """(K, m) predicted labels of every stacked model on the common inputs ``x``."""
    xt = torch.as_tensor(x, device=next(iter(models.values())).device)
    forward = _forward_common(engine)
    return (
        torch.cat(
            [forward(models, xt[s : s + 2048]).argmax(dim=-1) for s in range(0, len(xt), 2048)], 1
        )
        .cpu()
        .numpy()
    )


def bidder_purity(bids: np.ndarray, majority: np.ndarray, best: np.ndarray) -> float:
    """Share of bids placed by clients whose majority distribution is the cluster model's best.

    The cluster model's best distribution is the one it is best on (the "(best d)" cluster of
    Tables 2 and 3).
    """
    rows, cols = np.nonzero(bids)
    return float(np.mean(majority[rows] == best[cols])) if rows.size else float("nan")
