r"""CoBo on quadratic client losses, in numpy: one round of the update rules, and exact moments.

The client losses are :math:`f_i(x) = \tfrac12 (x - c_i)^\top A_i (x - c_i)` with symmetric
positive semi-definite :math:`A_i`, so every gradient :math:`\nabla f_i(x) = A_i (x - c_i)` is
exact. One round of CoBo (Hashemi, He and Jaggi, "CoBo: Collaborative Learning via Bilevel
Optimization", NeurIPS 2024, Section 2, eqs. (w) and (x), Algorithm 1 with every pair
updated) is :func:`cobo_round`:

.. math::

    w_{ij}^{t+1} = \mathrm{Proj}_{[0,1]}\Big(w_{ij}^t + \gamma \big\langle \nabla f_i(z_{ij}^t),
        \nabla f_j(z_{ij}^t) \big\rangle\Big), \qquad z_{ij}^t = \tfrac12 (x_i^t + x_j^t),

    x_i^{t+1} = x_i^t - \eta \Big(g_i^t + \rho \sum_k w_{ik}^{t+1} (x_i^t - x_k^t)\Big).

It runs on float arrays and on object arrays of :class:`fractions.Fraction` alike, so a
step can be checked by hand in exact arithmetic.

When every weight stays fixed (one cluster whose members share their minimiser and satisfy
the collaborativeness assumption: every midpoint inner product is non-negative and the
projection keeps :math:`w_{ij} = 1`), the round is linear in the models with additive
Gaussian gradient noise, and :func:`exact_moments` propagates the mean and covariance of
the models exactly: expectations over the noise are computed, not sampled.

The points at which :mod:`learning.theory.cobo_propositions` and
:mod:`learning.theory.cobo_lemmas_propositions` check CoBo's statements are built here too: a :class:`ClusterRun` (a cluster, the
parameters and a horizon, with the exact time sums of :func:`exact_moments`) and a
:class:`QuadraticRound` (one round of :func:`cobo_round` from arbitrary models and weights,
with the exact one-round expectations its lemmas bound); :func:`random_cluster` draws the
clusters.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np

__all__ = [
    "ClusterProblem",
    "ClusterRun",
    "Moments",
    "QuadraticRound",
    "cobo_round",
    "collaborativeness",
    "exact_moments",
    "inner_products",
    "largest_collaborativeness",
    "random_cluster",
    "random_spd",
    "smoothness",
]


def inner_products(x: np.ndarray, a: np.ndarray, c: np.ndarray) -> np.ndarray:
    r"""The midpoint inner products of every pair of clients.

    The matrix :math:`s_{ij} = \langle \nabla f_i(z_{ij}), \nabla f_j(z_{ij}) \rangle` of
    midpoint inner products (exact gradients); ``x`` (n, d), ``a`` (n, d, d), ``c`` (n, d).
    """
    n = x.shape[0]
    s = np.empty((n, n), dtype=x.dtype)
    for i in range(n):
        for j in range(n):
            z = (x[i] + x[j]) / 2
            s[i, j] = np.dot(a[i] @ (z - c[i]), a[j] @ (z - c[j]))
    return s


def cobo_round(
    x: np.ndarray,
    w: np.ndarray,
    a: np.ndarray,
    c: np.ndarray,
    *,
    eta: float | Fraction,
    rho: float | Fraction,
    gamma: float | Fraction,
    noise: np.ndarray | None = None,
    inner: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""One round of CoBo with every pair updated: eq. (w), then eq. (x) with the new weights.

    Parameters
    ----------
    x : ndarray (n, d)
        Models :math:`x_i^t`.
    w : ndarray (n, n)
        Weights :math:`W^t` (symmetric, in [0, 1]).
    a, c : ndarray (n, d, d), (n, d)
        Curvatures :math:`A_i` and minimisers :math:`c_i` of the client losses.
    eta, rho, gamma : float or Fraction
        Step sizes :math:`\eta`, :math:`\gamma` and penalty :math:`\rho`.
    noise : ndarray (n, d), optional
        Added to the model gradients: :math:`g_i^t = \nabla f_i(x_i^t) + \text{noise}_i`.
    inner : ndarray (n, n), optional
        The midpoint inner products to use in eq. (w) (stochastic estimates); the exact
        ones (:func:`inner_products`) when None.

    Returns
    -------
    (x_next, w_next)
    """
    s = inner_products(x, a, c) if inner is None else inner
    w_next = np.minimum(np.maximum(w + gamma * s, 0), 1)
    np.fill_diagonal(w_next, np.diagonal(w))  # w_ii multiplies x_i - x_i = 0
    g = np.einsum("nde,ne->nd", a, x - c)
    if noise is not None:
        g = g + noise
    force = w_next.sum(axis=1)[:, None] * x - w_next @ x
    return x - eta * (g + rho * force), w_next


def collaborativeness(ai: np.ndarray, aj: np.ndarray) -> float:
    r"""The smallest constant M_ij^2 of Assumption A4 for two quadratics.

    The smallest :math:`M_{ij}^2` of Assumption A4 for two quadratics with a shared
    minimiser: :math:`\max_u \|(A_i - A_j) u\|^2 / \|(A_i + A_j) u\|^2`, i.e. the squared
    spectral norm of :math:`(A_i - A_j)(A_i + A_j)^{-1}` (``inf`` if the sum is singular).
    """
    total = ai + aj
    if np.linalg.matrix_rank(total) < total.shape[0]:
        return float("inf")
    ratio = (ai - aj) @ np.linalg.inv(total)
    return float(np.linalg.norm(ratio, 2) ** 2)


def smoothness(a: np.ndarray) -> float:
    """:math:`L`: the largest eigenvalue of any curvature :math:`A_i` of ``a`` (Assumption A1)."""
    return float(max(np.linalg.eigvalsh(ai)[-1] for ai in a))


def largest_collaborativeness(a: np.ndarray) -> float:
    r"""The largest M_ij^2 of Assumption A4 over a cluster.

    :math:`\max_{i \ne j} M_{ij}^2` over the curvatures ``a`` of clients sharing their
    minimiser (Assumption A4, :func:`collaborativeness`; 0 for one client).
    """
    n = int(a.shape[0])
    pairs = [collaborativeness(a[i], a[j]) for i in range(n) for j in range(n) if i != j]
    return max(pairs, default=0.0)


@dataclass(frozen=True)
class ClusterProblem:
    r"""One cluster of :math:`c` clients with quadratic losses sharing the minimiser ``mu``.

    Attributes
    ----------
    a : ndarray (c, d, d)
        Symmetric positive definite curvatures :math:`A_i`.
    mu : ndarray (d,)
        The shared minimiser (Assumption A5: clients of a cluster share stationary points).
    x0 : ndarray (d,)
        The common start :math:`x_i^0 = x^0` (Algorithm 1).
    """

    a: np.ndarray
    mu: np.ndarray
    x0: np.ndarray

    @property
    def c(self) -> int:
        """The number of clients."""
        return int(self.a.shape[0])

    @property
    def d(self) -> int:
        """The dimension of the models."""
        return int(self.a.shape[1])

    @cached_property
    def smoothness(self) -> float:
        """:math:`L`: the largest eigenvalue of any :math:`A_i` (Assumption A1)."""
        return smoothness(self.a)

    @cached_property
    def m2(self) -> float:
        r""":math:`\max_{i \ne j} M_{ij}^2` over the cluster (Assumption A4; 0 for one client)."""
        return largest_collaborativeness(self.a)

    @cached_property
    def gap(self) -> float:
        r"""The initial gap S of the theorem.

        :math:`S = \sum_{i,j \in \mathcal C} (\tilde f_{ij}(z_{ij}^0) - \tilde f_{ij}^\star)`
        over all :math:`c^2` ordered pairs, with :math:`\tilde f_{ij} = \frac12 (f_i + f_j)`,
        :math:`z_{ij}^0 = x^0` and :math:`\tilde f_{ij}^\star = 0` (shared minimiser).
        """
        u = self.x0 - self.mu
        f = np.array([0.5 * u @ ai @ u for ai in self.a])
        return float(self.c * f.sum())  # sum_{i,j} (f_i + f_j) / 2 = c * sum_i f_i

    def scaled(self, kappa: float) -> ClusterProblem:
        """The same cluster with every loss multiplied by ``kappa``."""
        return ClusterProblem(kappa * self.a, self.mu, self.x0)


@dataclass(frozen=True)
class Moments:
    r"""Exact time sums of the expected quantities of CoBo's Theorem 1 and Corollary 2.

    Each entry is the sum over rounds :math:`t = 0, \dots, T-1` and over all :math:`c^2`
    ordered pairs :math:`i, j \in \mathcal C`, divided by :math:`c^2 T`:

    consensus
        :math:`\mathbb E \|x_i^{t+1} - x_j^{t+1}\|^2`;
    midpoint_gradient
        :math:`\mathbb E \|\nabla \tilde f_{ij}(z_{ij}^t)\|^2`;
    client_gradient
        :math:`\mathbb E \|\nabla f_i(x_i^t)\|^2`.
    """

    consensus: float
    midpoint_gradient: float
    client_gradient: float


def exact_moments(
    problem: ClusterProblem, *, eta: float, rho: float, sigma: float, rounds: int
) -> Moments:
    r"""The averages of :class:`Moments` after ``rounds`` rounds of CoBo, computed exactly.

    The weights stay at :math:`w_{ij} = 1` (the caller guarantees :math:`M_{ij} < 1`, under
    which every midpoint inner product is non-negative), so with :math:`u = x - \mu` one round
    is :math:`u \leftarrow (I - \eta(\hat A + \rho\, L_c \otimes I_d)) u - \eta \xi` with
    :math:`L_c = c I - \mathbf 1 \mathbf 1^\top` and independent gradient noise
    :math:`\xi_i \sim \mathcal N(0, \sigma^2 I_d / d)` (so :math:`\mathbb E\|\xi_i\|^2 = \sigma^2`).
    The mean and covariance of :math:`u` follow exactly, and each expected squared norm is
    :math:`\|B m\|^2 + \mathrm{tr}(B P B^\top)`.
    """
    c, d = problem.c, problem.d
    nd = c * d
    a_hat = np.zeros((nd, nd))
    for i in range(c):
        a_hat[i * d : (i + 1) * d, i * d : (i + 1) * d] = problem.a[i]
    lap = c * np.eye(c) - np.ones((c, c))
    step = np.eye(nd) - eta * (a_hat + rho * np.kron(lap, np.eye(d)))
    noise = eta**2 * sigma**2 / d
    eye_d = np.eye(d)
    sel = [np.kron(np.eye(c)[i], eye_d) for i in range(c)]  # (d, nd) picks u_i
    diff = np.array([sel[i] - sel[j] for i in range(c) for j in range(c)])
    mid = np.array(
        [
            0.25 * (problem.a[i] + problem.a[j]) @ (sel[i] + sel[j])
            for i in range(c)
            for j in range(c)
        ]
    )
    own = np.array([problem.a[i] @ sel[i] for i in range(c)])

    def expected(b: np.ndarray, m: np.ndarray, p: np.ndarray) -> float:
        bm = b @ m
        return float((bm * bm).sum() + np.einsum("pak,kl,pal->", b, p, b))

    m = np.tile(problem.x0 - problem.mu, c)
    p = np.zeros((nd, nd))
    cons = midg = owng = 0.0
    for _ in range(rounds):
        midg += expected(mid, m, p)
        owng += c * expected(own, m, p)  # sum over j of ||grad f_i(x_i)||^2
        m = step @ m
        p = step @ p @ step.T + noise * np.eye(nd)
        cons += expected(diff, m, p)
    scale = 1.0 / (c * c * rounds)
    return Moments(cons * scale, midg * scale, owng * scale)


def random_spd(rng: np.random.Generator, d: int) -> np.ndarray:
    """A random symmetric positive definite matrix.

    A random symmetric positive definite ``d x d`` matrix: a random rotation of
    eigenvalues drawn uniformly in [0.3, 2].
    """
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return q @ np.diag(rng.uniform(0.3, 2.0, d)) @ q.T


def random_cluster(
    rng: np.random.Generator, c: int, d: int, spread: float, reach: float
) -> ClusterProblem:
    """A random cluster of quadratic clients sharing their minimiser.

    ``c`` curvatures ``s_i B + spread E_i`` around a random SPD ``B`` (eigenvalues in
    [0.3, 2]), ``s_i`` uniform in ``1 +- spread``, ``E_i`` a random symmetric matrix of norm
    <= 1/2; a shared minimiser and a start at distance ``reach``.
    """
    base = random_spd(rng, d)
    a = []
    for _ in range(c):
        e = rng.normal(size=(d, d))
        e = (e + e.T) / 2
        e /= 2 * max(float(np.linalg.norm(e, 2)), 1e-12)
        ai = rng.uniform(1 - spread, 1 + spread) * base + spread * e
        vals, vecs = np.linalg.eigh((ai + ai.T) / 2)
        a.append(vecs @ np.diag(np.maximum(vals, 0.05)) @ vecs.T)
    mu = rng.normal(size=d)
    direction = rng.normal(size=d)
    return ClusterProblem(np.array(a), mu, mu + reach * direction / np.linalg.norm(direction))


@dataclass(frozen=True)
class ClusterRun:
    """One point of a theorem's check: a cluster, the parameters, and the horizon ``T``."""

    label: str
    problem: ClusterProblem
    eta: float
    rho: float
    sigma: float
    rounds: int

    def quantities(self) -> dict[str, float]:
        """The symbols of the printed bounds, as keyword arguments."""
        p = self.problem
        return {
            "m2": p.m2,
            "L": p.smoothness,
            "rho": self.rho,
            "c": float(p.c),
            "eta": self.eta,
            "sigma": self.sigma,
            "T": float(self.rounds),
            "S": p.gap,
        }

    @cached_property
    def moments(self) -> Moments:
        """The exact moments of the run's trajectory (:func:`exact_moments`)."""
        return exact_moments(
            self.problem, eta=self.eta, rho=self.rho, sigma=self.sigma, rounds=self.rounds
        )

    @property
    def scale(self) -> float:
        r""":math:`\|x^0 - \mu\|^2`, the unit of the consensus error (for round-off)."""
        u = self.problem.x0 - self.problem.mu
        return float(u @ u)

    def trajectory(self) -> tuple[str, ...]:
        """What identifies the iterates, up to the scaling of :meth:`scaled` and the horizon.

        Runs with the same key follow one trajectory (a shorter horizon is a prefix of a
        longer one, and a scaled copy moves the same iterates); a check counts them once.
        """
        L = self.problem.smoothness

        def g(x: Any) -> str:
            return ",".join(f"{v:.9g}" for v in np.ravel(x))

        p = self.problem
        return (g(p.a / L), g(p.mu), g(p.x0), g(self.eta * L), g(self.rho / L), g(self.sigma / L))

    def scaled(self, kappa: float) -> ClusterRun:
        """Every loss times ``kappa``, with rho, eta and sigma rescaled: the same trajectory."""
        return ClusterRun(
            f"{self.label}, losses scaled by {kappa:g}",
            self.problem.scaled(kappa),
            self.eta / kappa,
            self.rho * kappa,
            self.sigma * kappa,
            self.rounds,
        )


@dataclass(frozen=True)
class QuadraticRound:
    r"""One round of CoBo from an arbitrary state: the point of a lemma's check.

    Clients ``0 .. c-1`` form the cluster :math:`\mathcal C` (shared minimiser); the others
    belong to other clusters (:math:`w^\star = 0` towards them).
    """

    label: str
    a: np.ndarray  # (n, d, d)
    centres: np.ndarray  # (n, d)
    c: int
    x: np.ndarray  # (n, d): x^t
    w: np.ndarray  # (n, n): W^t
    eta: float
    rho: float
    sigma: float
    gamma: float
    b: float

    @property
    def n(self) -> int:
        """The number of clients."""
        return int(self.a.shape[0])

    @property
    def d(self) -> int:
        """The dimension of the models."""
        return int(self.a.shape[1])

    @cached_property
    def smoothness(self) -> float:
        """:math:`L` over all clients."""
        return smoothness(self.a)

    @cached_property
    def m2(self) -> float:
        r""":math:`\max_{i \ne j} M_{ij}^2` over the cluster :math:`\mathcal C`."""
        return largest_collaborativeness(self.a[: self.c])

    @cached_property
    def step(self) -> tuple[np.ndarray, np.ndarray]:
        """The expected next models and the next weights.

        Mean next models (eq. (x) with the expected gradient) and :math:`W^{t+1}` (eq. (w)
        with exact midpoint gradients).
        """
        return cobo_round(
            self.x, self.w, self.a, self.centres, eta=self.eta, rho=self.rho, gamma=self.gamma
        )

    def _f_tilde(self, z: np.ndarray, i: int, j: int) -> float:
        u = z - self.centres[0]
        return float(0.25 * (u @ self.a[i] @ u + u @ self.a[j] @ u))

    @cached_property
    def sums(self) -> dict[str, float]:
        r"""The sums that Lemmas 3 and 4 bound, in exact expectation.

        The sums over :math:`i, j \in \mathcal C` (all :math:`c^2` ordered pairs; the keys
        ending in ``_off`` over the pairs :math:`i \ne j` only).
        """
        x, (x_next, w_next) = self.x, self.step
        c, d = self.c, self.d
        g = drop = cons = cons_next = g_off = drop_off = 0.0
        for i in range(c):
            for j in range(c):
                z, z_next = (x[i] + x[j]) / 2, (x_next[i] + x_next[j]) / 2
                grad = 0.5 * (self.a[i] + self.a[j]) @ (z - self.centres[0])
                g += float(grad @ grad)
                var = self.eta**2 * self.sigma**2 / d * (1.0 if i == j else 0.5)
                mean_f = self._f_tilde(z_next, i, j) + 0.25 * np.trace(self.a[i] + self.a[j]) * var
                drop += self._f_tilde(z, i, j) - mean_f
                if i != j:
                    g_off += float(grad @ grad)
                    drop_off += self._f_tilde(z, i, j) - mean_f
                cons += float(np.sum((x[i] - x[j]) ** 2))
                noise = 2 * self.eta**2 * self.sigma**2 if i != j else 0.0
                cons_next += float(np.sum((x_next[i] - x_next[j]) ** 2)) + noise
        star = np.zeros(self.n)
        star[: self.c] = 1.0
        dist = np.array([[np.sum((x[i] - x[k]) ** 2) for k in range(self.n)] for i in range(c)])
        return {
            "G": g,
            "drop": drop,  # F_t - E F_{t+1}
            "G_off": g_off,  # the same two sums over the pairs i != j only
            "drop_off": drop_off,
            "D": cons,
            "D_next": cons_next,  # E D_{t+1}
            "wdev_next": float(((w_next[:c] - star) ** 2 * dist).sum()),
            "wdev": float(((self.w[:c] - star) ** 2 * dist).sum()),
        }

    def quantities(self) -> dict[str, float]:
        """The round's constants, by the names the lemmas' formulas take."""
        return {
            "m2": self.m2,
            "L": self.smoothness,
            "rho": self.rho,
            "c": float(self.c),
            "n": float(self.n),
            "eta": self.eta,
            "sigma": self.sigma,
            "b": self.b,
        }
