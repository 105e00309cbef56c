r"""The propositions of Werner (2024), ch. 3 about the duopoly's equilibrium: Lemmas 21-23.

Sections 3.2-3.3 (pp. 59-64), with the proofs of section 3.7 (pp. 70ff): the demands (Lemma 21), the
equilibrium and its global optimality (Lemma 22), complete collaboration (Lemma 23) and the
two-firm oligopoly, checked against :mod:`econ.duopoly`. :func:`same_expression` compares a
derived formula with a printed one, :func:`ratio_form` and :func:`rho_sign` sign a formula of
:math:`\rho = q_l/q_h`; the statements about the revenues are in
:mod:`econ.duopoly_revenue_propositions`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import NDArray

from econ.duopoly import (
    PRICE_H,
    PRICE_L,
    REVENUE_H,
    REVENUE_L,
    demands,
    p_h,
    p_l,
    q_h,
    q_l,
    rho,
)
from econ.propositions import (
    Verdict,
    checked,
    on_points,
    proposition,
    proved,
    refuted,
    sign_on_interval,
)

_SRC = "Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3"


_S32 = f"{_SRC}, section 3.2 (pp. 59-62)"


_S37 = f"{_SRC}, section 3.7 (pp. 70ff)"


_TRIALS = (
    (sp.Rational(3, 10), sp.Rational(4, 5), sp.Rational(1, 7)),
    (sp.Rational(1, 5), sp.Rational(2, 3), sp.Rational(2, 9)),
    (sp.Rational(5, 11), sp.Rational(7, 8), sp.Rational(3, 13)),
)


def same_expression(derived: sp.Expr, printed: sp.Expr, what: str) -> Verdict:
    """``proved`` if ``derived - printed`` simplifies to 0, else ``refuted`` at a rational point.

    The counterexample assigns exact rationals to the free symbols (with ``0 < q_l < q_h``)
    and reports the exact difference there, so a refutation never rests on floating point.

    References
    ----------
    collabecon's own check; builds on Werner (2024), ch. 3, §3.2 and §3.7 (the printed expressions
    it compares).
    """
    residual = sp.cancel(sp.together(derived - printed))
    if residual != 0:
        residual = sp.simplify(residual)
    if residual == 0:
        return proved(f"{what}: the derived and the printed expression agree identically")
    symbols = sorted(residual.free_symbols, key=str)
    for low, high, other in _TRIALS:  # q_l < q_h, as every statement here assumes
        named = {"q_l": low, "q_h": high}
        point = {s: named.get(str(s), other + sp.Rational(i, 17)) for i, s in enumerate(symbols)}
        value = sp.nsimplify(residual.subs(point))
        if value != 0 and value.is_finite:
            return refuted(
                f"{what}: derived minus printed is {residual}, not 0",
                {**{str(s): str(v) for s, v in point.items()}, "difference": str(value)},
            )
    raise ValueError(f"could not find a point where {what} differs: {residual}")


def _numeric(expr: sp.Expr) -> Callable[..., NDArray[np.float64]]:
    """``expr(q_l, q_h)`` as a numpy function."""
    return sp.lambdify((q_l, q_h), expr, modules="numpy")


def ratio_form(expr: sp.Expr) -> sp.Expr:
    """``expr`` with q_l = rho q_h, simplified: degree-0 expressions become functions of rho."""
    return sp.factor(sp.simplify(expr.subs(q_l, rho * q_h)))


def rho_sign(expr_in_rho: sp.Expr, low: Any, high: Any) -> int | None:
    """The constant sign of ``expr_in_rho`` on (low, high), or None where it changes sign."""
    try:
        return sign_on_interval(expr_in_rho, rho, low, high)
    except ValueError:
        return None


_PRINTED_D_L = (p_h - p_l) / (q_h - q_l) - p_l / q_l


_PRINTED_D_H = 1 - (p_h - p_l) / (q_h - q_l)


@proposition(
    "thesis.ch3.lemma21",
    source=f"{_S32}, Lemma 21; proof in section 3.7, eqs. (3.6)-(3.7)",
    statement="D_l = (p_h-p_l)/(q_h-q_l) - p_l/q_l and D_h = 1 - (p_h-p_l)/(q_h-q_l), from the indifferent types of (3.6)-(3.7)",
    perturb={"demand_l": (p_h - p_l) / (q_h - q_l) - p_l / q_h},
)
def _lemma21(demand_l: sp.Expr = _PRINTED_D_L, demand_h: sp.Expr = _PRINTED_D_H) -> Verdict:
    t = sp.Symbol("t")
    t_l = sp.solve(sp.Eq(t * q_l - p_l, 0), t)[0]  # (3.6)
    t_h = sp.solve(sp.Eq(t * q_l - p_l, t * q_h - p_h), t)[0]  # (3.7)
    low = same_expression(t_h - t_l, demand_l, "D_l = theta_h - theta_l")
    if not low.holds:
        return low
    high = same_expression(1 - t_h, demand_h, "D_h = 1 - theta_h")
    if not high.holds:
        return high
    return proved(
        "solving (3.6) and (3.7) gives theta_h - theta_l and 1 - theta_h equal to the printed D_l, D_h"
    )


_PRINTED_P_L = q_l * (q_h - q_l) / (4 * q_h - q_l)


_PRINTED_P_H = 2 * q_h * (q_h - q_l) / (4 * q_h - q_l)


_PRINTED_U_L = q_l * q_h * (q_h - q_l) / (4 * q_h - q_l) ** 2


_PRINTED_U_H = 4 * q_h**2 * (q_h - q_l) / (4 * q_h - q_l) ** 2


_PRINTED_BR_L = q_l * p_h / (2 * q_h)  # (3.9)


_PRINTED_BR_H = (p_l + (q_h - q_l)) / 2  # (3.11)


_PRINTED_UTIL_L = p_l * ((p_h - p_l) / (q_h - q_l) - p_l / q_l)  # (3.8)


_PRINTED_UTIL_H = p_h * (1 - (p_h - p_l) / (q_h - q_l))  # (3.10)


_PRINTED_FOC_L = (p_h - 2 * p_l) / (q_h - q_l) - 2 * p_l / q_l  # the line between (3.8) and (3.9)


_PRINTED_FOC_H = 1 - (2 * p_h - p_l) / (q_h - q_l)  # the line between (3.10) and (3.11)


_DU_L_DP_L = sp.diff(REVENUE_L, p_l)


_DU_H_DP_H = sp.diff(REVENUE_H, p_h)


_ZERO = sp.Integer(0)


@proposition(
    "thesis.ch3.lemma22",
    source=f"{_S32}, Lemma 22, eq. (3.4); proof in section 3.7, eqs. (3.8)-(3.13)",
    statement="U_l = p_l((p_h-p_l)/(q_h-q_l) - p_l/q_l) (3.8) and U_h = p_h(1 - (p_h-p_l)/(q_h-q_l)) (3.10) have "
    "dU_l/dp_l = (p_h-2p_l)/(q_h-q_l) - 2p_l/q_l and dU_h/dp_h = 1 - (2p_h-p_l)/(q_h-q_l) (the displays "
    "of the proof); the best responses are p_l = q_l p_h/(2q_h) (3.9) and p_h = (p_l + q_h - q_l)/2 (3.11); they meet at "
    "p_l* = q_l(q_h-q_l)/(4q_h-q_l), p_h* = 2q_h(q_h-q_l)/(4q_h-q_l), giving U_l = q_l q_h (q_h-q_l)/(4q_h-q_l)^2 and "
    "U_h = 4 q_h^2 (q_h-q_l)/(4q_h-q_l)^2 (3.4)",
    perturb={"price_l": q_l * (q_h - q_l) / (3 * q_h - q_l)},
)
def _lemma22(
    price_l: sp.Expr = _PRINTED_P_L,
    price_h: sp.Expr = _PRINTED_P_H,
    revenue_l: sp.Expr = _PRINTED_U_L,
    revenue_h: sp.Expr = _PRINTED_U_H,
    best_response_l: sp.Expr = _PRINTED_BR_L,
    best_response_h: sp.Expr = _PRINTED_BR_H,
    utility_l: sp.Expr = _PRINTED_UTIL_L,
    utility_h: sp.Expr = _PRINTED_UTIL_H,
    foc_l: sp.Expr = _PRINTED_FOC_L,
    foc_h: sp.Expr = _PRINTED_FOC_H,
) -> Verdict:
    root_l = sp.solve(sp.diff(REVENUE_L, p_l), p_l)[0]
    root_h = sp.solve(sp.diff(REVENUE_H, p_h), p_h)[0]
    at_printed = {p_l: price_l, p_h: price_h}
    for derived, printed, what in (
        (REVENUE_L, utility_l, "(3.8): U_l = p_l D_l"),
        (REVENUE_H, utility_h, "(3.10): U_h = p_h D_h"),
        (_DU_L_DP_L, foc_l, "the printed dU_l/dp_l"),
        (_DU_H_DP_H, foc_h, "the printed dU_h/dp_h"),
        (root_l, best_response_l, "(3.9): root of dU_l/dp_l"),
        (root_h, best_response_h, "(3.11): root of dU_h/dp_h"),
        (root_l.subs(p_h, price_h), price_l, "p_l* is the low best response to p_h*"),
        (root_h.subs(p_l, price_l), price_h, "p_h* is the high best response to p_l*"),
        (REVENUE_L.subs(at_printed), revenue_l, "U_l = p_l* D_l at p*"),
        (REVENUE_H.subs(at_printed), revenue_h, "U_h = p_h* D_h at p*"),
    ):
        verdict = same_expression(derived, printed, what)
        if not verdict.holds:
            return verdict
    # each revenue is a quadratic in its own price: the root is its maximiser iff the sign is negative
    soc_l = ratio_form(sp.diff(REVENUE_L, p_l, 2) * q_h)
    soc_h = ratio_form(sp.diff(REVENUE_H, p_h, 2) * q_h)
    if rho_sign(soc_l, 0, 1) != -1 or rho_sign(soc_h, 0, 1) != -1:
        return refuted(
            "a revenue is not concave in its own price", {"soc_l": soc_l, "soc_h": soc_h}
        )
    return proved(
        "(3.8), (3.10) and the printed dU/dp are p D and its derivative, identically; "
        "the roots of both first-order conditions are the printed (3.9), (3.11); they meet at the printed p*; "
        f"p* D at p* is the printed (3.4); q_h d2U_l/dp_l2 = {soc_l} and q_h d2U_h/dp_h2 = {soc_h} are "
        "negative for every rho = q_l/q_h in (0, 1) (Sturm), so each root maximises its firm's revenue "
        "where Lemma 21's demands apply (global deviations: thesis.ch3.lemma22.global)"
    )


def _argmax_price(maximand: sp.Expr, price: sp.Symbol, rival: dict[sp.Symbol, sp.Expr]) -> sp.Expr:
    """The maximiser over ``price >= 0`` of ``maximand`` at the rival's p*.

    ``maximand`` is concave or affine in ``price``.
    """
    slope = sp.diff(maximand, price).subs(rival)
    curvature = sp.factor(sp.diff(slope, price))
    if (
        curvature == 0
    ):  # affine in the price: a decreasing one peaks at 0, an increasing one nowhere
        sign = rho_sign(ratio_form(slope * q_h), 0, 1)
        return sp.Integer(0) if sign == -1 else sp.oo
    if rho_sign(ratio_form(curvature * q_h), 0, 1) != -1:
        return sp.oo
    return sp.solve(slope, price)[0]


@proposition(
    "thesis.ch3.lemma22.argmax",
    source=f"{_S37}, proof of Lemma 22, eqs. (3.9) and (3.11)",
    statement="as printed: p_l* = argmax_{p_l} dU_l/dp_l and p_h* = argmax_{p_h} dU_h/dp_h",
    holds=False,
    perturb={"maximand_l": REVENUE_L, "maximand_h": REVENUE_H},
)
def _lemma22_argmax(maximand_l: sp.Expr = _DU_L_DP_L, maximand_h: sp.Expr = _DU_H_DP_H) -> Verdict:
    for maximand, price, rival, star, name in (
        (maximand_l, p_l, {p_h: PRICE_H}, PRICE_L, "p_l*"),
        (maximand_h, p_h, {p_l: PRICE_L}, PRICE_H, "p_h*"),
    ):
        argmax = _argmax_price(maximand, price, rival)
        verdict = same_expression(
            argmax, star, f"argmax over {price} >= 0 of {maximand} versus {name}"
        )
        if not verdict.holds:
            return verdict
    return proved(
        f"each printed maximand peaks at p* given the rival's p*: {maximand_l}, {maximand_h}"
    )


proposition(
    "thesis.ch3.lemma22.argmax.corrected",
    source=f"{_S37}, proof of Lemma 22, the first lines of (3.9) and (3.11), p_l* = argmax_{{p_l}} "
    "dU_l/dp_l and p_h* = argmax_{p_h} dU_h/dp_h, whose argmax of dU/dp becomes argmax of U",
    statement="p_l* = argmax_{p_l} U_l and p_h* = argmax_{p_h} U_h: the roots of dU/dp = 0, each U concave in its own price",
    perturb={"maximand_l": _DU_L_DP_L, "maximand_h": _DU_H_DP_H},
)(lambda maximand_l=REVENUE_L, maximand_h=REVENUE_H: _lemma22_argmax(maximand_l, maximand_h))


def _deviation_gain(ql: NDArray, qh: NDArray, pl: NDArray, ph: NDArray) -> NDArray:
    """Largest relative revenue gain of either firm from a unilateral price deviation (grid search).

    Demand is Lemma 21's, extended piecewise by :func:`demands` (a dominated low model sells
    nothing). The low firm searches [0, p_h] (above p_h it sells nothing), the high firm
    [0, q_h] and, finely, [0, 4 p_h]; grids scale with each point, so near-ties are resolved.
    """
    d_l, d_h = demands(pl, ph, ql, qh)
    base_l, base_h = pl * d_l, ph * d_h
    n = 1001
    grid_l = np.linspace(0.0, 1.0, n)[None, :] * ph[:, None]
    grid_h = np.concatenate(
        [
            np.linspace(0.0, 1.0, n)[None, :] * qh[:, None],
            np.linspace(0.0, 4.0, n)[None, :] * ph[:, None],
        ],
        axis=1,
    )
    dev_l, _ = demands(grid_l, ph[:, None], ql[:, None], qh[:, None])
    _, dev_h = demands(pl[:, None], grid_h, ql[:, None], qh[:, None])
    gain_l = (np.max(grid_l * dev_l, axis=1) - base_l) / np.maximum(base_l, 1e-300)
    gain_h = (np.max(grid_h * dev_h, axis=1) - base_h) / np.maximum(base_h, 1e-300)
    return np.maximum(gain_l, gain_h)


def _lemma22_points() -> list[dict[str, float]]:
    rng = np.random.default_rng(0)
    sample = np.sort(rng.uniform(0.0, 1.0, (400, 2)), axis=1)
    edges = [
        (qh * r, qh)
        for qh in (0.05, 0.3, 0.7, 1.0)
        for r in (1e-6, 1e-3, 0.5, 4 / 7, 0.999, 1 - 1e-5)
    ]
    return [{"ql": float(a), "qh": float(b)} for a, b in [*map(tuple, sample), *edges]]


@proposition(
    "thesis.ch3.lemma22.global",
    source=f"{_S32}, Lemma 22",
    statement="p_l*, p_h* are global best responses to each other: no price in [0, infinity) earns either firm more, "
    "with the demands of Lemma 21 extended piecewise where a model is priced out",
    perturb={"price_h": 3 * q_h * (q_h - q_l) / (2 * (4 * q_h - q_l))},
)
def _lemma22_global(price_l: sp.Expr = _PRINTED_P_L, price_h: sp.Expr = _PRINTED_P_H) -> Verdict:
    points = _lemma22_points()
    ql = np.array([p["ql"] for p in points])
    qh = np.array([p["qh"] for p in points])
    pl = np.broadcast_to(_numeric(price_l)(ql, qh), ql.shape).astype(np.float64)
    ph = np.broadcast_to(_numeric(price_h)(ql, qh), ql.shape).astype(np.float64)
    gains = _deviation_gain(ql, qh, pl, ph)
    return on_points(
        lambda q_l, q_h, gain: bool(gain <= 1e-9),
        [{"q_l": a, "q_h": b, "gain": float(g)} for a, b, g in zip(ql, qh, gains, strict=True)],
        "no unilateral deviation on a 1001-point price grid per firm (2002 for the high firm) raises "
        "either revenue by more than 1e-9 relative",
        drawn="400 seeded uniform (q_l, q_h) in the triangle 0 < q_l < q_h < 1 (seed 0), plus q_h in "
        "{0.05, 0.3, 0.7, 1} with q_l/q_h in {1e-6, 1e-3, 1/2, 4/7, 0.999, 1 - 1e-5} (near 0 and near-ties)",
        hypothesis=lambda q_l, q_h, gain: 0 < q_l < q_h,
    )


def _homogeneous_revenues(q: float, p_1: NDArray, p_2: NDArray) -> tuple[NDArray, NDArray]:
    """Revenues when both firms sell quality q: the cheaper model takes the market, ties split."""
    demand_1 = np.clip(1 - p_1 / q, 0, 1)
    demand_2 = np.clip(1 - p_2 / q, 0, 1)
    share_1 = np.where(p_1 < p_2, 1.0, np.where(p_1 == p_2, 0.5, 0.0))
    return p_1 * demand_1 * share_1, p_2 * demand_2 * (1 - share_1)


def _best_deviation(q: float, rival: NDArray) -> NDArray:
    """Supremum of a firm's revenue over its own prices when the rival charges ``rival``.

    Undercutting takes the whole market, so the supremum is the monopoly revenue p(1 - p/q)
    over p < rival (or matching the rival for half of it): R(min(rival, q/2)).
    """
    p = np.minimum(rival, q / 2)
    return np.maximum(p * (1 - p / q), rival * np.clip(1 - rival / q, 0, 1) / 2)


@proposition(
    "thesis.ch3.lemma23",
    source=f"{_SRC}, section 3.3 (pp. 62-64), Lemma 23",
    statement="under complete collaboration (both firms sell the same quality q) the equilibrium revenues are U_l = U_h = 0",
    perturb={"revenue": q_h / 9},
)
def _lemma23(revenue: sp.Expr = _ZERO) -> Verdict:
    # A price profile is an equilibrium iff neither firm's supremal deviation revenue exceeds
    # what it earns. The grid holds every profile p_1, p_2 in {0, q/200, ..., q}; a deviation is
    # not restricted to the grid (the supremum is exact), so grid equilibria are true ones.
    found = []
    for q in (0.1, 0.5, 0.8, 1.0):
        prices = np.linspace(0.0, q, 201)
        p_1, p_2 = np.meshgrid(prices, prices, indexing="ij")
        r_1, r_2 = _homogeneous_revenues(q, p_1, p_2)
        stable = (_best_deviation(q, p_2) <= r_1 + 1e-15) & (_best_deviation(q, p_1) <= r_2 + 1e-15)
        printed = float(revenue.subs(q_h, q)) if isinstance(revenue, sp.Basic) else float(revenue)
        if not stable.any():
            return refuted("no price profile is an equilibrium", {"q": q})
        for i, j in zip(*np.nonzero(stable), strict=True):
            if abs(r_1[i, j] - printed) > 1e-15 or abs(r_2[i, j] - printed) > 1e-15:
                return refuted(
                    "an equilibrium's revenues differ from the printed ones",
                    {
                        "q": q,
                        "p_1": prices[i],
                        "p_2": prices[j],
                        "U_1": r_1[i, j],
                        "U_2": r_2[i, j],
                        "printed": printed,
                    },
                )
        found.append(int(stable.sum()))
    return checked(
        f"the equilibria on each grid ({found} profiles) all earn the printed revenue {revenue}: "
        "any positive price is undercut, so only p_1 = p_2 = 0 survives",
        4,
        drawn="4 markets, q in {0.1, 0.5, 0.8, 1}; in each, every price profile on a 201 x 201 grid "
        "of [0, q]^2 tested against the exact supremum of the deviations (undercutting, matching, "
        "monopoly price)",
    )


@proposition(
    "thesis.ch3.oligopoly.n2",
    source=f"derived; the thesis says its duopoly results extend to more firms ({_SRC}, section 3.2, p. 59)",
    statement="the n-firm vertical Bertrand equilibrium of econ.oligopoly with n = 2 has Lemma 22's prices and revenues",
    kind="derived",
    perturb={"price_h": 2 * q_h * (q_h - q_l) / (4 * q_h - 2 * q_l)},
)
def _oligopoly_n2(
    price_l: sp.Expr = _PRINTED_P_L,
    price_h: sp.Expr = _PRINTED_P_H,
    revenue_l: sp.Expr = _PRINTED_U_L,
    revenue_h: sp.Expr = _PRINTED_U_H,
) -> Verdict:
    from econ.oligopoly import oligopoly_equilibrium

    printed = [_numeric(e) for e in (price_l, price_h, revenue_l, revenue_h)]

    def agrees(q_l: float, q_h: float) -> bool:
        n_firm = oligopoly_equilibrium([q_l, q_h])
        ours = [*n_firm.price, *n_firm.revenue]
        return bool(np.allclose(ours, [f(q_l, q_h) for f in printed], rtol=1e-9, atol=0))

    rng = np.random.default_rng(0)
    pts = [(float(a), float(b)) for a, b in np.sort(rng.uniform(0.01, 1, (200, 2)), axis=1)]
    pts += [(q * r, q) for q in (0.1, 1.0) for r in (1e-4, 4 / 7, 0.999)]
    return on_points(
        agrees,
        [{"q_l": a, "q_h": b} for a, b in pts],
        "the n-firm solver's prices and revenues equal the printed p* and (3.4) to 1e-9 relative",
        drawn="200 seeded uniform (q_l, q_h) with 0.01 <= q_l < q_h <= 1 (seed 0), plus q_h in {0.1, 1} "
        "with q_l/q_h in {1e-4, 4/7, 0.999}",
        hypothesis=lambda q_l, q_h: 0 < q_l < q_h,
    )
