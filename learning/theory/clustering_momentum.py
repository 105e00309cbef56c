r"""Algorithm 4 of Werner (2024), ch. 2 (Momentum-Clustering), in numpy, and Theorem 4's runs.

Theorem 4's number of thresholding steps per round (:func:`momentum_steps`) and
:class:`MomentumRun`, one instance of Theorem 4 (quadratic clients, gradient noise uniform on
spheres, bad clients at the balls' edges) with client 0's run of Algorithm 4 and the exact
check of Assumption 9 along it. Threshold-Clustering itself is
:func:`learning.theory.clustering_algorithms.threshold_clustering`; the statements are
registered in :mod:`learning.theory.ch2_thm4_propositions`.

References
----------
M. Werner, *Collaborative Learning: Aligning Goals and Outcomes*, PhD thesis, UC Berkeley
(2024), ch. 2, §2.3 (Theorem 4, Algorithm 4) and §2.6 (proof of Theorem 4). M. Werner,
L. He, M. Jordan, M. Jaggi, S. P. Karimireddy, "Provably Personalized and Robust Federated
Learning", TMLR (2023), §3.3 and App. A.4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from learning.theory.clustering import FloatArray
from learning.theory.clustering_algorithms import (
    sphere_noise,
    threshold_clustering,
    threshold_steps,
)

__all__ = ["MOMENTUM_REPLICATES", "MomentumRun", "momentum_steps"]

MOMENTUM_REPLICATES = 40  # Monte-Carlo replicates of each run of Algorithm 4 (seeded)


def momentum_steps(alpha: float, sigma: float, gap: float, delta: float) -> int:
    r"""Theorem 4's number of thresholding steps per round, the printed bound with constant 1.

    :math:`l = \lceil\max\{1, \log(\sqrt\alpha\,\sigma/\Delta) / \log(1-\delta_i/2)\}\rceil`.
    """
    return threshold_steps(math.sqrt(alpha) * sigma, gap, delta)


@dataclass(frozen=True)
class MomentumRun:
    r"""One instance of Theorem 4 and client 0's run of Algorithm 4 on it.

    Cluster :math:`k` has ``sizes[k]`` clients with the loss :math:`f(x) =
    \tfrac{a_k}2\lVert x - c_k\rVert^2` (``curvatures`` :math:`a_k`, ``optima`` :math:`c_k`)
    and stochastic gradients :math:`\nabla f(x) + \sigma u`, :math:`u` uniform on the unit
    sphere (Assumption 6 with equality, Assumption 7 with :math:`L = \max_k a_k`; clients of
    a cluster share their parameters, so their momenta are identically distributed,
    Assumption 8). Client 0 is in cluster 0; ``n_bad`` bad clients sit, at every
    thresholding step, at the edge of each ball. Algorithm 4 runs ``rounds`` rounds with
    step ``eta``, momentum parameter ``alpha``, :math:`m_{i,0} = 0`, the printed radius
    :math:`\tau = \sqrt{\delta_i\sigma\Delta}` with :math:`\Delta` = ``gap`` and
    :func:`momentum_steps` steps of Threshold-Clustering, started (step 4) at the previous
    centres; the initial centres, which the algorithm leaves open, are the exact mean first
    momenta :math:`v_{k,0} = \alpha a_k (x_0 - c_k)`. ``start`` is :math:`x_{i,0}`.
    """

    curvatures: tuple[float, ...]
    sizes: tuple[int, ...]
    optima: tuple[tuple[float, ...], ...]
    n_bad: int
    sigma: float
    start: tuple[float, ...]
    rounds: int
    eta: float
    alpha: float
    gap: float
    seed: int

    @property
    def delta(self) -> float:
        r""":math:`\delta_0 = n_0/N`, bad clients counted in :math:`N`."""
        return self.sizes[0] / (sum(self.sizes) + self.n_bad)

    @property
    def radius(self) -> float:
        r"""The printed radius :math:`\tau = \sqrt{\delta_i\sigma\Delta}`."""
        return math.sqrt(self.delta * self.sigma * self.gap)

    @property
    def steps(self) -> int:
        """Theorem 4's :func:`momentum_steps`."""
        return momentum_steps(self.alpha, self.sigma, self.gap, self.delta)

    def _centres(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Curvatures, optima and initial centres as arrays."""
        a = np.asarray(self.curvatures, dtype=np.float64)
        c = np.asarray(self.optima, dtype=np.float64)
        return a, c, self.alpha * a[:, None] * (np.asarray(self.start) - c)

    @cached_property
    def separation(self) -> tuple[bool, float]:
        r"""Is Threshold-Clustering affine on every noise draw, and the exact separation.

        Along the noise-free run, deterministic bounds :math:`e_x, e_m, e_v` on how far
        the parameters, momenta and centres of any noise draw lie from it
        (:math:`e_m \leftarrow \alpha(a_k e_x + \sigma) + (1-\alpha)e_m`, :math:`e_v
        \leftarrow \tfrac{n_k}N e_m + (1 - \tfrac{n_k}N) e_v` per step, :math:`e_x
        \leftarrow e_x + \eta e_v`) certify that at every step each ball holds its own
        cluster's momenta and no other's. Then each round is an affine map of the noise,
        the expected momenta :math:`\mathbb E m_{i,t}` are those of the noise-free run, and
        the second value, :math:`\min_t\min_{i\not\sim j}\lVert\mathbb E m_{i,t} -
        \mathbb E m_{j,t}\rVert`, is the largest :math:`\Delta` of Assumption 9.
        """
        a, c, v = self._centres()
        sizes = np.asarray(self.sizes)
        weight = sizes / (sizes.sum() + self.n_bad)
        bad_dir = np.zeros(c.shape[1])
        bad_dir[-1] = 1.0
        x = np.tile(np.asarray(self.start, dtype=np.float64), (a.size, 1))
        m = np.zeros_like(x)
        e_x, e_m, e_v = np.zeros(a.size), np.zeros(a.size), np.zeros(a.size)
        apart = ~np.eye(a.size, dtype=bool)
        affine, separation = True, math.inf
        for _ in range(self.rounds):
            m = self.alpha * a[:, None] * (x - c) + (1 - self.alpha) * m
            e_m = self.alpha * (a * e_x + self.sigma) + (1 - self.alpha) * e_m
            gaps = np.linalg.norm(m[:, None] - m[None], axis=-1)
            separation = min(separation, float(np.min(gaps[apart])))
            points = np.repeat(m, self.sizes, axis=0)[None]
            for k in range(a.size):
                for _ in range(self.steps):
                    dist = np.linalg.norm(m - v[k], axis=-1)
                    affine &= bool(dist[k] + e_m[k] + e_v[k] <= self.radius)
                    affine &= bool(np.all(np.delete(dist - e_m, k) - e_v[k] > self.radius))
                    v[k] = threshold_clustering(
                        points, v[k][None], self.radius, 1, n_bad=self.n_bad, direction=bad_dir
                    )[0]
                    e_v[k] = weight[k] * e_m[k] + (1 - weight[k]) * e_v[k]
            e_x = e_x + self.eta * e_v
            x = x - self.eta * v
        return affine, separation

    @cached_property
    def gradient_mean(self) -> float:
        r"""Monte-Carlo mean of the left side of eq. (2.5) for client 0.

        :math:`\frac1T\sum_{t=1}^T\lVert\nabla f_0(x_{0,t-1})\rVert^2` under Algorithm 4.
        """
        a, c, v0 = self._centres()
        rng = np.random.default_rng(self.seed)
        cluster = np.repeat(np.arange(a.size), self.sizes)
        dim = c.shape[1]
        bad_dir = np.zeros(dim)
        bad_dir[-1] = 1.0
        x = np.tile(np.asarray(self.start, dtype=np.float64), (MOMENTUM_REPLICATES, a.size, 1))
        m = np.zeros((MOMENTUM_REPLICATES, cluster.size, dim))
        v = np.tile(v0, (MOMENTUM_REPLICATES, 1, 1))
        total = 0.0
        for _ in range(self.rounds):
            total += float(np.mean(np.sum((a[0] * (x[:, 0] - c[0])) ** 2, axis=-1)))
            noise = sphere_noise(rng, (MOMENTUM_REPLICATES, cluster.size), dim)
            grads = a[cluster, None] * (x[:, cluster] - c[cluster]) + self.sigma * noise
            m = self.alpha * grads + (1 - self.alpha) * m
            for k in range(a.size):
                v[:, k] = threshold_clustering(
                    m, v[:, k], self.radius, self.steps, n_bad=self.n_bad, direction=bad_dir
                )
            x = x - self.eta * v
        return total / self.rounds

    def point(self) -> dict[str, Any]:
        """The keyword arguments of the checks: the constants, the start's gap, the mean."""
        a = self.curvatures
        dist2 = float(np.sum((np.asarray(self.start) - np.asarray(self.optima[0])) ** 2))
        affine, separation = self.separation
        return {
            "L": max(a),
            "gap": self.gap,
            "separation": separation,
            "affine": affine,
            "n_i": float(self.sizes[0]),
            "delta": self.delta,
            "beta": self.n_bad / (sum(self.sizes) + self.n_bad),
            "sigma": self.sigma,
            "eta": self.eta,
            "alpha": self.alpha,
            "T": float(self.rounds),
            "F0": a[0] / 2 * dist2,
            "value": self.gradient_mean,
        }
