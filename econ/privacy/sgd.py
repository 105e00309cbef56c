r"""Step sizes, round count and error bound of Algorithm 1 (Tsoy et al. 2024, §4.2, App. B.4).

With :math:`\chi = \mu/L` and :math:`y^0_* = L\mu nND^2/\sigma^2`, the optimal steps of Lemma B.4 are

.. math::

    \eta^{t+1}_* = \frac{y^t}{L(y^t+1)}, \qquad
    y^{t+1}_* = \Big(1 - \chi\frac{y^t_*}{y^t_*+1}\Big)y^t_*,

and Theorem 4.3 bounds :math:`\Delta w^m = \mathbf E\|w^m-w^*\|^2` by

.. math::

    \Delta w^{m,\mathrm{ub}} = \begin{cases}
      \big((1 + \frac{\chi}{2-\chi}(m-T))L\mu\Gamma\big)^{-1}, & m \ge T,\\
      (1-\chi/2)^m\,y^0_*/(L\mu\Gamma), & m < T,\end{cases}
    \qquad T = \max\Big(\Big\lceil\frac{-\ln y^0_*}{\ln(1-\chi/2)}\Big\rceil, 1\Big).

The recursion's sympy forms are in :mod:`econ.privacy.symbolic`; Lemmas B.2-B.4 and Theorem 4.3
are checked in :mod:`econ.privacy.sgd_propositions`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.validation import in_interval, positive, positive_int


def rounds(y0: float, chi: float, *, integer: bool = False) -> float:
    r"""The number of rounds :math:`T = \max(-\ln y^0/\ln(1-\chi/2), 1)` of Theorem 4.3.

    With ``integer``, its ceiling (section 4.2 ignores that T is an integer).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.2, Theorem 4.3.

    Examples
    --------
    >>> round(rounds(100.0, 0.5), 4), rounds(100.0, 0.5, integer=True)
    (16.0078, 17.0)
    """
    y = float(positive("y0", y0))
    c = float(in_interval("chi", chi, 0.0, 1.0, low_open=True))
    with np.errstate(over="ignore", divide="ignore"):
        t = -np.log(y) / np.log1p(-c / 2)  # log1p: ln(1 - chi/2) stays exact for a tiny chi
    if not np.isfinite(t):
        raise ValueError(
            f"the number of rounds T = -ln(y0)/ln(1 - chi/2) overflows floats at y0={y:g}, "
            f"chi={c:g}"
        )
    return float(max(np.ceil(t) if integer else t, 1.0))


def bound_recursion(y0: float, chi: float, steps: int) -> NDArray[np.float64]:
    """The exact optimal-step sequence y^0, ..., y^steps of Lemma B.4.

    References
    ----------
    Tsoy et al. (AISTATS 2024), Appendix B.4, Lemma B.4.

    Examples
    --------
    >>> bound_recursion(100.0, 0.5, 3).round(4)
    array([100.    ,  50.495 ,  25.7378,  13.3502])
    """
    y = np.empty(positive_int("steps", steps) + 1)
    y[0] = float(positive("y0", y0))
    c = float(in_interval("chi", chi, 0.0, 1.0, low_open=True))
    for t in range(steps):
        y[t + 1] = (1 - c * y[t] / (y[t] + 1)) * y[t]
    return y


def step_sizes(y0: float, L: float, mu: float, steps: int) -> NDArray[np.float64]:
    r"""Optimal steps :math:`\eta^{t+1} = y^t/(L(y^t+1))`; they do not depend on α (Lemma B.4).

    References
    ----------
    Tsoy et al. (AISTATS 2024), Appendix B.4, Lemma B.4; Algorithm 1.

    Examples
    --------
    >>> step_sizes(100.0, 1.0, 0.5, 3).round(4)
    array([0.9901, 0.9806, 0.9626])
    """
    y = bound_recursion(y0, float(positive("mu", mu)) / float(positive("L", L)), steps)[:-1]
    return y / (L * (y + 1))


def error_bound(m: float, y0: float, chi: float) -> float:
    r""":math:`L\mu\Gamma\,\Delta w^{m,\mathrm{ub}}` of Theorem 4.3 (divide by :math:`L\mu\Gamma`).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.2, Theorem 4.3.

    Examples
    --------
    >>> error_bound(20, 100.0, 0.5), round(error_bound(5, 100.0, 0.5), 4)
    (0.5, 23.7305)
    """
    t_rounds = rounds(y0, chi, integer=True)
    if m >= t_rounds:
        return float(1 / (1 + chi / (2 - chi) * (m - t_rounds)))
    return float((1 - chi / 2) ** m * y0)


def squared_errors(
    curvature: ArrayLike,
    alpha: ArrayLike,
    *,
    n: int,
    rounds: int,
    sigma: float,
    diam: float,
    reps: int,
    seed: int | np.random.Generator | None = None,
) -> tuple[NDArray[np.float64], float, float]:
    r"""Per-run :math:`\|w^m - w^*\|^2` of Algorithm 1, with Γ and :math:`y^0_*` of the run.

    The setting of :func:`simulate_algorithm1`, which averages these runs; each client's
    batch holds :math:`b = \lfloor n/m \rfloor` points, so :math:`\rho = b/\sigma^2`.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.2 (batch size), Algorithm 1; Lemma B.4 (steps).
    """
    rng = np.random.default_rng(seed)
    h = positive("curvature", curvature)
    a = np.atleast_1d(positive("alpha", alpha))
    m, dim, n_ = positive_int("rounds", rounds), h.size, positive_int("n", n)
    mu, L = float(h.min()), float(h.max())
    if m > n_:
        raise ValueError(
            f"rounds must not exceed n (batches of floor(n/m) >= 1), got m={m}, n={n_}"
        )
    rho = (n_ // m) / float(positive("sigma", sigma)) ** 2
    gamma = float(np.sum(1 / (1 / rho + dim * a**2)))
    radius = float(positive("diam", diam)) / 2
    y0 = L * mu * n_ * a.size * (2 * radius) ** 2 / sigma**2
    eta = step_sizes(y0, L, mu, m)
    reps_ = positive_int("reps", reps)
    direction = rng.standard_normal((reps_, dim))
    w = (
        direction
        / np.linalg.norm(direction, axis=1, keepdims=True)
        * radius
        * rng.uniform(size=(reps_, 1)) ** (1 / dim)
    )
    for t in range(m):
        w = w - eta[t] * (h * w + rng.standard_normal((reps_, dim)) / np.sqrt(dim * gamma))
        norm = np.linalg.norm(w, axis=1, keepdims=True)
        w = np.where(norm > radius, w * radius / np.maximum(norm, 1e-300), w)
    return np.sum(w**2, axis=1), gamma, y0


def simulate_algorithm1(
    curvature: ArrayLike,
    alpha: ArrayLike,
    *,
    n: int,
    rounds: int,
    sigma: float,
    diam: float,
    reps: int,
    seed: int | np.random.Generator | None = None,
) -> tuple[float, float]:
    r"""Monte Carlo :math:`\mathbf E\|w^m - w^*\|^2` of Algorithm 1 and its Theorem 4.3 bound.

    The objective is :math:`f(w) = \tfrac12\sum_j h_j w_j^2` (:math:`w^* = 0`, μ = min h, L = max h),
    W the ball of diameter D around 0, :math:`w^0` uniform in W, batches of size
    :math:`b = \lfloor n/m \rfloor` (§4.2), steps of
    Lemma B.4 and aggregation weights :math:`a_i = \beta_i/\Gamma`. Batch-mean gradient noise is
    Gaussian with :math:`\mathbf E\|\cdot\|^2 = \sigma^2/b` (the only moment the bound uses), so
    the aggregated message noise is :math:`N(0, I/(d\Gamma))`.
    Returns (Monte Carlo mean, :math:`\Delta w^{m,\mathrm{ub}}`).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.2, Algorithm 1 and Theorem 4.3; Lemma B.4 (steps).
    """
    errors, gamma, y0 = squared_errors(
        curvature, alpha, n=n, rounds=rounds, sigma=sigma, diam=diam, reps=reps, seed=seed
    )
    h = np.asarray(curvature, dtype=np.float64)
    mu, L = float(h.min()), float(h.max())
    return float(errors.mean()), error_bound(rounds, y0, mu / L) / (L * mu * gamma)
