r"""Federated-Clustering's theory: the constructions its statements speak about.

Theorem 2's two-point construction (:func:`two_point_symbols`, :func:`two_point_construction`)
and a single cluster's Bayes risk under its two-point prior (:func:`single_cluster_risk`);
the largest separation :math:`\Delta` for which two quadratic clients satisfy Assumption 5
(:func:`a5_largest_gap`). Lemma 1's quadratic clients are in
:mod:`learning.theory.clustering_lemma1`, the thresholded point of Lemma 4 and the momentum of
Lemma 14 in :mod:`learning.theory.clustering_variance`, Algorithms 2-4 in numpy and the runs of
Theorems 1, 3 and 4 in :mod:`learning.theory.clustering_algorithms` and
:mod:`learning.theory.clustering_momentum`, the point laws of Lemmas 2-6 in
:mod:`learning.theory.threshold_laws`. The statements, and which of them fail
as printed, are registered in :mod:`learning.theory.clustering_propositions` and its siblings.

References
----------
M. Werner, *Collaborative Learning: Aligning Goals and Outcomes* (PhD thesis, UC Berkeley,
2024), ch. 2, §2.3 and §2.6; Werner, He, Jordan, Jaggi, Karimireddy, "Provably Personalized
and Robust Federated Learning" (TMLR 2023), §3 and App. A.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp
from numpy.typing import NDArray
from scipy.special import expit
from scipy.stats import binom

from econ.validation import non_negative, positive

__all__ = [
    "TwoPointConstruction",
    "a5_largest_gap",
    "construction_p",
    "single_cluster_risk",
    "two_point_construction",
    "two_point_symbols",
]

FloatArray = NDArray[np.float64]

#: The two texts of the chapter's results, as the registered statements cite them.
THESIS = "Werner (2024), PhD thesis, ch. 2"
PAPER = "Werner, He, Jordan, Jaggi, Karimireddy (TMLR 2023)"

# --------------------------------------------------------------------------- Theorem 2


@dataclass(frozen=True, slots=True)
class TwoPointConstruction:
    r"""Theorem 2's hard instance: two atoms, and the error of the best estimate.

    Atoms ``0`` and ``atom`` with probabilities ``p`` and ``1 - p`` (and swapped for the second
    component), and the error ``error`` of the best estimate :math:`dp/2` of
    :math:`\mu_1 = dp`.
    """

    p: float
    atom: float
    error: float


def construction_p(sigma: sp.Expr, gap: sp.Expr) -> sp.Expr:
    r"""Eq. (2.12): :math:`p = 1/2 - \Delta/(2\sqrt{4\sigma^2+\Delta^2})`."""
    return sp.Rational(1, 2) - gap / (2 * sp.sqrt(4 * sigma**2 + gap**2))


def two_point_symbols() -> tuple[sp.Expr, sp.Expr, sp.Expr, sp.Symbol, sp.Symbol]:
    r"""Theorem 2's construction in closed form (Werner 2024, proof of Theorem 2).

    Eq. (2.10)-(2.12):

    .. math::

        p = \frac12 - \frac{\Delta}{2\sqrt{4\sigma^2+\Delta^2}}, \qquad
        d = \frac{\Delta}{1-2p}, \qquad \text{error} = \frac{d^2p^2}{4}.

    Returns ``(p, d, error, sigma, Delta)`` with positive symbols ``sigma``, ``Delta``.
    """
    sigma, gap = sp.symbols("sigma Delta", positive=True)
    p = construction_p(sigma, gap)
    d = gap / (1 - 2 * p)
    return p, d, d**2 * p**2 / 4, sigma, gap


def two_point_construction(sigma: float, gap: float) -> TwoPointConstruction:
    r"""Numbers of Theorem 2's construction for a standard deviation and a separation.

    For standard deviation ``sigma`` and separation ``gap`` (:math:`\Delta`): :math:`p`, the atom :math:`d = \sqrt{4\sigma^2+\Delta^2}` and
    the error :math:`(\sqrt{4\sigma^2+\Delta^2}-\Delta)^2/16` (see :func:`two_point_symbols`).
    """
    sigma = float(positive("sigma", sigma))
    gap = float(positive("gap", gap))
    root = math.sqrt(4 * sigma**2 + gap**2)
    return TwoPointConstruction(p=0.5 - gap / (2 * root), atom=root, error=(root - gap) ** 2 / 16)


def single_cluster_risk(sigma: float, n: int, gap: float) -> float:
    r"""Bayes risk of estimating a cluster's mean from ``n`` samples, two-point prior.

    The cluster's law is :math:`\mathcal D_1` or :math:`\mathcal D_2` of Theorem 2's
    construction (:func:`~learning.theory.clustering.two_point_construction`: atoms
    :math:`0, d`, variance :math:`\sigma^2` each, means :math:`\Delta` = ``gap`` apart), each
    with probability 1/2. With :math:`k` the number of samples at :math:`d`, the posterior
    weight of :math:`\mathcal D_2` is :math:`\pi_k = 1/(1 + ((1-p)/p)^{n-2k})` and the
    posterior mean is the Bayes estimate, so the risk is

    .. math::

        \frac{\Delta^2}2\sum_{k=0}^n \Big(\tbinom nk p^k(1-p)^{n-k}\pi_k^2
        + \tbinom nk (1-p)^k p^{n-k}(1-\pi_k)^2\Big).

    Any estimator's larger risk under the two laws is at least this average.

    References
    ----------
    Werner (2024), ch. 2, §2.6, proof of Theorem 2, last display (:math:`\sigma^2/(4n)`);
    = Werner et al. (TMLR 2023), App. A.2.
    """
    pair = two_point_construction(sigma, gap)
    p = pair.p
    k = np.arange(n + 1)
    posterior = expit((2 * k - n) * math.log((1 - p) / p))
    first = binom.pmf(k, n, p) @ posterior**2
    second = binom.pmf(k, n, 1 - p) @ (1 - posterior) ** 2
    return float(gap**2 / 2 * (first + second))


# --------------------------------------------------------------------------- A5 at the optima


def a5_largest_gap(
    hessians: tuple[FloatArray, FloatArray], optima: tuple[FloatArray, FloatArray], d: float
) -> float:
    r"""The largest :math:`\Delta` for which two quadratic clients satisfy Assumption 5.

    The clients :math:`f_k(x) = \tfrac12 (x - c_k)^\top H_k (x - c_k)` lie in different
    clusters, and Assumption 5 holds with constant ``d``, both ways round:

    .. math::

        \Delta^2 = \min_{(a, b)} \min_x \lVert\nabla f_a(x) - \nabla f_b(x)\rVert^2
                   + D^2 \lVert\nabla f_a(x)\rVert^2,

    a linear least-squares problem in :math:`x` for each order :math:`(a, b)`.
    """
    d = float(non_negative("d", d))
    out = math.inf
    for a, b in ((0, 1), (1, 0)):
        ha, hb = np.atleast_2d(hessians[a]), np.atleast_2d(hessians[b])
        ca, cb = np.atleast_1d(optima[a]), np.atleast_1d(optima[b])
        lhs = np.vstack([ha - hb, d * ha])
        rhs = np.concatenate([ha @ ca - hb @ cb, d * ha @ ca])
        x, *_ = np.linalg.lstsq(lhs, rhs, rcond=None)
        out = min(out, float(np.sum((lhs @ x - rhs) ** 2)))
    return math.sqrt(max(out, 0.0))
