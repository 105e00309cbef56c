r"""Optimal protocols of the DP models (Tsoy et al. 2024, sections 5-6).

The exact 1-D solvers of the accuracy problems and the convex programs:

* Accuracy, DP mean: for fixed Γ client i's constraint is :math:`\beta_i \le \varphi_i(\Gamma)`
  (:func:`dp_mean_phi`), concave in Γ, so :math:`\Gamma_{\max}` is the largest root of
  :math:`\sum_i\varphi_i(\Gamma) = \Gamma`. Accuracy, DP SGD: the largest root of the concave
  F of Theorem 4.5.
* Welfare (and accuracy on request): convex programs in cvxpy (Clarabel), built once per
  (model, objective, N, ρ-ratios) with parameters for λ and ν (DPP) up to
  :data:`DPP_MAX_CLIENTS` clients.
* A solver's point is moved onto the participation constraints by a monotone fixed-point
  iteration. :func:`econ.privacy.optimal.optimal_protocol` dispatches here.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from econ.privacy.existence import sgd_f, sgd_f_max
from econ.privacy.models import DPSGD, DPMean
from econ.validation import shown

if TYPE_CHECKING:  # cvxpy loads with the convex programs that use it
    import cvxpy as cp

Array = NDArray[np.float64]


def _largest_feasible(feasible: Callable[[float], bool], lo: float, hi: float) -> float:
    """Bisect for the boundary between ``lo`` (feasible) and ``hi`` (not), to machine precision."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
    return lo


def dp_mean_phi(gamma_total: float, zeta: Array, rho: Array) -> Array:
    r""":math:`\varphi_i(\Gamma)`, the largest β_i client i accepts when the total is Γ.

    Appendix B.2's :math:`q_i \ge 0` solved for :math:`\beta_i`.

    Written as :math:`2\zeta\Gamma\rho/(\Gamma+\rho+\sqrt{(\Gamma+\rho)^2-4\zeta\Gamma\rho})` to avoid cancellation.

    References
    ----------
    N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
    Privacy-Sensitive Domains*, AISTATS 2024, Appendix B.2.

    Examples
    --------
    >>> import numpy as np
    >>> dp_mean_phi(0.5, np.array([0.2, 0.5]), np.array([1.0, 1.0])).round(4).tolist()
    [0.0699, 0.191]
    """
    s = gamma_total + rho
    return 2 * zeta * gamma_total * rho / (s + np.sqrt(s**2 - 4 * zeta * gamma_total * rho))


def dp_mean_accuracy(model: DPMean, lam: Array) -> tuple[Array | None, str]:
    r"""The most accurate mutually beneficial DP-mean protocol, and the method's note.

    :math:`\Gamma_{\max}` is the largest root of :math:`\sum_i\varphi_i(\Gamma) = \Gamma`
    (bisection) and :math:`\beta_i = \varphi_i(\Gamma_{\max})`; ``None`` when
    :math:`\sum_i\zeta_i \le 1`.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 and Appendix B.2 (Theorem 4.2's constraint solved for
    :math:`\beta_i`).
    """
    zeta, rho = model.zeta(lam), model.rho(lam.size)
    method = "exact 1-D: largest root of sum_i phi_i(Gamma) = Gamma (bisection)"
    if zeta.sum() <= 1:
        return None, method
    g = _largest_feasible(_phi_sum_covers(zeta, rho), 0.0, float(rho.sum()))
    return dp_mean_phi(g, zeta, rho), method


#: Below this many clients :func:`_phi_sum_covers` works in Python floats: numpy sums fewer
#: than 8 numbers one after the other, as Python's ``sum`` does, so the floats are the same.
_FEW_CLIENTS = 8


def _phi_sum_covers(zeta: Array, rho: Array) -> Callable[[float], bool]:
    r"""The bisection's test :math:`\sum_i \varphi_i(\Gamma) \ge \Gamma` (:func:`dp_mean_phi`).

    For a few clients each :math:`\varphi_i` is evaluated in Python floats with the operations
    of :func:`dp_mean_phi` in its order (a negative square root, possible only for a
    :math:`\zeta_i > 1`, is NaN there as in numpy): the same floats without numpy's cost
    per call, which dominates the about 60 steps of the bisection.
    """
    if zeta.size >= _FEW_CLIENTS:
        return lambda x: bool(dp_mean_phi(x, zeta, rho).sum() >= x)
    pairs = list(zip(zeta.tolist(), rho.tolist(), strict=True))

    def covers(x: float) -> bool:
        total = 0.0
        for z, r in pairs:
            s = x + r
            disc = s * s - 4 * z * x * r
            total += 2 * z * x * r / (s + (math.sqrt(disc) if disc >= 0 else math.nan))
        return total >= x

    return covers


def sgd_accuracy(model: DPSGD, lam: Array) -> tuple[Array | None, str]:
    r"""The most accurate mutually beneficial DP-SGD protocol, and the method's note.

    The largest root of the concave F of Theorem 4.5 (bisection above its maximiser), with
    :math:`\beta_i = \rho_i s_i/(1+s_i)`; ``None`` when :math:`\max F < 0`.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 and §4.2, Theorem 4.5.
    """
    psi, rho = model.psi(lam), model.rho(lam.size)
    r = rho / rho.mean()
    method = "exact 1-D: largest root of the concave F of Theorem 4.5 (bisection)"
    best, g_star = sgd_f_max(model, lam)
    if best < 0:
        return None, method
    g = _largest_feasible(lambda x: float(sgd_f(psi, r, x)) >= 0, g_star, float(r.sum()) + 1.0)
    s = psi * (1 - r / g)
    return rho * s / (1 + s), method


# --------------------------------------------------------------------------------------------
# Convex programs of the DP models, built once per shape with parameters (DPP)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Program:
    problem: cp.Problem
    variable: cp.Variable
    participation: cp.Constraint
    params: dict[str, cp.Parameter]


@functools.lru_cache(maxsize=16)
def _dp_mean_program(n_clients: int, ratios: bytes, objective: str) -> _Program:
    import cvxpy as cp

    # v_i = beta_i / rho_ref, r_i = rho_i / rho_ref; normalised gain g_i / (kappa_i^2 rho_i):
    #   a_i (1 - r_i z_i) - (y_i - 1),  z_i >= 1/(V - v_i + r_i),  y_i >= 1/(1 - v_i/r_i),
    # with a_i = lam_i/(kappa_i^2 rho_i^2). The epigraph variables z, y keep every parameter in
    # a linear term, so the DPP compilation stays O(N); the bounds are tight at the optimum.
    r = np.frombuffer(ratios)
    v = cp.Variable(n_clients, nonneg=True)
    total = cp.Variable()
    z, y = cp.Variable(n_clients), cp.Variable(n_clients)
    # Each participation row is divided by 1 + a_i (parameters c = a/(1+a), e = 1/(1+a)), so
    # that rows whose lambda_i differ by many orders of magnitude meet one solver tolerance.
    c = cp.Parameter(n_clients, nonneg=True, name="c")
    e = cp.Parameter(n_clients, nonneg=True, name="e")
    cones = [
        total == cp.sum(v),
        z >= cp.inv_pos(total - v + r),
        y >= cp.inv_pos(1 - cp.multiply(1 / r, v)),
    ]
    participation = c - cp.multiply(cp.multiply(c, r), z) - cp.multiply(e, y) + e >= 0
    params = {"c": c, "e": e}
    if objective == "accuracy":
        goal = cp.Maximize(total)
    else:
        params["wa"] = cp.Parameter(n_clients, nonneg=True, name="wa")
        params["w"] = cp.Parameter(n_clients, nonneg=True, name="w")
        goal = cp.Maximize(-cp.multiply(params["wa"], r) @ z - params["w"] @ y)
    problem = cp.Problem(goal, [participation, *cones])
    if not problem.is_dpp():
        raise RuntimeError("the DP-mean program must be DPP")
    return _Program(problem, v, participation, params)


@functools.lru_cache(maxsize=16)
def _sgd_program(n_clients: int, ratios: bytes, objective: str) -> _Program:
    import cvxpy as cp

    # t_i = beta_i / rho_i, G = sum r_i t_i = Gamma / rho_ref; normalised gain g_i/(kappa_i^2 d rho_i):
    #   psi_i - psi_i r_i q - (y_i - 1),  q >= 1/G,  y_i >= 1/(1 - t_i)   (epigraphs as above)
    r = np.frombuffer(ratios)
    t = cp.Variable(n_clients, nonneg=True)
    q, y = cp.Variable(), cp.Variable(n_clients)
    psi = cp.Parameter(n_clients, nonneg=True, name="psi")
    psi_r = cp.Parameter(n_clients, nonneg=True, name="psi_r")
    total = r @ t
    cones = [q >= cp.inv_pos(total), y >= cp.inv_pos(1 - t)]
    participation = psi - psi_r * q - y + 1 >= 0
    params = {"psi": psi, "psi_r": psi_r}
    if objective == "accuracy":
        goal = cp.Maximize(total)
    else:
        params["c"] = cp.Parameter(nonneg=True, name="c")
        params["w"] = cp.Parameter(n_clients, nonneg=True, name="w")
        goal = cp.Maximize(-params["c"] * q - params["w"] @ y)
    problem = cp.Problem(goal, [participation, *cones])
    if not problem.is_dpp():
        raise RuntimeError("the DP-SGD program must be DPP")
    return _Program(problem, t, participation, params)


_CLARABEL = {"solver": "CLARABEL", "tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}
#: Above this many clients the parameters are substituted as constants (``ignore_dpp``): the
#: DPP tensor compilation grows super-linearly (measured 54 s for one 10,000-client compile,
#: against 0.2 s without DPP), while below it a re-solve skips canonicalisation.
DPP_MAX_CLIENTS = 1000


def _solve(program: _Program, constants: bool = False) -> str | None:
    """Solve; the method note ("" or a reduced-accuracy remark), or ``None`` when no solution.

    With ``constants`` the parameters enter as constants (no DPP canonicalisation), as they
    always do above :data:`DPP_MAX_CLIENTS` clients.
    """
    import cvxpy as cp

    dpp = program.variable.size <= DPP_MAX_CLIENTS and not constants
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # cvxpy's "may be inaccurate": reported below
        try:
            program.problem.solve(**_CLARABEL, ignore_dpp=not dpp)
        except cp.SolverError:
            return None
    status = program.problem.status
    if status == cp.OPTIMAL:
        return ""
    return " (Clarabel: optimal_inaccurate)" if status == cp.OPTIMAL_INACCURATE else None


def _cvxpy_method(objective: str, n_clients: int, constants: bool = False) -> str:
    mode = (
        "DPP re-solve"
        if n_clients <= DPP_MAX_CLIENTS and not constants
        else "parameters as constants"
    )
    return f"cvxpy {objective} program (Clarabel, {mode})"


def dp_mean_cvxpy(
    model: DPMean, lam: Array, nu: Array, objective: str, constants: bool = False
) -> tuple[Array | None, str, Array | None]:
    """The DP-mean protocol of the convex program of ``objective``.

    Returns (β, the method's note, the participation multipliers in the objective's units); β is
    ``None`` when only the trivial protocol is feasible. ``constants`` solves with the
    parameters as constants (:func:`_solve`).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §5 (welfare) and §6 (accuracy); the constraint of eq. (1).
    """
    rho, kappa = model.rho(lam.size), model.kappa(lam.size)
    if model.zeta(lam).sum() <= 1:  # Theorem 4.2: no mutually beneficial protocol
        return None, _cvxpy_method(objective, lam.size, constants), None
    ref = float(rho.mean())
    prog = _dp_mean_program(lam.size, (rho / ref).tobytes(), objective)
    with np.errstate(over="ignore"):
        a = lam / (kappa * rho) ** 2
        scale_i = kappa**2 * rho  # gain_i = scale_i * normalised gain_i
        w = nu * scale_i
    if not np.all(np.isfinite(a) & np.isfinite(w)):
        raise ValueError(
            f"lam={shown(lam)} and nu={shown(nu)} give the weights lambda/(kappa^2 rho^2) = "
            f"{shown(a)} and nu kappa^2 rho = {shown(w)} of the convex program: beyond the floats"
        )
    prog.params["c"].value, prog.params["e"].value = a / (1 + a), 1 / (1 + a)
    if objective == "accuracy":
        scale = ref
    else:
        scale = float(w.max()) if w.max() > 0 else 1.0
        with np.errstate(over="ignore"):
            wa = w / scale * a
        if not np.all(np.isfinite(wa)):
            raise ValueError(
                f"lam={shown(lam)} and nu={shown(nu)} give welfare weights beyond the floats"
            )
        prog.params["w"].value, prog.params["wa"].value = w / scale, wa
    note = _solve(prog, constants)
    method = _cvxpy_method(objective, lam.size, constants) + (note or "")
    if note is None:
        return None, method, None
    v = np.asarray(prog.variable.value)
    if v.sum() <= 1e-7 * lam.size:  # the trivial protocol, up to solver tolerance
        return None, method, None
    multipliers = scale * np.asarray(prog.participation.dual_value) / (scale_i * (1 + a))
    return _dp_mean_repair(model, lam, np.clip(v * ref, 0.0, rho)), method, multipliers


def _dp_mean_repair(model: DPMean, lam: Array, beta: Array) -> Array:
    r"""The largest :math:`\beta' \le \beta` with every :math:`\beta'_i \le \varphi_i(\Gamma')`.

    A solver's point may miss a participation constraint by its tolerance. Since
    :math:`\varphi_i` increases in Γ, :math:`\beta \leftarrow \min(\beta, \varphi(\sum\beta))`
    decreases monotonically to the largest feasible point below :math:`\beta` (Knaster-Tarski),
    which moves β only by the size of the violation.
    """
    zeta, rho = model.zeta(lam), model.rho(lam.size)
    for _ in range(1000):
        cap = dp_mean_phi(float(beta.sum()), zeta, rho)
        if np.all(beta <= cap):
            break
        beta = np.minimum(beta, cap)
    return beta


def sgd_cvxpy(
    model: DPSGD, lam: Array, nu: Array, objective: str, constants: bool = False
) -> tuple[Array | None, str, Array | None]:
    """The DP-SGD protocol of the convex program of ``objective``, as :func:`dp_mean_cvxpy`.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §5 (welfare) and §6 (accuracy); the constraint of eq. (2).
    """
    method = _cvxpy_method(objective, lam.size, constants)
    if sgd_f_max(model, lam)[0] < 0:
        return None, method, None
    rho, kappa = model.rho(lam.size), model.kappa(lam.size)
    ref = float(rho.mean())
    r = rho / ref
    prog = _sgd_program(lam.size, r.tobytes(), objective)
    psi = model.psi(lam)
    prog.params["psi"].value, prog.params["psi_r"].value = psi, psi * r
    scale_i = kappa**2 * model.dim * rho
    if objective == "accuracy":
        scale = ref
    else:
        w = nu * scale_i
        scale = float(w.max()) if w.max() > 0 else 1.0
        prog.params["w"].value = w / scale
        prog.params["c"].value = float(np.sum(w / scale * psi * r))
    note = _solve(prog, constants)
    if note is None:
        return None, method, None
    multipliers = scale * np.asarray(prog.participation.dual_value) / scale_i
    beta = np.clip(np.asarray(prog.variable.value) * rho, 0.0, rho)
    return _sgd_repair(psi, rho, beta), method + note, multipliers


def _sgd_repair(psi: Array, rho: Array, beta: Array) -> Array:
    r"""The largest :math:`\beta' \le \beta` within Theorem 4.5's per-client caps at its own total.

    Every :math:`\beta'_i \le \rho_i s_i/(1+s_i)` with :math:`s_i = \psi_i(1 - \rho_i/\Gamma')`
    (Theorem 4.5's constraint solved for :math:`\beta_i`); the cap increases in Γ, so the iteration
    of :func:`_dp_mean_repair` applies.
    """
    for _ in range(1000):
        total = float(beta.sum())
        if total <= 0:
            break
        s = psi * (1 - rho / total)
        cap = np.maximum(rho * s / (1 + s), 0.0)
        if np.all(beta <= cap):
            break
        beta = np.minimum(beta, cap)
    return beta
