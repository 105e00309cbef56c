r"""Optimal mutually beneficial protocols for heterogeneous clients (Tsoy et al. 2024, §5-6).

Two server objectives, both subject to every client gaining (:math:`u_i \ge u_i^0`):

``accuracy``  maximise :math:`\Gamma = \sum_i\beta_i` (paper section 6);
``welfare``   maximise :math:`\sum_i \nu_i u_i` (paper section 5, for any clients).

How each is solved (the ``method`` field of the result says which; the DP models' solvers are
in :mod:`econ.privacy.optimal_dp`, the Bayesian ones in :mod:`econ.privacy.optimal_bayes`):

* DP mean, accuracy -- exact 1-D: for fixed Γ client i's constraint is
  :math:`\beta_i \le \varphi_i(\Gamma) = \tfrac12\big(\Gamma+\rho_i-\sqrt{(\Gamma+\rho_i)^2-4\zeta_i\Gamma\rho_i}\big)`,
  concave in Γ, so :math:`\Gamma_{\max}` is the largest root of :math:`\sum_i\varphi_i(\Gamma) = \Gamma`
  (Newton's method from above, monotone for a concave function; O(N) a step).
* DP SGD, accuracy -- exact 1-D: :math:`\beta_i \le \rho_i s_i/(1+s_i)`,
  :math:`s_i = \psi_i(1-\rho_i/\Gamma)`; the largest root of the concave F of Theorem 4.5
  (Newton from above).
* DP models, welfare (and accuracy on request) -- convex programs in cvxpy (Clarabel), in the
  normalised variables :math:`\beta_i/\bar\rho` (mean) or :math:`\beta_i/\rho_i` (SGD), built once
  per (model, objective, N, ρ-ratios) with :class:`cvxpy.Parameter` for λ and ν (DPP), so that
  repeated solves skip canonicalisation (up to :data:`~econ.privacy.optimal_dp.DPP_MAX_CLIENTS` clients; above, the
  parameters are substituted as constants, which compiles faster at that size). Multipliers of the participation constraints are
  returned in the units of the objective (KKT: :math:`\sum_i(\nu_i+\mu_i)\nabla g_i = 0` on interior β).
* Bayes -- non-convex. Accuracy: for fixed Γ client i accepts :math:`\beta_i \le
  \varphi_i(\Gamma)`, the root of a cubic, and :math:`\sum_i\varphi_i` is nondecreasing in Γ;
  the largest feasible Γ is searched top-down, every total above the current bound certified
  infeasible by that monotonicity (:mod:`econ.privacy.optimal_bayes`). Welfare: scipy SLSQP
  started from the best points of the family scans and the accuracy optimum; a local optimum,
  stated as such.
* Every DP-model solution from a solver is moved onto the participation constraints by a
  monotone fixed-point iteration (in :mod:`econ.privacy.optimal_dp`), and every
  returned protocol is checked: no client's gain may be below -:data:`GAIN_RTOL` times its
  utility magnitude :math:`|u_i| + |u_i^0|`, or no protocol is reported.
* Measured clients (:class:`~econ.privacy.empirical.Empirical`), protocol = noise multipliers
  :math:`z_i`. Accuracy: the server's model is the federated model, whose measured error
  grows with the aggregate noise :math:`\bar z`, so the optimum is the smallest feasible
  :math:`\bar z` of the existence scan, with :math:`z_i = \max(\ell_i(\bar z), c)`. Welfare:
  scipy SLSQP in :math:`\ln z` started from the best feasible points of the scan; a local
  optimum, stated as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize

from econ.outputs import plain
from econ.privacy.client_model import client_weights
from econ.privacy.empirical import Empirical
from econ.privacy.existence import SLACK_TOL, scan
from econ.privacy.families import scale_scan
from econ.privacy.models import Bayes, DPMean, Model
from econ.privacy.optimal_bayes import (
    bayes_accuracy,
    bayes_max_total,
    bayes_max_total_few,
    bayes_welfare,
)
from econ.privacy.optimal_dp import (
    FEW_CLIENTS,
    dp_mean_accuracy,
    dp_mean_cvxpy,
    dp_mean_max_accuracy,
    sgd_accuracy,
    sgd_cvxpy,
)
from econ.validation import choice, positive_int

Array = NDArray[np.float64]
OBJECTIVES = ("welfare", "accuracy")
METHODS = ("auto", "cvxpy")


@dataclass(frozen=True, eq=False)
class SharingProtocol:
    r"""A protocol β with everything the clients and the server see.

    ``exists`` is False when no non-trivial mutually beneficial protocol exists, or when the
    solver's point leaves a client short of its stand-alone utility by more than
    :data:`GAIN_RTOL` (``method`` then ends in "not certified" with the shortfall); then every
    client trains alone (β = 0, α = ∞) and ``utility`` equals ``utility_alone``.

    For measured clients (model ``"empirical"``) ``noise`` holds the DP-SGD noise multipliers
    :math:`z_i` (also in ``alpha``, the noise in units of the sensitivity, as α in the paper),
    ``beta`` the precision :math:`1/z_i^2` of the injected noise (Theorem 4.3's
    :math:`\beta_i = 1/(1/\rho + d\alpha_i^2)` with d = 1 and the data's own noise left out,
    which the measurement does not separate), ``epsilon`` = ``leak`` the measured ε, and
    ``accuracy`` each client's measured test accuracy of its end model;
    ``server_accuracy`` is their mean.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §3 (protocol p_α, Definition 3.2), §5 and §6.
    """

    model: str
    objective: str
    method: str
    exists: bool
    beta: Array
    alpha: Array
    epsilon: Array | None
    leak: Array
    utility: Array
    utility_alone: Array
    multipliers: Array | None = None
    noise: Array | None = None
    accuracy: Array | None = None

    @property
    def gamma(self) -> float:
        r"""Server accuracy :math:`\Gamma = \sum_i\beta_i`.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §6 (the server's accuracy depends only on Γ = Σβ_i).
        """
        return float(self.beta.sum())

    @property
    def gain(self) -> Array:
        """Per-client gain u_i - u_i^0 (>= 0 up to solver tolerance).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.3, Definition 3.2.
        """
        return self.utility - self.utility_alone

    @property
    def certified(self) -> bool:
        """Whether the solver certified the optimum (no reduced-accuracy stop in ``method``).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §5 (the optimal protocol as a convex program).
        """
        return "optimal_inaccurate" not in self.method

    @property
    def server_accuracy(self) -> float | None:
        """Mean measured accuracy of the clients' end models (measured clients only).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.4 (the server's objectives) and §7.
        """
        return None if self.accuracy is None else float(np.mean(self.accuracy))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: lists of floats, ``None`` for infinite noise (β = 0).

        ``status`` is ``optimal`` or ``inaccurate`` (:attr:`certified`, with ``status_why``).
        Beside a quantity that has no value, a ``*_why`` field says why: ``alpha_why`` and
        ``noise_why`` (infinite noise), ``epsilon_why`` (a model without DP) and
        ``multipliers_why``.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3 (protocol p_α; α = ∞ for β = 0).
        """
        out: dict[str, Any] = {
            "model": self.model,
            "objective": self.objective,
            "method": self.method,
            "status": "optimal" if self.certified else "inaccurate",
            **(
                {}
                if self.certified
                else {
                    "status_why": "the solver stopped at reduced accuracy (optimal_inaccurate): "
                    "the protocol is mutually beneficial to that accuracy, its optimality is "
                    "not certified"
                }
            ),
            "exists": self.exists,
            "alpha": self.alpha,
            "beta": self.beta,
            "epsilon": self.epsilon,
            "leak": self.leak,
            "utility": self.utility,
            "utility_alone": self.utility_alone,
            "gain": self.gain,
            "gamma": self.gamma,
            "multipliers": self.multipliers,
        }
        if self.noise is not None:
            out |= {
                "noise": self.noise,
                "accuracy": self.accuracy,
                "server_accuracy": self.server_accuracy,
            }
        infinite = "null where the noise is infinite: that client shares nothing"
        if np.any(np.isinf(self.alpha)):
            out["alpha_why"] = infinite
        if self.noise is not None and np.any(np.isinf(self.noise)):
            out["noise_why"] = infinite
        if self.epsilon is None:
            out["epsilon_why"] = "this model's privacy is a reconstruction error, not DP"
        if self.multipliers is None:
            out["multipliers_why"] = "only the convex program of a DP model gives multipliers"
        return plain(out)


def _protocol(
    model: Model,
    lam: Array,
    beta: Array | None,
    objective: str,
    method: str,
    multipliers: Array | None = None,
) -> SharingProtocol:
    alone = model.utility_alone(lam)
    if beta is None or not np.any(beta > 0):
        b = np.zeros_like(lam)
        eps = None if model.kappa(lam.size) is None else np.zeros_like(lam)
        leak = np.zeros_like(lam)
        return SharingProtocol(
            model.name,
            objective,
            method,
            False,
            b,
            np.full_like(lam, np.inf),
            eps,
            leak,
            alone,
            alone,
        )
    b = np.clip(beta, 0.0, model.rho(lam.size))
    utility, leak2 = model.evaluate(b, lam, "utility", "leak2")
    short = _participation_shortfall(utility, alone)
    if short > 0:
        note = f"; not certified: a client's gain is {-short:.3g} of its utility magnitude"
        return _protocol(model, lam, None, objective, method + note)
    return SharingProtocol(
        model.name,
        objective,
        method,
        True,
        b,
        model.alpha(b, lam.size),
        model.epsilon(b, lam.size),
        np.sqrt(leak2),
        utility,
        alone,
        multipliers,
    )


#: A returned protocol satisfies every participation constraint up to this tolerance,
#: relative to the client's utility magnitude: :math:`u_i - u_i^0 \ge -\text{GAIN_RTOL}
#: \cdot (|u_i| + |u_i^0|)`. A solver's point outside it is reported as no protocol.
GAIN_RTOL = 1e-6


def _participation_shortfall(utility: Array, alone: Array) -> float:
    """The worst relative violation of :data:`GAIN_RTOL` (0 when every client gains)."""
    with np.errstate(over="ignore"):  # utilities near the largest float: size inf, rel 0
        size = np.abs(utility) + np.abs(alone)
    gain = utility - alone
    if not np.all(np.isfinite(gain)):
        return float("inf")
    rel = np.where(size > 0, -gain / np.where(size > 0, size, 1.0), 0.0)
    worst = float(rel.max())
    return worst if worst > GAIN_RTOL else 0.0


# --------------------------------------------------------------------------------------------
# Measured clients: scan of the aggregate noise (accuracy), SLSQP from the scan (welfare)
# --------------------------------------------------------------------------------------------


def _empirical_protocol(
    model: Empirical, lam: Array, noise: Array | None, objective: str, method: str
) -> SharingProtocol:
    alone = model.utility_alone(lam)
    if noise is None:
        inf, zero = np.full_like(lam, np.inf), np.zeros_like(lam)
        return SharingProtocol(
            model.name,
            objective,
            method,
            False,
            zero,
            inf,
            zero,
            zero,
            alone,
            alone,
            noise=inf,
            accuracy=1 - np.asarray(model.error_alone),
        )
    eps = model.epsilon_at(noise)
    return SharingProtocol(
        model.name,
        objective,
        method,
        True,
        1 / noise**2,
        noise,
        eps,
        eps,
        model.utility(noise, lam),
        alone,
        noise=noise,
        accuracy=1 - np.sqrt(model.err2(noise, lam)),
    )


def _empirical_candidates(model: Empirical, lam: Array) -> tuple[Array, list[Array]]:
    """Feasible aggregate levels of the scan (ascending) and their filled protocols."""
    grid, floor, slack = scan(model, lam)
    ok = np.flatnonzero(slack >= -SLACK_TOL * model.noise_range[1])
    if ok.size == 0:
        return grid[ok], []
    return grid[ok], list(model.fill(floor[ok], grid[ok]))


def _empirical_accuracy(model: Empirical, lam: Array) -> tuple[Array | None, str]:
    method = (
        "scan of the aggregate noise on the measured levels and a 1025-point geometric grid: "
        "smallest feasible level"
    )
    _, candidates = _empirical_candidates(model, lam)
    if not candidates:
        return None, method
    return candidates[0], method


def _empirical_welfare(model: Empirical, lam: Array, nu: Array) -> tuple[Array | None, str]:
    method = (
        "non-convex: scipy SLSQP in ln z from the best feasible points of the aggregate-noise "
        "scan; a local optimum"
    )
    _, candidates = _empirical_candidates(model, lam)
    if not candidates:
        return None, method
    lo, hi = np.log(model.noise_range)

    def welfare(z: Array) -> float:
        return float(nu @ model.utility(z, lam))

    def inside(x: Array) -> Array:
        return np.exp(np.clip(x, lo, hi))

    ranked = sorted(candidates, key=welfare, reverse=True)
    best, best_value = ranked[0], welfare(ranked[0])
    for start in ranked[:3]:
        res = minimize(
            lambda x: -welfare(inside(x)),
            np.log(start),
            method="SLSQP",
            bounds=[(lo, hi)] * lam.size,
            constraints=[{"type": "ineq", "fun": lambda x: model.gain(inside(x), lam)}],
            options={"maxiter": 300, "ftol": 1e-12},
        )
        cand = inside(res.x)
        if model.gain(cand, lam).min() >= -1e-10 and welfare(cand) > best_value:
            best, best_value = cand, welfare(cand)
    return best, method


# --------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------


def optimal_protocol(
    model: Model | Empirical,
    lam: ArrayLike,
    objective: str = "welfare",
    nu: ArrayLike | None = None,
    method: str = "auto",
) -> SharingProtocol:
    r"""The optimal mutually beneficial protocol (Tsoy et al. 2024, sections 5-6).

    .. math::

        \max_{\beta \in [0,\rho]^N}\ \Gamma \quad\text{or}\quad \max\ \sum_i \nu_i u_i(\beta)
        \qquad \text{s.t. } u_i(\beta) \ge u_i^0 \ \forall i .

    Parameters
    ----------
    model
        :class:`DPMean`, :class:`DPSGD`, :class:`Bayes`, or measured clients
        (:class:`~econ.privacy.empirical.Empirical`: the protocol is one DP-SGD noise
        multiplier per client in the measured range).
    lam
        Accuracy weights λ_i >= 0, one per client.
    objective
        ``"welfare"`` or ``"accuracy"``.
    nu
        Server weights ν_i of the welfare objective (default all 1).
    method
        ``"auto"`` (exact 1-D for DP accuracy, cvxpy for DP welfare, scipy for Bayes) or
        ``"cvxpy"`` (force the convex program; DP models only).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §5 (optimal protocols for utility) and §6 (optimal protocols for
    accuracy).

    Examples
    --------
    The most accurate protocol for the five DP-mean clients of :class:`DPMean`'s example; every
    participation constraint binds:

    >>> from econ.privacy.models import DPMean
    >>> p = optimal_protocol(DPMean(), [0.1, 0.2, 0.3, 0.4, 0.5], "accuracy")
    >>> round(p.gamma, 4), p.beta.round(4).tolist()
    (0.4622, [0.038, 0.0695, 0.0962, 0.1192, 0.1392])
    """
    lam_ = client_weights(lam)
    choice("objective", objective, OBJECTIVES)
    choice("method", method, METHODS)
    nu_ = np.ones_like(lam_) if nu is None else client_weights(nu, "nu")
    if nu_.shape != lam_.shape:
        raise ValueError(f"nu must have one weight per client ({lam_.size}), got {nu_.size}")
    if isinstance(model, Empirical):
        if method == "cvxpy":
            raise ValueError("measured clients give no convex program; use method='auto'")
        noise, how = (
            _empirical_accuracy(model, lam_)
            if objective == "accuracy"
            else _empirical_welfare(model, lam_, nu_)
        )
        return _empirical_protocol(model, lam_, noise, objective, how)
    if isinstance(model, Bayes):
        if method == "cvxpy":
            raise ValueError("the Bayesian problems are not convex; use method='auto'")
        beta, how = (
            bayes_accuracy(model, lam_)
            if objective == "accuracy"
            else bayes_welfare(model, lam_, nu_)
        )
        return _protocol(model, lam_, beta, objective, how)
    if objective == "accuracy" and method == "auto":
        solver = dp_mean_accuracy if isinstance(model, DPMean) else sgd_accuracy
        beta, how = solver(model, lam_)  # type: ignore[arg-type]
        return _protocol(model, lam_, beta, objective, how)
    convex = dp_mean_cvxpy if isinstance(model, DPMean) else sgd_cvxpy
    beta, how, multipliers = convex(model, lam_, nu_, objective)  # type: ignore[arg-type]
    protocol = _protocol(model, lam_, beta, objective, how, multipliers)
    if beta is not None and not protocol.exists:
        # the solver's point missed certification: once more without the DPP re-solve, whose
        # canonicalisation scales the program differently
        beta, how, multipliers = convex(model, lam_, nu_, objective, constants=True)  # type: ignore[arg-type]
        protocol = _protocol(model, lam_, beta, objective, how, multipliers)
    return protocol


def max_accuracy_totals(model: DPMean | Bayes, lam_rows: ArrayLike) -> Array:
    r"""The largest Γ of a mutually beneficial protocol for each row of λ, one problem a row.

    Row k holds the accuracy weights of one problem's clients; its entry is the ``gamma`` of
    ``optimal_protocol(model, lam_rows[k], "accuracy")`` (0 where only the trivial protocol is
    mutually beneficial), computed for all rows together: the DP mean's Newton iterations
    (:func:`~econ.privacy.optimal_dp.dp_mean_max_accuracy`) and the Bayesian search's probes
    (:func:`~econ.privacy.optimal_bayes.bayes_max_total`) run over all rows at once. Bayesian
    rows of fewer than :data:`~econ.privacy.optimal_dp.FEW_CLIENTS` clients are searched one
    at a time in Python floats (:func:`~econ.privacy.optimal_bayes.bayes_max_total_few`),
    whose few scalar steps a row cost less than the arrays' rounds; the rows it leaves go to
    the arrays.

    Raises
    ------
    ValueError
        A model other than :class:`DPMean` or :class:`Bayes`, or ``lam_rows`` not a non-empty
        2-D array of finite weights >= 0.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 (the optimal Γ of Figure 1's draws).

    Examples
    --------
    >>> from econ.privacy.models import DPMean
    >>> max_accuracy_totals(DPMean(), [[0.1, 0.2, 0.3, 0.4, 0.5], [1e-6] * 5]).round(4).tolist()
    [0.4622, 0.0]
    """
    if not isinstance(model, DPMean | Bayes):
        raise ValueError(
            f"model must be DPMean or Bayes (the accuracy optima of Figure 1), got {type(model).__name__}"
        )
    try:
        rows = np.asarray(lam_rows, dtype=np.float64)
    except (TypeError, ValueError):
        rows = np.zeros(0)
    if rows.ndim != 2 or rows.size == 0:
        raise ValueError(
            f"lam_rows must be a non-empty 2-D array (one row of weights per problem), got {lam_rows!r}"
        )
    lam = client_weights(rows.ravel(), "lam_rows").reshape(rows.shape)
    size = int(rows.shape[-1])
    if isinstance(model, DPMean):
        zeta = model.zeta(lam.ravel()).reshape(lam.shape)
        return np.asarray(dp_mean_max_accuracy(zeta, model.rho(size)).sum(axis=1))
    rho = model.rho(size)
    if size >= FEW_CLIENTS:
        return bayes_max_total(lam, rho, model.tau)
    rho_, top = rho.tolist(), float(rho.sum())
    found = [bayes_max_total_few(row.tolist(), rho_, model.tau, top) for row in lam]
    out = np.array([0.0 if g is None else g for g in found])
    left = [k for k, g in enumerate(found) if g is None]
    if left:
        out[left] = bayes_max_total(lam[left], rho, model.tau)
    return out


def family_protocol(
    model: Model | Empirical, lam: ArrayLike, family: str, grid: int = 100
) -> SharingProtocol:
    """The protocol the authors' scale scan finds in ``family`` (the baseline of section 6).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 (the families of Figure 1, found by grid search).
    """
    if isinstance(model, Empirical):
        raise ValueError("the families of section 6 are defined for the built-in models only")
    lam_ = client_weights(lam)
    beta = scale_scan(model, lam_, family, positive_int("grid", grid))
    return _protocol(
        model, lam_, beta, "accuracy", f"grid scan of the {family} family ({grid} points)"
    )
