r"""Every model on every client's batch: the all-pairs work of Federated-Clustering.

Federated-Clustering needs, each round, the gradient of every client's loss at every
client's model, :math:`g_j(x_i)` for all pairs (Werner et al. 2023, Algorithm 2): client
``j`` draws one minibatch and evaluates every model on it (as in the authors' published code).
:func:`pairwise_gradients` does the whole ``M x N`` table batched (:func:`gradients_on`:
all models on one batch per call, through :mod:`learning.stacked` where it can);
:func:`pairwise_gradients_loop` is the reference, one pair at a time with an ``nn.Module``
and autograd. :func:`pairwise_losses` is the forward-only table
(IFCA's and HypCluster's cluster choice). :func:`flatten` and :func:`unflatten` turn stacked
parameters into the vectors that Threshold-Clustering and the attacks work on.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Mapping

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from learning import stacked
from learning.engine import Engine, Params, ShardedData, Task, sample_batches

__all__ = [
    "client_batches",
    "flatten",
    "functional_loss",
    "gradients_on",
    "midpoint_gradient_products",
    "paired_products",
    "pairwise_gradients",
    "pairwise_gradients_loop",
    "pairwise_losses",
    "unflatten",
]


def flatten(params: Mapping[str, torch.Tensor], lead: int = 1) -> torch.Tensor:
    """Concatenate stacked ``params`` into vectors of shape ``(*lead_shape, P)``.

    The first ``lead`` axes of every tensor are kept.
    """
    shape = next(iter(params.values())).shape[:lead]
    return torch.cat([p.reshape(*shape, -1) for p in params.values()], dim=-1)


def unflatten(vectors: torch.Tensor, like: Mapping[str, torch.Tensor], lead: int = 1) -> Params:
    """Inverse of :func:`flatten`: split ``vectors (*lead_shape, P)`` into the shapes of ``like``.

    The first ``lead`` axes of the shapes of ``like`` are replaced by those of ``vectors``.
    """
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
    """One minibatch of ``batch_size`` per client of ``clients``.

    The result is ``x (n, B, ...)``, ``y (n, B, ...)``; the indices come from
    :func:`learning.engine.sample_batches`; a client with fewer examples repeats some.
    """
    clients = np.asarray(clients, dtype=np.int64)
    local = sample_batches(data.sizes_numpy()[clients], 1, batch_size, rng)[:, 0]
    rows = torch.from_numpy(local + data.offsets.cpu().numpy()[clients][:, None])
    rows = rows.to(data.x.device)
    return data.x[rows], data.y[rows]


#: Examples (summed over the stacked models) per call of the batched kernels. On a CPU a
#: call's activations should stay in cache: with LeNet-5 on the 2-core machine of
#: ``bench/RESULTS.md`` the 20-client table ran 2.1x the per-pair loop at 640 examples per
#: call (one batch with its 20 models), 1.8x at 1,280 and 1.1x at 16,384. A GPU wants large
#: calls; :data:`_CUDA_EXAMPLES` only bounds memory.
_EXAMPLES = 640
_CUDA_EXAMPLES = 16384


def gradients_on(
    model: nn.Module,
    task: Task,
    params: Mapping[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    batches: torch.Tensor,
    models: torch.Tensor | None = None,
) -> tuple[Params, torch.Tensor]:
    r"""Gradient and mean loss of model ``models[v]`` on batch ``batches[v]``, for every slot ``v``.

    .. math::

        g_v = \nabla_w \frac1B \sum_{b=1}^{B}
        \ell\big(f(x_{\beta_v, b}; w_{\mu_v}), y_{\beta_v, b}\big),
        \qquad \beta_v = \texttt{batches}[v],\ \mu_v = \texttt{models}[v],

    the building block of the all-pairs work. The slots are run in order of their batch, a
    few batches per call (:data:`_EXAMPLES`), and each call gathers only its own models.
    Models that :func:`learning.stacked.supports` runs go through its hand-stacked forward
    and backward, every slot a client of its own; when every batch feeds equally many slots,
    the first convolution reads each batch once (``shared``). Other models go through
    ``vmap(grad_and_value(functional_call))``.

    Parameters
    ----------
    model, task : nn.Module, Task
        Architecture (its own weights unused) and loss.
    params : Params
        ``M`` stacked models.
    x, y : Tensor
        ``N`` batches: ``(N, B, ...)``.
    batches : Tensor of int64, shape (V,)
        The batch of each slot.
    models : Tensor of int64, shape (V,), optional
        The model of each slot (rows of ``params``); by default slot ``v`` runs model ``v``.

    Returns
    -------
    grads : Params
        ``(V, ...)`` per tensor, in slot order.
    losses : Tensor (V,)
    """
    device = x.device
    batches = batches.to(device=device, dtype=torch.long)
    slots = batches.shape[0]
    models = (
        torch.arange(slots, device=device)
        if models is None
        else models.to(device=device, dtype=torch.long)
    )
    order = torch.argsort(batches, stable=True)
    sorted_batches = batches.index_select(0, order)
    budget = _CUDA_EXAMPLES if device.type == "cuda" else _EXAMPLES
    use_stacked = stacked.supports(model)
    vmapped = vmap(grad_and_value(functional_loss(model, task)))
    grads = {k: v.new_empty((slots, *v.shape[1:])) for k, v in params.items()}
    losses = x.new_empty(slots, dtype=next(iter(params.values())).dtype)
    for start, stop, inputs, shared in _calls(sorted_batches, x.shape[1], budget, use_stacked):
        rows = order[start:stop]
        chunk = {
            k: v.detach().index_select(0, models.index_select(0, rows)) for k, v in params.items()
        }
        xs, ys = x.index_select(0, inputs), y.index_select(0, inputs)
        if use_stacked:
            g, loss = stacked.loss_and_grad(model, task.losses, chunk, xs, ys, shared=shared)
        else:
            g, loss = vmapped(chunk, xs, ys)
        for k in grads:
            grads[k].index_copy_(0, rows, g[k])
        losses.index_copy_(0, rows, loss.detach())
    return grads, losses


def _calls(
    sorted_batches: torch.Tensor, batch_size: int, budget: int, by_batch: bool
) -> list[tuple[int, int, torch.Tensor, int]]:
    """How :func:`gradients_on` splits its slots (sorted by batch) into calls within a budget.

    Each call holds about ``budget`` examples and is given as ``(start, stop, batches, shared)``,
    where slot ``v`` of ``start:stop`` runs on ``batches[(v - start) // shared]``.

    ``by_batch``: the slots of one batch share it (:func:`learning.stacked.forward`'s
    ``shared``). Whole batches go together while they fit and are equally shared; a batch
    with more slots than fit is split into near-equal pieces. Otherwise every slot gets its
    own copy of its batch (``shared = 1``).
    """
    slots = sorted_batches.shape[0]
    fit = max(1, budget // batch_size)  # slots per call
    if not by_batch:
        return [
            (start, min(start + fit, slots), sorted_batches[start : start + fit], 1)
            for start in range(0, slots, fit)
        ]
    used, counts = torch.unique_consecutive(sorted_batches, return_counts=True)
    sizes = counts.tolist()
    if len(set(sizes)) == 1 and sizes[0] <= fit // 2:  # several whole batches per call
        shared, per_call = sizes[0], fit // sizes[0]
        return [
            (g * shared, min(g + per_call, len(sizes)) * shared, used[g : g + per_call], shared)
            for g in range(0, len(sizes), per_call)
        ]
    calls = []
    start = 0
    for batch, size in zip(used.split(1), sizes, strict=True):
        pieces = -(-size // fit)
        bounds = [start + (size * p) // pieces for p in range(pieces + 1)]
        calls += [(a, b, batch, b - a) for a, b in itertools.pairwise(bounds)]
        start += size
    return calls


def functional_loss(
    model: nn.Module, task: Task
) -> Callable[[Params, torch.Tensor, torch.Tensor], torch.Tensor]:
    """The mean loss of ``model`` with the parameters ``params`` on the batch ``(x, y)``.

    It is a function ``loss(params, x, y)`` of the three (``torch.func.functional_call``; the
    model's own weights unused).
    """

    def loss(params: Params, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return task.loss(functional_call(model, params, (x,)), y)

    return loss


def pairwise_gradients(
    engine: Engine, params: Params, x: torch.Tensor, y: torch.Tensor
) -> tuple[Params, torch.Tensor]:
    r"""Gradient and loss of model ``i`` on batch ``j`` for all pairs, batched.

    This is :func:`gradients_on` with a slot for every model and batch.

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
        Each tensor of shape ``(M, N, ...)``: entry ``[i, j]`` is :math:`\nabla \ell(x_i; B_j)`.
    losses : Tensor (M, N)
    """
    n_models, n_batches = next(iter(params.values())).shape[0], x.shape[0]
    slots = torch.arange(n_models * n_batches, device=x.device)
    grads, losses = gradients_on(
        engine.model, engine.task, params, x, y, slots % n_batches, slots // n_batches
    )
    table = {k: g.reshape(n_models, n_batches, *g.shape[1:]) for k, g in grads.items()}
    return table, losses.reshape(n_models, n_batches)


def checked_pairs(
    pairs: np.ndarray, params: Mapping[str, torch.Tensor], x: torch.Tensor
) -> np.ndarray:
    """``pairs`` as a ``(P, 2)`` integer array of pairs of different clients.

    The pairs index both the stacked models ``params`` and the batches ``x``.

    Raises
    ------
    ValueError
        A pair of one client with itself, or an index out of range.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if np.any(pairs[:, 0] == pairs[:, 1]):
        raise ValueError("pairs must join two different clients")
    n = min(next(iter(params.values())).shape[0], x.shape[0])
    if pairs.size and (pairs.min() < 0 or pairs.max() >= n):
        raise ValueError(f"pairs must index the {n} clients (models and batches), got {pairs}")
    return pairs


def midpoint_gradient_products(
    model: nn.Module,
    task: Task,
    params: Mapping[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    pairs: np.ndarray,
) -> torch.Tensor:
    r"""CoBo's pairwise work, batched: one score :math:`s_{ij}` per pair of ``pairs``.

    For each pair :math:`(i, j)` of ``pairs``,

    .. math::

        s_{ij} = \big\langle \nabla f_i(z_{ij}; \xi_i),\ \nabla f_j(z_{ij}; \xi_j) \big\rangle,
        \qquad z_{ij} = \tfrac12 (x_i + x_j)

    (Hashemi et al. 2024, Algorithm 1, eq. (w)): the :math:`2P` midpoint gradients in
    :func:`gradients_on`, model ``z_ij`` once on batch ``i`` and once on batch ``j``. The same
    numbers as :func:`learning.algorithms.cobo_steps.pairwise_work` (both paths) up to
    floating-point summation order.

    Parameters
    ----------
    model, task : nn.Module, Task
        Architecture and loss.
    params : Params
        ``n`` stacked client models.
    x, y : Tensor
        One minibatch per client, ``(n, B, ...)``: row ``i`` is :math:`\xi_i`.
    pairs : ndarray of int, shape (P, 2)
        Client pairs ``(i, j)``, ``i != j``.

    Returns
    -------
    Tensor of shape (P,)
    """
    pairs = checked_pairs(pairs, params, x)
    first = next(iter(params.values()))
    if pairs.shape[0] == 0:
        return torch.zeros(0, dtype=first.dtype, device=first.device)
    block = torch.as_tensor(pairs, device=first.device)
    i, j = block[:, 0], block[:, 1]
    z = {k: 0.5 * (v.index_select(0, i) + v.index_select(0, j)) for k, v in params.items()}
    half = pairs.shape[0]
    rows = torch.arange(half, device=first.device)
    grads, _ = gradients_on(model, task, z, x, y, torch.cat([i, j]), rows.repeat(2))
    return paired_products(grads, rows, rows + half)


def paired_products(
    gradients: Mapping[str, torch.Tensor], first: torch.Tensor, second: torch.Tensor
) -> torch.Tensor:
    r"""The inner products :math:`\langle g_{a_p}, g_{b_p} \rangle` of rows of ``gradients``.

    Rows ``a = first`` and ``b = second`` of stacked ``gradients``, summed over every parameter
    tensor: CoBo's :math:`s_{ij}` from the two midpoint gradients of each pair (Hashemi et al.
    2024, Algorithm 1, eq. (w)). Returns a tensor of shape ``(P,)``, ``P = len(first)``.
    """
    pairs = first.shape[0]
    return sum(  # type: ignore[return-value]
        (g.index_select(0, first) * g.index_select(0, second)).reshape(pairs, -1).sum(1)
        for g in gradients.values()
    )


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
                assert p.grad is not None
                grads[name][i, j] = p.grad
            losses[i, j] = loss.detach()
    return grads, losses


@torch.no_grad()
def pairwise_losses(
    engine: Engine, params: Params, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """Mean loss of model ``i`` on batch ``j``: ``(M, N)``, forward passes only."""
    loss = functional_loss(engine.model, engine.task)
    table = vmap(vmap(loss, in_dims=(None, 0, 0)), in_dims=(0, None, None))
    return table(params, x, y)
