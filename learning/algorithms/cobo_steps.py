r"""CoBo's steps on stacked tensors (Hashemi, He and Jaggi, NeurIPS 2024, Algorithm 1).

The collaboration weights :math:`W` (:func:`initial_weights`, the inner step
:func:`update_weights` on the box or the simplex, :func:`project_rows_to_simplex`), the
pairs of a round (:class:`PairSchedule`, :func:`sample_pairs`), the pairwise work of the
inner step in one call (:func:`pairwise_work`: all midpoints at once on the hand-stacked
layers of :mod:`learning.all_pairs`, or a plain per-pair loop with the same numbers), the
outer step (:func:`local_step` with the penalty :func:`laplacian_penalty`), clients that join
and leave (:func:`join_client`, :func:`leave_client`), and the distance of :math:`W` to the
oracle of clustered clients (:func:`oracle_weights`, :func:`weight_error`).
:class:`learning.algorithms.cobo.CoBo` runs them on the round loop, and
:func:`learning.algorithms.cobo_quadratic.simulate_quadratic` on the quadratics of Example 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from econ.validation import choice, non_negative, positive, positive_int, unit_interval
from learning.all_pairs import checked_pairs, functional_loss, midpoint_gradient_products
from learning.engine import Params, Task, select
from learning.optim import SGDConfig, momentum_buffer

__all__ = [
    "DOMAINS",
    "INNER_SOLVERS",
    "SCHEDULES",
    "PairSchedule",
    "initial_weights",
    "join_client",
    "laplacian_penalty",
    "leave_client",
    "local_step",
    "oracle_weights",
    "pairwise_work",
    "project_rows_to_simplex",
    "sample_pairs",
    "update_weights",
    "weight_error",
]

SCHEDULES = ("all", "constant", "time", "mixed")
DECAYS = ("1/t", "1/sqrt(t)")
DOMAINS = ("box", "simplex")
INNER_SOLVERS = ("pgd", "exact")


# --------------------------------------------------------------------------- weights


def initial_weights(
    n: int, domain: str = "box", *, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    r"""The initial collaboration weights :math:`W^0` of ``n`` clients on ``domain``.

    All ones on the box (Algorithm 1), :math:`(\mathbf 1\mathbf 1^\top - I)/(n-1)` on the
    simplex (the official LLM code; a single client keeps weight 1 on itself).
    """
    n = positive_int("n", n)
    choice("domain", domain, DOMAINS)
    if domain == "box":
        return torch.ones(n, n, dtype=dtype)
    if n == 1:
        return torch.ones(1, 1, dtype=dtype)
    return (torch.ones(n, n, dtype=dtype) - torch.eye(n, dtype=dtype)) / (n - 1)


def oracle_weights(clusters: np.ndarray) -> np.ndarray:
    r"""The ideal :math:`W^\star`: 1 for two clients of the same cluster, 0 across clusters."""
    clusters = np.asarray(clusters)
    return (clusters[:, None] == clusters[None, :]).astype(np.float64)


def weight_error(weights: torch.Tensor | np.ndarray, clusters: np.ndarray) -> float:
    r"""Mean off-diagonal :math:`|w_{ij} - w^\star_{ij}|` (0 when :math:`W` is the oracle)."""
    w = weights.detach().cpu().numpy() if isinstance(weights, torch.Tensor) else np.asarray(weights)
    n = w.shape[0]
    if n < 2:
        return 0.0
    off = ~np.eye(n, dtype=bool)
    return float(np.abs(w - oracle_weights(clusters))[off].mean())


def project_rows_to_simplex(rows: torch.Tensor) -> torch.Tensor:
    r"""Euclidean projection of each row onto :math:`\{w \ge 0, \sum_j w_j = 1\}`.

    Sort :math:`u` decreasingly, take the largest :math:`r` with
    :math:`u_r + \frac1r (1 - \sum_{q \le r} u_q) > 0`, set
    :math:`\tau = \frac1r (1 - \sum_{q \le r} u_q)` and :math:`w = \max(u + \tau, 0)`
    (Held et al. 1974; the official CoBo LLM code).
    """
    u, _ = torch.sort(rows, dim=-1, descending=True)
    cumulative = u.cumsum(-1)
    r = torch.arange(1, rows.shape[-1] + 1, dtype=rows.dtype, device=rows.device)
    positive_part = u + (1 - cumulative) / r > 0
    last = positive_part.to(torch.int64).cumsum(-1).argmax(-1, keepdim=True)
    tau = (1 - cumulative.gather(-1, last)) / (last + 1).to(rows.dtype)
    return (rows + tau).clamp_min(0)


def update_weights(
    weights: torch.Tensor,
    pairs: np.ndarray,
    inner: torch.Tensor,
    *,
    gamma: float,
    domain: str = "box",
    solver: str = "pgd",
) -> torch.Tensor:
    r"""The inner step (eq. (w)) on the sampled ``pairs`` with their inner products ``inner``.

    ``pairs`` are rows ``(i, j)``, ``i != j``; ``inner`` holds the midpoint inner products
    :math:`s_{ij}`, one per pair.

    ``box`` + ``pgd``:
    :math:`w_{ij} = w_{ji} \leftarrow \mathrm{clip}_{[0,1]}(w_{ij} + \gamma s_{ij})`;
    ``box`` + ``exact``: :math:`w_{ij} = w_{ji} \leftarrow \mathbb 1[s_{ij} > 0]` (kept when
    :math:`s_{ij} = 0`); ``simplex`` + ``pgd``: add :math:`\gamma s_{ij}` to :math:`w_{ij}` and
    :math:`w_{ji}`, then project the touched rows onto the simplex. Returns a new tensor.
    """
    choice("domain", domain, DOMAINS)
    choice("inner_solver", solver, INNER_SOLVERS)
    if domain == "simplex" and solver == "exact":
        raise ValueError("inner_solver='exact' is defined on the box domain only")
    weights = weights.clone()
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if pairs.shape[0] == 0:
        return weights
    i = torch.as_tensor(pairs[:, 0], device=weights.device)
    j = torch.as_tensor(pairs[:, 1], device=weights.device)
    s = inner.to(device=weights.device, dtype=weights.dtype)
    if domain == "box":
        if solver == "pgd":
            new = (weights[i, j] + gamma * s).clamp(0.0, 1.0)
        else:
            new = torch.where(s > 0, 1.0, torch.where(s < 0, 0.0, weights[i, j]))
        weights[i, j] = new
        weights[j, i] = new
        return weights
    weights.index_put_((i, j), gamma * s, accumulate=True)
    weights.index_put_((j, i), gamma * s, accumulate=True)
    rows = torch.unique(torch.cat([i, j]))
    weights[rows] = project_rows_to_simplex(weights[rows])
    return weights


def laplacian_penalty(params: Mapping[str, torch.Tensor], weights: torch.Tensor) -> Params:
    r"""The consensus force :math:`(D_W - W) X` for every stacked parameter.

    Row :math:`i` is :math:`\sum_k w_{ik} (x_i - x_k)` (the gradient of
    :math:`\frac12 \sum_{i<j} w_{ij} \|x_i - x_j\|^2` for symmetric :math:`W`; the penalty of
    the paper's outer problem, Model-Training, Section 2).
    """
    out: Params = {}
    for name, p in params.items():
        w = weights.to(p.dtype)
        flat = p.reshape(p.shape[0], -1)
        out[name] = (w.sum(1, keepdim=True) * flat - w @ flat).reshape(p.shape)
    return out


# --------------------------------------------------------------------------- pair sampling


@dataclass(frozen=True, slots=True)
class PairSchedule:
    r"""Probability :math:`p_t` that an unordered pair is sampled in round :math:`t` (0-based).

    Attributes
    ----------
    strategy : {"all", "constant", "time", "mixed"}
        ``all``: :math:`p_t = 1`; ``constant``: :math:`p_t = p_{const}`; ``time``:
        :math:`p_t = \min(1, c/(t+1))` (``decay="1/t"``) or :math:`\min(1, c/\sqrt{t+1})`;
        ``mixed``: constant for :math:`t <` ``switch_at``, time-decaying afterwards.
    p_const : float, optional
        Constant probability; :math:`2/n` when None (the official code: 1/n per ordered pair).
    switch_at : int
        First round of the decaying phase of ``mixed`` (paper: 0.2% of the rounds; code: 800).
    decay : {"1/t", "1/sqrt(t)"}
        Decaying law (paper: 1/t; code: 1/sqrt(t)).
    c : float
        Constant of the decaying law.
    """

    strategy: str = "constant"
    p_const: float | None = None
    switch_at: int = 0
    decay: str = "1/t"
    c: float = 1.0

    def __post_init__(self) -> None:
        """Check the schedule's settings.

        Raises
        ------
        ValueError
            If ``strategy`` or ``decay`` is unknown, ``p_const`` is outside :math:`[0, 1]`,
            ``switch_at`` is negative or ``c`` is not positive.
        """
        choice("strategy", self.strategy, SCHEDULES)
        choice("decay", self.decay, DECAYS)
        if self.p_const is not None:
            unit_interval("p_const", self.p_const)
        non_negative("switch_at", self.switch_at)
        positive("c", self.c)

    def probability(self, t: int, n: int) -> float:
        """:math:`p_t` for ``n`` participating clients."""
        constant = min(1.0, 2.0 / max(n, 1)) if self.p_const is None else float(self.p_const)
        if self.strategy == "all":
            return 1.0
        if self.strategy == "constant" or (self.strategy == "mixed" and t < self.switch_at):
            return constant
        step = t + 1
        return min(1.0, self.c / (step if self.decay == "1/t" else math.sqrt(step)))


@torch.no_grad()
def local_step(
    params: Params,
    grads: Params,
    momentum: Params,
    weights: torch.Tensor,
    sgd: SGDConfig,
    rho: float,
    fresh: torch.Tensor | None = None,
) -> tuple[Params, Params]:
    r"""One step of CoBo's outer problem for every participant (Hashemi et al. 2024, Alg. 1).

    .. math::  m \leftarrow \beta m + (1 - d)(g + \lambda x), \qquad
               x \leftarrow x - \eta\,(m + \rho\,\nabla_x \tfrac12 \textstyle\sum_{ij}
               w_{ij} \lVert x_i - x_j \rVert^2)

    with ``g`` the minibatch gradients, the momentum of :func:`learning.optim.momentum_buffer`
    (plain ``g`` without momentum; ``fresh`` marks clients whose buffer starts now) and the
    Laplacian penalty of :func:`laplacian_penalty` over the participants' ``weights``.
    Returns the new parameters and momentum buffers.
    """
    force = laplacian_penalty(params, weights)
    new_params: Params = {}
    new_momentum: Params = {}
    for name, p in params.items():
        g = grads[name].detach() + sgd.weight_decay * p
        new_momentum[name] = (
            momentum_buffer(momentum[name], g, sgd.momentum, sgd.dampening, fresh=fresh)
            if sgd.momentum
            else g
        )
        new_params[name] = p - sgd.lr * (new_momentum[name] + rho * force[name])
    return new_params, new_momentum


def sample_pairs(
    schedule: PairSchedule, t: int, clients: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Unordered pairs ``(i, j)``, ``i < j`` of ``clients`` sampled for round ``t``.

    Each pair is kept independently with probability ``schedule.probability(t, len(clients))``;
    the result has shape ``(P, 2)``.
    """
    clients = np.sort(np.asarray(clients, dtype=np.int64))
    a, b = np.triu_indices(clients.size, k=1)
    p = schedule.probability(t, clients.size)
    keep = np.ones(a.size, dtype=bool) if p >= 1.0 else rng.random(a.size) < p
    return np.stack([clients[a[keep]], clients[b[keep]]], axis=1)


# --------------------------------------------------------------------------- pairwise work


def pairwise_work(
    params: Mapping[str, torch.Tensor],
    data: tuple[torch.Tensor, torch.Tensor],
    pairs: np.ndarray,
    *,
    batched: bool,
    model: nn.Module,
    task: Task,
) -> torch.Tensor:
    r"""One round of CoBo's pairwise work: the clients' gradient inner products at midpoints.

    For each pair, the inner product of the two clients' gradients at its midpoint,

    .. math::

        s_{ij} = \big\langle \nabla f_i(z_{ij}; \xi_i),\ \nabla f_j(z_{ij}; \xi_j) \big\rangle,
        \qquad z_{ij} = \tfrac12 (x_i + x_j)

    (eq. (w) of Hashemi et al. 2024, Algorithm 1).

    Parameters
    ----------
    params : Params
        Stacked client models, one row per client (``n`` rows).
    data : (x, y)
        One minibatch per client: ``x`` of shape ``(n, B, *input_shape)`` and ``y`` of shape
        ``(n, B)``; row ``i`` is :math:`\xi_i`, used for :math:`\nabla f_i` in every pair of
        client ``i``.
    pairs : ndarray of int, shape (P, 2)
        Client pairs ``(i, j)`` (rows of ``params`` and ``data``), ``i != j``.
    batched : bool
        True: the :math:`2P` midpoint gradients together
        (:func:`learning.all_pairs.midpoint_gradient_products`). False: a plain Python loop
        over the pairs, one ``torch.autograd.grad`` per client and pair. Both give the same
        numbers (up to floating-point summation order).
    model : nn.Module
        The architecture, called with :func:`torch.func.functional_call`; its own weights
        are not used.
    task : Task
        The loss (cross-entropy or squared error).

    Returns
    -------
    Tensor of shape (P,)
        :math:`s_{ij}` for each pair, on the parameters' device.
    """
    x, y = data
    if batched:
        return midpoint_gradient_products(model, task, params, x, y, pairs)
    pairs = checked_pairs(pairs, params, x)
    if pairs.shape[0] == 0:
        first = next(iter(params.values()))
        return torch.zeros(0, dtype=first.dtype, device=first.device)
    return _pairwise_loop(params, x, y, pairs, functional_loss(model, task))


def _pairwise_loop(
    params: Mapping[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    pairs: np.ndarray,
    loss: Callable[..., torch.Tensor],
) -> torch.Tensor:
    names = list(params)
    values = []
    for i, j in pairs.tolist():
        z = {n: (0.5 * (params[n][i] + params[n][j])).detach().requires_grad_(True) for n in names}
        gi = torch.autograd.grad(loss(z, x[i], y[i]), [z[n] for n in names])
        gj = torch.autograd.grad(loss(z, x[j], y[j]), [z[n] for n in names])
        values.append(sum((a * b).sum() for a, b in zip(gi, gj, strict=True)))
    return torch.stack(values).detach()  # type: ignore[arg-type]


# --------------------------------------------------------------------------- elasticity


def join_client(
    models: Mapping[str, torch.Tensor], weights: torch.Tensor, model: Mapping[str, torch.Tensor]
) -> tuple[Params, torch.Tensor]:
    """Add a client with parameters ``model`` (no client axis).

    Its row and column of :math:`W` start at 1 (box domain), like :math:`W^0` of Algorithm 1.
    """
    grown = {k: torch.cat([v, model[k].unsqueeze(0).to(v)]) for k, v in models.items()}
    n = weights.shape[0] + 1
    new = torch.ones(n, n, dtype=weights.dtype, device=weights.device)
    new[:-1, :-1] = weights
    return grown, new


def leave_client(
    models: Mapping[str, torch.Tensor], weights: torch.Tensor, client: int
) -> tuple[Params, torch.Tensor]:
    """Remove ``client``: its model row and its row and column of :math:`W`."""
    n = weights.shape[0]
    if not 0 <= client < n:
        raise ValueError(f"client must be in [0, {n}), got {client}")
    keep = torch.as_tensor([k for k in range(n) if k != client], device=weights.device)
    return select(models, keep), weights.index_select(0, keep).index_select(1, keep)
