r"""Federated-Clustering and its two O(N) relatives, Myopic- and Momentum-Clustering.

**Federated-Clustering** (Werner et al. 2023, Algorithm 2; Werner 2024, Alg. 2.2). Each
round every client ``j`` draws one minibatch and evaluates the gradient of *every* model
``x_i`` on it (one batched all-pairs call, :mod:`learning.all_pairs`); every client ``i``
then runs Threshold-Clustering with one centre, initialised at its own gradient, over the
gradients :math:`\{g_j(x_i)\}_j` taken at its own model, and steps with the result:

.. math::

    v_{i,t} = \mathrm{TC}\big(\{g_j(x_{i,t-1})\}_{j};\ v_0 = g_i(x_{i,t-1})\big), \qquad
    x_{i,t} = x_{i,t-1} - \eta\, v_{i,t}.

``variant="paper"`` is this update with the quantile radius of the synthetic experiments (strict
``<``; :math:`\lfloor qN \rfloor` points inside). ``variant="as-run"`` is the authors' published
MNIST/CIFAR code (Werner 2024, Table 2.1 and Figs. 2.4-2.6): heavy-ball momentum on the cluster
estimate, :math:`u_i \leftarrow \beta u_i + v_{i,t}`, :math:`x_i \leftarrow x_i - \eta u_i`
(``momentum``, 0.9 by default), the radius :math:`0.99\, d_{(\lfloor qN \rfloor)}` with ``<=``, and
``groups`` random subgroups re-drawn every round inside which FC runs.

**Myopic-Clustering** (Algorithm 1): the server clusters the clients' gradients at their
own models into ``K`` groups (k-means, k-means++ seeding) and each client steps with its
group's mean gradient. **Momentum-Clustering** (Algorithm 4, eq. (6)): the clients'
momenta :math:`m_{i,t} = \alpha g_i(x_{i,t-1}) + (1-\alpha) m_{i,t-1}` are clustered by
Threshold-Clustering with ``K`` centres started at the previous round's centres (k-means++
seeds in the first round) and each client steps with its nearest centre.

**Client and server halves** (:class:`~learning.algorithms.base.SplitAlgorithm`). In
Federated-Clustering the server sends each participant the models of its subgroup (every
participant's with ``groups=1``; the subgroups are drawn in ``dispatch``), each participant
draws one minibatch (all participants' minibatches are one draw of the round's stream) and
sends the gradients of those models on it, and the server runs every receiver's
Threshold-Clustering and the step. In Myopic- and Momentum-Clustering each participant
receives its own model and sends its minibatch gradient there; the server clusters and steps.
Momentum-Clustering's server keeps the momenta, which are a deterministic function of the
gradients sent (the paper's clients send the momenta themselves). The server's draws after
the clients' work (k-means++) come from a seed drawn in ``dispatch``
(:func:`learning.algorithms.exchanges.plan_seed`).

The vectors the clients send pass through :func:`learning.byzantine.submit` on the server, so
every method here runs with the attackers of an :class:`~learning.byzantine.AdversarialContext`.
"""

from __future__ import annotations

import math
from typing import TypedDict, TypeVar

import numpy as np
import torch

from econ.validation import choice, in_interval, positive, positive_int
from learning import byzantine
from learning.algorithms.base import Context, SplitAlgorithm, register
from learning.algorithms.exchanges import Dispatch, State, plan_seed, planned
from learning.algorithms.threshold_clustering import (
    FixedRadius,
    QuantileRadius,
    RadiusRule,
    TCResult,
    threshold_clustering,
)
from learning.all_pairs import client_batches, flatten, gradients_on, unflatten
from learning.engine import Params

__all__ = [
    "FederatedClustering",
    "FederatedClusteringState",
    "MomentumClustering",
    "MomentumClusteringState",
    "MyopicClustering",
    "MyopicClusteringState",
    "fc_clusters",
    "fc_directions",
    "kmeans",
    "kmeans_plus_plus",
    "momentum_update",
    "myopic_directions",
    "reseed_collapsed",
    "separation_diagnostics",
]


def kmeans_plus_plus(points: torch.Tensor, k: int, rng: np.random.Generator) -> torch.Tensor:
    """Indices of ``k`` seeds of ``points`` by k-means++ (Arthur & Vassilvitskii 2007).

    The first seed is uniform; each next seed is drawn with probability proportional to the
    squared distance to the nearest seed.

    References
    ----------
    Arthur and Vassilvitskii (2007), "k-means++: The Advantages of Careful Seeding", SODA.
    """
    n = points.shape[0]
    seeds = [int(rng.integers(n))]
    for _ in range(1, k):
        d2 = torch.cdist(points, points[seeds]).square().min(dim=1).values.double().cpu().numpy()
        total = d2.sum()
        p = d2 / total if total > 0 else np.full(n, 1.0 / n)
        seeds.append(int(rng.choice(n, p=p)))
    return torch.tensor(seeds, device=points.device)


def kmeans(points: torch.Tensor, k: int, rng: np.random.Generator, iters: int = 50) -> torch.Tensor:
    """Lloyd's k-means from k-means++ seeds; returns the label of each point (``int64``)."""
    k = min(positive_int("k", k), points.shape[0])
    centers = points[kmeans_plus_plus(points, k, rng)]
    labels = torch.cdist(points, centers).argmin(dim=1)
    for _ in range(iters):
        one_hot = torch.nn.functional.one_hot(labels, k).to(points.dtype)
        counts = one_hot.sum(0)
        sums = one_hot.T @ points
        centers = torch.where(counts[:, None] > 0, sums / counts.clamp_min(1)[:, None], centers)
        new = torch.cdist(points, centers).argmin(dim=1)
        if torch.equal(new, labels):
            break
        labels = new
    return labels


def fc_clusters(
    points: torch.Tensor, iters: int, radius: RadiusRule, *, inclusive: bool
) -> TCResult:
    """Federated-Clustering's Threshold-Clustering of every receiver, one centre each.

    ``points[..., i, j, :]`` is :math:`g_j(x_i)` (``(..., n, n, P)``, leading axes batched);
    receiver ``i`` runs one-centre Threshold-Clustering over row ``i`` started at its own
    gradient ``points[..., i, i, :]``. The result's ``centers[..., 0, :]`` are the cluster
    estimates :math:`v_{i,t}` and ``members[..., 0, :]`` the gradients inside every receiver's
    ball at the last iteration: the clients it takes as its cluster that round.

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning",
    Algorithm 2 (Federated-Clustering) and Algorithm 3 (Threshold-Clustering).
    """
    own = torch.diagonal(points, dim1=-3, dim2=-2).movedim(-1, -2)
    return threshold_clustering(points, own[..., None, :], iters, radius, inclusive=inclusive)


def fc_directions(
    points: torch.Tensor, iters: int, radius: RadiusRule, *, inclusive: bool
) -> torch.Tensor:
    """Federated-Clustering's cluster estimates, one per receiver, ``(..., n, P)``.

    The centres of :func:`fc_clusters`.

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning",
    Algorithm 2 (Federated-Clustering) and Algorithm 3 (Threshold-Clustering).
    """
    return fc_clusters(points, iters, radius, inclusive=inclusive).centers[..., 0, :]


def myopic_directions(
    grads: torch.Tensor, k: int, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Myopic-Clustering's step directions from the gradients ``grads`` ``(n, P)``.

    Returns the k-means labels of the gradients (:func:`kmeans`, ``k`` groups) and each
    client's group-mean gradient ``(n, P)``.

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning",
    Algorithm 1 (Myopic-Clustering).
    """
    labels = kmeans(grads, k, rng)
    one_hot = torch.nn.functional.one_hot(labels).to(grads.dtype)
    means = (one_hot.T @ grads) / one_hot.sum(0).clamp_min(1)[:, None]
    return labels, means[labels]


def momentum_update(momenta: torch.Tensor, grads: torch.Tensor, alpha: float) -> torch.Tensor:
    r"""Momentum-Clustering's client momentum (Werner et al. 2023, eq. (6)).

    :math:`m_{i,t} = \alpha\, g_i(x_{i,t-1}) + (1 - \alpha)\, m_{i,t-1}`. Of iid gradients
    of variance :math:`\sigma^2` it has stationary variance :math:`\alpha\sigma^2/(2-\alpha)
    \le \alpha\sigma^2` (Lemma 14; :func:`learning.theory.clustering_variance.ema_variance`).
    """
    return alpha * grads + (1 - alpha) * momenta


def reseed_collapsed(
    centers: torch.Tensor, taus: torch.Tensor, points: torch.Tensor
) -> tuple[torch.Tensor, list[int]]:
    """Re-seed collapsed centres, moving each to the point farthest from all centres.

    Algorithm 4 leaves the centres' initialisation open; this is collabecon's rule: while some
    centre ``k'`` lies within the radius ``taus[k]`` of an earlier kept centre ``k``, move
    ``k'`` to the point farthest from all current centres. Returns the centres ``(K, P)`` and
    the re-seeded indices.
    """
    centers = centers.clone()
    moved: list[int] = []
    for later in range(1, centers.shape[0]):
        gaps = (centers[:later] - centers[later]).norm(dim=1)
        if bool((gaps <= taus[:later]).any()):
            farthest = torch.cdist(points, centers).min(dim=1).values.argmax()
            centers[later] = points[farthest]
            moved.append(later)
    return centers, moved


def separation_diagnostics(
    grads: torch.Tensor, clusters: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The empirical check of Assumptions 4 and 5 (Werner et al. 2023, Fig. 2, eq. (7)-(8)).

    From every client's gradient at one model, ``grads`` ``(N, P)``, and the true ``clusters``
    ``(N,)``,

    .. math::

        A_i^2 = \frac{\lVert \nabla f_i - \nabla \bar f_{c(i)} \rVert^2}
        {\lVert \nabla \bar f_{c(i)} \rVert^2}, \qquad
        \Delta_i^2 = \min_{j \not\sim i} \lVert \nabla f_i - \nabla f_j \rVert^2

    (:math:`\bar f_c` the mean of cluster ``c``'s gradients; A5 with :math:`D = 0`).
    Returns ``(A2, Delta2)``, both ``(N,)``.
    """
    labels = clusters.to(device=grads.device, dtype=torch.int64)
    one_hot = torch.nn.functional.one_hot(labels).to(grads.dtype)
    means = (one_hot.T @ grads) / one_hot.sum(0).clamp_min(1)[:, None]
    g_bar = means[labels]
    a2 = (grads - g_bar).square().sum(1) / g_bar.square().sum(1)
    d2 = torch.cdist(grads, grads, compute_mode="donot_use_mm_for_euclid_dist").square()
    same = labels[:, None] == labels[None]
    return a2, d2.masked_fill(same, math.inf).min(dim=1).values


class _Models(TypedDict):
    models: Params


class MyopicClusteringState(_Models, total=False):
    """State of :class:`MyopicClustering`.

    The clients' ``models`` (stacked); inside ``server_update`` also the round's plan ``seed``.
    """

    seed: torch.Tensor


class _FederatedClusteringEntries(_Models):
    momentum: torch.Tensor


class FederatedClusteringState(_FederatedClusteringEntries, total=False):
    """State of :class:`FederatedClustering`.

    The clients' ``models`` (stacked) and their ``momentum`` buffers (one flat row each);
    after a round the clusters it used, ``members`` (``(N, N)`` bool, row ``i``: the clients
    whose gradients were inside receiver ``i``'s ball, all False for a client that did not
    take part); inside ``server_update`` also the round's plan, each participant's subgroup
    ``group``.
    """

    members: torch.Tensor
    group: torch.Tensor


class _MomentumClusteringEntries(_Models):
    momenta: torch.Tensor
    centers: torch.Tensor


class MomentumClusteringState(_MomentumClusteringEntries, total=False):
    """State of :class:`MomentumClustering`.

    The clients' ``models`` (stacked), their ``momenta`` (one flat row each) and the kept
    cluster ``centers`` (none before the first round); inside ``server_update`` also the
    round's plan ``seed``.
    """

    seed: torch.Tensor


#: The state type of a :class:`_GradientMethod`.
G = TypeVar("G", bound=_Models)


class _GradientMethod(SplitAlgorithm[G]):
    """Shared state and plumbing: stacked models, one minibatch gradient per client.

    The default halves are Myopic- and Momentum-Clustering's: each participant receives its
    own model and sends its minibatch gradient there (:meth:`client_update`); the server's
    draws after that work come from the seed of the round's ``plan``
    (:func:`learning.algorithms.exchanges.planned`).
    """

    client_parameters = ("batch_size",)

    def __init__(self, ctx: Context, lr: float | None, batch_size: int | None) -> None:
        super().__init__(ctx)
        self.lr = float(positive("lr", lr)) if lr is not None else ctx.local.sgd.lr
        self.batch_size = (
            positive_int("batch_size", batch_size)
            if batch_size is not None
            else ctx.local.batch_size
        )

    def client_models(self, state: G) -> Params:
        """The clients' own models :math:`x_i`."""
        return state["models"]

    def dispatch(self, state: G, clients: np.ndarray, rng: np.random.Generator) -> Dispatch:
        """Each participant receives its own model.

        The plan holds the seed of the server's draws
        (:func:`learning.algorithms.exchanges.plan_seed`).
        """
        idx = torch.as_tensor(np.asarray(clients), device=self.ctx.device)
        own = {k: v.index_select(0, idx) for k, v in state["models"].items()}
        return Dispatch(each={"model": own}, common={}, config={}, plan=plan_seed(rng))

    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        r"""Client ``i`` sends its gradient on one minibatch at its own model, and the loss.

        The gradient is :math:`g_i(x_{i,t-1})` (``gradient``, ``(n, P)``).
        """
        x, y = client_batches(ctx.train, clients, self.batch_size, rng)
        grads, loss = ctx.engine.gradients(sent.each["model"], x, y)
        return {"gradient": flatten(grads), "loss": loss}

    def _step(self, models: Params, clients: np.ndarray, direction: torch.Tensor) -> Params:
        flat = flatten(models).clone()
        idx = torch.as_tensor(clients, device=flat.device)
        flat[idx] -= self.lr * direction
        return unflatten(flat, models)


@register
class FederatedClustering(_GradientMethod[FederatedClusteringState]):
    r"""Federated-Clustering; see the module docstring.

    Parameters
    ----------
    variant : {"paper", "as-run"}
    iters : int
        Threshold-Clustering iterations per round (10; 3 in the MNIST Table 1 run).
    quantile : float
        Quantile ``q`` of the radius rule (about the own-cluster fraction; 0.2 on MNIST).
    radius : float, optional
        A fixed radius instead of the quantile rule (``<=``).
    groups : int
        Random subgroups per round (the as-run MNIST value is 15): the participants, shuffled,
        are cut into blocks of :math:`\lceil n / \text{groups} \rceil` (the last one smaller
        where it does not divide).
    momentum : float, optional
        Heavy-ball momentum on the cluster estimate; 0 for "paper", 0.9 for "as-run".
    lr, batch_size : optional
        Step size and minibatch size (default: the context's local training).
    """

    name = "federated-clustering"

    def __init__(
        self,
        ctx: Context,
        variant: str = "paper",
        iters: int = 10,
        quantile: float = 0.25,
        radius: float | None = None,
        groups: int = 1,
        momentum: float | None = None,
        lr: float | None = None,
        batch_size: int | None = None,
    ) -> None:
        super().__init__(ctx, lr, batch_size)
        self.variant = choice("variant", variant, ("paper", "as-run"))
        self.iters = positive_int("iters", iters)
        self.groups = positive_int("groups", groups)
        as_run = variant == "as-run"
        self.rule: RadiusRule = (
            FixedRadius(float(radius))
            if radius is not None
            else QuantileRadius(quantile, scale=0.99 if as_run else 1.0)
        )
        self.inclusive = radius is not None or as_run
        beta = (0.9 if as_run else 0.0) if momentum is None else momentum
        self.momentum = float(in_interval("momentum", beta, 0.0, 1.0, high_open=True))

    def init(self, models: Params, rng: np.random.Generator) -> FederatedClusteringState:
        """Every client starts at its initial model, with a zero momentum buffer."""
        return {
            "models": {k: v.clone() for k, v in models.items()},
            "momentum": torch.zeros_like(flatten(models)),
        }

    def subgroups(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """The subgroup of each of ``n`` participants (by position).

        One group (no draw) or ``groups`` blocks of a random permutation, numbered in the order
        of the blocks.
        """
        group = np.zeros(n, dtype=np.int64)
        if self.groups > 1:
            size = math.ceil(n / self.groups)
            group[rng.permutation(n)] = np.arange(n) // size
        return group

    def dispatch(
        self, state: FederatedClusteringState, clients: np.ndarray, rng: np.random.Generator
    ) -> Dispatch:
        """Each participant receives the models of its subgroup (:meth:`subgroups`).

        The models come in client order and zero-padded to the largest subgroup (``models``,
        ``(n, S, ...)``), with how many are real (``count``) and the participant's own place
        among them (``position``); the plan keeps the subgroups.
        """
        clients = np.asarray(clients, dtype=np.int64)
        group = self.subgroups(clients.size, rng)
        members = [np.flatnonzero(group == g) for g in range(int(group.max()) + 1)]
        width = max(m.size for m in members)
        table = np.full((clients.size, width), -1, dtype=np.int64)
        position = np.empty(clients.size, dtype=np.int64)
        for m in members:
            table[m, : m.size] = m
            position[m] = np.arange(m.size)
        device = self.ctx.device
        rows = torch.as_tensor(clients[table.clip(0)], device=device)
        padding = torch.as_tensor(table < 0, device=device)
        models = {k: v[rows] for k, v in state["models"].items()}
        for tensor in models.values():
            tensor[padding] = 0
        each = {
            "models": models,
            "count": torch.as_tensor((table >= 0).sum(1), device=device),
            "position": torch.as_tensor(position, device=device),
        }
        plan = {"group": torch.as_tensor(group)}
        return Dispatch(each=each, common={}, config={}, plan=plan)

    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        r"""Client ``j`` sends the gradients of its subgroup's models on one minibatch of its own.

        The gradient of every model ``x_i`` of its subgroup on that minibatch is
        :math:`g_j(x_i)` (``points``, ``(S, P)`` per client, zero beyond ``count``); it also
        sends its loss at its own model.

        References
        ----------
        Werner et al. (2023), "Provably Personalized and Robust Federated Learning",
        Algorithm 2 (Federated-Clustering).
        """
        x, y = client_batches(ctx.train, clients, self.batch_size, rng)
        models, count = sent.each["models"], sent.each["count"]
        n, width = count.numel(), next(iter(models.values())).shape[1]
        slots = torch.arange(n * width, device=count.device)
        grads, losses = gradients_on(
            ctx.engine.model,
            ctx.engine.task,
            {k: v.reshape(n * width, *v.shape[2:]) for k, v in models.items()},
            x,
            y,
            slots // width,
        )
        points = flatten(grads).reshape(n, width, -1)
        padding = torch.arange(width, device=count.device)[None, :] >= count[:, None]
        points.masked_fill_(padding[..., None], 0)
        own = losses.reshape(n, width).gather(1, sent.each["position"][:, None])[:, 0]
        return {"points": points, "loss": own}

    def server_update(
        self,
        state: FederatedClusteringState,
        clients: np.ndarray,
        replies: State,
        rng: np.random.Generator,
    ) -> tuple[FederatedClusteringState, dict[str, float]]:
        r"""Cluster every receiver's gradients within its subgroup, then take the step.

        In every subgroup, for every receiver ``i``, one-centre Threshold-Clustering over the
        subgroup's submitted :math:`\{g_j(x_i)\}_j` (:func:`fc_directions`) gives
        :math:`v_{i,t}`; then the momentum and the step,

        .. math::

            u_i \leftarrow \beta u_i + v_{i,t}, \qquad x_i \leftarrow x_i - \eta\, u_i

        (:math:`\beta = 0`: the paper's :math:`x_{i,t} = x_{i,t-1} - \eta\, v_{i,t}`).

        References
        ----------
        Werner et al. (2023), "Provably Personalized and Robust Federated Learning",
        Algorithm 2 (Federated-Clustering);
        Werner (2024), ch. 2, Alg. 2.2 and Table 2.1 (``variant="as-run"``).
        """
        clients = np.asarray(clients, dtype=np.int64)
        table = replies["points"]  # [j, s] = g_j(x of the s-th member of j's subgroup)
        group = state["group"].cpu().numpy()
        v = table.new_empty(clients.size, table.shape[2])
        n_all = self.ctx.n_clients
        inside = torch.zeros(n_all, n_all, dtype=torch.bool, device=table.device)
        for g in range(int(group.max()) + 1):
            members = np.flatnonzero(group == g)
            idx = torch.as_tensor(members, device=table.device)
            points = table.index_select(0, idx)[:, : members.size].transpose(0, 1).contiguous()
            points = byzantine.submit(self.ctx, points, clients[members], rng)  # [i, j] = g_j(x_i)
            result = fc_clusters(points, self.iters, self.rule, inclusive=self.inclusive)
            v[idx] = result.centers[:, 0]
            ids = torch.as_tensor(clients[members], device=table.device)
            inside[ids[:, None], ids[None, :]] = result.members[:, 0]
        buffer = state["momentum"].clone()
        idx = torch.as_tensor(clients, device=buffer.device)
        buffer[idx] = self.momentum * buffer[idx] + v
        models = self._step(state["models"], clients, buffer[idx])
        new: FederatedClusteringState = {"models": models, "momentum": buffer, "members": inside}
        return new, {"train_loss": float(replies["loss"].mean())}


@register
class MyopicClustering(_GradientMethod[MyopicClusteringState]):
    """Myopic-Clustering: k-means on the clients' gradients, a step with the group mean.

    The gradients are taken at the clients' own models; ``n_clusters`` defaults to the number
    of ground-truth clusters.

    The participants send their gradients (:meth:`_GradientMethod.client_update`); the
    server's k-means++ seeding draws from the round's plan seed.
    """

    name = "myopic-clustering"

    def __init__(
        self,
        ctx: Context,
        n_clusters: int | None = None,
        lr: float | None = None,
        batch_size: int | None = None,
    ) -> None:
        super().__init__(ctx, lr, batch_size)
        self.n_clusters = ctx.cluster_count(n_clusters)

    def init(self, models: Params, rng: np.random.Generator) -> MyopicClusteringState:
        """Every client starts at its initial model."""
        return {"models": {k: v.clone() for k, v in models.items()}}

    def server_update(
        self,
        state: MyopicClusteringState,
        clients: np.ndarray,
        replies: State,
        rng: np.random.Generator,
    ) -> tuple[MyopicClusteringState, dict[str, float]]:
        r"""k-means of the submitted gradients (:func:`myopic_directions`) and the step.

        Each participant steps with its group's mean gradient,
        :math:`x_i \leftarrow x_i - \eta\, \bar g_{k(i)}`.

        References
        ----------
        Werner et al. (2023), "Provably Personalized and Robust Federated Learning",
        Algorithm 1 (Myopic-Clustering).
        """
        clients = np.asarray(clients, dtype=np.int64)
        grads = byzantine.submit(self.ctx, replies["gradient"], clients, rng)
        _, direction = myopic_directions(grads, self.n_clusters, planned(state))
        models = self._step(state["models"], clients, direction)
        return {"models": models}, {"train_loss": float(replies["loss"].mean())}


@register
class MomentumClustering(_GradientMethod[MomentumClusteringState]):
    """Momentum-Clustering: Threshold-Clustering of the clients' momenta, nearest-centre steps.

    Threshold-Clustering runs with ``n_clusters`` centres on the momenta (weight ``alpha`` on
    the new gradient).

    The radius is the quantile rule with ``quantile`` (default ``1/(2K)``, a conservative choice of
    collabecon: from a far initialisation a ball of one cluster's share :math:`1/K` can hold points
    of two clusters, half of it cannot) unless a fixed ``radius`` is given. The centres start at
    k-means++ seeds over the first momenta (drawn from the round's plan seed); with ``reseed`` a
    centre that ends a round within the radius of another is moved to the momentum farthest from
    all centres (:func:`reseed_collapsed`). The participants send their gradients
    (:meth:`_GradientMethod.client_update`); the server keeps the momenta, a deterministic
    function of the gradients sent, and the centres.
    """

    name = "momentum-clustering"

    def __init__(
        self,
        ctx: Context,
        n_clusters: int | None = None,
        alpha: float = 0.1,
        iters: int = 10,
        quantile: float | None = None,
        radius: float | None = None,
        reseed: bool = True,
        lr: float | None = None,
        batch_size: int | None = None,
    ) -> None:
        super().__init__(ctx, lr, batch_size)
        self.n_clusters = ctx.cluster_count(n_clusters)
        self.reseed = bool(reseed)
        self.alpha = float(in_interval("alpha", alpha, 0.0, 1.0, low_open=True))
        self.iters = positive_int("iters", iters)
        q = 1.0 / (2 * self.n_clusters) if quantile is None else quantile
        self.rule: RadiusRule = FixedRadius(radius) if radius is not None else QuantileRadius(q)
        self.inclusive = radius is not None

    def init(self, models: Params, rng: np.random.Generator) -> MomentumClusteringState:
        """Every client starts at its initial model with zero momentum; no centres yet."""
        flat = flatten(models)
        return {
            "models": {k: v.clone() for k, v in models.items()},
            "momenta": torch.zeros_like(flat),
            "centers": flat.new_zeros(0, flat.shape[1]),
        }

    def server_update(
        self,
        state: MomentumClusteringState,
        clients: np.ndarray,
        replies: State,
        rng: np.random.Generator,
    ) -> tuple[MomentumClusteringState, dict[str, float]]:
        r"""Update the momenta, cluster them and step each participant with its nearest centre.

        The momenta :math:`m_{i,t}` (:func:`momentum_update`) of the submitted gradients,
        Threshold-Clustering from the kept centres (k-means++ seeds in the first round), the
        re-seed (:func:`reseed_collapsed`, with ``reseed``) and the step
        :math:`x_i \leftarrow x_i - \eta\, c_{k(i)}` with the centre :math:`c_{k(i)}` nearest
        to :math:`m_{i,t}`.

        References
        ----------
        Werner et al. (2023), "Provably Personalized and Robust Federated Learning",
        Algorithm 4 (Momentum-Clustering), eq. (6).
        """
        clients = np.asarray(clients, dtype=np.int64)
        grads = byzantine.submit(self.ctx, replies["gradient"], clients, rng)
        momenta = state["momenta"].clone()
        idx = torch.as_tensor(clients, device=momenta.device)
        momenta[idx] = momentum_update(momenta[idx], grads, self.alpha)
        points = momenta[idx]
        centers = state["centers"]
        if centers.shape[0] == 0:
            k = min(self.n_clusters, clients.size)
            centers = points[kmeans_plus_plus(points, k, planned(state))]
        result = threshold_clustering(
            points, centers, self.iters, self.rule, inclusive=self.inclusive
        )
        centers = result.centers
        if self.reseed:
            centers, _ = reseed_collapsed(centers, result.taus[-1], points)
        nearest = torch.cdist(points, centers).argmin(dim=1)
        models = self._step(state["models"], clients, centers[nearest])
        new: MomentumClusteringState = {"models": models, "momenta": momenta, "centers": centers}
        return new, {"train_loss": float(replies["loss"].mean())}
