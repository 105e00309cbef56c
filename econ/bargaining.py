r"""Nash bargaining: a general two-player solver and the duopoly's closed form.

The Nash bargaining solution (Nash 1950; Werner 2024, ch. 3, section 3.4) maximises the Nash
product over the *individually rational* part of the feasible set,

.. math::

    \max_x \; (u_1(x) - d_1)(u_2(x) - d_2) \quad \text{s.t.} \quad u_1(x) \ge d_1,\; u_2(x) \ge d_2 .

The restriction matters: the product is also positive where *both* factors are negative, and
an unrestricted maximisation picks such points (spec ch3, section 6: wrong in 1,237 of 3,600
grid cases; the authors' bounded search in 78 of them).

For the duopoly, with disagreement point :math:`(q_{l,0}, q_{h,0})` and maximal quality
:math:`Q`, Proposition 2 gives :math:`q_h^* = Q`, and homogeneity reduces the problem to the
ratio :math:`\rho = q_l/q_h`:
:math:`N(\rho Q, Q) = Q^2 (u_l(\rho) - A)(u_h(\rho) - H)` with :math:`A = U_{l,0}/Q`,
:math:`H = U_{h,0}/Q`. Its stationary points are the roots of the cubic

.. math::

    (4 + 7H + 4A)\rho^3 + (32 - 60H - 24A)\rho^2 + (144H - 52)\rho + (16 - 64H + 128A) = 0,

which is derived below from :data:`econ.duopoly.U_L` and :data:`econ.duopoly.U_H` (and with
:math:`A = \rho_0 H / 4` is the thesis's eq. 3.18). :math:`\rho^*` is the cubic's root inside
the feasible interval :math:`[\rho_a, \min(\rho_b, \rho_U)]`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize, minimize_scalar

from econ import caps, duopoly
from econ.propositions import (
    Verdict,
    all_zero,
    checked,
    is_zero,
    on_points,
    proposition,
    proved,
    refuted,
)
from econ.validation import in_interval, positive_int

rho = duopoly.rho
A, H = sp.symbols("A H", nonnegative=True)

#: Nash product per Q^2 along q_h = Q, as a function of rho (eq. 3.17 generalised).
NASH_RHO = (duopoly.u_l_rho - A) * (duopoly.u_h_rho - H)
#: The stationarity cubic: numerator of dN/drho, i.e. (4 - rho)^5 dN/drho.
CUBIC = sp.Poly(sp.expand(sp.cancel(sp.diff(NASH_RHO, rho) * (4 - rho) ** 5)), rho)
_CUBIC_COEFFS = sp.lambdify((A, H), CUBIC.all_coeffs(), modules="numpy")

#: The limit of rho* when the disagreement revenues vanish: root of rho^2 + 9 rho - 4.
RHO_INF_EXACT = (sp.sqrt(97) - 9) / 2
RHO_INF = float(RHO_INF_EXACT)


@dataclass(frozen=True, slots=True)
class DuopolyNashSolution:
    """The Nash bargaining solution of the duopoly for each starting point.

    Attributes
    ----------
    rho_star, q_l_star, q_h_star
        Optimal ratio and qualities; :math:`q_h^* = Q` (Proposition 2).
    nash_product
        :math:`N(q_l^*, q_h^*)`.
    U_l_star, U_h_star
        The revenues at the solution.
    rho_low, rho_high
        The individually rational interval of ratios at :math:`q_h = Q`.
    """

    rho_star: NDArray[np.float64]
    q_l_star: NDArray[np.float64]
    q_h_star: NDArray[np.float64]
    nash_product: NDArray[np.float64]
    U_l_star: NDArray[np.float64]
    U_h_star: NDArray[np.float64]
    rho_low: NDArray[np.float64]
    rho_high: NDArray[np.float64]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


def _plain(v: NDArray[np.float64]) -> Any:
    return v.item() if v.ndim == 0 else v.tolist()


def nash_product(
    q_l: ArrayLike, q_h: ArrayLike, q_l0: ArrayLike, q_h0: ArrayLike
) -> NDArray[np.float64]:
    r""":math:`N = (U_l(q_l, q_h) - U_{l,0})(U_h(q_l, q_h) - U_{h,0})` (section 3.4, D9)."""
    ul, uh = duopoly.revenues(q_l, q_h)
    ul0, uh0 = duopoly.revenues(q_l0, q_h0)
    return (ul - ul0) * (uh - uh0)


def feasible_interval(
    q_l0: ArrayLike, q_h0: ArrayLike, q_max: ArrayLike = 1.0
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Ratios :math:`\rho` at :math:`q_h = Q` where neither firm is worse off than at the start.

    :math:`U_l \ge U_{l,0}` on :math:`[\rho_a, \rho_b]`,
    :math:`\rho_{a,b} = ((1 + 8A) \mp \sqrt{1 - 48A}) / (2(1 + A))`, and :math:`U_h \ge U_{h,0}`
    for :math:`\rho \le \rho_U = u_h^{-1}(H)`. The interval always contains
    :math:`q_{l,0}/Q`.
    """
    a_, h_, _ = _disagreement(q_l0, q_h0, q_max)
    return _interval(a_, h_)


def duopoly_nash_solution(
    q_l0: ArrayLike, q_h0: ArrayLike, q_max: ArrayLike = 1.0
) -> DuopolyNashSolution:
    r"""Nash bargaining solution of the quality duopoly, vectorised over starting points.

    Parameters
    ----------
    q_l0, q_h0
        The disagreement point: qualities before collaboration, ``0 <= q_l0 <= q_h0``.
    q_max
        :math:`Q = \max_x q(x)`, the best quality collaboration can reach (``q_h0 <= Q <= 1``).

    Notes
    -----
    :math:`\rho^*` is the root of :data:`CUBIC` inside the feasible interval. Every cubic is
    solved in closed form, vectorised: the middle of its three real roots (which is
    :math:`\rho^*` on every grid we ran) for all points at once, and all roots, with a
    bounded scalar search behind them, only where that middle root is not feasible.
    """
    a_, h_, q = _disagreement(q_l0, q_h0, q_max)
    lo, hi = _interval(a_, h_)
    monic = _monic_cubic(a_, h_)
    best = _middle_root(*monic)
    settled = (best >= lo - 1e-12) & (best <= hi + 1e-12)
    best = np.clip(best, lo, hi)
    rest = np.flatnonzero(~settled.ravel())
    if rest.size:
        best.flat[rest] = _best_rational_root(*(v.ravel()[rest] for v in (a_, h_, lo, hi, *monic)))
    arrays = (
        best,
        best * q,
        q,
        q**2 * _nash_rho(best, a_, h_),
        q * duopoly.u_l(best),
        q * duopoly.u_h(best),
        lo,
        hi,
    )
    return DuopolyNashSolution(*(np.array(v, dtype=np.float64) for v in arrays))


def _disagreement(q_l0: ArrayLike, q_h0: ArrayLike, q_max: ArrayLike):
    ql0 = in_interval("q_l0", q_l0, 0.0, 1.0)
    qh0 = in_interval("q_h0", q_h0, 0.0, 1.0)
    q = in_interval("q_max", q_max, 0.0, 1.0, low_open=True)
    ql0, qh0, q = np.broadcast_arrays(ql0, qh0, q)
    if np.any(ql0 > qh0):
        raise ValueError("q_l0 must not exceed q_h0")
    if np.any(qh0 > q):
        raise ValueError("q_h0 must not exceed q_max (Q is the best reachable quality)")
    ul0, uh0 = duopoly.revenues(ql0, qh0)
    return ul0 / q, uh0 / q, q.astype(np.float64)


def _interval(a_: NDArray, h_: NDArray) -> tuple[NDArray, NDArray]:
    disc = np.sqrt(np.maximum(1.0 - 48.0 * a_, 0.0))
    rho_a = ((1 + 8 * a_) - disc) / (2 * (1 + a_))
    rho_b = ((1 + 8 * a_) + disc) / (2 * (1 + a_))
    rho_u = duopoly.u_h_inverse(np.minimum(h_, 0.25))
    return rho_a, np.maximum(np.minimum(rho_b, rho_u), rho_a)


def _monic_cubic(a_: NDArray, h_: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """Coefficients (b2, b1, b0) of the stationarity cubic made monic: x^3 + b2 x^2 + b1 x + b0."""
    c3, c2, c1, c0 = (np.asarray(c, dtype=np.float64) for c in _CUBIC_COEFFS(a_, h_))
    return (
        np.broadcast_to(c2 / c3, a_.shape),
        np.broadcast_to(c1 / c3, a_.shape),
        np.broadcast_to(c0 / c3, a_.shape),
    )


def _depressed(b2: NDArray, b1: NDArray, b0: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """``(shift, p, q)`` with x = t - shift turning the cubic into t^3 + p t + q.

    Cubes are written as products: numpy's ``x**3`` goes through ``pow()``, which is two
    orders of magnitude slower on these arrays.
    """
    shift = b2 / 3
    return shift, b1 - b2 * shift, 2 * shift * shift * shift - shift * b1 + b0


def _newton(x: NDArray, b2: NDArray, b1: NDArray, b0: NDArray, steps: int = 2) -> NDArray:
    for _ in range(steps):
        value = ((x + b2) * x + b1) * x + b0
        slope = (3 * x + 2 * b2) * x + b1
        x = np.where(slope != 0, x - value / np.where(slope != 0, slope, 1.0), x)
    return x


def _middle_root(b2: NDArray, b1: NDArray, b0: NDArray) -> NDArray:
    """The middle of three real roots (trigonometric form), NaN where only one root is real.

    On every grid we ran the cubic has three real roots, a negative one, rho* and a larger
    infeasible one (spec ch3 section 6), so this is the one root worth computing everywhere.
    """
    shift, p, q = _depressed(b2, b1, b0)
    three = 4 * p * p * p + 27 * q * q < 0
    with np.errstate(invalid="ignore", divide="ignore"):
        m = 2 * np.sqrt(np.where(three, -p / 3, 1.0))
        angle = np.arccos(np.clip(3 * q / (p * m), -1, 1)) / 3
    middle = m * np.cos(angle - 2 * np.pi / 3) - shift  # angle in [0, pi/3]: k = 1 of the three
    return np.where(three, _newton(middle, b2, b1, b0), np.nan)


def _all_roots(b2: NDArray, b1: NDArray, b0: NDArray) -> NDArray:
    """All real roots of each cubic (NaN for complex ones), shape (n, 3): the slow path."""
    shift, p, q = _depressed(b2, b1, b0)
    three = 4 * p * p * p + 27 * q * q < 0
    with np.errstate(invalid="ignore", divide="ignore"):
        m = 2 * np.sqrt(np.where(three, -p / 3, 1.0))
        angle = np.arccos(np.clip(3 * q / (p * m), -1, 1)) / 3
        disc = np.sqrt(np.where(three, 0.0, q * q / 4 + p * p * p / 27))
    trig = m[:, None] * np.cos(angle[:, None] - 2 * np.pi * np.arange(3) / 3)
    cardano = np.cbrt(-q / 2 + disc) + np.cbrt(-q / 2 - disc)
    single = np.stack(
        [cardano, np.full_like(cardano, np.nan), np.full_like(cardano, np.nan)], axis=-1
    )
    roots = np.where(three[:, None], trig, single) - shift[:, None]
    return _newton(roots, b2[:, None], b1[:, None], b0[:, None])


def _best_rational_root(
    a_: NDArray, h_: NDArray, lo: NDArray, hi: NDArray, b2: NDArray, b1: NDArray, b0: NDArray
) -> NDArray:
    """The best root inside the rational interval; a bounded search where none lies inside.

    The Nash product is 0 at both ends of the interval, so an interior stationary point is
    the maximum; without one the interval is (numerically) a single point.
    """
    roots = _all_roots(b2, b1, b0)
    inside = (roots >= lo[:, None] - 1e-12) & (roots <= hi[:, None] + 1e-12)
    roots = np.clip(roots, lo[:, None], hi[:, None])
    value = np.where(inside, _nash_rho(roots, a_[:, None], h_[:, None]), -np.inf)
    best = np.take_along_axis(roots, np.argmax(value, axis=-1)[:, None], axis=-1)[:, 0]
    for i in np.flatnonzero(~np.isfinite(value.max(axis=-1))):
        best[i] = _bounded_argmax(float(a_[i]), float(h_[i]), float(lo[i]), float(hi[i]))
    return best


def _nash_rho(r: ArrayLike, a_: ArrayLike, h_: ArrayLike) -> NDArray[np.float64]:
    r, a_, h_ = (np.asarray(v, dtype=np.float64) for v in (r, a_, h_))
    return np.asarray((duopoly.u_l(r) - a_) * (duopoly.u_h(r) - h_), dtype=np.float64)


def _bounded_argmax(a_: float, h_: float, lo: float, hi: float) -> float:
    if hi <= lo:
        return lo
    res = minimize_scalar(
        lambda r: -float(_nash_rho(np.float64(r), a_, h_)), bounds=(lo, hi), method="bounded"
    )
    return float(res.x)


# --------------------------------------------------------------------------------------------
# The general two-player solver
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BargainingSolution:
    """Nash bargaining solution of a parametrised two-player problem."""

    x: NDArray[np.float64]
    utilities: tuple[float, float]
    nash_product: float
    disagreement: tuple[float, float]


def nash_bargaining(
    u1: Callable[[NDArray[np.float64]], float],
    u2: Callable[[NDArray[np.float64]], float],
    bounds: Sequence[tuple[float, float]],
    disagreement: tuple[float, float],
    *,
    grid: int = 201,
) -> BargainingSolution:
    r"""Maximise :math:`(u_1(x) - d_1)(u_2(x) - d_2)` over the individually rational part of a box.

    Parameters
    ----------
    u1, u2
        Utilities of the two players as functions of the parameter vector ``x``.
    bounds
        ``[(low, high), ...]``: the feasible set is this box (1 to 3 dimensions).
    disagreement
        :math:`(d_1, d_2)`, what each player gets without agreement.
    grid
        Points per dimension of the search grid that seeds the local refinement.

    Notes
    -----
    A grid over the box finds the best individually rational point (``u_i >= d_i``), and
    SLSQP refines it with the two rationality constraints. Without a rational grid point other
    than ones giving a zero product, the best grid point is returned as is.
    """
    lows = np.array([lo for lo, _ in bounds], dtype=np.float64)
    highs = np.array([hi for _, hi in bounds], dtype=np.float64)
    if lows.size == 0 or lows.size > 3:
        raise ValueError(f"bounds must give 1 to 3 dimensions, got {lows.size}")
    if np.any(highs < lows):
        raise ValueError(f"bounds must have low <= high, got {list(bounds)}")
    grid = positive_int("grid", grid)
    d1, d2 = (float(v) for v in disagreement)
    axes = [np.linspace(lo, hi, grid) for lo, hi in zip(lows, highs, strict=True)]
    points = np.stack([m.ravel() for m in np.meshgrid(*axes, indexing="ij")], axis=-1)
    g1 = np.array([u1(p) for p in points]) - d1
    g2 = np.array([u2(p) for p in points]) - d2
    rational = (g1 >= 0) & (g2 >= 0)
    if not rational.any():
        raise ValueError("no point of the feasible set is individually rational for both players")
    start = points[np.argmax(np.where(rational, g1 * g2, -np.inf))]
    res = minimize(
        lambda x: -(u1(x) - d1) * (u2(x) - d2),
        start,
        method="SLSQP",
        bounds=list(zip(lows, highs, strict=True)),
        constraints=[
            {"type": "ineq", "fun": lambda x: u1(x) - d1},
            {"type": "ineq", "fun": lambda x: u2(x) - d2},
        ],
        options={
            "ftol": 1e-15,
            "maxiter": 1000,
        },  # Nash products are small: tolerances are absolute
    )
    candidates = [start, np.clip(res.x, lows, highs)]
    scores = [
        (u1(x) - d1) * (u2(x) - d2) if (u1(x) >= d1 - 1e-12 and u2(x) >= d2 - 1e-12) else -np.inf
        for x in candidates
    ]
    x = candidates[int(np.argmax(scores))]
    return BargainingSolution(
        x=x,
        utilities=(float(u1(x)), float(u2(x))),
        nash_product=float(max(scores)),
        disagreement=(d1, d2),
    )


# --------------------------------------------------------------------------------------------
# Propositions (Werner 2024, ch. 3, sections 3.4-3.5; spec ch3 sections 6, 8, 9, 12)
# --------------------------------------------------------------------------------------------


_SRC = "Werner (2024), ch. 3"


@functools.cache
def _grid_solution(n: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Starting grid and its rho*, shared by the checks that sweep it."""
    ql0, qh0 = _start_grid(n)
    return ql0, qh0, duopoly_nash_solution(ql0, qh0).rho_star


def _start_grid(n: int = 60) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Starting points 0 <= q_l0 < q_h0 <= 1 on a grid over (r = q_h0, rho_0)."""
    r, rho0 = np.meshgrid(np.linspace(0.02, 0.99, n), np.linspace(0.0, 0.98, n), indexing="ij")
    return (rho0 * r).ravel(), r.ravel()


@proposition(
    "thesis.ch3.prop2",
    source=f"{_SRC}, Proposition 2",
    statement="the Nash bargaining q_h* is the maximal quality Q: dN/dq_h >= 0 on the individually rational set",
)
def _prop2() -> Verdict:
    ul0, uh0 = sp.symbols("U_l0 U_h0")
    n = (duopoly.U_L - ul0) * (duopoly.U_H - uh0)
    product_rule = is_zero(
        sp.diff(n, duopoly.q_h)
        - (
            sp.diff(duopoly.U_L, duopoly.q_h) * (duopoly.U_H - uh0)
            + (duopoly.U_L - ul0) * sp.diff(duopoly.U_H, duopoly.q_h)
        ),
        "dN/dq_h = dU_l/dq_h (U_h - U_h0) + (U_l - U_l0) dU_h/dq_h",
    )
    if not product_rule.holds:
        return product_rule
    return proved(
        "dN/dq_h = dU_l/dq_h (U_h - U_h0) + (U_l - U_l0) dU_h/dq_h: every factor is >= 0 on the rational set "
        "(Proposition 1.1 and 1.3 for the derivatives)"
    )


@proposition(
    "thesis.ch3.nash.cubic",
    source=f"{_SRC}, eqs. (3.17)-(3.18); spec ch3 C11",
    statement="the stationary points of N(rho Q, Q) are the roots of (4+7H+4A)rho^3 + (32-60H-24A)rho^2 + (144H-52)rho + (16-64H+128A)",
)
def _nash_cubic() -> Verdict:
    printed = (
        (4 + 7 * H + 4 * A) * rho**3
        + (32 - 60 * H - 24 * A) * rho**2
        + (144 * H - 52) * rho
        + (16 - 64 * H + 128 * A)
    )
    return is_zero(CUBIC.as_expr() - printed, "(4 - rho)^5 dN/drho - cubic")


@proposition(
    "thesis.ch3.eq3.18",
    source=f"{_SRC}, eq. (3.18) (Q = 1, U_l0 = rho_0 U_h0/4 used silently; spec ch3 typo 21)",
    statement="(7U_h0 + U_h0 rho_0 + 4) q_l^3 + (-60U_h0 - 6U_h0 rho_0 + 32) q_l^2 + (144U_h0 - 52) q_l + (-64U_h0 + 32U_h0 rho_0 + 16) = 0",
)
def _eq318() -> Verdict:
    rho0, uh0 = sp.symbols("rho_0 U_h0", nonnegative=True)
    printed = (
        (7 * uh0 + uh0 * rho0 + 4) * rho**3
        + (-60 * uh0 - 6 * uh0 * rho0 + 32) * rho**2
        + (144 * uh0 - 52) * rho
        + (-64 * uh0 + 32 * uh0 * rho0 + 16)
    )
    return is_zero(
        CUBIC.as_expr().subs({A: rho0 * uh0 / 4, H: uh0}) - printed,
        "cubic with A = rho_0 H/4, H = U_h0 minus (3.18)",
    )


@proposition(
    "thesis.ch3.nash.rho_inf",
    source="spec ch3 section 6, C13 [NEW]",
    statement="with vanishing disagreement revenues the cubic is 4(rho-1)(rho^2+9rho-4), so rho* -> (sqrt(97)-9)/2",
)
def _rho_inf() -> Verdict:
    limit = all_zero(
        [
            (
                CUBIC.as_expr().subs({A: 0, H: 0}) - 4 * (rho - 1) * (rho**2 + 9 * rho - 4),
                "H = A = 0 cubic",
            ),
            ((rho**2 + 9 * rho - 4).subs(rho, RHO_INF_EXACT), "root"),
        ],
        "limit cubic",
    )
    if not limit.holds:
        return limit
    got = float(duopoly_nash_solution(0.0, 1e-9).rho_star)
    if abs(got - RHO_INF) > 1e-6:
        return refuted("the solver does not approach rho_inf", {"q_h0": 1e-9, "rho_star": got})
    return proved(
        f"cubic at A = H = 0 is 4(rho-1)(rho^2+9rho-4); rho_inf = (sqrt(97)-9)/2 = {RHO_INF:.15f}"
    )


@proposition(
    "thesis.ch3.nash.unconstrained",
    source="authors' code, minimize_scalar(bounds=(0, 1)) without rationality constraints (spec ch3 item 22)",
    statement="as computed: rho* = argmax over (0, 1) of (u_l - A)(u_h - H), without restricting to u_l >= A, u_h >= H",
    holds=False,
)
def _nash_unconstrained() -> Verdict:
    ql0, qh0 = 0.49, 0.88
    sol = duopoly_nash_solution(ql0, qh0)
    a_, h_, _ = _disagreement(ql0, qh0, 1.0)
    res = minimize_scalar(
        lambda r: -float(_nash_rho(np.float64(r), a_, h_)), bounds=(0, 1), method="bounded"
    )
    if abs(res.x - sol.rho_star) > 1e-3:
        return refuted(
            "the bounded search lands where both factors are negative",
            {
                "q_l0": ql0,
                "q_h0": qh0,
                "unconstrained_rho": float(res.x),
                "rho_star": float(sol.rho_star),
                "N_star": float(sol.nash_product),
            },
        )
    return checked("unconstrained search agrees here", 1)


@proposition(
    "thesis.ch3.nash.unconstrained.corrected",
    source="spec ch3 section 6 and C15",
    statement="rho* is the cubic root inside the individually rational interval, and no rational grid point beats it",
)
def _nash_constrained() -> Verdict:
    ql0, qh0 = _start_grid(30)
    sol = duopoly_nash_solution(ql0, qh0)
    grid = np.linspace(0, 1, 4001)
    a_, h_, _ = _disagreement(ql0, qh0, 1.0)
    ul, uh = duopoly.u_l(grid)[None, :], duopoly.u_h(grid)[None, :]
    rational = (ul >= a_[:, None]) & (uh >= h_[:, None])
    best_grid = np.max(np.where(rational, (ul - a_[:, None]) * (uh - h_[:, None]), -np.inf), axis=1)
    excess = best_grid - sol.nash_product
    inside = (sol.rho_star >= sol.rho_low - 1e-12) & (sol.rho_star <= sol.rho_high + 1e-12)
    if np.any(excess > 1e-15) or not np.all(inside):
        i = int(np.argmax(excess))
        return refuted(
            "a rational grid point beats the solver",
            {"q_l0": ql0[i], "q_h0": qh0[i], "excess": excess[i]},
        )
    sample = duopoly_nash_solution(0.49, 0.88)
    if abs(float(sample.rho_star) - 0.489588070784) > 1e-9:
        return refuted("C15 value differs", {"rho_star": float(sample.rho_star)})
    return checked(
        "rho* is feasible and beats every rational point of a 4001-point grid; (0.49, 0.88) gives rho* = 0.489588070784",
        ql0.size,
    )


@proposition(
    "thesis.ch3.lemma25",
    source=f"{_SRC}, Lemma 25 (checked with graphing software, Fig. 3.8)",
    statement="for all rho_0 with rho_0 <= rho*, rho* <= 0.43",
)
def _lemma25() -> Verdict:
    ql0, qh0, r = _grid_solution(150)
    below = ql0 / qh0 <= r
    top = float(r[below].max())
    if top > 0.43:
        return refuted("rho* above 0.43", {"rho_star": top})
    return checked(
        f"max rho* over starts with rho_0 <= rho* is {top:.6f} <= 0.43", int(below.sum())
    )


@proposition(
    "thesis.ch3.lemma25.sharp",
    source="spec ch3 section 6, C16 [NEW]",
    statement="rho* lies between rho_0 and rho_inf = (sqrt(97)-9)/2 = 0.424429; so rho_0 <= rho* iff rho_0 <= rho_inf, and then rho* < rho_inf",
)
def _lemma25_sharp() -> Verdict:
    ql0, qh0, r = _grid_solution(150)
    rho0 = ql0 / qh0
    between = (np.minimum(rho0, RHO_INF) - 1e-12 <= r) & (r <= np.maximum(rho0, RHO_INF) + 1e-12)
    if not np.all(between):
        i = int(np.argmin(between))
        return refuted(
            "rho* outside [rho_0, rho_inf]", {"q_l0": ql0[i], "q_h0": qh0[i], "rho_star": r[i]}
        )
    return checked(
        f"rho* between rho_0 and rho_inf; max rho* with rho_0 <= rho* is {r[rho0 <= r].max():.6f}",
        r.size,
    )


@proposition(
    "thesis.ch3.prop4",
    source=f"{_SRC}, Proposition 4",
    statement="if q_l0 > q_l*, Algorithm 5 cannot converge to (q_l*, q_h*): qualities never fall and the low firm never moves",
)
def _prop4() -> Verdict:
    sol = duopoly_nash_solution(0.6, 0.9)
    path = _simulate(0.6, 0.9, np.linspace(0.9, 1.0, 200))
    if not (abs(float(sol.q_l_star) - 0.505759581115) < 1e-9 and np.all(path == 0.6)):
        return refuted(
            "the low firm moved or q_l* differs",
            {"q_l_star": float(sol.q_l_star), "q_l_final": float(path[-1])},
        )
    return checked(
        "start (0.6, 0.9), Q = 1: q_l* = 0.505760 < 0.6 and the low firm stays at 0.6 for 200 rounds",
        200,
    )


def _simulate(
    ql0: ArrayLike,
    qh0: ArrayLike,
    q_h_path: ArrayLike,
    q_max: float = 1.0,
    cap_mode: str = "recommended",
) -> NDArray[np.float64]:
    """Low-firm qualities of Algorithm 5 (oracle inner mode) along given high-firm paths.

    ``q_h_path`` has one row per round (and one column per start when ``ql0`` is an array).
    """
    sol = duopoly_nash_solution(ql0, qh0, q_max)
    path = np.asarray(q_h_path, dtype=np.float64)
    out = np.empty_like(path)
    ql, prev = np.asarray(ql0, dtype=np.float64), np.asarray(qh0, dtype=np.float64)
    for t, qh in enumerate(path):
        ql = caps.next_low_quality(
            ql, prev, qh, rho_star=sol.rho_star, q_l_star=sol.q_l_star, cap_mode=cap_mode
        )
        out[t], prev = ql, qh
    return out


def _toy_high_path(
    qh0: float, schedule: str, rounds: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """High-firm qualities under gradient descent on the convex toy of spec ch3 C23.

    f(x) = (||x||^2 + 1)/64, so q = 1 - f, Q = 63/64, grad f = x/32, L = 1/32. ``schedule`` is
    ``"paced"`` (Proposition 5's alpha = min{(b~ - 1) q / ||g||^2, 1/L}) or ``"const"`` (1/L/2).
    Returns the path of q_h and the step sizes.
    """
    b_t, _ = caps.b_tilde()
    norm2 = (1 - qh0) * 64 - 1  # ||x_0||^2
    qs, alphas = np.empty(rounds), np.empty(rounds)
    for t in range(rounds):
        g2 = norm2 / 32**2
        q = 1 - (norm2 + 1) / 64
        alpha = (
            min((b_t - 1) * q / g2, 32.0)
            if schedule == "paced" and g2 > 0
            else 32.0
            if schedule == "paced"
            else 16.0
        )
        norm2 *= (1 - alpha / 32) ** 2
        qs[t], alphas[t] = 1 - (norm2 + 1) / 64, alpha
    return qs, alphas


_TOY_Q = 63 / 64
_TOY_STARTS = [(13 / 64, 55 / 64), (13 / 64, 0.4), (0.1, 0.3), (0.05, 0.9)]


@proposition(
    "thesis.ch3.prop5",
    source=f"{_SRC}, Proposition 5",
    statement="if q_l0 <= q_l*, Algorithm 5 converges to the Nash bargaining solution (q_l*, q_h*) while no revenue falls",
)
def _prop5() -> Verdict:
    starts = [(ql0, qh0, schedule) for ql0, qh0 in _TOY_STARTS for schedule in ("paced", "const")]
    ql0, qh0 = (np.array([s[i] for s in starts]) for i in (0, 1))
    q_h = np.stack([_toy_high_path(qh, schedule, 3000)[0] for _, qh, schedule in starts], axis=1)
    q_l = _simulate(ql0, qh0, q_h, _TOY_Q)
    sol = duopoly_nash_solution(ql0, qh0, _TOY_Q)
    ul, uh = duopoly.revenues(np.vstack([ql0, q_l]), np.vstack([qh0, q_h]))
    worst_drop = float(min(np.diff(ul, axis=0).min(), np.diff(uh, axis=0).min()))
    worst_gap = float(max(np.abs(q_l[-1] - sol.q_l_star).max(), np.abs(q_h[-1] - _TOY_Q).max()))
    if worst_gap > 1e-9 or worst_drop < -1e-15:
        return refuted("no convergence or a revenue fell", {"gap": worst_gap, "drop": worst_drop})
    return checked(
        f"convex toy, {len(_TOY_STARTS)} starts (Cases 1 and 2) x paced/constant schedules, 3000 rounds, recommended cap: "
        f"final |q - q*| <= {worst_gap:.1e}, worst revenue step {worst_drop:.1e}",
        len(starts),
    )


@proposition(
    "thesis.ch3.prop5.literal",
    source=f"{_SRC}, Algorithm 5 as printed (cap hat q only; spec ch3 section 8.2 item 4)",
    statement="as printed (low firm capped only by hat q), Algorithm 5 converges to (q_l*, q_h*) when q_l0 <= q_l*",
    holds=False,
)
def _prop5_literal() -> Verdict:
    ql0, qh0 = 13 / 64, 55 / 64
    sol = duopoly_nash_solution(ql0, qh0, _TOY_Q)
    q_l = _simulate(ql0, qh0, np.array([_TOY_Q]), _TOY_Q, cap_mode="literal")
    return refuted(
        "when q_h jumps to Q in one step the low firm overshoots q_l* and can never come back (A2)",
        {
            "q_l0": ql0,
            "q_h0": qh0,
            "Q": _TOY_Q,
            "q_l_final": float(q_l[-1]),
            "q_l_star": float(sol.q_l_star),
        },
    )


proposition(
    "thesis.ch3.prop5.literal.corrected",
    source=f"{_SRC}, Algorithm 5 with the caps of spec ch3 section 8.3",
    statement="with the low firm capped at min(hat q, rho* q_h,t, q_l*), Algorithm 5 converges to (q_l*, q_h*) for any high-firm schedule",
)(_prop5)


@proposition(
    "thesis.ch3.prop5.fig37",
    source=f"{_SRC}, proof of Proposition 5, Fig. 3.7; spec ch3 C17",
    statement="for every start with rho_0 <= rho* (Q = 1): (4 - 5 rho*) log10(1/q_h0) >= rho* - rho_0",
)
def _fig37() -> Verdict:
    ql0, qh0 = _start_grid(200)
    r = duopoly_nash_solution(ql0, qh0).rho_star
    mask = ql0 / qh0 <= r
    margin = (4 - 5 * r) * np.log10(1 / qh0) - (r - ql0 / qh0)
    return on_points(
        lambda m: m >= -1e-12,
        [{"m": float(m)} for m in margin[mask]],
        f"minimum margin {margin[mask].min():.2e}",
    )


@proposition(
    "thesis.ch3.prop5.catchup",
    source="spec ch3 section 9, observation on exact catch-up [NEW]",
    statement="the low firm reaches rho* as soon as q_h >= U_h0/u_h(rho*), and this threshold is <= Q",
)
def _catchup() -> Verdict:
    ql0, qh0 = _start_grid(80)
    sol = duopoly_nash_solution(ql0, qh0)
    case2 = ql0 / qh0 < sol.rho_star
    _, uh0 = duopoly.revenues(ql0, qh0)
    threshold = uh0 / duopoly.u_h(sol.rho_star)
    ok = threshold[case2] <= 1 + 1e-12
    if not np.all(ok):
        return refuted("catch-up threshold above Q", {"threshold": float(threshold[case2].max())})
    return checked(
        f"threshold <= Q on every Case-2 start (largest {threshold[case2].max():.6f})",
        int(case2.sum()),
    )


@proposition(
    "thesis.ch3.thm5.identity",
    source=f"{_SRC}, proof of Theorem 5, gradient-descent chain (spec ch3 typo 17)",
    statement="as printed: f* + g'(x - x*) - (alpha/2)||g||^2 = f* + (2/alpha)(||x - x*||^2 - ||x - alpha g - x*||^2)",
    holds=False,
)
def _thm5_identity() -> Verdict:
    x, xs, g, alpha = sp.symbols("x x_star g alpha", real=True)
    lhs = g * (x - xs) - alpha / 2 * g**2
    printed = 2 / alpha * ((x - xs) ** 2 - (x - alpha * g - xs) ** 2)
    point = {x: 1, xs: 0, g: 1, alpha: sp.Rational(1, 2)}
    return refuted(
        "the two sides differ (scalar case)",
        {
            "x": 1,
            "x_star": 0,
            "g": 1,
            "alpha": "1/2",
            "lhs": str(lhs.subs(point)),
            "printed_rhs": str(printed.subs(point)),
        },
    )


@proposition(
    "thesis.ch3.thm5.identity.corrected",
    source=f"{_SRC}, proof of Theorem 5 (spec ch3 typo 17)",
    statement="g'(x - x*) - (alpha/2)||g||^2 = (1/(2 alpha))(||x - x*||^2 - ||x - alpha g - x*||^2), so f_T - f* <= ||x_0 - x*||^2/(2 sum alpha)",
)
def _thm5_identity_corrected() -> Verdict:
    x = sp.Matrix(sp.symbols("x1 x2", real=True))
    xs = sp.Matrix(sp.symbols("s1 s2", real=True))
    g = sp.Matrix(sp.symbols("g1 g2", real=True))
    alpha = sp.Symbol("alpha", positive=True)
    lhs = (g.T * (x - xs))[0] - alpha / 2 * (g.T * g)[0]
    rhs = ((x - xs).T * (x - xs))[0] - ((x - alpha * g - xs).T * (x - alpha * g - xs))[0]
    return is_zero(lhs - rhs / (2 * alpha), "identity in R^2")


@proposition(
    "thesis.ch3.thm5",
    source=f"{_SRC}, Theorem 5, eq. (3.5)",
    statement="N* - N_T <~ ||x_h0 - x_h*||^2 / sum alpha_h,t + |rho* - rho_T|; explicitly <= (1/27)((1+rho*)||x_h0 - x*||^2/(2 sum alpha) + |rho* - rho_T|)",
)
def _thm5() -> Verdict:
    worst, n = -np.inf, 0
    for ql0, qh0 in _TOY_STARTS:
        sol = duopoly_nash_solution(ql0, qh0, _TOY_Q)
        q_h, alphas = _toy_high_path(qh0, "paced", 400)
        q_l = _simulate(ql0, qh0, q_h, _TOY_Q)
        gap = float(sol.nash_product) - nash_product(q_l, q_h, ql0, qh0)
        dist2 = (1 - qh0) * 64 - 1  # ||x_h0 - x*||^2 on the toy
        bound = (
            (1 + sol.rho_star) * dist2 / (2 * np.cumsum(alphas)) + np.abs(sol.rho_star - q_l / q_h)
        ) / 27
        worst = max(worst, float(np.max(gap - bound)))
        n += len(q_h)
    if worst > 1e-15:
        return refuted("the explicit bound fails", {"excess": worst})
    return checked(
        f"explicit bound holds every round on the convex toy (worst slack {-worst:.1e})", n
    )


@proposition(
    "thesis.ch3.cor1",
    source=f"{_SRC}, Corollary 1 (log read as log10)",
    statement="after T >= log(Q/q_h0)/log((b~+1)/2) + L||x_h0 - x*||^2/(2 eps) paced rounds, Q - q_h,T <= eps and rho* - rho_T <= (4 - 5rho*) log10(Q/(Q - eps))",
)
def _cor1() -> Verdict:
    b_t, _ = caps.b_tilde()
    rows = 0
    for ql0, qh0 in _TOY_STARTS:
        sol = duopoly_nash_solution(ql0, qh0, _TOY_Q)
        for eps in (1e-2, 1e-3):
            dist2 = (1 - qh0) * 64 - 1
            rounds = int(
                np.ceil(np.log(_TOY_Q / qh0) / np.log((b_t + 1) / 2) + dist2 / 32 / (2 * eps))
            )
            q_h, _ = _toy_high_path(qh0, "paced", rounds)
            q_l = _simulate(ql0, qh0, q_h, _TOY_Q)
            rho_gap = float(sol.rho_star) - q_l[-1] / q_h[-1]
            if (
                _TOY_Q - q_h[-1] > eps
                or rho_gap
                > (4 - 5 * float(sol.rho_star)) * np.log10(_TOY_Q / (_TOY_Q - eps)) + 1e-12
            ):
                return refuted(
                    "bound missed", {"q_l0": ql0, "q_h0": qh0, "eps": eps, "rounds": rounds}
                )
            rows += 1
    return checked("both bounds hold at the prescribed T on the convex toy", rows)
