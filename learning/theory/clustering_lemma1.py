r"""Lemma 1 of Werner (2024), ch. 2, §2.3 (thesis only): quadratic clients and its constants.

Lemma 1 gives, for clients with smooth, strongly convex losses that share their optimum within
a cluster, A4 with :math:`A = 2L/\mu` and A5 with :math:`D^2 = 2(1 + (L/\mu)^2)` and
:math:`\Delta^2 = \tfrac12(\max_{j\not\sim i}\lVert\nabla f_j(x_i^*)\rVert)^2`. Here: clusters
of quadratic clients (:class:`QuadraticClusters`), the constants (:func:`lemma1_constants`)
and the slacks of both inequalities at a point (:func:`lemma1_slacks`); the statements are
registered in :mod:`learning.theory.clustering_lemma1_propositions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from econ.validation import in_interval, positive, positive_int
from learning.theory.clustering import FloatArray

__all__ = [
    "Lemma1Terms",
    "QuadraticClusters",
    "lemma1_constants",
    "lemma1_slacks",
    "lemma1_terms",
    "random_quadratic_clusters",
]


# --------------------------------------------------------------------------- Lemma 1


@dataclass(frozen=True, slots=True)
class QuadraticClusters:
    r"""Clients with quadratic losses, each in a cluster whose clients share its optimum.

    The losses are :math:`f_i(x) = \tfrac12 (x - x^*_{c(i)})^\top H_i
    (x - x^*_{c(i)})`: ``hessians`` ``(N, d, d)``, ``optima`` ``(K, d)`` and ``clusters``
    ``(N,)`` (the cluster :math:`c(i)` of each client).
    """

    hessians: FloatArray
    optima: FloatArray
    clusters: NDArray[np.int64]

    def gradients(self, x: FloatArray) -> FloatArray:
        r""":math:`\nabla f_i(x) = H_i (x - x^*_{c(i)})` for every client, ``(N, d)``."""
        return np.einsum("nij,nj->ni", self.hessians, x - self.optima[self.clusters])

    def in_class(self, mu: float, smoothness: float) -> bool:
        """Lemma 1's hypothesis: every Hessian's spectrum lies in ``[mu, smoothness]``.

        So each loss is ``smoothness``-smooth and ``mu``-strongly convex; the clients of a
        cluster share its optimum by construction.
        """
        eig = np.linalg.eigvalsh(self.hessians)
        tol = 1e-9 * max(1.0, smoothness)
        return bool(eig.min() >= mu - tol and eig.max() <= smoothness + tol)


def random_quadratic_clusters(
    rng: np.random.Generator,
    n_clusters: int,
    per_cluster: int,
    dim: int,
    mu: float,
    smoothness: float,
    spread: float = 5.0,
) -> QuadraticClusters:
    r"""Random clusters of quadratic clients in the class of Lemma 1.

    Each Hessian :math:`Q\,\mathrm{diag}(\lambda)\,Q^\top` has a random rotation and
    eigenvalues uniform in ``[mu, smoothness]`` (the two extremes included); the cluster optima
    are :math:`\mathcal N(0, \mathrm{spread}^2 I)`.
    """
    n_clusters = positive_int("n_clusters", n_clusters)
    per_cluster = positive_int("per_cluster", per_cluster)
    dim = positive_int("dim", dim)
    mu = float(positive("mu", mu))
    smoothness = float(in_interval("smoothness", smoothness, mu, math.inf))
    n = n_clusters * per_cluster
    hessians = np.empty((n, dim, dim))
    for i in range(n):
        q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
        eig = rng.uniform(mu, smoothness, size=dim)
        eig[0], eig[-1] = mu, smoothness
        hessians[i] = (q * eig) @ q.T
    optima = float(positive("spread", spread)) * rng.standard_normal((n_clusters, dim))
    return QuadraticClusters(hessians, optima, np.repeat(np.arange(n_clusters), per_cluster))


def lemma1_constants(smoothness: float, mu: float) -> tuple[float, float]:
    r"""Lemma 1's constants ``(A, D)`` of Assumptions 4 and 5.

    Werner 2024, ch. 2, Lemma 1: for :math:`L`-smooth,
    :math:`\mu`-strongly convex losses with shared optima per cluster, A4 holds with
    :math:`A = 2L/\mu` and A5 with :math:`D = \sqrt{2(1 + (L/\mu)^2)}`. Returns ``(A, D)``.
    """
    mu = float(positive("mu", mu))
    smoothness = float(in_interval("smoothness", smoothness, mu, math.inf))
    kappa = smoothness / mu
    return 2 * kappa, math.sqrt(2 * (1 + kappa**2))


@dataclass(frozen=True, slots=True)
class Lemma1Terms:
    """The terms of Lemma 1's two inequalities at one point ``x``, per client and per pair."""

    dev2: FloatArray  # ||grad f_i - grad f_bar_i||^2, (N,)
    bar2: FloatArray  # ||grad f_bar_i||^2, (N,)
    diff2: FloatArray  # ||grad f_i - grad f_j||^2, (N, N)
    own2: FloatArray  # ||grad f_i||^2, (N,)
    at_opt: FloatArray  # ||grad f_j(x_i^*)||, (N, N)
    other: NDArray[np.bool_]  # i !~ j, (N, N)


def lemma1_terms(problem: QuadraticClusters, x: FloatArray) -> Lemma1Terms:
    r"""The terms of Lemma 1's two inequalities at ``x``.

    Per client and pair: :math:`\lVert\nabla f_i - \nabla\bar f_i\rVert^2`,
    :math:`\lVert\nabla\bar f_i\rVert^2`, :math:`\lVert\nabla f_i - \nabla f_j\rVert^2`,
    :math:`\lVert\nabla f_i\rVert^2`, :math:`\lVert\nabla f_j(x_i^*)\rVert` and which pairs
    lie in different clusters (:class:`Lemma1Terms`).
    """
    g = problem.gradients(np.asarray(x, dtype=np.float64))
    labels = problem.clusters
    means = np.stack([g[labels == k].mean(0) for k in range(problem.optima.shape[0])])
    g_bar = means[labels]
    at_opt = np.linalg.norm(
        np.einsum(
            "jab,ijb->ija",
            problem.hessians,
            problem.optima[labels][:, None] - problem.optima[labels][None],
        ),
        axis=2,
    )
    return Lemma1Terms(
        dev2=((g - g_bar) ** 2).sum(1),
        bar2=(g_bar**2).sum(1),
        diff2=((g[:, None] - g[None]) ** 2).sum(2),
        own2=(g**2).sum(1),
        at_opt=at_opt,
        other=labels[:, None] != labels[None],
    )


def lemma1_slacks(
    problem: QuadraticClusters, x: FloatArray, smoothness: float, mu: float
) -> dict[str, FloatArray]:
    r"""Slacks of Lemma 1's two inequalities at ``x``; a negative entry is a violation.

    Right side minus left side for A4, left minus right for A5, with the constants of
    :func:`lemma1_constants`:

    - ``a4`` ``(N,)``: :math:`A^2\lVert\nabla\bar f_i\rVert^2 - \lVert\nabla f_i - \nabla
      \bar f_i\rVert^2`, :math:`\bar f_i` the mean loss of :math:`i`'s cluster;
    - ``a5_pair`` (pairs :math:`i \not\sim j`): :math:`\lVert\nabla f_i - \nabla f_j\rVert^2
      - \tfrac12\lVert\nabla f_j(x_i^*)\rVert^2 + D^2\lVert\nabla f_i\rVert^2` (the proof's
      eq. (2.17));
    - ``a5_printed``: the same with :math:`\max_{j'\not\sim i}\lVert\nabla f_{j'}(x_i^*)\rVert`
      as printed in the lemma.
    """
    a, d = lemma1_constants(smoothness, mu)
    pc = lemma1_terms(problem, x)
    max_other = np.where(pc.other, pc.at_opt, 0.0).max(1)
    own = pc.own2[:, None]
    pair = pc.diff2 - 0.5 * pc.at_opt**2 + d**2 * own
    printed = pc.diff2 - 0.5 * max_other[:, None] ** 2 + d**2 * own
    return {
        "a4": a**2 * pc.bar2 - pc.dev2,
        "a5_pair": pair[pc.other],
        "a5_printed": printed[pc.other],
    }
