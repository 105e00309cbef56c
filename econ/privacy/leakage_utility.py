r"""The alternative utility :math:`u_i = -\mathrm{leak}_i - \lambda_i\mathrm{err}_i^2` (Tsoy et al. 2024, App. C).

C.1, DP mean with the simplified aggregation (the server broadcasts the plain average and
client i swaps its own noisy message for its clean mean):

.. math::

    \mathrm{err}_i^2 = \frac{\sigma^2}{Nn} + \frac{1}{N^2}\sum_{j\ne i}\alpha_j^2, \qquad
    \mathrm{leak}_i = \frac{\sqrt{2\ln(1.25n^2)}\,B}{n\alpha_i}, \qquad
    u_i - u_i^0 = \lambda_i\Big(\frac{\sigma^2}{n} - \mathrm{err}_i^2\Big) - \mathrm{leak}_i .

Symmetric (derived here; the appendix stops at the per-client condition): with :math:`a = \sigma^2/n`, :math:`s = \alpha^2`, the participation
condition :math:`\lambda\frac{N-1}{N}(a - s/N)\sqrt s \ge \kappa` is best at :math:`s^* = aN/3`,
so a symmetric solution exists iff :math:`\lambda\frac{N-1}{N}\frac{2a}{3}\sqrt{aN/3} \ge \kappa`.

C.3, DP SGD with b = 1 and equal weights (Lemma C.1; m = t = n rounds, so the printed
:math:`C/(Nt)` is :math:`C/(Nn)`):

.. math::

    u_i - u_i^0 = -\mathrm{leak}_i + \lambda_i\Big(\frac{8LM + 3\mu^2C}{3\mu^2 n}
      - \frac{8L(M/N + d\sum_j\alpha_j^2/N^2)}{3\mu^2 n} - \frac{C}{Nn}\Big),\quad
    \mathrm{leak}_i = \frac{16\sqrt{2e\ln(1.25n^3)\ln(4n^2)}\,B}{\sqrt n\,\alpha_i}.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.privacy import symbolic as S
from econ.privacy.client_model import client_weights
from econ.privacy.mechanisms import kappa_mean, kappa_sgd
from econ.validation import in_interval, positive, positive_int

Array = NDArray[np.float64]


def _check(lam: ArrayLike, alpha: ArrayLike) -> tuple[Array, Array]:
    lam_ = client_weights(lam)
    a = np.atleast_1d(positive("alpha", alpha))
    if a.shape != lam_.shape:
        raise ValueError(f"alpha has shape {a.shape} but lam has {lam_.shape}")
    return lam_, a


def mean_gain(lam: ArrayLike, alpha: ArrayLike, n: float, sigma: float, bound: float) -> Array:
    """Appendix C.1: u_i - u_i^0 of DP mean estimation under the alternative utility.

    References
    ----------
    Tsoy et al. (AISTATS 2024), Appendix C.1 (mean estimation with DP, leak_i not squared).

    Examples
    --------
    >>> mean_gain([1.0, 2.0], [1.0, 1.0], 100, 10, 20).round(4)
    array([-0.6187, -0.3687])
    """
    lam_, a = _check(lam, alpha)
    n_clients, n_ = lam_.size, float(in_interval("n", n, 1.0))
    local = float(positive("sigma", sigma)) ** 2 / n_
    others = (np.sum(a**2) - a**2) / n_clients**2
    err2 = local / n_clients + others
    return lam_ * (local - err2) - kappa_mean(n_, bound) / a


def mean_symmetric_threshold(
    n_clients: int, n: float, sigma: float, bound: float
) -> tuple[float, float]:
    r"""Appendix C.1 symmetric: the smallest λ with a mutually beneficial symmetric protocol, and :math:`\alpha^{*2} = aN/3`.

    References
    ----------
    Tsoy et al. (AISTATS 2024), Appendix C.1; the symmetric threshold is derived here,
    registered as `tsoy.appC.1`.

    Examples
    --------
    >>> tuple(round(v, 4) for v in mean_symmetric_threshold(5, 100, 10, 20))
    (1.2617, 1.6667)
    """
    big_n = positive_int("n_clients", n_clients)
    a = float(positive("sigma", sigma)) ** 2 / float(in_interval("n", n, 1.0))
    benefit = float(
        S.APPC_SYM_BENEFIT.subs({S.lam: 1, S.n_clients: big_n, S.a_var: a, S.s_var: a * big_n / 3})
    )
    if benefit <= 0:
        return float("inf"), a * big_n / 3
    return float(kappa_mean(n, bound)) / benefit, a * big_n / 3


def sgd_gain(
    lam: ArrayLike,
    alpha: ArrayLike,
    *,
    n: float,
    bound: float,
    L: float,
    mu: float,
    dim: int,
    M: float,
    C: float,
) -> Array:
    """Appendix C.3: u_i - u_i^0 of DP SGD (batch size 1, m = n rounds) under the alternative utility.

    References
    ----------
    Tsoy et al. (AISTATS 2024), Appendix C.3 (utility analysis, SGD with DP; Appendix C.2 for
    err and leak).
    """
    lam_, a = _check(lam, alpha)
    n_clients, n_ = lam_.size, float(in_interval("n", n, 1.0))
    L_, mu_, M_, C_ = (float(positive(k, v)) for k, v in (("L", L), ("mu", mu), ("M", M), ("C", C)))
    scale = 3 * mu_**2 * n_
    benefit = (
        (8 * L_ * M_ + 3 * mu_**2 * C_) / scale
        - 8 * L_ * (M_ / n_clients + positive_int("dim", dim) * np.sum(a**2) / n_clients**2) / scale
        - C_ / (n_clients * n_)
    )
    return lam_ * benefit - kappa_sgd(n_, n_, bound) / a
