r"""Algorithms 2 and 3 of Werner (2024), ch. 2, in numpy, and the runs of Theorems 1 and 3.

Threshold-Clustering (Algorithm 3, eq. (2.4)) for one cluster over a batch of independent
runs with the threat model's bad points (:func:`threshold_clustering`), Theorem 1's number of
steps (:func:`threshold_steps`), points uniform on spheres (:func:`sphere_noise`), and the
instances the theorems' checks run: :class:`ThresholdRun` (Algorithm 3 on points uniform on
spheres around known cluster means, Theorem 1) and :class:`FederatedRun` (Algorithm 2,
Federated-Clustering, on quadratic clients with known minimisers and curvatures, Theorem 3).
Algorithm 4 (Momentum-Clustering) is in :mod:`learning.theory.clustering_momentum`; the
statements are registered in :mod:`learning.theory.ch2_thm1_propositions` and
:mod:`learning.theory.ch2_thm3_propositions`.

References
----------
M. Werner, *Collaborative Learning: Aligning Goals and Outcomes*, PhD thesis, UC Berkeley
(2024), ch. 2, §2.3 (Theorems 1 and 3, Algorithms 2 and 3) and §2.6 (proofs). M. Werner,
L. He, M. Jordan, M. Jaggi, S. P. Karimireddy, "Provably Personalized and Robust Federated
Learning", TMLR (2023), §3.1-3.2 and App. A.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np

from learning.theory.clustering import FloatArray, a5_largest_gap

__all__ = [
    "EDGE",
    "REPLICATES",
    "FederatedRun",
    "Radius",
    "ThresholdRun",
    "sphere_noise",
    "threshold_clustering",
    "threshold_steps",
]

REPLICATES = 100  # Monte-Carlo replicates of each run (seeded)
EDGE = 1.0 - 1e-9  # a bad point sits just inside the ball: at EDGE * tau from the centre


def sphere_noise(rng: np.random.Generator, shape: tuple[int, ...], dim: int) -> FloatArray:
    r"""Points uniform on the unit sphere of :math:`\mathbb R^{dim}`, shape ``shape + (dim,)``.

    Scaled by :math:`\sigma` they have :math:`\mathbb E\lVert z - \mathbb E z\rVert^2 =
    \sigma^2` exactly (Assumption 3 with equality) and bounded support.
    """
    u = rng.standard_normal((*shape, dim))
    return np.asarray(u / np.linalg.norm(u, axis=-1, keepdims=True), dtype=np.float64)


def threshold_steps(sigma: float, gap: float, delta: float) -> int:
    r"""Theorem 1's number of thresholding steps, the printed bound with constant 1.

    :math:`l = \lceil\max\{1, \log(\sigma/\Delta) / \log(1-\delta_i/2)\}\rceil`.
    """
    return max(1, math.ceil(math.log(sigma / gap) / math.log(1.0 - delta / 2.0)))


def threshold_clustering(
    points: FloatArray,
    centre: FloatArray,
    radius: float,
    steps: int,
    *,
    n_bad: int = 0,
    direction: FloatArray | None = None,
) -> FloatArray:
    r"""Algorithm 3 for one cluster, eq. (2.4), over a batch of independent runs.

    .. math::

        v_l = \frac1N \sum_{j=1}^N \Big(z_j \mathbb 1(\lVert z_j - v_{l-1}\rVert \le \tau)
              + v_{l-1}\mathbb 1(\lVert z_j - v_{l-1}\rVert > \tau)\Big),

    with ``points`` ``(R, N_good, d)`` the good points of ``R`` runs and ``centre``
    ``(R, d)`` the starts :math:`v_0`. The ``n_bad`` bad points follow the threat model of
    §2.3: at every step they sit just inside the ball, at :math:`\tau` from :math:`v_{l-1}`
    along the unit vector ``direction``, so they keep their value and pull the most.
    Returns :math:`v_l` after ``steps`` steps, ``(R, d)``.

    References
    ----------
    Werner (2024), ch. 2, §2.3, Algorithm 3 and "Threat model"; = Werner et al. (TMLR 2023),
    §3.1, Algorithm 3.
    """
    v = np.array(centre, dtype=np.float64)
    total = points.shape[1] + n_bad
    pull = np.zeros(points.shape[-1]) if direction is None else EDGE * radius * direction
    for _ in range(steps):
        offset = points - v[:, None]
        inside = np.sqrt((offset * offset).sum(axis=-1)) <= radius  # the norm, as numpy's
        kept = np.where(inside[..., None], points, v[:, None]).sum(axis=1)
        v = (kept + n_bad * (v + pull)) / total
    return v


@dataclass(frozen=True)
class ThresholdRun:
    r"""One instance of Theorem 1 and the error of Algorithm 3 on it.

    Client :math:`i`'s cluster has ``n_i`` points with mean 0; the other clusters (sizes
    ``others``) have means :math:`(k+1)\Delta e_{k \bmod d}`, so :math:`\Delta` = ``gap``
    is the smallest distance between means (Assumption 2, exactly); ``n_bad`` bad points.
    Points are uniform on spheres of radius ``sigma``. The start :math:`v_0` is random,
    independent of the points: :math:`\pm w` with probability ``start_prob``/2 each and the
    mean 0 otherwise, :math:`\lVert w\rVert` = ``start``, so :math:`\mathbb E v_0 = 0`,
    :math:`\mathbb E\lVert v_0\rVert^2 = p\lVert w\rVert^2` and
    :math:`\lVert v_0\rVert \le \lVert w\rVert` surely; ``start_prob`` = 1 is the
    deterministic start :math:`w`.
    """

    n_i: int
    others: tuple[int, ...]
    n_bad: int
    dim: int
    sigma: float
    gap: float
    start: float
    seed: int
    start_prob: float = 1.0

    @property
    def total(self) -> int:
        """:math:`N`, good and bad points together."""
        return self.n_i + sum(self.others) + self.n_bad

    @property
    def delta(self) -> float:
        r""":math:`\delta_i = n_i/N`."""
        return self.n_i / self.total

    @property
    def beta(self) -> float:
        r""":math:`\beta_i`, the fraction of bad points."""
        return self.n_bad / self.total

    @property
    def radius(self) -> float:
        r"""The printed radius :math:`\tau = \sqrt{\delta_i\sigma\Delta}`."""
        return math.sqrt(self.delta * self.sigma * self.gap)

    @property
    def steps(self) -> int:
        """Theorem 1's :func:`threshold_steps`."""
        return threshold_steps(self.sigma, self.gap, self.delta)

    @cached_property
    def error(self) -> float:
        r"""Mean of :math:`\lVert v_{k_i,l} - \mathbb E z_i\rVert^2` over the points and the start.

        Monte-Carlo over the points, exact over the start's atoms: the sum of each atom's
        probability times the Monte-Carlo mean given that start.
        """
        rng = np.random.default_rng(self.seed)
        centres = np.zeros((1 + len(self.others), self.dim))
        for k in range(len(self.others)):  # (k+1) Delta along axis k mod d: all >= Delta apart
            centres[k + 1, k % self.dim] = (k + 1) * self.gap
        mean = np.repeat(centres, (self.n_i, *self.others), axis=0)
        points = mean + self.sigma * sphere_noise(rng, (REPLICATES, mean.shape[0]), self.dim)
        far = self.start * sphere_noise(rng, (), self.dim)
        p = self.start_prob
        law = ((1.0, far),) if p == 1.0 else ((1.0 - p, 0.0 * far), (p / 2, far), (p / 2, -far))
        bad_dir = np.zeros(self.dim)
        bad_dir[-1] = 1.0
        error = 0.0
        for prob, v0 in law:
            centre = np.broadcast_to(v0, (REPLICATES, self.dim))
            v = threshold_clustering(
                points, centre, self.radius, self.steps, n_bad=self.n_bad, direction=bad_dir
            )
            error += prob * float(np.mean(np.sum(v**2, axis=-1)))
        return error

    def point(self) -> dict[str, Any]:
        """The keyword arguments of the checks: the instance, its constants and its error."""
        return {
            "n_bad": self.n_bad,
            "dim": self.dim,
            "error": self.error,
            "sigma": self.sigma,
            "gap": self.gap,
            "n_i": self.n_i,
            "delta": self.delta,
            "beta": self.beta,
            "start": self.start,
            "start_mean_sq": self.start_prob * self.start**2,
        }


Radius = Literal["printed", "proof"]


@dataclass(frozen=True)
class FederatedRun:
    r"""One instance of Theorem 3 and client 0's run of Algorithm 2 on it.

    Client :math:`j` has the loss :math:`f_j(x) = \tfrac{a_j}2\lVert x - c_{k(j)}\rVert^2`
    (``curvatures`` :math:`a_j`, ``clusters`` :math:`k(j)`; cluster optima ``optima``), and
    stochastic gradients :math:`\nabla f_j(x) + \xi` with :math:`\xi \sim \mathcal N(0,
    \rho^2 I/d)`, :math:`\rho^2 = \sigma^2/|B|` (Lemma 7 with equality). Client 0 belongs to
    cluster 0; ``n_bad`` bad clients send, at every thresholding step, a point at the edge of
    the ball. ``start`` is :math:`x_{0,0}`, ``rounds`` is :math:`T`, ``replicates`` the
    number of Monte-Carlo runs. ``radius`` is the thresholding radius: ``"printed"``,
    :math:`\tau = \sqrt{\delta_i\sigma\Delta}` with the per-sample :math:`\sigma` of the
    statement, or ``"proof"``, the radius of the Notation of Theorem 3's proof,
    :math:`\tau_l^2 = c_l^2 + A^4\,\mathbb E\lVert\nabla\bar f_0(x_{0,t-1})\rVert^2 +
    \delta_i\rho\Delta` with :math:`c_l^2 = \mathbb E\lVert v_{l-1} - \nabla\bar
    f_0(x_{0,t-1})\rVert^2`, both expectations the means over the runs.
    """

    curvatures: tuple[float, ...]
    clusters: tuple[int, ...]
    optima: tuple[tuple[float, ...], ...]
    d_sep: float
    n_bad: int
    sigma: float
    batch: int
    start: tuple[float, ...]
    rounds: int
    seed: int
    replicates: int = REPLICATES
    radius: Radius = "printed"

    @cached_property
    def constants(self) -> dict[str, float]:
        r"""The statement's constants, computed exactly.

        :math:`L`, :math:`A`, :math:`D`, :math:`\Delta` (the largest for which A5 holds with
        this :math:`D`), :math:`\delta_i`, :math:`\beta_i`, :math:`n_i`, :math:`\rho`.
        """
        a = np.asarray(self.curvatures)
        k = np.asarray(self.clusters)
        a2 = max(
            float(np.max((a[k == c] - a[k == c].mean()) ** 2)) / a[k == c].mean() ** 2
            for c in set(self.clusters)
        )
        opt = np.asarray(self.optima)
        dim = opt.shape[1]
        gap = min(
            a5_largest_gap(
                (a[i] * np.eye(dim), a[j] * np.eye(dim)), (opt[k[i]], opt[k[j]]), self.d_sep
            )
            for i in range(a.size)
            for j in range(i + 1, a.size)
            if k[i] != k[j]
        )
        total = a.size + self.n_bad
        n_i = int(np.sum(k == k[0]))
        return {
            "L": float(a.max()),
            "A2": a2,
            "D": self.d_sep,
            "gap": gap,
            "n_i": float(n_i),
            "delta": n_i / total,
            "beta": self.n_bad / total,
            "rho": self.sigma / math.sqrt(self.batch),
            "sigma": self.sigma,
            "T": float(self.rounds),
        }

    @cached_property
    def gradient_mean(self) -> float:
        r"""Monte-Carlo mean of the left side of eq. (2.3) for client 0.

        :math:`\frac1T\sum_{t=1}^T\lVert\nabla f_0(x_{0,t-1})\rVert^2` under Algorithm 2 with
        :math:`\eta = 1/L`, the radius ``radius`` and :math:`l = \lceil\max\{1,
        \log(\rho/\Delta)/\log(1-\delta_i/2)\}\rceil` steps of Threshold-Clustering started
        at client 0's own gradient (Algorithm 2, step 6).
        """
        c = self.constants
        rng = np.random.default_rng(self.seed)
        a = np.asarray(self.curvatures)
        k = np.asarray(self.clusters)
        a_bar = float(a[k == k[0]].mean())
        centres = np.asarray(self.optima)[k]
        dim = centres.shape[1]
        steps = threshold_steps(c["rho"], c["gap"], c["delta"])
        eta = 1.0 / c["L"]
        bad_dir = np.zeros(dim)
        bad_dir[-1] = 1.0
        x = np.tile(np.asarray(self.start, dtype=np.float64), (self.replicates, 1))
        total = 0.0
        for _ in range(self.rounds):
            total += float(np.mean(np.sum((a[0] * (x - centres[0])) ** 2, axis=-1)))
            grads = a[:, None] * (x[:, None] - centres) + c["rho"] / math.sqrt(dim) * (
                rng.standard_normal((self.replicates, a.size, dim))
            )
            mean_grad = a_bar * (x - centres[0])  # grad f_bar_0(x), f_bar_0 the cluster's mean
            spread = self._spread(mean_grad)
            v = grads[:, 0]
            for _ in range(steps):
                v = threshold_clustering(
                    grads,
                    v,
                    self._radius(v, mean_grad, spread),
                    1,
                    n_bad=self.n_bad,
                    direction=bad_dir,
                )
            x = x - eta * v
        return total / self.rounds

    def _spread(self, mean_grad: FloatArray) -> float:
        r""":math:`A^4\,\mathbb E\lVert\nabla\bar f_0(x_{0,t-1})\rVert^2`, fixed within a round."""
        if self.radius == "printed":
            return 0.0
        return self.constants["A2"] ** 2 * float((mean_grad**2).sum(axis=-1).mean())

    def _radius(self, v: FloatArray, mean_grad: FloatArray, spread: float) -> float:
        """The thresholding radius of the next step, from the centres and the round's spread."""
        c = self.constants
        if self.radius == "printed":
            return math.sqrt(c["delta"] * c["sigma"] * c["gap"])
        centre_gap = float(((v - mean_grad) ** 2).sum(axis=-1).mean())
        return math.sqrt(centre_gap + spread + c["delta"] * c["rho"] * c["gap"])

    def point(self) -> dict[str, Any]:
        """The keyword arguments of the checks: the constants, the start's gaps, the mean."""
        a = np.asarray(self.curvatures)
        k = np.asarray(self.clusters)
        dist2 = float(np.sum((np.asarray(self.start) - np.asarray(self.optima[0])) ** 2))
        return {
            **self.constants,
            "F0": a[0] / 2 * dist2,
            "F0_bar": float(a[k == k[0]].mean()) / 2 * dist2,
            "batch": float(self.batch),
            "value": self.gradient_mean,
        }
