r"""The three client models of Tsoy et al. (2024), vectorised over heterogeneous clients.

Each model turns a protocol β (one informativeness :math:`\beta_i = 1/(1/\rho + d\alpha_i^2)` per
client, Theorems 4.1, 4.3 and 4.7) into
per-client errors, leaks and utilities :math:`u_i = -\mathrm{leak}_i^2 - \lambda_i
\mathrm{err}_i^2`, and gives the utility :math:`u_i^0` of training alone:

* :class:`DPMean`  -- DP mean estimation (section 4.1, Theorem 4.1, eq. 1);
* :class:`DPSGD`   -- DP strongly convex SGD, Algorithm 1 (section 4.2, Theorems 4.3, 4.4, eq. 2);
* :class:`Bayes`   -- Bayesian mean estimation, reconstruction privacy (section 4.3, eq. 3).

Sample sizes ``n`` and noise scales ``sigma`` may be scalars (the paper) or one per client
(then :math:`\rho_i = n_i/\sigma_i^2` and :math:`\kappa_i` from :math:`n_i`, an extension of the
paper's equal clients). Formulas are
lambdified from :mod:`econ.privacy.symbolic`; the evaluation the models share is in
:mod:`econ.privacy.client_model`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.privacy import sgd
from econ.privacy import symbolic as S
from econ.privacy.client_model import (
    ClientModel,
    check_privacy_cost,
    client_weights,
    formula_table,
    per_client,
    precision,
)
from econ.privacy.mechanisms import kappa_mean, kappa_sgd
from econ.validation import positive_int, shown

Array = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class DPMean(ClientModel):
    r"""DP mean estimation (Tsoy et al. 2024, section 4.1).

    .. math::

        u_i = -\frac{\kappa^2\rho\beta_i}{\rho-\beta_i} - \frac{\lambda_i}{\gamma_i+\rho},
        \qquad u_i^0 = -\frac{\lambda_i}{\rho}, \qquad \rho = n/\sigma^2,
        \qquad \kappa = \sqrt{2\ln(1.25n^2)}\,B/n .

    Parameters
    ----------
    n, sigma
        Samples per client (>= 1) and per-sample standard deviation (> 0); scalars or one per client.
    bound
        Support width B of the data (sensitivity of a mean of n samples is B/n).

    References
    ----------
    N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
    Privacy-Sensitive Domains*, AISTATS 2024, §4.1, eqs. (1)-(2).

    Examples
    --------
    Five clients of 100 samples (standard deviation 10, support width 20), so
    :math:`\rho = 1`; the scaled family :math:`\beta_i = \zeta_i b` of Theorem 4.2 with half
    its largest scale benefits every client:

    >>> from econ.privacy.existence import zeta_family_max_scale
    >>> model, lam = DPMean(), [0.1, 0.2, 0.3, 0.4, 0.5]
    >>> model.zeta(lam).round(4).tolist()
    [0.117, 0.2095, 0.2844, 0.3464, 0.3985]
    >>> model.utility_alone(lam).tolist()  # -lambda_i / rho
    [-0.1, -0.2, -0.3, -0.4, -0.5]
    >>> beta = model.zeta(lam) * zeta_family_max_scale(model, lam) / 2
    >>> model.gain(beta, lam).round(4).tolist()
    [0.0022, 0.0049, 0.0079, 0.0111, 0.0146]
    """

    n: ArrayLike = 100.0
    sigma: ArrayLike = 10.0
    bound: float = 20.0
    name: ClassVar[str] = "dp-mean"
    _exprs: ClassVar[dict[str, Callable[..., Any]]] = formula_table(
        {
            "err2": S.DP_MEAN_ERR2,
            "leak2": S.DP_MEAN_LEAK2,
            "utility": S.DP_MEAN_UTILITY,
            "alone": S.DP_MEAN_ALONE,
            "gain": S.DP_MEAN_GAIN,
        },
        (S.rho, S.kappa),
    )

    def __post_init__(self) -> None:
        r"""Check and store the clients' ``n`` and ``sigma`` and the positive ``bound``.

        The privacy cost :math:`\kappa_i^2\rho_i^2` must be a positive finite float
        (:func:`~econ.privacy.client_model.check_privacy_cost`).
        """
        self._set_data(self.n, self.sigma)
        self._set_positive("bound")
        with np.errstate(all="ignore"):
            cost = (kappa_mean(self.n, self.bound) * precision(self.n, self.sigma)) ** 2
        check_privacy_cost(cost, {"bound": self.bound, "n": self.n, "sigma": self.sigma})

    def rho(self, n_clients: int) -> Array:
        r"""Per-client precision :math:`\rho_i = n_i/\sigma_i^2`.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §4.1, Theorem 4.1.
        """
        return per_client("n", precision(self.n, self.sigma), n_clients)

    def kappa(self, n_clients: int) -> Array:
        r"""Per-client privacy constant κ of the Gaussian mechanism (leak = κ/α).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §4.1 and Appendix A, Theorem A.1.
        """
        return per_client("n", kappa_mean(self.n, self.bound) * np.ones_like(self.sigma), n_clients)

    def _values(self, n_clients: int) -> tuple[Array, ...]:
        return self.rho(n_clients), self.kappa(n_clients)

    def zeta(self, lam: ArrayLike) -> Array:
        r""":math:`\zeta_i = \lambda_i/(\lambda_i + \kappa_i^2\rho_i^2)` (Theorem 4.2).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §4.1, Theorem 4.2.

        Examples
        --------
        >>> DPMean().zeta([0.1, 1.0]).round(4)
        array([0.117 , 0.5699])
        """
        lam_ = client_weights(lam)
        rho, kappa = self._values(lam_.size)
        # 1/(1 + cost/lambda): no sum of two large numbers to overflow; lambda = 0 gives 0
        with np.errstate(divide="ignore", over="ignore"):
            return np.asarray(1.0 / (1.0 + (kappa * rho) ** 2 / lam_), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class DPSGD(ClientModel):
    r"""DP strongly convex SGD, Algorithm 1 with m = T rounds (Tsoy et al. 2024, section 4.2).

    .. math::

        u_i = -\frac{\kappa^2 d\rho\beta_i}{\rho-\beta_i} - \frac{\lambda_i}{L\mu\Gamma},
        \qquad u_i^0 = -\frac{\lambda_i}{L\mu\rho}, \qquad \rho = \frac{n}{T\sigma^2},

    with :math:`T = \max(-\ln y^0/\ln(1-\mu/2L), 1)` and :math:`y^0 = L\mu D^2\sum_i n_i/\sigma_i^2`
    (:math:`= L\mu nND^2/\sigma^2` for equal clients); κ from Theorem 4.4 with m = T.

    Parameters
    ----------
    n_clients
        N; the number of rounds T depends on it through :math:`y^0_* = L\mu nND^2/\sigma^2` (Theorem 4.3).
    integer_rounds
        Use the integer :math:`\max(\lceil\cdot\rceil, 1)` of Algorithm 1 instead of the paper's
        continuous T (section 4.2 drops the ceiling).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.2, Algorithm 1, Theorems 4.3 and 4.4, Eq. (2).
    """

    n_clients: int = 10
    n: ArrayLike = 1e4
    sigma: ArrayLike = 1.0
    bound: float = 2.0
    L: float = 1.0
    mu: float = 0.5
    dim: int = 10
    diam: float = 1.0
    integer_rounds: bool = False
    name: ClassVar[str] = "dp-sgd"
    _exprs: ClassVar[dict[str, Callable[..., Any]]] = formula_table(
        {
            "err2": S.DP_SGD_ERR2,
            "leak2": S.DP_SGD_LEAK2,
            "utility": S.DP_SGD_UTILITY,
            "alone": S.DP_SGD_ALONE,
            "gain": S.DP_SGD_GAIN,
        },
        (S.rho, S.kappa, S.dim, S.L_smooth, S.mu_sc),
    )

    def __post_init__(self) -> None:
        r"""Check and store the clients' data and the constants of Theorems 4.3-4.4.

        ``n`` and ``sigma`` have one entry per client of ``n_clients``; ``bound``, ``L``, ``mu`` and
        ``diam`` are positive with ``mu <= L`` (strong convexity at most smoothness), and ``dim`` is
        a positive integer. :math:`y^0_*` and the privacy cost :math:`L\mu d\kappa_i^2\rho_i^2`
        must be positive finite floats
        (:func:`~econ.privacy.client_model.check_privacy_cost`).
        """
        self._set_data(self.n, self.sigma, positive_int("n_clients", self.n_clients))
        self._set_positive("bound", "L", "mu", "diam")
        if self.mu > self.L:
            raise ValueError(
                f"mu must not exceed L (strong convexity <= smoothness), got mu={self.mu}, L={self.L}"
            )
        object.__setattr__(self, "dim", positive_int("dim", self.dim))
        constants = {
            "L": self.L,
            "mu": self.mu,
            "diam": self.diam,
            "n": self.n,
            "sigma": self.sigma,
        }
        with np.errstate(all="ignore"):
            y0 = (
                np.float64(self.L)
                * self.mu
                * np.float64(self.diam) ** 2
                * np.sum(precision(self.n, self.sigma))
            )
        check_privacy_cost(y0, constants, "y0 = L mu D^2 sum n/sigma^2 (Theorem 4.3)")
        n_clients = int(self.n_clients)
        with np.errstate(all="ignore"):
            kappa_rho = self.kappa(n_clients) * self.rho(n_clients)
            cost = np.float64(self.L) * self.mu * self.dim * kappa_rho**2
        constants |= {"bound": self.bound, "dim": self.dim}
        check_privacy_cost(cost, constants, "a privacy cost L mu d kappa^2 rho^2")

    def _noise_dim(self) -> int:
        return self.dim

    @property
    def y0(self) -> float:
        r""":math:`y^0_* = L\mu D^2 \sum_i n_i/\sigma_i^2` of Theorem 4.3, summed over clients.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §4.2, Theorem 4.3 and Appendix B.4.

        Examples
        --------
        >>> DPSGD().y0
        50000.0
        """
        return float(self.L * self.mu * self.diam**2 * np.sum(precision(self.n, self.sigma)))

    @property
    def rounds(self) -> float:
        """T, the number of rounds m = T of the protocol (Theorem 4.3).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §4.2, Theorem 4.3.
        """
        return sgd.rounds(self.y0, self.mu / self.L, integer=self.integer_rounds)

    def _n_check(self, n_clients: int) -> None:
        if n_clients != self.n_clients:
            raise ValueError(
                f"this DP-SGD model has n_clients={self.n_clients}, got {n_clients} weights"
            )

    def rho(self, n_clients: int) -> Array:
        r"""Per-client precision :math:`\rho_i = n_i/(T\sigma_i^2)`.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §4.2, Theorem 4.3.
        """
        self._n_check(n_clients)
        return np.asarray(self.n) / (self.rounds * np.asarray(self.sigma) ** 2)

    def kappa(self, n_clients: int) -> Array:
        r"""Per-client privacy constant κ of shuffled DP-SGD (leak = κ/α).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §4.2, Theorem 4.4 and Appendix B.5.
        """
        self._n_check(n_clients)
        return kappa_sgd(self.n, self.rounds, self.bound)

    def _values(self, n_clients: int) -> tuple[Array, ...]:
        return (
            self.rho(n_clients),
            self.kappa(n_clients),
            np.float64(self.dim),
            np.float64(self.L),
            np.float64(self.mu),
        )

    def psi(self, lam: ArrayLike) -> Array:
        r""":math:`\psi_i = \lambda_i/(L\mu d\kappa_i^2\rho_i^2)` (Theorem 4.5).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §4.2, Theorem 4.5.

        Examples
        --------
        >>> DPSGD(n_clients=2).psi([1e6, 2e6]).round(4)
        array([2.6264, 5.2528])
        """
        lam_ = client_weights(lam)
        rho, kappa = self.rho(lam_.size), self.kappa(lam_.size)
        with np.errstate(over="ignore"):
            psi = lam_ / (self.L * self.mu * self.dim * (kappa * rho) ** 2)
        if not np.all(np.isfinite(psi)):
            raise ValueError(
                f"lam={shown(lam_)} gives psi = lambda/(L mu d kappa^2 rho^2) = {shown(psi)} "
                "with these constants: beyond the floats (Theorem 4.5)"
            )
        return psi


#: The Bayesian model's precisions tau and rho = n/sigma^2 must lie here: its utilities (eq. 3)
#: hold squares and products of them, which must stay finite floats.
BAYES_RANGE = (1e-100, 1e100)


@dataclass(frozen=True, eq=False)
class Bayes(ClientModel):
    r"""Bayesian mean estimation with reconstruction-based privacy (Tsoy et al. 2024, section 4.3).

    .. math::

        u_i = P_i - \frac1\rho - \frac1\tau - \frac{\lambda_i}{\gamma_i+\rho+\tau}, \qquad
        P_i - \frac1\rho = \frac{(\rho-\beta_i)^2}{(\Gamma+\tau)\rho^2} - \frac{\beta_i}{\rho^2},
        \qquad u_i^0 = -\frac{\lambda_i}{\rho+\tau}.

    Parameters
    ----------
    n, sigma
        Samples per client and per-sample standard deviation.
    tau
        Prior precision of the unknown mean, :math:`\mu \sim N(0, 1/\tau)`.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.3, Theorems 4.7 and 4.8, Eq. (3).
    """

    n: ArrayLike = 100.0
    sigma: ArrayLike = 10.0
    tau: float = 1.0
    name: ClassVar[str] = "bayes"
    _exprs: ClassVar[dict[str, Callable[..., Any]]] = formula_table(
        {
            "err2": S.BAYES_ERR2,
            "leak2": S.BAYES_LEAK2,
            "utility": S.BAYES_UTILITY,
            "alone": S.BAYES_ALONE,
            "gain": S.BAYES_GAIN,
        },
        (S.rho, S.tau),
    )

    def __post_init__(self) -> None:
        """Check and store the clients' ``n`` and ``sigma`` and the positive ``tau``.

        ``tau`` and every precision ``n/sigma^2`` must lie in :data:`BAYES_RANGE` (eq. 3 squares
        them).
        """
        self._set_data(self.n, self.sigma)
        self._set_positive("tau")
        low, high = BAYES_RANGE
        rho = precision(self.n, self.sigma)
        if not (low <= self.tau <= high and np.all((rho >= low) & (rho <= high))):
            raise ValueError(
                f"tau and the precision n/sigma^2 must lie in [{low:g}, {high:g}] (eq. 3 squares "
                f"them), got tau={self.tau!r}, n/sigma^2={rho!r}"
            )

    def rho(self, n_clients: int) -> Array:
        r"""Per-client precision :math:`\rho_i = n_i/\sigma_i^2`.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §4.3, Theorem 4.7.
        """
        return per_client("n", precision(self.n, self.sigma), n_clients)

    def _values(self, n_clients: int) -> tuple[Array, ...]:
        return self.rho(n_clients), np.float64(self.tau)

    def xi(self, lam: ArrayLike) -> Array:
        r"""The weights :math:`\xi_i` of Theorem 4.9.

        :math:`\xi_i = A_i/(A_i + (\rho+\tau)^2/(\rho^2\tau^2))`,
        :math:`A_i = \lambda_i/(\rho+\tau)^2 - 1/\tau^2`.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §4.3, Theorem 4.9.

        Examples
        --------
        >>> Bayes().xi([8.0, 12.0]).round(4)
        array([0.2   , 0.3333])
        """
        lam_ = client_weights(lam)
        rho, tau = self.rho(lam_.size), self.tau
        # Times tau^2, with t = tau/(rho+tau) in (0, 1) and s = tau/rho:
        # xi = (lam t^2 - 1)/(lam t^2 + 2s + s^2); the denominator is A + (rho+tau)^2/(rho tau)^2
        # expanded, so nothing cancels, and no power of tau under- or overflows.
        t = tau / (rho + tau)
        with np.errstate(over="ignore"):  # s^2 = inf: xi is 0 in the limit
            s = np.asarray(tau / rho, dtype=np.float64)
            lt2 = lam_ * t * t
            return np.asarray((lt2 - 1) / (lt2 + 2 * s + s * s), dtype=np.float64)


Model = DPMean | DPSGD | Bayes


#: The models by their command-line name.
MODELS: dict[str, type[ClientModel]] = {m.name: m for m in (DPMean, DPSGD, Bayes)}
