r"""Existence of a mutually beneficial protocol (Tsoy et al. 2024, section 4).

* DP mean (Theorem 4.2): a non-trivial protocol exists iff :math:`\sum_i\zeta_i > 1`,
  :math:`\zeta_i = \lambda_i/(\lambda_i + \kappa_i^2\rho_i^2)`. The argument of Appendix B.2
  (sum the per-client inequalities; the family :math:`\beta_i = \zeta_i b`) uses each client's
  own :math:`\rho_i, \kappa_i` only through :math:`\zeta_i`, so the same test is used for
  clients with different sample sizes.
* DP SGD (Theorem 4.5): a protocol exists iff :math:`\max_{x\ge0} F(x) \ge 0`,

  .. math:: F(x) = \sum_i \frac{\psi_i x}{(\psi_i+1)x+1} - x - 1,

  a concave 1-D problem; for per-client :math:`\rho_i` the analogue in :math:`G=\Gamma/\bar\rho`
  is :math:`F(G) = \sum_i r_i s_i/(1+s_i) - G`, :math:`s_i = \psi_i(1 - r_i/G)`, :math:`r_i = \rho_i/\bar\rho`.
* Bayesian (Theorem 4.9): a *small* beneficial deviation exists iff all :math:`\xi_i \ge 0`
  and :math:`\sum_i\xi_i > 1` (a statement about small deviations only).
* Measured clients (:class:`~econ.privacy.empirical.Empirical`): Definition 3.2 tested directly,
  by a scan of the aggregate noise level (:func:`empirical_exists`).

The theorems are checked in :mod:`econ.privacy.existence_propositions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.privacy.client_model import client_weights
from econ.privacy.empirical import Empirical
from econ.privacy.models import DPSGD, Bayes, DPMean, Model

Array = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Existence:
    """The outcome of an existence test: ``exists`` iff ``statistic`` passes ``threshold``.

    ``why`` says why an infinite ``statistic`` has no value (measured clients, where at every
    noise level some client accepts no measured noise).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4 (Theorems 4.2, 4.5, 4.9: existence of a mutually beneficial
    protocol).
    """

    exists: bool
    statistic: float
    threshold: float
    why: str | None = None

    def to_dict(self) -> dict[str, float | bool | str | None]:
        """JSON-ready.

        An infinite statistic is ``None`` beside ``statistic_why``; a NaN one stays NaN (a
        failed computation, which the command line refuses to print).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §4 (Theorems 4.2, 4.5, 4.9).
        """
        out: dict[str, float | bool | str | None] = {
            "exists": bool(self.exists),
            "statistic": float(self.statistic),
            "threshold": float(self.threshold),
        }
        if math.isinf(self.statistic):
            out["statistic"] = None
            out["statistic_why"] = self.why or f"the statistic is {self.statistic}"
        return out


def dp_mean_exists(model: DPMean, lam: ArrayLike) -> Existence:
    r"""Theorem 4.2: :math:`\sum_i\zeta_i > 1`.

    References
    ----------
    N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
    Privacy-Sensitive Domains*, AISTATS 2024, Theorem 4.2.

    Examples
    --------
    >>> result = dp_mean_exists(DPMean(), [0.1, 0.2, 0.3, 0.4, 0.5])
    >>> result.exists, round(result.statistic, 4)
    (True, 1.3559)
    >>> dp_mean_exists(DPMean(), [0.001] * 5).exists  # clients that care little for accuracy
    False
    """
    z = float(model.zeta(lam).sum())
    return Existence(z > 1.0, z, 1.0)


def zeta_family_max_scale(model: DPMean, lam: ArrayLike) -> float:
    r"""Largest b with :math:`\beta_i = \zeta_i b` mutually beneficial (equal ρ; Appendix B.2).

    .. math:: b_{\max} = \frac{(Z-1)\rho}{Z - \zeta_{\min}}, \qquad Z = \sum_i\zeta_i,

    0 when Z <= 1. The paper's range :math:`[0, (1-1/Z)\rho]` is a sub-range.

    References
    ----------
    N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
    Privacy-Sensitive Domains*, AISTATS 2024, Theorem 4.2 and Appendix B.2.

    Examples
    --------
    >>> round(zeta_family_max_scale(DPMean(), [0.1, 0.2, 0.3, 0.4, 0.5]), 4)
    0.2873
    """
    zeta = model.zeta(lam)
    rho = model.rho(zeta.size)
    if np.ptp(rho) > 0:
        raise ValueError("the zeta family of Theorem 4.2 assumes equal rho for all clients")
    z = zeta.sum()
    return float(max(z - 1.0, 0.0) * rho[0] / (z - zeta.min()))


#: Bisection steps of :func:`sgd_f_max`: enough to close any bracket of floats to 1e-15.
_BISECTION_STEPS = 2200


def sgd_f_max(model: DPSGD, lam: ArrayLike) -> tuple[float, float]:
    r"""The maximum of :math:`F` (Theorem 4.5) and its maximiser :math:`G = \Gamma/\bar\rho`.

    F is concave with derivative :math:`F'(G) = \sum_i \psi_i r_i^2/(G^2(1+s_i)^2) - 1`, decreasing
    in G; the maximiser is the root of F' above :math:`\max_i r_i`, found by bisection in O(N) a step.

    References
    ----------
    Tsoy et al. (AISTATS 2024), Theorem 4.5.

    Examples
    --------
    >>> from econ.privacy import DPSGD
    >>> value, g = sgd_f_max(DPSGD(n_clients=3, n=[1e4, 2e4, 4e4]), [1e7, 1e7, 1e7])
    >>> round(value, 6) > 0  # a mutually beneficial DP-SGD protocol exists at these lambdas
    True
    """
    psi = model.psi(lam)
    rho = model.rho(psi.size)
    r = rho / rho.mean()
    lo = float(r.max())
    hi = max(lo, float(np.linalg.norm(np.sqrt(psi) * r))) + 1.0  # F' < 0 above sqrt(sum psi r^2)

    def slope(g: float) -> float:
        with np.errstate(over="ignore"):  # g (1 + s) beyond the floats: a zero term
            s = psi * (1 - r / g)
            # the square of sqrt(psi) r/(g(1 + s)), finite where (1 + s)^2 would not be
            return float(np.sum((np.sqrt(psi) * r / (g * (1 + s))) ** 2) - 1.0)

    if slope(lo) > 0:
        for _ in range(_BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:
                break
            lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
            if hi - lo <= 1e-15 * hi:
                break
    # F is concave and its maximiser lies in [lo, hi]; where the bracket closes at the float
    # resolution (psi beyond 1e30), the better end is the maximum
    g = max((lo, hi), key=lambda x: float(sgd_f(psi, r, x)))
    return float(sgd_f(psi, r, g)), g


def sgd_f(psi: Array, r: Array, g: float | Array) -> Array:
    r"""Theorem 4.5's function :math:`F(G)` for r = 1, G = x + 1.

    :math:`F(G) = \sum_i r_i s_i/(1+s_i) - G`, :math:`s_i = \psi_i(1 - r_i/G)`.

    References
    ----------
    Tsoy et al. (AISTATS 2024), Theorem 4.5.

    Examples
    --------
    >>> import numpy as np
    >>> float(sgd_f(np.array([1.0, 1.0]), np.array([1.0, 1.0]), 2.0))  # s = 1/2: 2/3 - 2
    -1.3333333333333335
    """
    g_ = np.asarray(g, dtype=np.float64)[..., None]
    s = psi * (1 - r / g_)
    return np.asarray(np.sum(r * s / (1 + s), axis=-1) - g_[..., 0])


def dp_sgd_exists(model: DPSGD, lam: ArrayLike) -> Existence:
    r"""Theorem 4.5: :math:`\max_x F(x) \ge 0`.

    References
    ----------
    Tsoy et al. (AISTATS 2024), Theorem 4.5.

    Examples
    --------
    >>> from econ.privacy import DPSGD
    >>> model = DPSGD(n_clients=3, n=[1e4, 2e4, 4e4])
    >>> dp_sgd_exists(model, [1e6] * 3).exists, dp_sgd_exists(model, [1e7] * 3).exists
    (False, True)
    """
    value, _ = sgd_f_max(model, lam)
    return Existence(value >= 0.0, value, 0.0)


def corollary_4_6(psi: ArrayLike) -> tuple[float, float]:
    r"""Corollary 4.6 sums: the sufficient and the necessary condition.

    Sufficient :math:`\sum\psi/(\psi+2) \ge 2`, necessary :math:`\sum\psi/\sqrt{\psi+1} \ge 4`.

    References
    ----------
    N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
    Privacy-Sensitive Domains*, AISTATS 2024, Corollary 4.6.

    Examples
    --------
    >>> corollary_4_6([3, 3, 3, 3, 3])  # 5 * 3/5 and 5 * 3/2
    (3.0, 7.5)
    """
    p = client_weights(psi, "psi")
    return float(np.sum(p / (p + 2))), float(np.sum(p / np.sqrt(p + 1)))


def bayes_small_deviation_exists(model: Bayes, lam: ArrayLike) -> Existence:
    r"""Theorem 4.9: all :math:`\xi_i \ge 0` and :math:`\sum_i\xi_i > 1` (strict, as printed).

    References
    ----------
    Tsoy et al. (AISTATS 2024), Theorem 4.9.

    Examples
    --------
    >>> from econ.privacy import Bayes
    >>> model = Bayes(n=[100, 200, 400], sigma=10, tau=1)
    >>> bayes_small_deviation_exists(model, [10] * 3).exists
    False
    >>> bayes_small_deviation_exists(model, [100] * 3).exists
    True
    """
    xi = model.xi(lam)
    total = float(xi.sum())
    return Existence(bool(xi.min() >= 0.0 and total > 1.0), total, 1.0)


def scan(model: Empirical, lam: ArrayLike) -> tuple[Array, Array, Array]:
    r"""The minimal noises and the slack at every aggregate level of :meth:`Empirical.grid`.

    For every aggregate level :math:`\bar z`: the minimal noises :math:`\ell(\bar z)` (rows) and the
    slack :math:`\bar z - \bar z(\ell(\bar z))` (``-inf`` where some client accepts no measured
    noise level).

    A protocol with aggregate :math:`\bar z` exists iff the slack is >= 0: raising the noises
    from :math:`\ell` towards :math:`z_{\max}` moves the aggregate continuously up to
    :math:`z_{\max} \ge \bar z`, and every :math:`z \ge \ell` keeps every client's gain >= 0.

    References
    ----------
    Tsoy et al. (AISTATS 2024), Definition 3.2 (existence of a mutually beneficial protocol) and
    §7.
    """
    grid = model.grid()
    floor = model.minimal_noise(grid, lam)
    finite = np.all(np.isfinite(floor), axis=1)
    agg = np.full(grid.size, np.inf)
    if finite.any():
        agg[finite] = model.aggregate(floor[finite])
    slack = np.where(finite, grid - agg, -np.inf)
    return grid, floor, slack


#: Relative tolerance of the slack (the bisection of the minimal noises resolves ~1e-16).
SLACK_TOL = 1e-9


def empirical_exists(model: Empirical, lam: ArrayLike) -> Existence:
    r"""Whether some noise vector in the measured range is mutually beneficial (Definition 3.2).

    With :math:`\ell_i(\bar z)` the least noise client :math:`i` accepts at aggregate noise
    :math:`\bar z` (:meth:`Empirical.minimal_noise`), a protocol with aggregate :math:`\bar z`
    exists iff every :math:`\ell_i(\bar z)` is finite and
    :math:`\bar z(\ell(\bar z)) \le \bar z` (:func:`scan`). The
    statistic is the largest slack :math:`\max_{\bar z}(\bar z - \bar z(\ell(\bar z)))` over the
    measured levels and a geometric grid of 1025 levels between them (``-inf`` when, at every
    level, some client accepts no measured noise); a protocol exists iff it is >= 0.

    References
    ----------
    Tsoy et al. (AISTATS 2024), Definition 3.2 and §7 (empirical scaling law for error).
    """
    _, _, slack = scan(model, lam)
    best = float(slack.max())
    hi = model.noise_range[1]
    why = (
        "at every aggregate noise level some client accepts no measured noise level: no slack"
        if best == -np.inf
        else None
    )
    return Existence(bool(best >= -SLACK_TOL * hi), best, 0.0, why)


#: Existence test per model class.
EXISTENCE = {
    DPMean: dp_mean_exists,
    DPSGD: dp_sgd_exists,
    Bayes: bayes_small_deviation_exists,
    Empirical: empirical_exists,
}


def exists(model: Model | Empirical, lam: ArrayLike) -> Existence:
    """The model's existence test (Theorem 4.2, 4.5 or 4.9; Definition 3.2 on measured clients).

    References
    ----------
    N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
    Privacy-Sensitive Domains*, AISTATS 2024, Definition 3.2, Theorems 4.2, 4.5 and 4.9.

    Examples
    --------
    >>> exists(DPMean(), [0.1, 0.2, 0.3, 0.4, 0.5]).exists
    True
    """
    return EXISTENCE[type(model)](model, lam)  # type: ignore[operator]
