r"""CoBo: collaborative learning via bilevel optimisation (Hashemi, He and Jaggi, NeurIPS 2024).

Every client :math:`i` keeps a personal model :math:`x_i`; a collaboration matrix
:math:`W \in [0, 1]^{n \times n}` (symmetric, :math:`W^0 = \mathbf 1 \mathbf 1^\top`) says who
pulls whom. One round (the paper's Section 2, "Algorithm": Algorithm 1 and the updates of
:math:`w_{ij}` and :math:`x_i`):

1. **Inner step** (client selection, projected gradient *ascent*) on sampled pairs only:

   .. math::

       z_{ij} = \tfrac12 (x_i + x_j), \qquad
       s_{ij} = \langle \nabla f_i(z_{ij}; \xi_i), \nabla f_j(z_{ij}; \xi_j) \rangle, \qquad
       w_{ij} \leftarrow \mathrm{clip}_{[0, 1]}(w_{ij} + \gamma s_{ij}) = w_{ji}.

   ``inner_solver="exact"`` takes the vertex :math:`w_{ij} = \mathbb 1[s_{ij} > 0]` instead
   (unchanged when :math:`s_{ij} = 0`): the Frank-Wolfe step the proof of Theorem 1 assumes (its
   Case 2 sets :math:`w_{ik} = 0` in one step, which a finite :math:`\gamma` does not guarantee).
2. **Outer step** (SGD on the loss plus the graph-Laplacian penalty, with the fresh
   :math:`W^{t+1}` and the snapshot :math:`X^t`):

   .. math::

       X \leftarrow X - \eta \big( G + \rho\, (D_W - W) X \big), \qquad D_W = \mathrm{diag}(W \mathbf 1).

**Pairs** (Algorithm 1, "with a probability 1/n"; Section 4.1 and Table 1 for the schedules): each
unordered pair of participating clients is drawn independently with probability :math:`p_t`
(:class:`PairSchedule`): ``constant`` :math:`p = 2/n` (the official code's reading of "1/n per
ordered pair", :math:`n - 1` pairs per round), ``time`` :math:`\min(1, c/(t+1))` or
:math:`\min(1, c/\sqrt{t+1})`, ``mixed`` (constant until ``switch_at`` rounds, then time-decaying;
paper: 0.2% of the run and 1/t, code: 800 iterations and :math:`1/\sqrt t`), ``all`` (every pair,
every round).

**Simplex variant** (Remark 1; the LLM experiment of Section 4.3): ``domain="simplex"``
starts from :math:`W^0 = (\mathbf 1 \mathbf 1^\top - I)/(n - 1)`, adds :math:`\gamma s_{ij}` to
both :math:`w_{ij}` and :math:`w_{ji}` and projects every touched row onto the probability
simplex (sort-based Euclidean projection). :math:`W` is then row-stochastic, not symmetric.
The second midpoint gradient uses client :math:`j`'s data (the paper's definition; the
official LLM code uses client :math:`i`'s again).

**Elasticity** (Section 2, "Algorithm": pairwise updates need no global synchronisation):
:func:`join_client` adds a row and column of ones (a fresh client trusts everyone until the midpoint
gradients disagree) and :func:`leave_client` deletes them; in the federated algorithm, clients
absent from a round neither train nor update their weights.

The pairwise work (gradients at pairwise midpoints) is :func:`pairwise_work` in one call:
all midpoints at once on the hand-stacked layers of :mod:`learning.all_pairs`, or a plain
per-pair loop with the same numbers. :class:`CoBo` splits it between the clients, each
computing its gradients at its pairs' midpoints on its own data
(:func:`midpoint_gradients`), and the server, which forms the inner products
(:func:`inner_products`). :func:`simulate_quadratic` runs the algorithm on Example 2 of the
paper (clustered quadratics) with exact gradients, started far from all optima (Point A
of Figure 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from econ.validation import choice, non_negative, positive, positive_int, unit_interval
from learning.algorithms.base import (
    Context,
    Dispatch,
    MultiExchange,
    SplitAlgorithm,
    State,
    register,
)
from learning.all_pairs import checked_pairs, gradients_on, midpoint_gradient_products
from learning.engine import Engine, Params, Task, sample_batches, select
from learning.optim import SGDConfig, momentum_buffer

__all__ = [
    "DOMAINS",
    "INNER_SOLVERS",
    "SCHEDULES",
    "CoBo",
    "CoBoState",
    "PairSchedule",
    "QuadraticRun",
    "QuadraticToy",
    "in_cluster_consensus",
    "initial_weights",
    "inner_products",
    "join_client",
    "laplacian_penalty",
    "leave_client",
    "midpoint_gradients",
    "oracle_weights",
    "pairwise_work",
    "project_rows_to_simplex",
    "sample_pairs",
    "simulate_quadratic",
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
    r""":math:`W^0`: all ones on the box (Algorithm 1), :math:`(\mathbf 1\mathbf 1^\top - I)/(n-1)`
    on the simplex (the official LLM code; a single client keeps weight 1 on itself)."""
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
    r"""The inner step (eq. (w)) on the sampled ``pairs`` (rows ``(i, j)``, ``i != j``) with
    midpoint inner products ``inner`` (:math:`s_{ij}`, one per pair).

    ``box`` + ``pgd``: :math:`w_{ij} = w_{ji} \leftarrow \mathrm{clip}_{[0,1]}(w_{ij} + \gamma s_{ij})`;
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
    r"""The consensus force :math:`(D_W - W) X`, row :math:`i` being
    :math:`\sum_k w_{ik} (x_i - x_k)`, for every stacked parameter (the gradient of
    :math:`\frac12 \sum_{i<j} w_{ij} \|x_i - x_j\|^2` for symmetric :math:`W`; the penalty of
    the paper's outer problem, Model-Training, Section 2)."""
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
    r"""One step of CoBo's outer problem for every participant (Hashemi et al. 2024, Alg. 1):

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
    """Unordered pairs ``(i, j)``, ``i < j`` of ``clients``, each kept with probability
    ``schedule.probability(t, len(clients))``; shape ``(P, 2)``."""
    clients = np.sort(np.asarray(clients, dtype=np.int64))
    a, b = np.triu_indices(clients.size, k=1)
    p = schedule.probability(t, clients.size)
    keep = np.ones(a.size, dtype=bool) if p >= 1.0 else rng.random(a.size) < p
    return np.stack([clients[a[keep]], clients[b[keep]]], axis=1)


# --------------------------------------------------------------------------- pairwise work


def _loss_fn(model: nn.Module, task: Task) -> Callable[..., torch.Tensor]:
    def loss(params: Params, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return task.loss(functional_call(model, params, (x,)), y)

    return loss


def pairwise_work(
    params: Mapping[str, torch.Tensor],
    data: tuple[torch.Tensor, torch.Tensor],
    pairs: np.ndarray,
    *,
    batched: bool,
    model: nn.Module,
    task: Task,
) -> torch.Tensor:
    r"""One round of CoBo's pairwise work: the inner product of the two clients' gradients
    at the midpoint of each pair,

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
    return _pairwise_loop(params, x, y, pairs, _loss_fn(model, task))


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
    """Add a client with parameters ``model`` (no client axis): its row and column of
    :math:`W` start at 1 (box domain), like :math:`W^0` of Algorithm 1."""
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


# --------------------------------------------------------------------------- federated algorithm


class _CoBoEntries(TypedDict):
    models: Params
    momentum: Params
    started: torch.Tensor
    weights: torch.Tensor
    round: torch.Tensor


class CoBoState(_CoBoEntries, total=False):
    """State of :class:`CoBo`: every client's ``models`` and ``momentum`` buffers (stacked),
    which clients have ``started``, the collaboration weights :math:`W` (``weights``) and the
    ``round``. Between ``dispatch`` and ``server_update`` it also carries the round's memo
    (each dispatch's ``plan``): the sampled ``pairs``, the minibatch positions of every local
    step (``batches``), the participants' current models and buffers (``local``,
    ``local_momentum``), which of them take their ``fresh`` first step, the ``losses`` so far,
    the updated :math:`W` (``new_weights``), the midpoint ``slots`` of the pairs' exchange and
    the current local ``step``."""

    pairs: torch.Tensor
    batches: torch.Tensor
    local: Params
    local_momentum: Params
    fresh: torch.Tensor
    losses: torch.Tensor
    new_weights: torch.Tensor
    slots: torch.Tensor
    step: torch.Tensor


@register
class CoBo(SplitAlgorithm[CoBoState], MultiExchange[CoBoState]):
    r"""CoBo on the round loop (see the module docstring); state :class:`CoBoState`.

    Each round: sample pairs among the participating clients, draw one fresh minibatch per
    client, update :math:`W` from the midpoint inner products, then ``local.steps`` outer
    steps

    .. math::

        m \leftarrow \beta m + (1 - d)(g + \lambda x), \qquad
        x_i \leftarrow x_i - \eta \Big(m_i + \rho \sum_k w_{ik} (x_i - x_k)\Big)

    with the context's optimiser (learning rate :math:`\eta`, momentum :math:`\beta`, dampening
    :math:`d`, weight decay :math:`\lambda`; a client's first step sets :math:`m = g + \lambda x`,
    :func:`learning.optim.momentum_buffer`) on the gradient part only (the penalty has no momentum,
    as in the official vision code), the sum running over the participating clients.

    **Client and server halves** (:class:`~learning.algorithms.base.MultiExchange`, one
    exchange for the pairs and one per local step). ``dispatch`` samples the pairs and draws
    every minibatch of the round (the pair minibatch, then one per step), and sends each
    client in a pair the midpoints :math:`z_{ij}` of its pairs with its pair minibatch's
    positions; the client returns its gradients at them on its own data
    (:func:`midpoint_gradients`), the server forms :math:`s_{ij}` (:func:`inner_products`)
    and updates :math:`W` (:func:`update_weights`). Then every local step, each participant
    returns its minibatch gradient at its current model, and the server takes the step above
    (:func:`local_step`): the penalty needs every participant's model, so the step is the
    server's.

    Parameters
    ----------
    rho : float
        Penalty :math:`\rho` (code: 0.05). Keep :math:`\eta\rho n < 2` for stability: the penalty
        step :math:`X \leftarrow (I - \eta\rho L_W) X` has :math:`\lambda_{\max}(L_W) = n` at
        :math:`W = \mathbf 1 \mathbf 1^\top`.
    gamma : float
        Inner step size :math:`\gamma` (code: 0.01).
    schedule, p_const, switch_at, decay : see :class:`PairSchedule`
        Default ``mixed``: :math:`2/n` for the first ``switch_at`` rounds, then :math:`1/t`.
    domain : {"box", "simplex"}
    inner_solver : {"pgd", "exact"}
    pair_batch_size : int, optional
        Minibatch of each client for the midpoint gradients (the theory's :math:`b`);
        the context's local batch size when None.
    """

    name = "cobo"

    def __init__(
        self,
        ctx: Context,
        rho: float = 0.05,
        gamma: float = 0.01,
        schedule: str = "mixed",
        p_const: float | None = None,
        switch_at: int = 10,
        decay: str = "1/t",
        domain: str = "box",
        inner_solver: str = "pgd",
        pair_batch_size: int | None = None,
    ) -> None:
        super().__init__(ctx)
        self.pair_batch_size = (
            ctx.local.batch_size
            if pair_batch_size is None
            else positive_int("pair_batch_size", pair_batch_size)
        )
        self.rho = float(non_negative("rho", rho))
        self.gamma = float(positive("gamma", gamma))
        self.schedule = PairSchedule(schedule, p_const, int(switch_at), decay)
        self.domain = choice("domain", domain, DOMAINS)
        self.inner_solver = choice("inner_solver", inner_solver, INNER_SOLVERS)
        if domain == "simplex" and inner_solver == "exact":
            raise ValueError("inner_solver='exact' is defined on the box domain only")

    def init(self, models: Params, rng: np.random.Generator) -> CoBoState:
        n = self.ctx.n_clients
        return {
            "models": {k: v.clone() for k, v in models.items()},
            "momentum": {k: torch.zeros_like(v) for k, v in models.items()},
            "started": torch.zeros(n, dtype=torch.bool, device=self.ctx.device),
            "weights": initial_weights(n, self.domain).to(self.ctx.device),
            "round": torch.zeros((), dtype=torch.int64),
        }

    def _sgd(self) -> SGDConfig:
        sgd = self.ctx.local.sgd
        if not isinstance(sgd, SGDConfig):
            raise ValueError("CoBo's local steps are SGD steps, not Adadelta")
        return sgd

    def dispatch(self, state: CoBoState, clients: np.ndarray, rng: np.random.Generator) -> Dispatch:
        """The pairs of the round and every minibatch position (``rng``'s first child draws
        the pairs, its second the pair minibatch and one minibatch per local step); the
        pairs' exchange, or the first step's when no pair was drawn."""
        self._sgd()
        clients = np.asarray(clients, dtype=np.int64)
        pair_rng, batch_rng = rng.spawn(2)
        pairs = sample_pairs(self.schedule, int(state["round"]), clients, pair_rng)
        sizes = self.ctx.train.sizes_numpy()[clients]
        first = sample_batches(sizes, 1, self.pair_batch_size, batch_rng)[:, 0]
        steps = [
            sample_batches(sizes, 1, self.ctx.local.batch_size, batch_rng)[:, 0]
            for _ in range(self.ctx.local.steps)
        ]
        idx = torch.as_tensor(clients, device=self.ctx.device)
        plan: State = {
            "pairs": torch.from_numpy(pairs),
            "batches": torch.from_numpy(np.stack(steps)),
            "local": select(state["models"], idx),
            "local_momentum": select(state["momentum"], idx),
            "fresh": ~state["started"].index_select(0, idx),
        }
        if pairs.shape[0] == 0:
            return self._first_step(state, clients, plan, torch.zeros(0))
        position = np.full(self.ctx.n_clients, -1, dtype=np.int64)
        position[clients] = np.arange(clients.size)
        local_pairs = position[pairs]
        receivers, count, slots = _midpoint_slots(local_pairs, clients.size)
        width = int(count.max())
        block = torch.as_tensor(local_pairs, device=self.ctx.device)
        flat_slots = torch.as_tensor(slots, device=self.ctx.device)
        midpoints: Params = {}
        for name, v in plan["local"].items():
            z = 0.5 * (v.index_select(0, block[:, 0]) + v.index_select(0, block[:, 1]))
            padded = z.new_zeros(receivers.size * width, *z.shape[1:])
            padded[flat_slots[:, 0]] = z
            padded[flat_slots[:, 1]] = z
            midpoints[name] = padded.reshape(receivers.size, width, *z.shape[1:])
        return Dispatch(
            each={
                "midpoints": midpoints,
                "count": torch.from_numpy(count),
                "batch": torch.from_numpy(first[receivers]),
            },
            common={},
            config={"exchange": "pairs"},
            receivers=receivers,
            plan={**plan, "slots": flat_slots},
        )

    def _first_step(
        self, state: CoBoState, clients: np.ndarray, plan: State, inner: torch.Tensor
    ) -> Dispatch:
        """The inner step on the round's pairs with their products ``inner``, and the first
        local step's exchange."""
        weights = update_weights(
            state["weights"],
            plan["pairs"].numpy(),
            inner,
            gamma=self.gamma,
            domain=self.domain,
            solver=self.inner_solver,
        )
        return self._step_exchange({**plan, "new_weights": weights}, 0)

    @staticmethod
    def _step_exchange(plan: State, step: int) -> Dispatch:
        """Local step ``step``: every participant's current model and minibatch positions."""
        return Dispatch(
            each={"model": plan["local"], "batch": plan["batches"][step]},
            common={},
            config={"exchange": "step"},
            plan={**plan, "step": torch.tensor(step)},
        )

    def _stepped(self, state: CoBoState, clients: np.ndarray, replies: State) -> State:
        """The round's memo after the local step whose gradients are ``replies``."""
        idx = torch.as_tensor(np.asarray(clients, dtype=np.int64), device=self.ctx.device)
        coupling = state["new_weights"].index_select(0, idx).index_select(1, idx)
        local, momentum = local_step(
            state["local"],
            replies["gradient"],
            state["local_momentum"],
            coupling,
            self._sgd(),
            self.rho,
            state.get("fresh"),
        )
        loss = replies["loss"].detach()[None]
        done = {k: v for k, v in state.items() if k in _MEMO and k != "fresh"}
        losses = loss if "losses" not in state else torch.cat([state["losses"], loss])
        return {**done, "local": local, "local_momentum": momentum, "losses": losses}

    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        data = ctx.train
        clients = np.asarray(clients, dtype=np.int64)
        local = sent.each["batch"].cpu().numpy()
        rows = torch.from_numpy(local + data.offsets.cpu().numpy()[clients][:, None])
        rows = rows.to(ctx.device)
        x, y = data.x[rows], data.y[rows]
        if sent.config["exchange"] == "pairs":
            grads = midpoint_gradients(ctx.engine, sent.each["midpoints"], sent.each["count"], x, y)
            return {"gradient": grads}
        grads, loss = ctx.engine.gradients(sent.each["model"], x, y)
        return {"gradient": {k: g.detach() for k, g in grads.items()}, "loss": loss.detach()}

    def next_dispatch(
        self, state: CoBoState, clients: np.ndarray, replies: State
    ) -> Dispatch | None:
        if "step" not in state:  # the pairs' exchange
            inner = inner_products(replies["gradient"], state["slots"])
            plan = {k: v for k, v in state.items() if k in _MEMO}
            return self._first_step(state, clients, plan, inner)
        step = int(state["step"])
        if step + 1 == self.ctx.local.steps:
            return None
        return self._step_exchange(self._stepped(state, clients, replies), step + 1)

    def server_update(
        self, state: CoBoState, clients: np.ndarray, replies: State, rng: np.random.Generator
    ) -> tuple[CoBoState, dict[str, float]]:
        done = self._stepped(state, clients, replies)
        idx = torch.as_tensor(np.asarray(clients, dtype=np.int64), device=self.ctx.device)
        models = {k: v.clone() for k, v in state["models"].items()}
        momentum = {k: v.clone() for k, v in state["momentum"].items()}
        for name in models:
            models[name][idx] = done["local"][name].detach()
            momentum[name][idx] = done["local_momentum"][name].detach()
        started = state["started"].clone()
        started[idx] = True
        new_state: CoBoState = {
            "models": models,
            "momentum": momentum,
            "started": started,
            "weights": state["new_weights"],
            "round": torch.tensor(int(state["round"]) + 1, dtype=torch.int64),
        }
        metrics = {
            "train_loss": float(done["losses"].mean()),
            "pairs": float(state["pairs"].shape[0]),
        }
        return new_state, metrics

    def client_models(self, state: CoBoState) -> Params:
        return state["models"]


#: The entries of CoBo's round memo (a dispatch's ``plan``) that go on to the next exchange.
_MEMO = ("pairs", "batches", "local", "local_momentum", "fresh", "losses", "new_weights")


def _midpoint_slots(pairs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each pair's midpoint goes among the receivers of the pairs' exchange: the
    receivers (positions among the ``n`` participants that are in a pair), how many
    midpoints each gets, and for each pair ``(i, j)`` of ``pairs`` (positions) the slots of
    its two gradients (receiver row times the largest count, plus the midpoint's place).
    Each receiver gets the pairs it opens, then those it closes, in pair order: the order in
    which :func:`learning.all_pairs.midpoint_gradient_products` runs them on its batch."""
    degree = np.bincount(pairs.reshape(-1), minlength=n)
    receivers = np.flatnonzero(degree)
    row = np.full(n, -1, dtype=np.int64)
    row[receivers] = np.arange(receivers.size)
    width = int(degree.max())
    filled = np.zeros(receivers.size, dtype=np.int64)
    slots = np.empty_like(pairs)
    for side in (0, 1):
        for p, client in enumerate(pairs[:, side]):
            r = row[client]
            slots[p, side] = r * width + filled[r]
            filled[r] += 1
    return receivers, degree[receivers], slots


def midpoint_gradients(
    engine: Engine, midpoints: Params, count: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> Params:
    r"""The client half of CoBo's pairwise work: receiver ``r``'s gradients
    :math:`\nabla f_r(z; \xi_r)` at the first ``count[r]`` of its midpoints ``midpoints[r]``
    on its minibatch ``(x[r], y[r])``, laid out (and zero-padded) like ``midpoints``:
    :func:`learning.all_pairs.gradients_on` on the batched engine (every midpoint a slot,
    run in order of its batch), the engine's per-client gradients otherwise."""
    first = next(iter(midpoints.values()))
    receivers, width = first.shape[0], first.shape[1]
    counts = count.to(device=first.device, dtype=torch.long)
    starts = torch.arange(receivers, device=first.device) * width
    slots = torch.cat(
        [s + torch.arange(int(c), device=first.device) for s, c in zip(starts, counts, strict=True)]
    )
    batches = torch.repeat_interleave(torch.arange(receivers, device=first.device), counts)
    flat = {k: v.reshape(receivers * width, *v.shape[2:]) for k, v in midpoints.items()}
    if engine.name == "batched":
        grads, _ = gradients_on(engine.model, engine.task, flat, x, y, batches, slots)
    else:
        grads, _ = engine.gradients(
            select(flat, slots), x.index_select(0, batches), y.index_select(0, batches)
        )
    out: Params = {}
    for name, v in flat.items():
        padded = torch.zeros_like(v)
        padded[slots] = grads[name].detach()
        out[name] = padded.reshape(midpoints[name].shape)
    return out


def inner_products(gradients: Params, slots: torch.Tensor) -> torch.Tensor:
    r"""The server half of CoBo's pairwise work: :math:`s_{ij}` of each pair from the
    receivers' midpoint gradients (:func:`midpoint_gradients`, stacked one row per
    receiver); ``slots[p]`` are the positions (receiver row times the rows' width plus the
    midpoint) of pair ``p``'s two gradients."""
    pairs = slots.shape[0]
    flat = {k: g.reshape(-1, *g.shape[2:]) for k, g in gradients.items()}
    i, j = slots[:, 0], slots[:, 1]
    return sum(  # type: ignore[return-value]
        (g.index_select(0, i) * g.index_select(0, j)).reshape(pairs, -1).sum(1)
        for g in flat.values()
    )


# --------------------------------------------------------------------------- quadratic toy


@dataclass(frozen=True, slots=True, kw_only=True)
class QuadraticToy:
    r"""Example 2 of the paper: :math:`f_i(x) = \frac{a_i}{2} \|x - \mu_{k(i)}\|^2`.

    ``clusters`` gives :math:`k(i)`; the centres :math:`\mu_k \sim \mathcal N(0, \text{scale}^2 I_d)`
    and curvatures :math:`a_i \sim \mathcal U(a_{low}, a_{high})` are drawn by
    :func:`simulate_quadratic`. Every client starts at ``start`` :math:`\cdot \mathbf 1`
    (far from all optima, Point A of Figure 1). ``sigma`` adds
    :math:`\mathcal N(0, \sigma^2 I)` noise to every gradient.
    """

    clusters: tuple[int, ...] = (0, 0, 1, 1, 2, 2, 3, 3)
    dim: int = 10
    scale: float = 5.0
    a_low: float = 0.5
    a_high: float = 1.5
    start: float = 20.0
    sigma: float = 0.0

    def __post_init__(self) -> None:
        if len(self.clusters) < 1:
            raise ValueError("clusters must name at least one client")
        positive_int("dim", self.dim)
        non_negative("scale", self.scale)
        positive("a_low", self.a_low)
        if self.a_high < self.a_low:
            raise ValueError(f"a_high must be at least a_low = {self.a_low}, got {self.a_high}")
        non_negative("sigma", self.sigma)


@dataclass(frozen=True, slots=True)
class QuadraticRun:
    """Outcome of :func:`simulate_quadratic`.

    Attributes
    ----------
    x : ndarray (n, d)
        Final models (rows in the final client order, joiners appended).
    weights : ndarray (n, n)
        Final :math:`W`.
    clusters : ndarray (n,)
        Cluster of each final client.
    centres, curvature : ndarray
        :math:`\\mu_k` (K, d) and :math:`a_i` of each final client.
    weight_error : ndarray (T,)
        Mean off-diagonal :math:`|W - W^\\star|` after each round.
    consensus : ndarray (T,)
        In-cluster consensus after each round (:func:`in_cluster_consensus`).
    pairs : ndarray (T,)
        Pairs sampled in each round.
    snapshots : dict round -> ndarray
        :math:`W` after the rounds listed in ``record``.
    """

    x: np.ndarray
    weights: np.ndarray
    clusters: np.ndarray
    centres: np.ndarray
    curvature: np.ndarray
    weight_error: np.ndarray
    consensus: np.ndarray
    pairs: np.ndarray
    snapshots: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def exact_from(self) -> int | None:
        """First round (1-based) from which :math:`W` equals the oracle until the end."""
        wrong = np.flatnonzero(self.weight_error != 0)
        if wrong.size == 0:
            return 1
        last = int(wrong[-1]) + 1
        return None if last == self.weight_error.size else last + 1

    @property
    def distance_to_optimum(self) -> np.ndarray:
        """:math:`\\|x_i - \\mu_{k(i)}\\|` of every final client."""
        return np.linalg.norm(self.x - self.centres[self.clusters], axis=1)


def in_cluster_consensus(x: torch.Tensor, clusters: np.ndarray) -> float:
    r"""Sum over clusters of :math:`\frac1{c^2} \sum_{i,j \in \mathcal C} \|x_i - x_j\|^2`
    (the left-hand side of Theorem 1, before the time average)."""
    return float((torch.cdist(x, x).square() * _consensus_mask(clusters).to(x)).sum())


def _consensus_mask(clusters: np.ndarray) -> torch.Tensor:
    same = oracle_weights(clusters)
    return torch.as_tensor(same / same.sum(1, keepdims=True) ** 2)


def simulate_quadratic(
    toy: QuadraticToy,
    rounds: int,
    *,
    eta: float = 0.05,
    rho: float = 0.5,
    gamma: float = 1.0,
    schedule: PairSchedule | None = None,
    inner_solver: str = "pgd",
    domain: str = "box",
    joins: Mapping[int, int] | None = None,
    leaves: Mapping[int, int] | None = None,
    record: tuple[int, ...] = (),
    seed: int | np.random.Generator | None = None,
) -> QuadraticRun:
    r"""CoBo on the clustered quadratics of Example 2 (Section 3), with exact gradients
    :math:`\nabla f_i(x) = a_i (x - \mu_{k(i)})` (plus noise when ``toy.sigma > 0``).

    Each round: pairs from ``schedule`` (default ``all``), the inner step with the
    midpoint gradients, then :math:`X \leftarrow X - \eta (G + \rho (D_W - W) X)`.

    Parameters
    ----------
    joins : mapping round -> cluster, optional
        Before that round (0-based) a new client of that cluster joins at the start point
        with curvature drawn like the others (:func:`join_client`).
    leaves : mapping round -> client, optional
        Before that round the client at that row leaves (:func:`leave_client`).
    record : tuple of int
        Rounds (1-based, after the round) whose :math:`W` is kept in ``snapshots``.
    seed : int, Generator or None
        Centres, curvatures, pairs and noise derive from it.
    """
    rounds = positive_int("rounds", rounds)
    positive("eta", eta)
    non_negative("rho", rho)
    positive("gamma", gamma)
    schedule = PairSchedule("all") if schedule is None else schedule
    joins, leaves = dict(joins or {}), dict(leaves or {})
    rng = np.random.default_rng(seed)
    problem_rng, pair_rng, noise_rng = rng.spawn(3)
    clusters = np.asarray(toy.clusters, dtype=np.int64)
    n_clusters = int(max([clusters.max(), *joins.values()])) + 1
    centres = problem_rng.normal(0.0, toy.scale, size=(n_clusters, toy.dim))
    curvature = problem_rng.uniform(toy.a_low, toy.a_high, size=clusters.size)
    mu = torch.as_tensor(centres)
    start = {"x": torch.full((toy.dim,), toy.start, dtype=torch.float64)}
    models: Params = {"x": start["x"].repeat(clusters.size, 1)}
    weights = initial_weights(clusters.size, domain)
    errors, consensus, n_pairs = np.zeros(rounds), np.zeros(rounds), np.zeros(rounds, np.int64)
    snapshots: dict[int, np.ndarray] = {}

    def gradients(points: torch.Tensor, owners: np.ndarray) -> torch.Tensor:
        a = torch.as_tensor(curvature[owners])[:, None]
        g = a * (points - mu[torch.as_tensor(clusters[owners])])
        if toy.sigma > 0:
            g = g + toy.sigma * torch.as_tensor(noise_rng.standard_normal(g.shape))
        return g

    for t in range(rounds):
        if t in leaves:
            gone = leaves[t]
            models, weights = leave_client(models, weights, gone)
            clusters, curvature = np.delete(clusters, gone), np.delete(curvature, gone)
        if t in joins:
            models, weights = join_client(models, weights, start)
            clusters = np.append(clusters, joins[t])
            curvature = np.append(curvature, problem_rng.uniform(toy.a_low, toy.a_high))
        x = models["x"]
        pairs = sample_pairs(schedule, t, np.arange(clusters.size), pair_rng)
        n_pairs[t] = pairs.shape[0]
        if pairs.shape[0]:
            z = 0.5 * (x[pairs[:, 0]] + x[pairs[:, 1]])
            s = (gradients(z, pairs[:, 0]) * gradients(z, pairs[:, 1])).sum(1)
            weights = update_weights(
                weights, pairs, s, gamma=gamma, domain=domain, solver=inner_solver
            )
        g = gradients(x, np.arange(clusters.size))
        force = laplacian_penalty(models, weights)["x"]
        models = {"x": x - eta * (g + rho * force)}
        if t == 0 or t in joins or t in leaves:
            oracle = torch.as_tensor(oracle_weights(clusters))
            mask = _consensus_mask(clusters)
            off = ~torch.eye(clusters.size, dtype=torch.bool)
        errors[t] = float((weights - oracle).abs()[off].mean()) if clusters.size > 1 else 0.0
        consensus[t] = float((torch.cdist(models["x"], models["x"]).square() * mask).sum())
        if t + 1 in record:
            snapshots[t + 1] = weights.numpy().copy()
    return QuadraticRun(
        x=models["x"].numpy(),
        weights=weights.numpy(),
        clusters=clusters,
        centres=centres,
        curvature=curvature,
        weight_error=errors,
        consensus=consensus,
        pairs=n_pairs,
        snapshots=snapshots,
    )
