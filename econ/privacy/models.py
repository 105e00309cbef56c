r"""The three client models of Tsoy et al. (2024), vectorised over heterogeneous clients.

Each model turns a protocol β (one informativeness per client, section 2.7 of the spec) into
per-client errors, leaks and utilities :math:`u_i = -\mathrm{leak}_i^2 - \lambda_i
\mathrm{err}_i^2`, and gives the utility :math:`u_i^0` of training alone:

* :class:`DPMean`  -- DP mean estimation (section 4.1, Theorem 4.1, eq. 1);
* :class:`DPSGD`   -- DP strongly convex SGD, Algorithm 1 (section 4.2, Theorems 4.3, 4.4, eq. 2);
* :class:`Bayes`   -- Bayesian mean estimation, reconstruction privacy (section 4.3, eq. 3).

Sample sizes ``n`` and noise scales ``sigma`` may be scalars (the paper) or one per client
(spec 9.5: :math:`\rho_i = n_i/\sigma_i^2`, :math:`\kappa_i` from :math:`n_i`). Formulas are
lambdified from :mod:`econ.privacy.symbolic`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ.privacy import sgd
from econ.privacy import symbolic as S
from econ.privacy.conversions import alpha_of_beta, epsilon_of_alpha
from econ.privacy.mechanisms import kappa_mean, kappa_sgd
from econ.propositions import Verdict, checked, is_zero, proposition, refuted
from econ.validation import as_finite, in_interval, non_negative, positive, positive_int

Array = NDArray[np.float64]


def client_weights(lam: ArrayLike, name: str = "lam") -> Array:
    """Validate a non-empty 1-D vector of non-negative accuracy weights λ_i (or ν_i)."""
    arr = np.atleast_1d(as_finite(name, lam))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty list of client weights, got {lam!r}")
    return non_negative(name, arr)


def _precision(n: ArrayLike, sigma: ArrayLike) -> Array:
    r"""Informativeness of a client's data about the mean: :math:`\rho_i = n_i/\sigma_i^2`."""
    return np.asarray(n, dtype=np.float64) / np.asarray(sigma, dtype=np.float64) ** 2


def _per_client(name: str, value: ArrayLike, n_clients: int) -> Array:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        return np.full(n_clients, float(arr))
    if arr.shape != (n_clients,):
        raise ValueError(
            f"{name} must be a scalar or have one entry per client ({n_clients}), got shape {arr.shape}"
        )
    return arr


def _lambdify(expr: sp.Expr, constants: tuple[sp.Symbol, ...]) -> Callable[..., Any]:
    return sp.lambdify((S.beta, S.gamma, S.lam, *constants), expr, "numpy")


@dataclass(frozen=True, eq=False)
class _Model(ABC):
    """Shared evaluation of the lambdified formulas; subclasses fix the symbols and constants."""

    name: ClassVar[str]
    _exprs: ClassVar[dict[str, Callable[..., Any]]]

    @abstractmethod
    def _values(self, n_clients: int) -> tuple[Array, ...]:
        """The model's constants, one array per symbol, for ``n_clients`` clients."""

    @abstractmethod
    def rho(self, n_clients: int) -> Array:
        """Informativeness ρ_i of a noiseless message, one per client."""

    def _check(self, beta: ArrayLike, lam: ArrayLike) -> tuple[Array, Array]:
        lam_ = client_weights(lam)
        b = np.atleast_1d(non_negative("beta", beta))
        if b.shape != lam_.shape:
            raise ValueError(f"beta has shape {b.shape} but lam has {lam_.shape}")
        rho = self.rho(lam_.size)
        if np.any(b > rho * (1 + 1e-12)):
            raise ValueError(
                f"beta must lie in [0, rho_i]; got max beta/rho = {np.max(b / rho):.6g}"
            )
        return np.minimum(b, rho), lam_

    def _eval(self, what: str, beta: ArrayLike, lam: ArrayLike) -> Array:
        b, lam_ = self._check(beta, lam)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = self._exprs[what](b, b.sum() - b, lam_, *self._values(lam_.size))
        return np.broadcast_to(np.asarray(out, dtype=np.float64), lam_.shape).copy()

    def _gain_rows(self, beta_rows: Array, lam: Array) -> Array:
        """Gains of several protocols at once (one per row); ``lam`` and the rows are already valid."""
        others = beta_rows.sum(axis=1, keepdims=True) - beta_rows
        with np.errstate(divide="ignore", invalid="ignore"):
            out = self._exprs["gain"](beta_rows, others, lam, *self._values(lam.size))
        return np.broadcast_to(np.asarray(out, dtype=np.float64), beta_rows.shape)

    def err2(self, beta: ArrayLike, lam: ArrayLike) -> Array:
        """Squared error err_i^2 of each client's end model (``lam`` fixes the number of clients)."""
        return self._eval("err2", beta, lam)

    def leak2(self, beta: ArrayLike, lam: ArrayLike) -> Array:
        """Squared privacy loss leak_i^2."""
        return self._eval("leak2", beta, lam)

    def utility(self, beta: ArrayLike, lam: ArrayLike) -> Array:
        r""":math:`u_i = -\mathrm{leak}_i^2 - \lambda_i\,\mathrm{err}_i^2`."""
        return self._eval("utility", beta, lam)

    def utility_alone(self, lam: ArrayLike) -> Array:
        """:math:`u_i^0`, the utility of training alone."""
        lam_ = client_weights(lam)
        return self._eval("alone", np.zeros_like(lam_), lam_)

    def gain(self, beta: ArrayLike, lam: ArrayLike) -> Array:
        r""":math:`u_i - u_i^0` (eq. 1, 2 or 3 of the paper); a protocol is mutually beneficial iff all are >= 0."""
        return self._eval("gain", beta, lam)

    def alpha(self, beta: ArrayLike, n_clients: int) -> Array:
        """Noise standard deviations α_i of a protocol β (``inf`` for β_i = 0)."""
        return alpha_of_beta(beta, self.rho(n_clients), self._noise_dim())

    def _noise_dim(self) -> int:
        return 1

    def epsilon(self, beta: ArrayLike, n_clients: int) -> Array | None:
        """DP bound ε_i = κ_i/α_i of a protocol; ``None`` in models without DP."""
        kappa = self.kappa(n_clients)
        return None if kappa is None else epsilon_of_alpha(self.alpha(beta, n_clients), kappa)

    def kappa(self, n_clients: int) -> Array | None:
        """The privacy constant κ_i (leak = κ/α), or ``None`` in models without DP."""
        return None


def _table(
    exprs: dict[str, sp.Expr], constants: tuple[sp.Symbol, ...]
) -> dict[str, Callable[..., Any]]:
    return {k: _lambdify(e, constants) for k, e in exprs.items()}


@dataclass(frozen=True, eq=False)
class DPMean(_Model):
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
    """

    n: ArrayLike = 100.0
    sigma: ArrayLike = 10.0
    bound: float = 20.0
    name: ClassVar[str] = "dp-mean"
    _exprs: ClassVar[dict[str, Callable[..., Any]]] = _table(
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
        object.__setattr__(self, "n", in_interval("n", self.n, 1.0))
        object.__setattr__(self, "sigma", positive("sigma", self.sigma))
        object.__setattr__(self, "bound", float(positive("bound", self.bound)))

    def rho(self, n_clients: int) -> Array:
        return _per_client("n", _precision(self.n, self.sigma), n_clients)

    def kappa(self, n_clients: int) -> Array:
        return _per_client(
            "n", kappa_mean(self.n, self.bound) * np.ones_like(self.sigma), n_clients
        )

    def _values(self, n_clients: int) -> tuple[Array, ...]:
        return self.rho(n_clients), self.kappa(n_clients)

    def zeta(self, lam: ArrayLike) -> Array:
        r""":math:`\zeta_i = \lambda_i/(\lambda_i + \kappa_i^2\rho_i^2)` (Theorem 4.2)."""
        lam_ = client_weights(lam)
        rho, kappa = self._values(lam_.size)
        return lam_ / (lam_ + kappa**2 * rho**2)


@dataclass(frozen=True, eq=False)
class DPSGD(_Model):
    r"""DP strongly convex SGD, Algorithm 1 with m = T rounds (Tsoy et al. 2024, section 4.2).

    .. math::

        u_i = -\frac{\kappa^2 d\rho\beta_i}{\rho-\beta_i} - \frac{\lambda_i}{L\mu\Gamma},
        \qquad u_i^0 = -\frac{\lambda_i}{L\mu\rho}, \qquad \rho = \frac{n}{T\sigma^2},

    with :math:`T = \max(-\ln y^0/\ln(1-\mu/2L), 1)` and :math:`y^0 = L\mu D^2\sum_i n_i/\sigma_i^2`
    (:math:`= L\mu nND^2/\sigma^2` for equal clients); κ from Theorem 4.4 with m = T.

    Parameters
    ----------
    n_clients
        N; the number of rounds T depends on it through :math:`y^0` (spec T28).
    integer_rounds
        Use the integer :math:`\max(\lceil\cdot\rceil, 1)` of Algorithm 1 instead of the paper's
        continuous T (spec T5).
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
    _exprs: ClassVar[dict[str, Callable[..., Any]]] = _table(
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
        n_clients = positive_int("n_clients", self.n_clients)
        object.__setattr__(self, "n", _per_client("n", in_interval("n", self.n, 1.0), n_clients))
        object.__setattr__(
            self, "sigma", _per_client("sigma", positive("sigma", self.sigma), n_clients)
        )
        for name in ("bound", "L", "mu", "diam"):
            object.__setattr__(self, name, float(positive(name, getattr(self, name))))
        if self.mu > self.L:
            raise ValueError(
                f"mu must not exceed L (strong convexity <= smoothness), got mu={self.mu}, L={self.L}"
            )
        object.__setattr__(self, "dim", positive_int("dim", self.dim))

    def _noise_dim(self) -> int:
        return self.dim

    @property
    def y0(self) -> float:
        r""":math:`y^0_* = L\mu D^2 \sum_i n_i/\sigma_i^2` (Lemma B.4; spec 9.5)."""
        return float(self.L * self.mu * self.diam**2 * np.sum(_precision(self.n, self.sigma)))

    @property
    def rounds(self) -> float:
        """T, the number of rounds m = T of the protocol (Theorem 4.3)."""
        return sgd.rounds(self.y0, self.mu / self.L, integer=self.integer_rounds)

    def _n_check(self, n_clients: int) -> None:
        if n_clients != self.n_clients:
            raise ValueError(
                f"this DP-SGD model has n_clients={self.n_clients}, got {n_clients} weights"
            )

    def rho(self, n_clients: int) -> Array:
        self._n_check(n_clients)
        return np.asarray(self.n) / (self.rounds * np.asarray(self.sigma) ** 2)

    def kappa(self, n_clients: int) -> Array:
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
        r""":math:`\psi_i = \lambda_i/(L\mu d\kappa_i^2\rho_i^2)` (Theorem 4.5)."""
        lam_ = client_weights(lam)
        rho, kappa = self.rho(lam_.size), self.kappa(lam_.size)
        return lam_ / (self.L * self.mu * self.dim * kappa**2 * rho**2)


@dataclass(frozen=True, eq=False)
class Bayes(_Model):
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
    """

    n: ArrayLike = 100.0
    sigma: ArrayLike = 10.0
    tau: float = 1.0
    name: ClassVar[str] = "bayes"
    _exprs: ClassVar[dict[str, Callable[..., Any]]] = _table(
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
        object.__setattr__(self, "n", in_interval("n", self.n, 1.0))
        object.__setattr__(self, "sigma", positive("sigma", self.sigma))
        object.__setattr__(self, "tau", float(positive("tau", self.tau)))

    def rho(self, n_clients: int) -> Array:
        return _per_client("n", _precision(self.n, self.sigma), n_clients)

    def _values(self, n_clients: int) -> tuple[Array, ...]:
        return self.rho(n_clients), np.float64(self.tau)

    def xi(self, lam: ArrayLike) -> Array:
        r""":math:`\xi_i = A_i/(A_i + (\rho+\tau)^2/(\rho^2\tau^2))`, :math:`A_i = \lambda_i/(\rho+\tau)^2 - 1/\tau^2` (Thm 4.9)."""
        lam_ = client_weights(lam)
        rho, tau = self.rho(lam_.size), self.tau
        a = lam_ / (rho + tau) ** 2 - 1 / tau**2
        return a / (a + (rho + tau) ** 2 / (rho**2 * tau**2))


Model = DPMean | DPSGD | Bayes

#: The models by their command-line name.
MODELS: dict[str, type[_Model]] = {m.name: m for m in (DPMean, DPSGD, Bayes)}


# --------------------------------------------------------------------------------------------
# Registered results about the models
# --------------------------------------------------------------------------------------------


@proposition(
    "tsoy.eq1",
    source="Tsoy et al. (2024), eq. (1) and Appendix B.2",
    statement="DP mean: u_i - u_i^0 = lam gamma/(rho(gamma+rho)) - kappa^2 rho beta/(rho-beta) = q_i * positive factor",
)
def _eq1() -> Verdict:
    alpha2 = S.ALPHA2_OF_BETA.subs(S.dim, 1)
    direct = -(S.kappa**2) / alpha2 - S.lam / (S.gamma + S.rho) - S.DP_MEAN_ALONE
    first = is_zero(direct - S.DP_MEAN_GAIN, "eq. (1) from kappa^2/alpha^2 and Theorem 4.1")
    second = is_zero(S.DP_MEAN_Q / S.DP_MEAN_Q_FACTOR - S.DP_MEAN_GAIN, "q_i / factor - gain")
    return (
        first
        if not first.holds
        else second
        if not second.holds
        else Verdict(first.status, f"{first.evidence}; {second.evidence}")
    )


@proposition(
    "tsoy.eq2",
    source="Tsoy et al. (2024), eq. (2), section 4.2",
    statement="DP SGD: u_i - u_i^0 = kappa^2 d rho [psi_i (1 - rho/Gamma) - beta_i/(rho - beta_i)]",
)
def _eq2() -> Verdict:
    form = (
        S.kappa**2
        * S.dim
        * S.rho
        * (S.PSI * (1 - S.rho / (S.gamma + S.beta)) - S.beta / (S.rho - S.beta))
    )
    return is_zero(form - S.DP_SGD_GAIN, "eq. (2) minus utility difference")


@proposition(
    "tsoy.eq3",
    source="Tsoy et al. (2024), eq. (3), Theorem 4.8",
    statement="Bayes: P_i - 1/rho = (rho - beta_i)^2/((Gamma + tau) rho^2) - beta_i/rho^2",
)
def _eq3() -> Verdict:
    p = S.BAYES_P.subs(S.alpha2, S.ALPHA2_OF_BETA.subs(S.dim, 1))
    return is_zero(
        p - 1 / S.rho - S.BAYES_P_MINUS_INV_RHO, "P_i(alpha(beta)) - 1/rho - eq. (3) form"
    )


@proposition(
    "tsoy.lemmaB.1",
    source="Tsoy et al. (2024), Theorem 4.1 weights and Lemma B.1",
    statement="inverse-variance weights a_k = (1/v_k)/sum(1/v) minimise sum a_k^2 v_k s.t. sum a = 1; minimum 1/sum(1/v)",
)
def _lemma_b1() -> Verdict:
    v = sp.symbols("v1:4", positive=True)
    a = sp.symbols("a1:4")
    m = sp.Symbol("m")
    lagrangian = sum(ai**2 * vi for ai, vi in zip(a, v, strict=True)) - m * (sum(a) - 1)
    sol = sp.solve([sp.diff(lagrangian, x) for x in (*a, m)], (*a, m), dict=True)[0]
    precision = sum(1 / vi for vi in v)
    weights_ok = is_zero(
        sum((sol[ai] - (1 / vi) / precision) ** 2 for ai, vi in zip(a, v, strict=True)), "weights"
    )
    value = sum(sol[ai] ** 2 * vi for ai, vi in zip(a, v, strict=True))
    value_ok = is_zero(value - 1 / precision, "minimum variance - 1/Gamma")
    if not (weights_ok.holds and value_ok.holds):
        return weights_ok if not weights_ok.holds else value_ok
    return Verdict(value_ok.status, f"{weights_ok.evidence}; {value_ok.evidence} (N = 3, Lagrange)")


def _mc_within(draws: Array, formula: float, what: str) -> tuple[bool, str]:
    """Whether a Monte Carlo mean lies within 4 standard errors of ``formula``, and the evidence."""
    mean, se = float(draws.mean()), float(draws.std(ddof=1) / np.sqrt(draws.size))
    ok = abs(mean - formula) <= 4 * se
    return (
        ok,
        f"{what}: Monte Carlo {mean:.6g} +- {se:.2g} vs formula {formula:.6g} ({draws.size} draws)",
    )


def _mc_verdict(*results: tuple[bool, str]) -> Verdict:
    evidence = "; ".join(text for _, text in results)
    if all(ok for ok, _ in results):
        return checked(evidence, len(results))
    return refuted(evidence, {"outside 4 SE": [text for ok, text in results if not ok]})


@proposition(
    "tsoy.thm4.1",
    source="Tsoy et al. (2024), Theorem 4.1",
    statement="DP mean: the best unbiased linear estimator has E(mu_hat_i - mu)^2 = 1/(gamma_i + rho)",
)
def _thm41() -> Verdict:
    rng = np.random.default_rng(41)
    reps, n, bound, mean = 20_000, 50, 2.0, 0.3
    alpha = np.array([0.05, 0.1, 0.2, 0.4])
    model = DPMean(n=n, sigma=bound / np.sqrt(12), bound=bound)
    lam = np.ones(alpha.size)
    beta = 1 / (1 / model.rho(4) + alpha**2)
    xbar = mean + rng.uniform(-bound / 2, bound / 2, (reps, alpha.size, n)).mean(axis=2)
    msgs = xbar + alpha * rng.standard_normal((reps, alpha.size))
    rho0 = model.rho(4)[0]
    est = (rho0 * xbar[:, 0] + msgs[:, 1:] @ beta[1:]) / (beta[1:].sum() + rho0)
    return _mc_verdict(
        _mc_within((est - mean) ** 2, float(model.err2(beta, lam)[0]), "client 0 MSE")
    )


@proposition(
    "tsoy.thm4.7-4.8",
    source="Tsoy et al. (2024), Theorems 4.7 and 4.8",
    statement="Bayes: posterior-mean MSE 1/(gamma_i+rho+tau); reconstruction MSE sigma^2(n-1) + n P_i",
)
def _thm47_48() -> Verdict:
    rng = np.random.default_rng(47)
    reps, n, sigma, tau = 40_000, 20, 1.5, 0.5
    alpha = np.array([0.3, 0.6, 1.0])
    rho = n / sigma**2
    beta = 1 / (1 / rho + alpha**2)
    gamma0 = beta[1:].sum()
    mu = rng.standard_normal(reps) / np.sqrt(tau)
    xbar = mu[:, None] + sigma / np.sqrt(n) * rng.standard_normal((reps, 3))
    within = sigma**2 * rng.chisquare(n - 1, reps)  # sum_j (x_j - xbar)^2, independent of xbar
    msgs = xbar + alpha * rng.standard_normal((reps, 3))
    s0 = msgs[:, 1:] @ beta[1:]
    est = (s0 + rho * xbar[:, 0]) / (gamma0 + rho + tau)
    prec = 1 / alpha[0] ** 2 + rho * (gamma0 + tau) / (gamma0 + rho + tau)
    recon = (msgs[:, 0] / alpha[0] ** 2 + rho * s0 / (gamma0 + rho + tau)) / prec
    model = Bayes(n=n, sigma=sigma, tau=tau)
    p0 = float(
        sp.lambdify((S.alpha2, S.gamma, S.rho, S.tau), S.BAYES_P)(alpha[0] ** 2, gamma0, rho, tau)
    )
    return _mc_verdict(
        _mc_within((est - mu) ** 2, float(model.err2(beta, np.ones(3))[0]), "Thm 4.7 MSE"),
        _mc_within(
            within + n * (recon - xbar[:, 0]) ** 2,
            sigma**2 * (n - 1) + n * p0,
            "Thm 4.8 reconstruction",
        ),
    )
