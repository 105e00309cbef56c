r"""CoBo on the clustered quadratics of Example 2 (Hashemi, He and Jaggi, NeurIPS 2024, Section 3).

:func:`simulate_quadratic` runs the algorithm's steps (:mod:`learning.algorithms.cobo_steps`)
with exact gradients on :math:`f_i(x) = \frac{a_i}{2} \|x - \mu_{k(i)}\|^2`
(:class:`QuadraticToy`), started far from all optima (Point A of Figure 1), and records how
:math:`W` approaches the oracle and the clusters reach consensus (:class:`QuadraticRun`,
:func:`in_cluster_consensus`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from econ.validation import non_negative, positive, positive_int
from learning.algorithms.cobo_steps import (
    PairSchedule,
    initial_weights,
    join_client,
    laplacian_penalty,
    leave_client,
    oracle_weights,
    sample_pairs,
    update_weights,
)
from learning.engine import Params

__all__ = ["QuadraticRun", "QuadraticToy", "in_cluster_consensus", "simulate_quadratic"]


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
        """Check the toy's settings.

        Raises
        ------
        ValueError
            If ``clusters`` is empty, ``dim`` is not a positive integer, ``scale``, ``sigma``
            are negative, ``a_low`` is not positive or ``a_high < a_low``.
        """
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
    r"""Outcome of :func:`simulate_quadratic`.

    Attributes
    ----------
    x : ndarray (n, d)
        Final models (rows in the final client order, joiners appended).
    weights : ndarray (n, n)
        Final :math:`W`.
    clusters : ndarray (n,)
        Cluster of each final client.
    centres, curvature : ndarray
        :math:`\mu_k` (K, d) and :math:`a_i` of each final client.
    weight_error : ndarray (T,)
        Mean off-diagonal :math:`|W - W^\star|` after each round.
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
        r""":math:`\|x_i - \mu_{k(i)}\|` of every final client."""
        return np.linalg.norm(self.x - self.centres[self.clusters], axis=1)


def in_cluster_consensus(x: torch.Tensor, clusters: np.ndarray) -> float:
    r"""In-cluster consensus distance of the models ``x`` (one row per client).

    The sum over clusters :math:`\mathcal C` (of size :math:`c`) of
    :math:`\frac1{c^2} \sum_{i,j \in \mathcal C} \|x_i - x_j\|^2`: the left-hand side of
    Theorem 1, before the time average.

    References
    ----------
    Hashemi, He and Jaggi (2024), "CoBo: Collaborative Learning via Bilevel Optimization",
    Theorem 1.
    """
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
    r"""CoBo on the clustered quadratics of Example 2 (Section 3), with exact gradients.

    The gradients are :math:`\nabla f_i(x) = a_i (x - \mu_{k(i)})` (plus noise when
    ``toy.sigma > 0``).

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
