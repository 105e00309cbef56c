r"""Symmetric optima :math:`\beta_i = \beta` of the total utility (Tsoy et al. 2024, section 5).

* Theorem 5.1 (DP mean; :math:`(\alpha^*)^2` as derived in Appendix B.3): if :math:`(N-1)\lambda > \kappa^2\rho^2`,

  .. math::

      \beta^* = \frac{(\sqrt{(N-1)\lambda}-\kappa\rho)\rho}{\sqrt{(N-1)\lambda}+(N-1)\kappa\rho},\quad
      (\alpha^*)^2 = \frac{N\kappa}{\sqrt{(N-1)\lambda}-\kappa\rho},\quad
      u^* - u^0 = \frac{(\sqrt{(N-1)\lambda}-\kappa\rho)^2}{N\rho}.

* Theorem 5.2 (DP SGD; :math:`(\alpha^*)^2` as derived in Appendix B.8): if :math:`(N-1)^2\psi \ge 4N`,
  :math:`\beta^* = \sqrt\psi\rho/(\sqrt\psi+\sqrt N)` and
  :math:`(\alpha^*)^2 = \sqrt{L\mu N}\,\kappa/\sqrt{\lambda d}`.
* Theorem 5.3 / Lemma B.5 (Bayes): the gain :math:`h_\lambda` is not concave; the optimum is
  the best of 0, ρ and the roots of :math:`h'_\lambda` (a quartic after clearing denominators).
* Theorem 5.4: for :math:`\lambda > (\rho+\tau)/\tau` and :math:`N\to\infty`,
  :math:`\beta^* \approx \rho\sqrt{(\lambda-1)/N}` and the gain tends to :math:`\lambda/(\rho+\tau) - 1/\tau`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ.privacy import symbolic as S
from econ.privacy.models import DPSGD, DPMean
from econ.validation import non_negative, positive, positive_int


@dataclass(frozen=True, slots=True)
class SymmetricOptimum:
    """The best symmetric protocol: its β, noise variance α², gain u - u^0 and Lemma B.5 case.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §5, Theorems 5.1-5.4 and Appendix B.12, Lemma B.5.
    """

    beta: float
    alpha2: float
    gain: float
    profitable: bool
    case: int | None = None


_ARGS = (S.n_clients, S.lam, S.rho, S.kappa)


_dp_beta = sp.lambdify(_ARGS, S.DP_MEAN_SYM_BETA)


_dp_alpha2 = sp.lambdify(_ARGS, S.DP_MEAN_SYM_ALPHA2)


_dp_gain = sp.lambdify(_ARGS, S.DP_MEAN_SYM_BEST_GAIN)


def _scalar_setting(model: DPMean | DPSGD, lam: float, n_clients: int) -> tuple[float, float]:
    positive_int("n_clients", n_clients)
    non_negative("lam", lam)
    rho, kappa = model.rho(n_clients), model.kappa(n_clients)
    if np.ptp(rho) > 0 or np.ptp(kappa) > 0:
        raise ValueError("symmetric optima assume identical clients (equal n and sigma)")
    return float(rho[0]), float(kappa[0])


def dp_mean_symmetric_optimum(model: DPMean, lam: float, n_clients: int) -> SymmetricOptimum:
    """Theorem 5.1 (corrected): the symmetric total-utility optimum of DP mean estimation.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §5, Theorem 5.1 and Appendix B.3; corrected form derived here,
    registered as `tsoy.thm5.1.corrected` (docs/errata.md).

    Examples
    --------
    >>> from econ.privacy.models import DPMean
    >>> opt = dp_mean_symmetric_optimum(DPMean(), 1.0, 5)
    >>> round(opt.beta, 4), round(opt.alpha2, 4), round(opt.gain, 4)
    (0.2066, 3.8396, 0.256)
    """
    rho, kappa = _scalar_setting(model, lam, n_clients)
    if (n_clients - 1) * lam <= kappa**2 * rho**2:
        return SymmetricOptimum(0.0, np.inf, 0.0, False)
    args = (n_clients, lam, rho, kappa)
    return SymmetricOptimum(
        float(_dp_beta(*args)), float(_dp_alpha2(*args)), float(_dp_gain(*args)), True
    )


_sgd_beta = sp.lambdify((S.psi, S.rho, S.n_clients), S.DP_SGD_SYM_BETA)


_sgd_gain = sp.lambdify((S.psi, S.rho, S.n_clients, S.kappa, S.dim), S.DP_SGD_SYM_BEST_GAIN)


def dp_sgd_symmetric_optimum(model: DPSGD, lam: float) -> SymmetricOptimum:
    """Theorem 5.2 (corrected): the symmetric optimum of DP SGD; unprofitable iff (N-1)^2 psi < 4N.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §5, Theorem 5.2 and Appendix B.8; corrected form derived here,
    registered as `tsoy.thm5.2.corrected` (docs/errata.md).

    Examples
    --------
    >>> from econ.privacy.models import DPSGD
    >>> dp_sgd_symmetric_optimum(DPSGD(), 1e3).profitable
    False
    >>> opt = dp_sgd_symmetric_optimum(DPSGD(), 1e6)
    >>> round(opt.beta, 2), round(opt.alpha2, 6), round(opt.gain, 1)
    (94.73, 0.00068, 4051.6)
    """
    n = model.n_clients
    rho, kappa = _scalar_setting(model, lam, n)
    psi = float(model.psi(np.full(n, lam))[0])
    if (n - 1) ** 2 * psi < 4 * n:
        return SymmetricOptimum(0.0, np.inf, -np.inf, False)
    beta = float(_sgd_beta(psi, rho, n))
    alpha2 = float(model.alpha(np.full(n, beta), n)[0] ** 2)
    return SymmetricOptimum(beta, alpha2, float(_sgd_gain(psi, rho, n, kappa, model.dim)), True)


_BARGS = (S.beta, S.n_clients, S.lam, S.rho, S.tau)


_H1 = sp.diff(S.BAYES_SYM_GAIN_PRINTED, S.beta)


_H2 = sp.diff(_H1, S.beta)


#: The symmetric Bayesian gain :math:`h_\lambda` of Theorem 5.3 (Appendix B.12) and its first
#: and second derivatives in β, lambdified with arguments (β, N, λ, ρ, τ).
h_lambda = sp.lambdify(_BARGS, S.BAYES_SYM_GAIN_PRINTED)
dh_lambda = sp.lambdify(_BARGS, _H1)
d2h_lambda = sp.lambdify(_BARGS, _H2)


_QUARTIC = sp.Poly(sp.numer(sp.together(_H1)), S.beta)


_quartic = sp.lambdify(_BARGS[1:], _QUARTIC.all_coeffs())


def bayes_symmetric_gain(
    beta: ArrayLike, rho: float, tau: float, lam: float, n_clients: int
) -> NDArray[np.float64]:
    r"""The symmetric Bayesian gain :math:`h_\lambda(\beta)` of Theorem 5.3, vectorised in β.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §5, Theorem 5.3 and Appendix B.12.

    Examples
    --------
    >>> bayes_symmetric_gain([0.0, 0.5, 1.0], 1.0, 1.0, 10.0, 5).round(4)
    array([0.    , 1.0714, 1.3333])
    """
    b = non_negative("beta", beta)
    return np.asarray(
        h_lambda(
            b,
            positive_int("n_clients", n_clients),
            float(non_negative("lam", lam)),
            float(positive("rho", rho)),
            float(positive("tau", tau)),
        )
    )


def bayes_symmetric_optimum(rho: float, tau: float, lam: float, n_clients: int) -> SymmetricOptimum:
    r"""Theorem 5.3 via Lemma B.5: maximise :math:`h_\lambda` over :math:`[0, \rho]`.

    Candidates are 0, ρ and the real roots of :math:`h'` in (0, ρ) (roots of a quartic);
    the case number follows Lemma B.5 (1: β* = ρ by slopes, 2: compare 0 and ρ, 3: a single
    interior root, 4: compare 0 with the root where h'' <= 0, 5: no root, β* = 0). Where
    several candidates tie for the maximum (to :math:`10^{-12}` relative), β* is the smallest,
    so at the λ where :math:`h_\lambda(\rho) = h_\lambda(0) = 0` it is 0.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §5, Theorem 5.3; Appendix B.12, Lemma B.5.
    """
    r, t = float(positive("rho", rho)), float(positive("tau", tau))
    lam_, n = float(non_negative("lam", lam)), positive_int("n_clients", n_clients)
    if n < 2:
        raise ValueError(f"n_clients must be >= 2 for a symmetric protocol, got {n}")
    args = (n, lam_, r, t)
    roots = np.roots(np.asarray(_quartic(*args), dtype=np.float64))
    interior = sorted(
        float(z.real) for z in roots if abs(z.imag) < 1e-9 * max(1.0, abs(z)) and 0 < z.real < r
    )
    candidates = [0.0, r, *[b for b in interior if d2h_lambda(b, *args) <= 0]]
    values = [float(h_lambda(b, *args)) for b in candidates]
    tol = 1e-12 * max(1.0, *(abs(v) for v in values))
    top = max(values)
    best = min(
        (i for i, v in enumerate(values) if v >= top - tol), key=lambda i: candidates[i]
    )  # the smallest of the tied maximisers
    d0, d_rho = dh_lambda(0.0, *args), dh_lambda(r, *args)
    case = 1 if d0 > 0 and d_rho > 0 else 2 if d_rho > 0 else 3 if d0 > 0 else 4 if interior else 5
    beta = candidates[best] if values[best] > tol else 0.0
    alpha2 = np.inf if beta == 0 else 1 / beta - 1 / r
    return SymmetricOptimum(beta, float(alpha2), max(values[best], 0.0), values[best] > tol, case)


def bayes_asymptotic_optimum(
    rho: float, tau: float, lam: float, n_clients: int
) -> tuple[float, float]:
    r"""Theorem 5.4's leading terms of the symmetric Bayesian optimum β* and its gain.

    :math:`(\rho\sqrt{(\lambda-1)/N},\ \lambda/(\rho+\tau) - 1/\tau)` above the threshold, else (0,
    0).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §5, Theorem 5.4 and Appendix B.13.

    Examples
    --------
    >>> tuple(round(float(v), 4) for v in bayes_asymptotic_optimum(1.0, 1.0, 10.0, 100))
    (0.3, 4.0)
    """
    r, t, lam_ = (
        float(positive("rho", rho)),
        float(positive("tau", tau)),
        float(non_negative("lam", lam)),
    )
    if lam_ <= (r + t) / t:
        return 0.0, 0.0
    return r * np.sqrt((lam_ - 1) / positive_int("n_clients", n_clients)), lam_ / (r + t) - 1 / t
