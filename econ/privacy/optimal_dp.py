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
from numpy.typing import ArrayLike, NDArray

from econ.privacy.existence import sgd_f, sgd_f_max
from econ.privacy.models import DPSGD, DPMean
from econ.validation import shown

if TYPE_CHECKING:  # cvxpy loads with the convex programs that use it
    import cvxpy as cp

Array = NDArray[np.float64]

#: Below this many clients one problem's 1-D solvers run in Python floats, whose operations
#: cost a fraction of numpy's per-call overhead on arrays this small; above, on arrays.
FEW_CLIENTS = 8
#: The offsets of the last steps down from Newton's limit: :math:`2^{-52}\,4^j`, j < 20.
_DOWN = np.ldexp(1.0, -52) * np.exp2(np.arange(0.0, 40.0, 2.0))


def _largest_feasible(feasible: Callable[[float], bool], lo: float, hi: float) -> float:
    """Bisect for the boundary between ``lo`` (feasible) and ``hi`` (not), to machine precision."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
    return lo


def largest_root_concave(
    h: Callable[[Array, NDArray[np.intp]], Array],
    slope: Callable[[Array, NDArray[np.intp]], Array],
    hi: Array,
    lo: Array,
) -> Array:
    r"""The largest root of each of several concave functions: the last float where :math:`h \ge 0`.

    ``h(x, rows)`` and ``slope(x, rows)`` give :math:`h_k(x_j)` and :math:`h_k'(x_j)` with
    ``k = rows[j]``; problem k has :math:`h_k < 0` somewhere in :math:`(\mathrm{lo}_k,
    \mathrm{hi}_k]` only above its largest root and :math:`h_k(\mathrm{lo}_k) \ge 0`. Newton's
    method from ``hi`` decreases monotonically to the largest root of a concave function (its
    tangent lies above it), quadratically near a simple root; each iterate then steps down by a
    few ulps to the last float where ``h`` is evaluated :math:`\ge 0`, or bisects down to
    ``lo`` where none is (a root of multiplicity two).

    References
    ----------
    J. M. Ortega and W. C. Rheinboldt, *Iterative Solution of Nonlinear Equations in Several
    Variables* (1970), chapter 13 (monotone convergence of Newton's method for convex
    functions).
    """
    g = np.array(hi, dtype=np.float64)
    lo_ = np.broadcast_to(np.asarray(lo, dtype=np.float64), g.shape)
    rows = np.arange(g.size)
    live = rows[h(g, rows) < 0]
    for _ in range(200):
        if live.size == 0:
            break
        value, d = h(g[live], live), slope(g[live], live)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            nxt = np.where((value < 0) & (d < 0), g[live] - value / d, g[live])
        nxt = np.maximum(nxt, lo_[live])
        moved = nxt < g[live]
        g[live[moved]] = nxt[moved]
        live = live[moved]
    for k in rows[h(g, rows) < 0]:
        cands = np.maximum(g[k] * (1 - _DOWN), lo_[k])
        ok = np.flatnonzero(h(cands, np.full(cands.size, k)) >= 0)
        if ok.size:
            g[k] = cands[ok[0]]
        else:
            one = np.array([k])

            def feasible(x: float, one: NDArray[np.intp] = one) -> bool:
                return bool(h(np.array([x]), one)[0] >= 0)

            g[k] = _largest_feasible(feasible, float(lo_[k]), g[k])
    return g


def dp_mean_phi(gamma_total: float | Array, zeta: Array, rho: Array) -> Array:
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


def dp_mean_max_accuracy(zeta: ArrayLike, rho: ArrayLike) -> Array:
    r"""The β of the most accurate mutually beneficial DP-mean protocol, one row per problem.

    Row k holds the clients' :math:`\zeta_i` of one problem (``rho`` broadcasts against
    ``zeta``); its :math:`\Gamma_{\max}` is the largest root of the concave
    :math:`H(\Gamma) = \sum_i\varphi_i(\Gamma) - \Gamma` (:func:`dp_mean_phi`), found by
    Newton's method from :math:`\Gamma = \sum_i\rho_i` (:func:`largest_root_concave`, with
    :math:`\varphi_i' = (\zeta_i\rho_i - \varphi_i)/(\Gamma + \rho_i - 2\varphi_i)`), and
    :math:`\beta_i = \varphi_i(\Gamma_{\max})`. A row with :math:`\sum_i\zeta_i \le 1` is all
    zeros (Theorem 4.2: only the trivial protocol).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6, Theorem 4.2 and Appendix B.2.

    Examples
    --------
    >>> import numpy as np
    >>> dp_mean_max_accuracy([[0.5, 0.6], [0.2, 0.3]], 1.0).round(4).tolist()
    [[0.0909, 0.1111], [0.0, 0.0]]
    """
    z_all = np.atleast_2d(np.asarray(zeta, dtype=np.float64))
    r_all = np.broadcast_to(np.asarray(rho, dtype=np.float64), z_all.shape)
    beta = np.zeros_like(z_all)
    exists = z_all.sum(axis=1) > 1
    z, r = z_all[exists], r_all[exists]

    def h(x: Array, rows: NDArray[np.intp]) -> Array:
        return np.asarray(dp_mean_phi(x[:, None], z[rows], r[rows]).sum(axis=1) - x)

    def slope(x: Array, rows: NDArray[np.intp]) -> Array:
        zr, rr = z[rows] * r[rows], r[rows]
        phi = dp_mean_phi(x[:, None], z[rows], rr)
        return np.asarray(((zr - phi) / (x[:, None] + rr - 2 * phi)).sum(axis=1) - 1)

    top = largest_root_concave(h, slope, r.sum(axis=1), np.zeros(z.shape[0]))
    beta[exists] = dp_mean_phi(top[:, None], z, r)
    return beta


def _dp_mean_excess(x: float, zeta: list[float], rho: list[float]) -> tuple[float, float]:
    r""":math:`H(\Gamma) = \sum_i\varphi_i(\Gamma) - \Gamma` and :math:`H'` in Python floats.

    The formulas of :func:`dp_mean_phi` and :func:`dp_mean_max_accuracy`, one client at a
    time; NaN where a square root's argument rounds below zero.
    """
    total, slope = 0.0, 0.0
    for z, r in zip(zeta, rho, strict=True):
        s = x + r
        disc = s * s - 4 * z * x * r
        phi = 2 * z * x * r / (s + math.sqrt(disc)) if disc >= 0 else math.nan
        total += phi
        slope += (z * r - phi) / (s - 2 * phi)
    return total - x, slope - 1


def dp_mean_max_accuracy_few(zeta: list[float], rho: list[float]) -> float | None:
    r""":math:`\Gamma_{\max}` of one DP-mean problem in Python floats (few clients).

    The iteration of :func:`largest_root_concave` on :math:`H = \sum_i\varphi_i - \Gamma`
    for one problem with :math:`\sum_i\zeta_i > 1`: Newton's method from
    :math:`\sum_i\rho_i`, then the same steps of a few ulps down, and bisection
    (:func:`_largest_feasible`) as the safeguard where they find no float with
    :math:`H \ge 0`. The same answer as :func:`dp_mean_max_accuracy` to rounding (sums
    taken in another order); ``None`` where an evaluation is not finite, for the array path
    to decide.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 and Appendix B.2; Ortega and Rheinboldt (1970), chapter
    13 (monotone Newton iteration for concave functions).
    """
    g = math.fsum(rho)
    h, d = _dp_mean_excess(g, zeta, rho)
    for _ in range(200):
        if not h < 0:
            break
        nxt = max(g - h / d, 0.0) if d < 0 else g
        if not nxt < g:
            break
        g = nxt
        h, d = _dp_mean_excess(g, zeta, rho)
    if not (math.isfinite(g) and math.isfinite(h)):
        return None
    if h >= 0:
        return g
    for down in _DOWN.tolist():
        cand = max(g * (1 - down), 0.0)
        if _dp_mean_excess(cand, zeta, rho)[0] >= 0:
            return cand
    return _largest_feasible(lambda x: _dp_mean_excess(x, zeta, rho)[0] >= 0, 0.0, g)


def dp_mean_accuracy(model: DPMean, lam: Array) -> tuple[Array | None, str]:
    r"""The most accurate mutually beneficial DP-mean protocol, and the method's note.

    :math:`\Gamma_{\max}` is the largest root of :math:`\sum_i\varphi_i(\Gamma) = \Gamma`
    (:func:`dp_mean_max_accuracy`) and :math:`\beta_i = \varphi_i(\Gamma_{\max})`; ``None`` when
    :math:`\sum_i\zeta_i \le 1`.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 and Appendix B.2 (Theorem 4.2's constraint solved for
    :math:`\beta_i`).
    """
    zeta, rho = model.zeta(lam), model.rho(lam.size)
    method = "exact 1-D: largest root of the concave sum_i phi_i(Gamma) - Gamma (Newton from above)"
    if zeta.sum() <= 1:
        return None, method
    if lam.size < FEW_CLIENTS:  # Python floats (dp_mean_max_accuracy_few)
        top = dp_mean_max_accuracy_few(zeta.tolist(), rho.tolist())
        if top is not None:
            return np.asarray(dp_mean_phi(top, zeta, rho)), method
    return dp_mean_max_accuracy(zeta, rho)[0], method


def sgd_accuracy(model: DPSGD, lam: Array) -> tuple[Array | None, str]:
    r"""The most accurate mutually beneficial DP-SGD protocol, and the method's note.

    The largest root of the concave F of Theorem 4.5 (Newton from above its maximiser,
    :func:`largest_root_concave`), with :math:`\beta_i = \rho_i s_i/(1+s_i)`; ``None`` when
    :math:`\max F < 0`.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 and §4.2, Theorem 4.5.
    """
    psi, rho = model.psi(lam), model.rho(lam.size)
    r = rho / rho.mean()
    method = "exact 1-D: largest root of the concave F of Theorem 4.5 (Newton from above)"
    best, g_star = sgd_f_max(model, lam)
    if best < 0:
        return None, method

    def h(x: Array, rows: NDArray[np.intp]) -> Array:
        return sgd_f(psi, r, x)

    def slope(x: Array, rows: NDArray[np.intp]) -> Array:
        s = psi * (1 - r / x[:, None])
        return np.asarray(np.sum(psi * r**2 / (x[:, None] * (1 + s)) ** 2, axis=1) - 1)

    g = float(largest_root_concave(h, slope, np.array([r.sum() + 1.0]), np.array([g_star]))[0])
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
