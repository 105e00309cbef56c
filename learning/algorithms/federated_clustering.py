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
group's mean gradient. **Momentum-Clustering** (Algorithm 4, eq. (6)): clients send
momenta :math:`m_{i,t} = \alpha g_i(x_{i,t-1}) + (1-\alpha) m_{i,t-1}`; the server runs
Threshold-Clustering with ``K`` centres started at the previous round's centres (k-means++
seeds in the first round) and each client steps with its nearest centre.

Gradients pass through :func:`learning.byzantine.submit`, so every method here runs with
the attackers of an :class:`~learning.byzantine.AdversarialContext`.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from econ.validation import choice, in_interval, positive, positive_int
from learning import byzantine
from learning.algorithms.base import Algorithm, Context, Dispatch, SplitAlgorithm, State, register
from learning.algorithms.threshold_clustering import (
    FixedRadius,
    QuantileRadius,
    RadiusRule,
    threshold_clustering,
)
from learning.all_pairs import client_batches, flatten, pairwise_gradients, unflatten
from learning.engine import Params

__all__ = [
    "FederatedClustering",
    "MomentumClustering",
    "MyopicClustering",
    "fc_directions",
    "kmeans",
    "kmeans_plus_plus",
    "momentum_update",
    "myopic_directions",
    "reseed_collapsed",
    "separation_diagnostics",
]


def kmeans_plus_plus(points: torch.Tensor, k: int, rng: np.random.Generator) -> torch.Tensor:
    """Indices of ``k`` seeds by k-means++ (Arthur & Vassilvitskii 2007): each next seed is
    drawn with probability proportional to the squared distance to the nearest seed."""
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


def fc_directions(
    points: torch.Tensor, iters: int, radius: RadiusRule, *, inclusive: bool
) -> torch.Tensor:
    """Federated-Clustering's cluster estimates: ``points[i, j]`` is :math:`g_j(x_i)`
    (``(n, n, P)``); receiver ``i`` runs one-centre Threshold-Clustering over row ``i``
    started at its own gradient ``points[i, i]``. Returns ``(n, P)``."""
    own = torch.diagonal(points, dim1=0, dim2=1).T
    return threshold_clustering(points, own[:, None], iters, radius, inclusive=inclusive).centers[
        :, 0
    ]


def myopic_directions(
    grads: torch.Tensor, k: int, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Myopic-Clustering's step directions: k-means labels of the gradients ``(n, P)`` and
    each client's group-mean gradient ``(n, P)``."""
    labels = kmeans(grads, k, rng)
    one_hot = torch.nn.functional.one_hot(labels).to(grads.dtype)
    means = (one_hot.T @ grads) / one_hot.sum(0).clamp_min(1)[:, None]
    return labels, means[labels]


def momentum_update(momenta: torch.Tensor, grads: torch.Tensor, alpha: float) -> torch.Tensor:
    r"""Momentum-Clustering's client momentum (Werner et al. 2023, eq. (6)):
    :math:`m_{i,t} = \alpha\, g_i(x_{i,t-1}) + (1 - \alpha)\, m_{i,t-1}`. Of iid gradients
    of variance :math:`\sigma^2` it has stationary variance :math:`\alpha\sigma^2/(2-\alpha)
    \le \alpha\sigma^2` (Lemma 14; :func:`learning.theory.clustering.ema_variance`)."""
    return alpha * grads + (1 - alpha) * momenta


def reseed_collapsed(
    centers: torch.Tensor, taus: torch.Tensor, points: torch.Tensor
) -> tuple[torch.Tensor, list[int]]:
    """Re-seed collapsed centres (Algorithm 4 leaves the centres' initialisation open; this
    is collabecon's rule): while some centre ``k'`` lies within the
    radius ``taus[k]`` of an earlier kept centre ``k``, move ``k'`` to the point farthest from
    all current centres. Returns the centres ``(K, P)`` and the re-seeded indices."""
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
    r"""The empirical check of Assumptions 4 and 5 (Werner et al. 2023, Fig. 2, eq. (7)-(8)):
    from every client's gradient at one model, ``grads`` ``(N, P)``, and the true
    ``clusters`` ``(N,)``,

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


class _GradientMethod(Algorithm):
    """Shared state and plumbing: stacked models, one minibatch gradient per client."""

    def __init__(self, ctx: Context, lr: float | None, batch_size: int | None) -> None:
        super().__init__(ctx)
        self.lr = float(positive("lr", lr)) if lr is not None else ctx.local.sgd.lr
        self.batch_size = (
            positive_int("batch_size", batch_size)
            if batch_size is not None
            else ctx.local.batch_size
        )

    def init(self, models: Params, rng: np.random.Generator) -> State:
        return {"models": {k: v.clone() for k, v in models.items()}}

    def client_models(self, state: State) -> Params:
        return state["models"]

    def _own_gradients(
        self, models: Params, clients: np.ndarray, rng: np.random.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Submitted gradients ``(n, P)`` of ``clients`` at their own models, and losses."""
        x, y = client_batches(self.ctx.train, clients, self.batch_size, rng)
        idx = torch.as_tensor(clients, device=self.ctx.device)
        own = {k: v.index_select(0, idx) for k, v in models.items()}
        grads, loss = self.ctx.engine.gradients(own, x, y)
        return byzantine.submit(self.ctx, flatten(grads), clients, rng), loss

    def _step(self, models: Params, clients: np.ndarray, direction: torch.Tensor) -> Params:
        flat = flatten(models).clone()
        idx = torch.as_tensor(clients, device=flat.device)
        flat[idx] -= self.lr * direction
        return unflatten(flat, models)


@register
class FederatedClustering(_GradientMethod, SplitAlgorithm):
    """Federated-Clustering; see the module docstring.

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
        Random subgroups per round (the as-run MNIST value is 15).
    momentum : float, optional
        Heavy-ball momentum on the cluster estimate; 0 for "paper", 0.9 for "as-run".
    lr, batch_size : optional
        Step size and minibatch size (default: the context's local training).
    """

    name = "federated-clustering"
    client_parameters = ("batch_size",)

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

    def init(self, models: Params, rng: np.random.Generator) -> State:
        state = super().init(models, rng)
        state["momentum"] = torch.zeros_like(flatten(models))
        return state

    def cluster_estimates(
        self, models: Params, members: np.ndarray, rng: np.random.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One group's all-pairs gradients and every member's Threshold-Clustering output
        ``(n, P)``, plus each member's loss on its own batch."""
        x, y = client_batches(self.ctx.train, members, self.batch_size, rng)
        idx = torch.as_tensor(members, device=self.ctx.device)
        grads, losses = pairwise_gradients(
            self.ctx.engine, {k: v.index_select(0, idx) for k, v in models.items()}, x, y
        )
        points = byzantine.submit(self.ctx, flatten(grads, lead=2), members, rng)
        v = fc_directions(points, self.iters, self.rule, inclusive=self.inclusive)
        return v, torch.diagonal(losses)

    def round(
        self, state: State, clients: np.ndarray, rng: np.random.Generator
    ) -> tuple[State, dict[str, float]]:
        clients = np.asarray(clients, dtype=np.int64)
        if self.groups == 1:
            return SplitAlgorithm.round(self, state, clients, rng)
        order = rng.permutation(clients)
        size = math.ceil(clients.size / self.groups)
        models, buffer = state["models"], state["momentum"].clone()
        losses = []
        for start in range(0, clients.size, size):
            members = np.sort(order[start : start + size])
            v, loss = self.cluster_estimates(models, members, rng)
            idx = torch.as_tensor(members, device=buffer.device)
            buffer[idx] = self.momentum * buffer[idx] + v
            losses.append(loss)
        idx = torch.as_tensor(clients, device=buffer.device)
        models = self._step(models, clients, buffer[idx])
        return {"models": models, "momentum": buffer}, {
            "train_loss": float(torch.cat(losses).mean())
        }

    def dispatch(self, state: State, clients: np.ndarray, rng: np.random.Generator) -> Dispatch:
        """Every participant receives every participant's model and its own position among
        them (one group: ``groups > 1`` runs in process only)."""
        if self.groups != 1:
            raise ValueError(f"groups={self.groups}: random subgroups run in process only")
        idx = torch.as_tensor(np.asarray(clients), device=self.ctx.device)
        models = {k: v.index_select(0, idx) for k, v in state["models"].items()}
        position = torch.arange(len(clients), device=self.ctx.device)
        return Dispatch(each={"position": position}, common={"models": models}, config={})

    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        r"""Client ``j`` draws one minibatch and sends the gradient of every model ``x_i``
        on it, :math:`g_j(x_i)` for all ``i`` (``points``, ``(n, P)`` per client), and its
        loss at its own model."""
        x, y = client_batches(ctx.train, clients, self.batch_size, rng)
        grads, losses = pairwise_gradients(ctx.engine, sent.common["models"], x, y)
        columns = flatten(grads, lead=2).transpose(0, 1)  # [j, i] = g_j(x_i)
        position = sent.each["position"]
        own = losses[position, torch.arange(position.numel(), device=position.device)]
        return {"points": columns, "loss": own}

    def server_update(
        self, state: State, clients: np.ndarray, replies: State, rng: np.random.Generator
    ) -> tuple[State, dict[str, float]]:
        r"""The server clusters: for every receiver ``i`` one-centre Threshold-Clustering over
        :math:`\{g_j(x_i)\}_j` (:func:`fc_directions`), then the momentum and the step."""
        clients = np.asarray(clients, dtype=np.int64)
        points = replies["points"].transpose(0, 1).contiguous()  # [i, j] = g_j(x_i)
        points = byzantine.submit(self.ctx, points, clients, rng)
        v = fc_directions(points, self.iters, self.rule, inclusive=self.inclusive)
        buffer = state["momentum"].clone()
        idx = torch.as_tensor(clients, device=buffer.device)
        buffer[idx] = self.momentum * buffer[idx] + v
        models = self._step(state["models"], clients, buffer[idx])
        return {"models": models, "momentum": buffer}, {"train_loss": float(replies["loss"].mean())}


@register
class MyopicClustering(_GradientMethod):
    """Myopic-Clustering: k-means on the gradients at the clients' own models, a step with
    the group mean (``n_clusters`` defaults to the number of ground-truth clusters)."""

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

    def round(
        self, state: State, clients: np.ndarray, rng: np.random.Generator
    ) -> tuple[State, dict[str, float]]:
        clients = np.asarray(clients, dtype=np.int64)
        grads, loss = self._own_gradients(state["models"], clients, rng)
        _, direction = myopic_directions(grads, self.n_clusters, rng)
        models = self._step(state["models"], clients, direction)
        return {"models": models}, {"train_loss": float(loss.mean())}


@register
class MomentumClustering(_GradientMethod):
    """Momentum-Clustering: Threshold-Clustering with ``n_clusters`` centres on the
    clients' momenta (weight ``alpha`` on the new gradient), nearest-centre steps.

    The radius is the quantile rule with ``quantile`` (default ``1/(2K)``, a conservative choice of
    collabecon: from a far initialisation a ball of one cluster's share :math:`1/K` can hold points
    of two clusters, half of it cannot) unless a fixed ``radius`` is given. The centres start at
    k-means++ seeds over the first momenta; with ``reseed`` a centre that ends a round within the
    radius of another is moved to the momentum farthest from all centres (:func:`reseed_collapsed`).
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

    def init(self, models: Params, rng: np.random.Generator) -> State:
        state = super().init(models, rng)
        flat = flatten(models)
        state["momenta"] = torch.zeros_like(flat)
        state["centers"] = flat.new_zeros(0, flat.shape[1])
        return state

    def round(
        self, state: State, clients: np.ndarray, rng: np.random.Generator
    ) -> tuple[State, dict[str, float]]:
        clients = np.asarray(clients, dtype=np.int64)
        grads, loss = self._own_gradients(state["models"], clients, rng)
        momenta = state["momenta"].clone()
        idx = torch.as_tensor(clients, device=momenta.device)
        momenta[idx] = momentum_update(momenta[idx], grads, self.alpha)
        points = momenta[idx]
        centers = state["centers"]
        if centers.shape[0] == 0:
            k = min(self.n_clusters, clients.size)
            centers = points[kmeans_plus_plus(points, k, rng)]
        result = threshold_clustering(
            points, centers, self.iters, self.rule, inclusive=self.inclusive
        )
        centers = result.centers
        if self.reseed:
            centers, _ = reseed_collapsed(centers, result.taus[-1], points)
        nearest = torch.cdist(points, centers).argmin(dim=1)
        models = self._step(state["models"], clients, centers[nearest])
        state = {"models": models, "momenta": momenta, "centers": centers}
        return state, {"train_loss": float(loss.mean())}
