r"""Conversions between noise level α, informativeness β and privacy ε (Tsoy et al. 2024).

.. math::

    \beta = \frac{1}{1/\rho + d\,\alpha^2}, \qquad
    \alpha^2 = \frac{1}{d}\Big(\frac{1}{\beta} - \frac{1}{\rho}\Big), \qquad
    \varepsilon = \frac{\kappa}{\alpha}

(Theorems 4.1 and 4.3 define β; section 4.1 sets ``leak = kappa / alpha``). For a target δ the
Gaussian mechanism is also calibrated exactly by the analytic Gaussian mechanism of Balle &
Wang (2018, Theorem 8): noise of standard deviation σ on a query of L2 sensitivity Δ is
(ε, δ)-DP iff

.. math::

    \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
    - e^{\varepsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
    \le \delta .
"""

from __future__ import annotations

from typing import overload

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from econ.privacy import symbolic as S
from econ.validation import in_interval, non_negative, positive

_beta_of_alpha2 = sp.lambdify((S.alpha2, S.rho, S.dim), S.BETA_OF_ALPHA2, "numpy")
_alpha2_of_beta = sp.lambdify((S.beta, S.rho, S.dim), S.ALPHA2_OF_BETA, "numpy")


def _shaped(out: NDArray[np.float64], *inputs: ArrayLike) -> NDArray[np.float64] | float:
    """A Python float when every input is a scalar, else the array."""
    return float(out) if all(np.ndim(x) == 0 for x in inputs) else out


@overload
def beta_of_alpha(alpha: float, rho: float, dim: int = 1) -> float: ...
@overload
def beta_of_alpha(alpha: ArrayLike, rho: ArrayLike, dim: int = 1) -> NDArray[np.float64]: ...
def beta_of_alpha(alpha: ArrayLike, rho: ArrayLike, dim: int = 1) -> NDArray[np.float64] | float:
    r"""Informativeness :math:`\beta = 1/(1/\rho + d\alpha^2)`; ``alpha = inf`` gives 0.

    A float for scalar inputs, else an array.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.1, Theorems 4.1 and 4.3 (definition of β_i).

    Examples
    --------
    >>> round(beta_of_alpha(0.5, 1.0, dim=2), 4)
    0.6667
    >>> beta_of_alpha(float('inf'), 1.0)
    0.0
    """
    a = in_interval("alpha", np.where(np.isinf(alpha), 0.0, alpha), 0.0)
    r = positive("rho", rho)
    # rho/(1 + d alpha^2 rho): exact at alpha = 0 and finite for subnormal rho; where
    # d alpha^2 rho overflows, 1/rho does not, and the printed form is used
    with np.errstate(over="ignore", divide="ignore"):
        spread = np.asarray(dim * a**2 * r, dtype=np.float64)
        printed = np.asarray(_beta_of_alpha2(a**2, r, dim), dtype=np.float64)
        out = np.where(np.isfinite(spread), r / (1 + spread), printed)
    return _shaped(np.where(np.isinf(alpha), 0.0, out), alpha, rho)


@overload
def alpha_of_beta(beta: float, rho: float, dim: int = 1) -> float: ...
@overload
def alpha_of_beta(beta: ArrayLike, rho: ArrayLike, dim: int = 1) -> NDArray[np.float64]: ...
def alpha_of_beta(beta: ArrayLike, rho: ArrayLike, dim: int = 1) -> NDArray[np.float64] | float:
    r"""Noise level :math:`\alpha = \sqrt{(1/\beta - 1/\rho)/d}`; ``beta = 0`` gives ``inf``.

    A float for scalar inputs, else an array.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.1, Theorems 4.1 and 4.3 (definition of β_i, inverted).

    Examples
    --------
    >>> round(alpha_of_beta(2 / 3, 1.0, dim=2), 4)
    0.5
    >>> alpha_of_beta(0.0, 1.0)
    inf
    """
    r = positive("rho", rho)
    b = non_negative("beta", beta)
    if (b > r * (1 + 1e-12)).any():
        raise ValueError(f"beta must lie in [0, rho], got beta={b} with rho={r}")
    # alpha = sqrt((1 - beta/rho)/d) / sqrt(beta): finite wherever the result is, also where
    # 1/beta or 1/rho overflow (subnormal beta, rho)
    with np.errstate(divide="ignore"):
        alpha = np.sqrt(np.maximum(1 - b / r, 0.0) / dim) / np.sqrt(b)
    return _shaped(np.where(b > 0, alpha, np.inf), beta, rho)


@overload
def epsilon_of_alpha(alpha: float, kappa: float) -> float: ...
@overload
def epsilon_of_alpha(alpha: ArrayLike, kappa: ArrayLike) -> NDArray[np.float64]: ...
def epsilon_of_alpha(alpha: ArrayLike, kappa: ArrayLike) -> NDArray[np.float64] | float:
    r"""The paper's DP bound :math:`\varepsilon = \kappa/\alpha` (``alpha = inf`` gives 0).

    A float for scalar inputs, else an array.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.1 (leak_i = κ/α_i) and Theorem 4.4.

    Examples
    --------
    >>> epsilon_of_alpha(2.0, 0.5)
    0.25
    """
    a = in_interval("alpha", np.where(np.isinf(alpha), 1.0, alpha), 0.0, low_open=True)
    out = positive("kappa", kappa) / a
    return _shaped(np.where(np.isinf(alpha), 0.0, out), alpha, kappa)


@overload
def alpha_of_epsilon(epsilon: float, kappa: float) -> float: ...
@overload
def alpha_of_epsilon(epsilon: ArrayLike, kappa: ArrayLike) -> NDArray[np.float64]: ...
def alpha_of_epsilon(epsilon: ArrayLike, kappa: ArrayLike) -> NDArray[np.float64] | float:
    r"""Inverse of :func:`epsilon_of_alpha`: :math:`\alpha = \kappa/\varepsilon` (a float for scalars).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.1 (leak_i = κ/α_i, inverted).

    Examples
    --------
    >>> alpha_of_epsilon(0.25, 0.5)
    2.0
    """
    return _shaped(
        np.asarray(positive("kappa", kappa) / positive("epsilon", epsilon)), epsilon, kappa
    )


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    r"""Dwork & Roth's calibration (Tsoy et al., Theorem A.1).

    .. math:: \sigma = \sqrt{2\ln(1.25/\delta)}\,\Delta/\varepsilon

    It is (ε, δ)-DP for ε in (0, 1); section 4.1 of the paper uses the bound for every ε.

    References
    ----------
    Tsoy et al. (AISTATS 2024), Appendix A, Theorem A.1 (Dwork & Roth 2014, Theorem A.1); §4.1.

    Examples
    --------
    >>> round(classical_gaussian_sigma(0.5, 1e-5, 1.0), 4)
    9.6896
    """
    eps = float(positive("epsilon", epsilon))
    d = float(in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True))
    return float(np.sqrt(2 * np.log(1.25 / d)) * positive("sensitivity", sensitivity) / eps)


def analytic_gaussian_delta(epsilon: float, sigma: float, sensitivity: float) -> float:
    """The smallest δ for which Gaussian noise ``sigma`` is (ε, δ)-DP (Balle & Wang 2018).

    References
    ----------
    Balle & Wang, Improving the Gaussian Mechanism for Differential Privacy: Analytical
    Calibration and Optimal Denoising, ICML 2018, Theorem 8 and Algorithm 1 (analytic Gaussian
    mechanism); Tsoy et al. (AISTATS 2024), §4.1, Theorem A.1 (the calibration it refines).

    Examples
    --------
    >>> round(analytic_gaussian_delta(1.0, 1.0, 1.0), 4)
    0.1269
    """
    eps = float(non_negative("epsilon", epsilon))
    s = float(positive("sigma", sigma))
    sens = float(positive("sensitivity", sensitivity))
    a, b = sens / (2 * s), eps * s / sens
    return float(max(ndtr(a - b) - np.exp(eps + log_ndtr(-a - b)), 0.0))


def analytic_gaussian_epsilon(sigma: float, delta: float, sensitivity: float) -> float:
    """The smallest ε for which Gaussian noise ``sigma`` is (ε, δ)-DP (Balle & Wang 2018).

    References
    ----------
    Balle & Wang, Improving the Gaussian Mechanism for Differential Privacy: Analytical
    Calibration and Optimal Denoising, ICML 2018, Theorem 8 and Algorithm 1 (analytic Gaussian
    mechanism); Tsoy et al. (AISTATS 2024), §4.1, Theorem A.1 (the calibration it refines).
    """
    d = float(in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True))
    if analytic_gaussian_delta(0.0, sigma, sensitivity) <= d:
        return 0.0
    hi = 1.0
    while analytic_gaussian_delta(hi, sigma, sensitivity) > d:
        hi *= 2.0
    return float(
        brentq(lambda e: analytic_gaussian_delta(e, sigma, sensitivity) - d, 0.0, hi, xtol=1e-14)
    )


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest noise standard deviation that is (ε, δ)-DP (Balle & Wang 2018).

    References
    ----------
    Balle & Wang, Improving the Gaussian Mechanism for Differential Privacy: Analytical
    Calibration and Optimal Denoising, ICML 2018, Theorem 8 and Algorithm 1 (analytic Gaussian
    mechanism); Tsoy et al. (AISTATS 2024), §4.1, Theorem A.1 (the calibration it refines).
    """
    eps = float(positive("epsilon", epsilon))
    d = float(in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True))
    hi = classical_gaussian_sigma(min(eps, 0.5), d, sensitivity) * 2
    lo = 1e-12 * hi
    while analytic_gaussian_delta(eps, lo, sensitivity) < d and lo > 1e-300:
        lo *= 1e-12  # delta close to 1: the noise needed is tiny
    gap = analytic_gaussian_delta(eps, lo, sensitivity) - d
    if not gap >= 0:
        raise ValueError(
            f"delta={d!r} is met by every sigma above 1e-300 at epsilon={eps!r}: "
            "choose a smaller delta"
        )
    return float(
        brentq(
            lambda s: analytic_gaussian_delta(eps, s, sensitivity) - d,
            lo,
            hi,
            xtol=1e-300,
            maxiter=2000,
        )
    )
