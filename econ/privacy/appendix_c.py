r"""The alternative utility :math:`u_i = -\mathrm{leak}_i - \lambda_i\mathrm{err}_i^2` (Tsoy et al. 2024, App. C).

C.1, DP mean with the simplified aggregation (the server broadcasts the plain average and
client i swaps its own noisy message for its clean mean):

.. math::

    \mathrm{err}_i^2 = \frac{\sigma^2}{Nn} + \frac{1}{N^2}\sum_{j\ne i}\alpha_j^2, \qquad
    \mathrm{leak}_i = \frac{\sqrt{2\ln(1.25n^2)}\,B}{n\alpha_i}, \qquad
    u_i - u_i^0 = \lambda_i\Big(\frac{\sigma^2}{n} - \mathrm{err}_i^2\Big) - \mathrm{leak}_i .

Symmetric (spec 3.4, [X]): with :math:`a = \sigma^2/n`, :math:`s = \alpha^2`, the participation
condition :math:`\lambda\frac{N-1}{N}(a - s/N)\sqrt s \ge \kappa` is best at :math:`s^* = aN/3`,
so a symmetric solution exists iff :math:`\lambda\frac{N-1}{N}\frac{2a}{3}\sqrt{aN/3} \ge \kappa`.

C.3, DP SGD with b = 1 and equal weights (Lemma C.1; :math:`C/(Nn)` for the printed :math:`C/(Nt)`, spec T20):

.. math::

    u_i - u_i^0 = -\mathrm{leak}_i + \lambda_i\Big(\frac{8LM + 3\mu^2C}{3\mu^2 n}
      - \frac{8L(M/N + d\sum_j\alpha_j^2/N^2)}{3\mu^2 n} - \frac{C}{Nn}\Big),\quad
    \mathrm{leak}_i = \frac{16\sqrt{2e\ln(1.25n^3)\ln(4n^2)}\,B}{\sqrt n\,\alpha_i}.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ.privacy import symbolic as S
from econ.privacy.mechanisms import kappa_mean, kappa_sgd
from econ.privacy.models import client_weights
from econ.propositions import Verdict, checked, is_zero, proposition, proved, refuted
from econ.validation import in_interval, positive, positive_int

Array = NDArray[np.float64]


def _check(lam: ArrayLike, alpha: ArrayLike) -> tuple[Array, Array]:
    lam_ = client_weights(lam)
    a = np.atleast_1d(positive("alpha", alpha))
    if a.shape != lam_.shape:
        raise ValueError(f"alpha has shape {a.shape} but lam has {lam_.shape}")
    return lam_, a


def mean_gain(lam: ArrayLike, alpha: ArrayLike, n: float, sigma: float, bound: float) -> Array:
    """Appendix C.1: u_i - u_i^0 of DP mean estimation under the alternative utility."""
    lam_, a = _check(lam, alpha)
    n_clients, n_ = lam_.size, float(in_interval("n", n, 1.0))
    local = float(positive("sigma", sigma)) ** 2 / n_
    others = (np.sum(a**2) - a**2) / n_clients**2
    err2 = local / n_clients + others
    return lam_ * (local - err2) - kappa_mean(n_, bound) / a


def mean_symmetric_threshold(
    n_clients: int, n: float, sigma: float, bound: float
) -> tuple[float, float]:
    r"""Appendix C.1 symmetric: the smallest λ with a mutually beneficial symmetric protocol, and :math:`\alpha^{*2} = aN/3`."""
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
    """Appendix C.3: u_i - u_i^0 of DP SGD (batch size 1, m = n rounds) under the alternative utility."""
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


@proposition(
    "tsoy.appC.1",
    source="Tsoy et al. (2024), Appendix C.1; spec section 3.4 and 7.7",
    statement="symmetric: lambda (N-1)/N (a - s/N) sqrt(s) is maximised at s* = aN/3, so a solution exists iff lambda (N-1)/N (2a/3) sqrt(aN/3) >= kappa",
)
def _appc1() -> Verdict:
    foc = is_zero(
        sp.diff(S.APPC_SYM_BENEFIT, S.s_var).subs(S.s_var, S.APPC_SYM_S), "d benefit/ds at aN/3"
    )
    value = is_zero(
        S.APPC_SYM_BENEFIT.subs(S.s_var, S.APPC_SYM_S)
        - S.lam
        * (S.n_clients - 1)
        / S.n_clients
        * 2
        * S.a_var
        / 3
        * sp.sqrt(S.a_var * S.n_clients / 3),
        "benefit at s* - closed form",
    )
    m = sp.Symbol("m", positive=True)  # N = 1 + m, at least two clients
    second = sp.simplify(
        sp.diff(S.APPC_SYM_BENEFIT, S.s_var, 2).subs(S.s_var, S.APPC_SYM_S).subs(S.n_clients, 1 + m)
    )
    if not (foc.holds and value.holds):
        return foc if not foc.holds else value
    if not second.is_negative:
        return refuted("not a maximum", {"second derivative": str(second)})
    return proved(f"{foc.evidence}; {value.evidence}; second derivative {second} < 0")


@proposition(
    "tsoy.appC.1.limits",
    source="Tsoy et al. (2024), Appendix C.1",
    statement="with lambda in a compact set solutions exist as N -> infinity; none as n -> infinity (the LHS turns negative)",
)
def _appc1_limits() -> Verdict:
    lam = np.array([0.5, 1.0, 2.0])
    grows = [
        mean_gain(
            np.full(n_clients, 0.5), np.full(n_clients, np.sqrt(n_clients / 3)), 100, 10, 20
        ).min()
        for n_clients in (2, 10, 100, 1000)
    ]
    big_n = [
        mean_gain(lam, np.full(3, alpha), n, 10, 20).max()
        for n in (1e4, 1e6)
        for alpha in (0.01, 0.1, 1.0, 10.0)
    ]
    if grows[-1] > 0 and max(big_n) < 0:
        return checked(
            f"min gain at alpha^2 = N/3 for N = 2..1000: {np.round(grows, 4).tolist()}; max gain for n >= 1e4 < 0",
            len(grows) + len(big_n),
        )
    return refuted(
        "limit behaviour fails", {"gains in N": grows, "max gain for large n": max(big_n)}
    )


@proposition(
    "tsoy.lemmaC.2",
    source="Tsoy et al. (2024), Lemma C.2 (after Chung 1954)",
    statement="if b_{n+1} <= (1 - c/n) b_n + c1/n^2 for n >= n0 with integer c > 1, then b_n <= c1/((c-1) n) + O(n^-c)",
)
def _lemma_c2() -> Verdict:
    points = []
    for c, c1, b0 in ((2, 1.0, 5.0), (3, 0.5, 1.0), (4, 2.0, 10.0)):
        b, n0 = b0, c + 1
        for k in range(n0, 200_000):
            b = (1 - c / k) * b + c1 / k**2
        points.append((c, c1, b * 200_000, c1 / (c - 1)))
    if all(abs(nb - lim) < 1e-3 * lim for _, _, nb, lim in points):
        return checked(
            f"n b_n at n = 2e5 vs c1/(c-1): {[(round(nb, 6), round(lim, 6)) for *_, nb, lim in points]}",
            len(points),
        )
    return refuted("n b_n does not approach c1/(c-1)", {"points": points})
