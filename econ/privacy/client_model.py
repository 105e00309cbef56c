r"""What the three client models of Tsoy et al. (2024) share.

The clients' weights and data, and the evaluation of a model's lambdified formulas
(:class:`ClientModel`).

The models themselves are in :mod:`econ.privacy.models`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ.privacy import symbolic as S
from econ.privacy.conversions import alpha_of_beta, epsilon_of_alpha
from econ.validation import as_finite, in_interval, non_negative, positive, shown

Array = NDArray[np.float64]


def client_weights(lam: ArrayLike, name: str = "lam") -> Array:
    """Validate a non-empty 1-D vector of non-negative accuracy weights λ_i (or ν_i).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §3.3 (accuracy weights λ_i) and §5 (welfare weights).
    """
    arr = np.atleast_1d(as_finite(name, lam))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty list of client weights, got {lam!r}")
    return non_negative(name, arr)


def precision(n: ArrayLike, sigma: ArrayLike) -> Array:
    r"""Informativeness of a client's data about the mean: :math:`\rho_i = n_i/\sigma_i^2`.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.1, Theorem 4.1 (ρ = n/σ² of a client's sample mean).
    """
    return np.asarray(n, dtype=np.float64) / np.asarray(sigma, dtype=np.float64) ** 2


def _check_precision(n: ArrayLike, sigma: ArrayLike) -> None:
    """Refuse ``n`` and ``sigma`` whose precision ``n/sigma^2`` is not a positive finite float."""
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        rho = precision(n, sigma)
    if not np.all(np.isfinite(rho) & (rho > 0)):
        raise ValueError(
            f"sigma must give a positive finite precision n/sigma^2 (a float in [1e-308, 1e308]), "
            f"got n={n!r}, sigma={sigma!r}"
        )


def check_privacy_cost(
    cost: ArrayLike, constants: dict[str, Any], name: str = "a privacy cost kappa^2 rho^2"
) -> None:
    r"""Refuse constants whose privacy cost :math:`\kappa_i^2\rho_i^2` is no positive finite float.

    The existence tests weigh each client's accuracy weight against this cost (Theorem 4.2:
    :math:`\zeta_i = \lambda_i/(\lambda_i + \kappa_i^2\rho_i^2)`; Theorem 4.5:
    :math:`\psi_i = \lambda_i/(L\mu d\kappa_i^2\rho_i^2)`); where it under- or overflows,
    they would divide zero by zero.

    Parameters
    ----------
    cost
        The cost of every client, computed by the caller under ``np.errstate(all="ignore")``.
    constants
        The constants it follows from, by keyword, for the message.
    name
        The cost's formula, for the message.

    Raises
    ------
    ValueError
        Some cost is zero, infinite or NaN.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.1-4.2, Theorems 4.2 and 4.5.
    """
    c = np.asarray(cost, dtype=np.float64)
    tiny, huge = np.finfo(np.float64).tiny, np.finfo(np.float64).max
    if not np.all(np.isfinite(c) & (c >= tiny)):
        given = ", ".join(f"{k}={shown(v)}" for k, v in constants.items())
        raise ValueError(
            f"{given} give {name} of {shown(c)}, outside the floats "
            f"[{tiny:.3g}, {huge:.3g}] the existence tests divide by"
        )


def per_client(name: str, value: ArrayLike, n_clients: int) -> Array:
    """``value`` as one entry per client.

    A scalar is repeated ``n_clients`` times; a vector must have that length.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §3.1 (N clients, each with its own data).
    """
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
class ClientModel(ABC):
    r"""Shared evaluation of the lambdified formulas; subclasses fix the symbols and constants.

    A protocol β gives each client's squared error, squared leak, utility and gain; ``lam``
    (one accuracy weight per client) fixes the number of clients.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §3.3 (utility :math:`u_i = -\mathrm{leak}_i^2 - \lambda_i
    \mathrm{err}_i^2`) and §4 (the three models).
    """

    name: ClassVar[str]
    _exprs: ClassVar[dict[str, Callable[..., Any]]]

    def _set_data(self, n: ArrayLike, sigma: ArrayLike, n_clients: int | None = None) -> None:
        """Check and store ``n`` (>= 1) and ``sigma`` (> 0).

        One entry per client when ``n_clients`` is given; a precision ``n/sigma^2`` that is not a
        positive finite float is refused.
        """
        n = in_interval("n", n, 1.0)
        if n_clients is not None:
            n = per_client("n", n, n_clients)
        object.__setattr__(self, "n", n)
        sigma = positive("sigma", sigma)
        if n_clients is not None:
            sigma = per_client("sigma", sigma, n_clients)
        object.__setattr__(self, "sigma", sigma)
        _check_precision(n, sigma)

    def _set_positive(self, *names: str) -> None:
        """Check and store each of ``names`` as a positive float."""
        for name in names:
            object.__setattr__(self, name, float(positive(name, getattr(self, name))))

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
        if (b > rho * (1 + 1e-12)).any():
            raise ValueError(
                f"beta must lie in [0, rho_i]; got max beta/rho = {np.max(b / rho):.6g}"
            )
        return np.minimum(b, rho), lam_

    def _eval(self, what: str, beta: ArrayLike, lam: ArrayLike) -> Array:
        return self.evaluate(beta, lam, what)[0]

    def evaluate(self, beta: ArrayLike, lam: ArrayLike, *names: str) -> tuple[Array, ...]:
        r"""Several of the formulas at one protocol, ``beta`` and ``lam`` checked once.

        ``names`` are keys of the model's formulas (``"err2"``, ``"leak2"``, ``"utility"``,
        ``"alone"``, ``"gain"``); one array per name, one entry per client.

        Raises
        ------
        ValueError
            ``lam`` not valid weights, ``beta`` not finite, of another shape, or outside
            :math:`[0, \rho_i]`.
        """
        b, lam_ = self._check(beta, lam)
        return self._formulas(b, lam_, names)

    def _formulas(self, b: Array, lam_: Array, names: tuple[str, ...]) -> tuple[Array, ...]:
        """:meth:`evaluate` of a protocol ``b`` and weights ``lam_`` already checked."""
        args = (b, b.sum() - b, lam_, *self._values(lam_.size))
        with np.errstate(divide="ignore", invalid="ignore"):
            outs = [self._exprs[what](*args) for what in names]
        return tuple(
            np.broadcast_to(np.asarray(out, dtype=np.float64), lam_.shape).copy() for out in outs
        )

    def _gain_rows(self, beta_rows: Array, lam: Array) -> Array:
        """Gains of several protocols at once (one per row).

        ``lam`` and the rows are already valid.
        """
        others = beta_rows.sum(axis=1, keepdims=True) - beta_rows
        with np.errstate(divide="ignore", invalid="ignore"):
            out = self._exprs["gain"](beta_rows, others, lam, *self._values(lam.size))
        return np.broadcast_to(np.asarray(out, dtype=np.float64), beta_rows.shape)

    def err2(self, beta: ArrayLike, lam: ArrayLike) -> Array:
        """Squared error err_i^2 of each client's end model.

        ``lam`` fixes the number of clients.
        """
        return self._eval("err2", beta, lam)

    def leak2(self, beta: ArrayLike, lam: ArrayLike) -> Array:
        """Squared privacy loss leak_i^2."""
        return self._eval("leak2", beta, lam)

    def utility(self, beta: ArrayLike, lam: ArrayLike) -> Array:
        r""":math:`u_i = -\mathrm{leak}_i^2 - \lambda_i\,\mathrm{err}_i^2`."""
        return self._eval("utility", beta, lam)

    def utility_alone(self, lam: ArrayLike) -> Array:
        """:math:`u_i^0`, the utility of training alone.

        Raises
        ------
        ValueError
            Some :math:`u_i^0` is beyond the floats (a weight too large for the precision).
        """
        lam_ = client_weights(lam)
        with np.errstate(over="ignore"):  # beta = 0 needs no check
            alone = self._formulas(np.zeros_like(lam_), lam_, ("alone",))[0]
        if not np.all(np.isfinite(alone)):
            raise ValueError(
                f"lam={shown(lam_)} gives a utility alone of {shown(alone)} with these "
                "constants: beyond the floats"
            )
        return alone

    def gain(self, beta: ArrayLike, lam: ArrayLike) -> Array:
        r"""Each client's gain :math:`u_i - u_i^0` (eq. 1, 2 or 3 of the paper).

        A protocol is mutually beneficial iff all are >= 0.
        """
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


def formula_table(
    exprs: dict[str, sp.Expr], constants: tuple[sp.Symbol, ...]
) -> dict[str, Callable[..., Any]]:
    r"""Each of a model's formulas of :mod:`econ.privacy.symbolic`, lambdified.

    The arguments are (β_i, γ_i, λ_i, \*``constants``).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4, Eqs. (1)-(3).
    """
    return {k: _lambdify(e, constants) for k, e in exprs.items()}
