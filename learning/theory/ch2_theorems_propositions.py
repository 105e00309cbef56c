r"""Theorems 1, 3 and 4 of Werner (2024), ch. 2 (= Werner et al., TMLR 2023, §3), run.

Each theorem bounds what an algorithm of the chapter returns, up to constants hidden in
:math:`\lesssim`. The checks run the printed algorithm in numpy on instances whose every
constant is known (points uniform on spheres of radius :math:`\sigma` around known cluster
means; quadratic client losses with known minimisers and curvatures), with the printed
radius :math:`\tau = \sqrt{\delta_i\sigma\Delta}`, the printed number of thresholding steps
and the printed step size, and compare the Monte-Carlo mean of the left side with the
printed right side times a declared constant ``constant`` (the constant that
:math:`\lesssim` hides; every "sufficiently large constant" of a hypothesis is declared too).

- Theorem 1 (Threshold-Clustering): its proof assumes
  :math:`\mathbb E\lVert v_{k_i,0} - \mathbb E z_i\rVert^2 \le \sigma^2` (step (v) of
  eq. (2.9)); the statement does not, and a start farther than :math:`\tau` from every point
  never moves, so the error is :math:`\lVert v_{k_i,0} - \mathbb E z_i\rVert^2`, unbounded
  against the right side (``thesis.ch2.thm1``; with the proof's hypothesis,
  ``thesis.ch2.thm1.corrected``).
- Theorems 3 and 4 (Federated-Clustering, Momentum-Clustering): the printed rates do not
  depend on the start; the first summand alone,
  :math:`\lVert\nabla f_i(x_{i,0})\rVert^2/T`, is unbounded against them. The proofs'
  last explicit inequalities, eq. (2.21)-(2.22) and the display after eq. (2.26), keep the
  start's suboptimality :math:`f_i(x_{i,0}) - f_i^*` over :math:`\eta T` and hold
  (``thesis.ch2.thm3``, ``thesis.ch2.thm4`` and their ``.corrected`` twins).

References
----------
M. Werner, *Collaborative Learning: Aligning Goals and Outcomes*, PhD thesis, UC Berkeley
(2024), ch. 2, §2.3 (Theorems 1-4, Algorithms 2-4) and §2.6 (proofs). M. Werner, L. He,
M. Jordan, M. Jaggi, S. P. Karimireddy, "Provably Personalized and Robust Federated
Learning", TMLR (2023), §3 and App. A.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

import numpy as np

from econ.propositions import Verdict, on_points, proposition
from learning.theory.clustering import PAPER, THESIS, FloatArray

__all__ = [
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
        inside = np.linalg.norm(points - v[:, None], axis=-1) <= radius
        kept = np.where(inside[..., None], points, v[:, None]).sum(axis=1)
        v = (kept + n_bad * (v + pull)) / total
    return v


# --------------------------------------------------------------------------- Theorem 1


@dataclass(frozen=True)
class ThresholdRun:
    r"""One instance of Theorem 1 and the error of Algorithm 3 on it.

    Client :math:`i`'s cluster has ``n_i`` points with mean 0; the other clusters (sizes
    ``others``) have means :math:`(k+1)\Delta e_{k \bmod d}`, so :math:`\Delta` = ``gap``
    is the smallest distance between means (Assumption 2, exactly); ``n_bad`` bad points; the start :math:`v_0` lies at distance
    ``start`` from the mean 0. Points are uniform on spheres of radius ``sigma``.
    """

    n_i: int
    others: tuple[int, ...]
    n_bad: int
    dim: int
    sigma: float
    gap: float
    start: float
    seed: int

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
        r"""Monte-Carlo mean of :math:`\lVert v_{k_i,l} - \mathbb E z_i\rVert^2`."""
        rng = np.random.default_rng(self.seed)
        centres = np.zeros((1 + len(self.others), self.dim))
        for k in range(len(self.others)):  # (k+1) Delta along axis k mod d: all >= Delta apart
            centres[k + 1, k % self.dim] = (k + 1) * self.gap
        mean = np.repeat(centres, (self.n_i, *self.others), axis=0)
        points = mean + self.sigma * sphere_noise(rng, (REPLICATES, mean.shape[0]), self.dim)
        start_dir = sphere_noise(rng, (), self.dim)
        centre = np.broadcast_to(self.start * start_dir, (REPLICATES, self.dim))
        bad_dir = np.zeros(self.dim)
        bad_dir[-1] = 1.0
        v = threshold_clustering(
            points, centre, self.radius, self.steps, n_bad=self.n_bad, direction=bad_dir
        )
        return float(np.mean(np.sum(v**2, axis=-1)))

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
        }


@cache
def _threshold_points() -> tuple[dict[str, Any], ...]:
    """The points of Theorem 1's checks, computed once (the runs are seeded)."""
    return tuple(run.point() for run in _threshold_runs())


def _threshold_runs() -> Iterator[ThresholdRun]:
    # the edges: Delta = 4 sigma/delta_i, beta_i = delta_i/4, n_i = 1, starts at 0 and sigma
    edges: tuple[tuple[int, tuple[int, ...], int], ...] = (
        (1, (3,), 0),
        (4, (11,), 1),
        (8, (25, 4), 2),
        (20, (5,), 5),
    )
    for n_i, others, n_bad in edges:
        total = n_i + sum(others) + n_bad
        for start in (0.0, 1.0):
            yield ThresholdRun(n_i, others, n_bad, 2, 1.0, 4.0 * total / n_i, start, 11)
    rng = np.random.default_rng(7)
    for k in range(16):
        n_i = int(rng.integers(1, 60))
        others = tuple(int(s) for s in rng.integers(1, 60, size=int(rng.integers(1, 4))))
        n_bad = int(rng.integers(0, n_i // 4 + 1))  # beta_i/delta_i = n_bad/n_i <= 1/4
        delta = n_i / (n_i + sum(others) + n_bad)
        sigma = float(10 ** rng.uniform(-1, 1))
        gap = float(10 ** rng.uniform(math.log10(4), 2.5)) * sigma / delta
        start = float(sigma * (0.0, 0.5, 1.0, 10.0, 1e3)[k % 5])
        yield ThresholdRun(n_i, others, n_bad, int((1, 2, 5)[k % 3]), sigma, gap, start, k)


_THRESHOLD_DRAWN = (
    "8 edge instances (Delta = 4 sigma/delta_i and beta_i = delta_i/4 where bad points are "
    "present, n_i = 1, starts at the mean and at distance sigma) and 16 seeded (seed 7) ones "
    "(n_i and 1-3 other cluster sizes uniform in 1..59, bad points up to beta_i = delta_i/4, "
    "sigma log-uniform in [0.1, 10], Delta/(sigma/delta_i) log-uniform in [4, 316], dimension "
    "1, 2 or 5, start at distance 0, sigma/2, sigma, 10 sigma or 1000 sigma from E z_i); "
    f"points uniform on spheres of radius sigma, {REPLICATES} Monte-Carlo runs each, the "
    "bad points at the ball's edge at every step"
)


def _printed_thm1_rhs(sigma: float, n_i: float, gap: float, beta: float) -> float:
    """Eq. (2.2): sigma^2/n_i + sigma^3/Delta + beta_i sigma Delta."""
    return sigma**2 / n_i + sigma**3 / gap + beta * sigma * gap


def _thm1_check(
    constant: float,
    start_bound: float,
    gap_constant: float,
    beta_constant: float,
    rhs: Callable[[float, float, float, float], float],
) -> Verdict:
    def holds(error: float, sigma: float, n_i: int, gap: float, beta: float, **_: Any) -> bool:
        return error <= constant * rhs(sigma, n_i, gap, beta)

    def hypothesis(
        sigma: float, gap: float, delta: float, beta: float, start: float, **_: Any
    ) -> bool:
        return (
            gap >= gap_constant * sigma / delta * (1 - 1e-12)
            and beta <= beta_constant * delta * (1 + 1e-12)
            and start <= start_bound * sigma
        )

    return on_points(
        holds,
        _threshold_points(),
        f"E||v_(k_i,l) - E z_i||^2 <= {constant} (sigma^2/n_i + sigma^3/Delta + beta_i sigma "
        f"Delta) after l = ceil(max(1, log(sigma/Delta)/log(1 - delta_i/2))) steps of Algorithm 3 "
        f"with tau = sqrt(delta_i sigma Delta), for Delta >= {gap_constant} sigma/delta_i, "
        f"beta_i <= {beta_constant} delta_i and ||v_0 - E z_i|| <= {start_bound} sigma",
        drawn=_THRESHOLD_DRAWN,
        hypothesis=hypothesis,
    )


@proposition(
    "thesis.ch2.thm1",
    source=f"{THESIS}, §2.3 Theorem 1 (eq. (2.2)); = {PAPER}, §3.1, Theorem 1 (eq. (2))",
    statement="under Assumptions 1-3 with Delta >~ sigma/delta_i, Algorithm 3 run for "
    "l >~ max{1, max_i log(sigma/Delta)/log(1 - delta_i/2)} steps with beta_i <~ delta_i and "
    "tau ~ sqrt(delta_i sigma Delta) gives E||v_(k_i,l) - E z_i||^2 <~ sigma^2/n_i + "
    "sigma^3/Delta + beta_i sigma Delta (checked with the hidden constants 10 for the bound, "
    "4 for Delta, 1/4 for beta_i, 1 for tau and l; the start v_(k,0) is free, as printed)",
    holds=False,
    perturb={"start_bound": 1.0},
)
def _thm1(
    constant: float = 10.0,
    start_bound: float = math.inf,
    gap_constant: float = 4.0,
    beta_constant: float = 0.25,
    rhs: Callable[[float, float, float, float], float] = _printed_thm1_rhs,
) -> Verdict:
    return _thm1_check(constant, start_bound, gap_constant, beta_constant, rhs)


@proposition(
    "thesis.ch2.thm1.corrected",
    source=f"{THESIS}, §2.6 proof of Theorem 1, eq. (2.9) step (v); = {PAPER}, App. A.1",
    statement="Theorem 1 with the hypothesis its proof uses, E||v_(k_i,0) - E z_i||^2 <= "
    "sigma^2: E||v_(k_i,l) - E z_i||^2 <= 10 (sigma^2/n_i + sigma^3/Delta + beta_i sigma Delta) "
    "for Delta >= 4 sigma/delta_i, beta_i <= delta_i/4, tau = sqrt(delta_i sigma Delta) and "
    "l = ceil(max(1, log(sigma/Delta)/log(1 - delta_i/2))), bad points anywhere in the ball",
    perturb={"start_bound": math.inf},
)
def _thm1_corrected(
    constant: float = 10.0,
    start_bound: float = 1.0,
    gap_constant: float = 4.0,
    beta_constant: float = 0.25,
    rhs: Callable[[float, float, float, float], float] = _printed_thm1_rhs,
) -> Verdict:
    return _thm1_check(constant, start_bound, gap_constant, beta_constant, rhs)
