r"""Threshold-Clustering: the robust clustering subroutine of Federated-Clustering.

Each of the ``K`` centres runs its own one-cluster iteration over *all* ``N`` points
(Werner et al. 2023, Algorithm 3 and eq. (4); Werner 2024, eq. (2.4)):

.. math::

    v_{k,l} = \frac{1}{N} \sum_{i=1}^N \Big[ z_i\, \mathbb 1(\lVert z_i - v_{k,l-1}\rVert
    \le \tau_{k,l}) + v_{k,l-1}\, \mathbb 1(\lVert z_i - v_{k,l-1}\rVert > \tau_{k,l}) \Big]
    = v_{k,l-1} + \frac{1}{N} \sum_{i \in I} (z_i - v_{k,l-1}).

The denominator is ``N`` (all points), not ``|I|``: a point outside the ball contributes
the centre itself, whatever its magnitude (the robustness to Byzantine points), and the
step toward the inside points has size ``|I| / N``. This is a hard threshold, not centred
clipping. There is no assignment step; callers assign to the nearest centre.

Radius rules: :class:`FixedRadius` (the theorems' :math:`\tau \approx \sqrt{\delta\sigma\Delta}`)
and :class:`QuantileRadius` (every experiment: the ``floor(qN)``-th smallest distance, optionally
scaled by 0.99, with a strict or inclusive comparison, as in the authors' published code; Werner et
al. 2023, §4.2: "the 20th-percentile of distances to the cluster-center"). Every function takes a
leading batch axis, so the per-receiver clustering of Federated-Clustering runs as one call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from econ.validation import in_interval, non_negative, positive, positive_int

__all__ = [
    "FixedRadius",
    "QuantileRadius",
    "RadiusRule",
    "TCResult",
    "clipping_study",
    "distance_curves",
    "elbow",
    "excess_contraction",
    "iterations_bound",
    "threshold_clustering",
]


@dataclass(frozen=True, slots=True)
class FixedRadius:
    r"""The same radius :math:`\tau` for every centre and iteration."""

    tau: float

    def __post_init__(self) -> None:
        """Check that ``tau`` is positive.

        Raises
        ------
        ValueError
            If ``tau`` is not positive.
        """
        positive("tau", self.tau)

    def __call__(self, distances: torch.Tensor) -> torch.Tensor:
        r"""The radius :math:`\tau` for every centre of ``distances (..., K, N)``: ``(..., K)``."""
        return torch.full(distances.shape[:-1], float(self.tau), dtype=distances.dtype)


@dataclass(frozen=True, slots=True)
class QuantileRadius:
    r"""The quantile radius :math:`\tau = s \cdot d_{(\lfloor qN \rfloor)}`.

    The ``floor(qN)``-th smallest distance (0-based) from the centre, times ``scale``
    (:math:`s`).

    With a strict comparison (synthetic experiments, ``scale=1``) exactly ``floor(qN)``
    points are inside; with ``scale=0.99`` and "<=" (MNIST) also ``floor(qN)``; with
    ``scale=1`` and "<=" (CIFAR) ``floor(qN) + 1`` (ties aside).
    """

    q: float
    scale: float = 1.0

    def __post_init__(self) -> None:
        """Check that ``q`` lies in :math:`(0, 1)` and ``scale`` is positive.

        Raises
        ------
        ValueError
            If ``q`` is outside :math:`(0, 1)` or ``scale`` is not positive.
        """
        in_interval("q", self.q, 0.0, 1.0, low_open=True, high_open=True)
        positive("scale", self.scale)

    def __call__(self, distances: torch.Tensor) -> torch.Tensor:
        r"""Radius of each centre of ``distances (..., K, N)``, shape ``(..., K)``.

        :math:`s\, d_{(r)}` with :math:`r = \min(\lfloor qN \rfloor, N - 1)` (0-based), the
        :math:`r`-th smallest distance of the centre to the ``N`` points.

        References
        ----------
        Werner et al. (2023), "Provably Personalized and Robust Federated Learning", §4.2.
        """
        n = distances.shape[-1]
        rank = min(math.floor(self.q * n), n - 1)
        kth = torch.kthvalue(distances, rank + 1, dim=-1).values
        return self.scale * kth


#: A radius rule maps distances ``(..., K, N)`` to radii ``(..., K)``.
RadiusRule = FixedRadius | QuantileRadius | Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True, slots=True)
class TCResult:
    """Outcome of :func:`threshold_clustering`.

    Centres ``(..., K, P)`` after the iterations, per iteration the radii and the number of
    points inside each ball, both ``(iters, ..., K)``, and which points were inside each ball
    at the last iteration, ``members`` ``(..., K, N)`` (bool): the points averaged into the
    last update.
    """

    centers: torch.Tensor
    taus: torch.Tensor
    inside: torch.Tensor
    members: torch.Tensor


def threshold_clustering(
    points: torch.Tensor,
    init: torch.Tensor,
    iters: int,
    radius: RadiusRule,
    *,
    inclusive: bool = True,
) -> TCResult:
    r"""Run Threshold-Clustering (Werner et al. 2023, Algorithm 3, eq. (4)).

    Parameters
    ----------
    points : Tensor (..., N, P)
        The points :math:`z_i` (flattened gradients, momenta, ...).
    init : Tensor (..., K, P)
        Initial centres :math:`v_{k,0}`.
    iters : int
        Iterations ``M`` (the papers' ``l``): 10 by default in the experiments, 3 on MNIST.
    radius : RadiusRule
        :class:`FixedRadius`, :class:`QuantileRadius` or a callable on the distances.
    inclusive : bool
        A point is inside when its distance is ``<= tau`` (True, eq. (4)) or ``< tau``.

    Returns
    -------
    TCResult
    """
    iters = positive_int("iters", iters)
    if points.ndim < 2 or init.ndim != points.ndim or init.shape[-1] != points.shape[-1]:
        raise ValueError(
            f"points (..., N, P) and init (..., K, P) must agree, got {tuple(points.shape)} "
            f"and {tuple(init.shape)}"
        )
    n = points.shape[-2]
    v = init
    taus, counts = [], []
    for _ in range(iters):
        d = torch.cdist(v, points, compute_mode="donot_use_mm_for_euclid_dist")
        tau = radius(d).to(device=d.device, dtype=d.dtype)
        mask = (d <= tau[..., None]) if inclusive else (d < tau[..., None])
        weights = mask.to(points.dtype)
        count = weights.sum(-1)
        v = v + (weights @ points - count[..., None] * v) / n
        taus.append(tau)
        counts.append(count)
    return TCResult(v, torch.stack(taus), torch.stack(counts).to(torch.int64), mask)


def iterations_bound(sigma: float, gap: float, cluster_fraction: float) -> int:
    r"""Iterations Theorem 1 asks for, up to its constant.

    .. math::

        l \ge \max\Big\{1, \frac{\log(\sigma/\Delta)}{\log(1 - \delta_i/2)}\Big\}

    (Werner et al. 2023, Theorem 1; rounded up). ``gap`` is :math:`\Delta`, the separation
    of cluster means; ``cluster_fraction`` is :math:`\delta_i`.
    """
    positive("sigma", sigma)
    positive("gap", gap)
    in_interval("cluster_fraction", cluster_fraction, 0.0, 1.0, low_open=True)
    ratio = math.log(sigma / gap) / math.log(1.0 - cluster_fraction / 2.0)
    return max(1, math.ceil(ratio))


# --------------------------------------------------------------------------- clipping study


def distance_curves(
    points: torch.Tensor,
    labels: torch.Tensor,
    init: torch.Tensor,
    iters: int,
    radius: RadiusRule,
    *,
    inclusive: bool = False,
) -> torch.Tensor:
    r"""RMS distance of each Threshold-Clustering centre to its true cluster, per iteration.

    The clipping-iteration study's curves (Werner et al. 2023, §4.3 and Fig. 4; Werner 2024,
    Fig. 2.7): run Threshold-Clustering from ``init`` ``(..., K, P)``, centre ``k`` belonging to
    true cluster ``k``, and after each iteration record the RMS distance of the centre to that
    cluster's members,

    .. math::

        f_k(l) = \sqrt{\frac{1}{|C_k|} \sum_{j \in C_k} \lVert z_j - v_{k,l} \rVert^2},

    whose floor is about the within-cluster spread :math:`\sigma\sqrt d`, not 0.

    Parameters
    ----------
    points : Tensor (..., N, P)
    labels : Tensor (N,) of int64
        True cluster ``0 .. K-1`` of every point.
    init, iters, radius, inclusive
        As in :func:`threshold_clustering` (the study uses the strict ``<``).

    Returns
    -------
    Tensor (..., K, iters)
    """
    iters = positive_int("iters", iters)
    k = init.shape[-2]
    members = torch.nn.functional.one_hot(labels.to(torch.int64), k).T.to(points.dtype)
    if members.shape[-1] != points.shape[-2]:
        raise ValueError(f"need one label per point, got {labels.shape} for {points.shape}")
    counts = members.sum(-1)
    v, curve = init, []
    for _ in range(iters):
        v = threshold_clustering(points, v, 1, radius, inclusive=inclusive).centers
        d2 = torch.cdist(v, points, compute_mode="donot_use_mm_for_euclid_dist").square()
        curve.append(((d2 * members).sum(-1) / counts).sqrt())
    return torch.stack(curve, dim=-1)


def clipping_study(
    points: torch.Tensor,
    labels: torch.Tensor,
    iters: int = 50,
    quantile: float = 0.1,
    seeds: int = 10,
    *,
    seed: int | np.random.Generator | None = 0,
) -> torch.Tensor:
    """The mean curve of the clipping study, shape ``(iters,)``.

    For each of ``seeds`` repetitions every true cluster's centre starts at one of its members
    drawn at random, and :func:`distance_curves` runs with the strict quantile radius
    ``quantile`` (0.1 with 10 clusters: exactly one cluster's worth of points inside); the
    curves are averaged over clusters and repetitions.
    """
    seeds = positive_int("seeds", seeds)
    rng = np.random.default_rng(seed)
    labels_np = labels.cpu().numpy()
    n_clusters = int(labels_np.max()) + 1
    starts = np.array(
        [
            [rng.choice(np.flatnonzero(labels_np == k)) for k in range(n_clusters)]
            for _ in range(seeds)
        ]
    )
    init = points[torch.as_tensor(starts, device=points.device)]  # (seeds, K, P)
    batched = points.expand(seeds, *points.shape)
    curves = distance_curves(batched, labels, init, iters, QuantileRadius(quantile))
    return curves.mean(dim=(0, 1))


def elbow(curve: torch.Tensor | np.ndarray, level: float = -0.19, offset: float = 1e-3) -> float:
    r"""The "elbow" of a decreasing curve :math:`f(l)` as the authors' notebook estimates it.

    Werner et al. (2023), §4.3: the relative decrease

    .. math::

        z(l) = \frac{f(l) - f(l-1)}{f(l-1) - \min_l f(l) + \text{offset}}, \qquad l \ge 1,

    then a least-squares cubic :math:`l(z)` evaluated at ``level``. A heuristic: when the
    excess decays geometrically, :math:`z` is nearly constant and the fit is driven by the
    tail where the curve reaches its floor.
    """
    f = np.asarray(curve, dtype=np.float64)
    if f.ndim != 1 or f.size < 5:
        raise ValueError(f"curve must be 1-D with at least 5 values, got shape {f.shape}")
    non_negative("offset", offset)
    z = (f[1:] - f[:-1]) / (f[:-1] - f.min() + offset)
    coefficients = np.polyfit(z, np.arange(1, f.size, dtype=np.float64), 3)
    return float(np.polyval(coefficients, level))


def excess_contraction(curve: torch.Tensor | np.ndarray, span: int = 10) -> float:
    r"""Mean contraction per iteration of the excess over the floor in the first ``span`` steps.

    :math:`\big((f(\text{span}) - \min f)/(f(0) - \min f)\big)^{1/\text{span}}`
    (Theorem 1's bound allows :math:`1 - \delta/2`; exactly :math:`1 - |I|/N` while the
    inside set is fixed).
    """
    f = np.asarray(curve, dtype=np.float64)
    span = positive_int("span", span)
    if f.ndim != 1 or f.size <= span:
        raise ValueError(f"curve must be 1-D and longer than span={span}, got shape {f.shape}")
    excess = f - f.min()
    return float((excess[span] / excess[0]) ** (1.0 / span))
