r"""Bertrand competition between two firms selling models of different quality.

Werner (2024), *Collaborative Learning: Aligning Goals and Outcomes*, chapter 3
("Collaborative learning among competitors"), section 3.2.

Consumers have types :math:`\theta \sim U[0, 1]` and utility :math:`\theta q - p` for a model
of quality :math:`q` sold at price :math:`p` (Definition 2, eq. 3.2), or 0 for buying nothing.
The low firm sells quality :math:`q_l`, the high firm :math:`q_h \ge q_l`; both set prices
simultaneously and have no costs. Every closed form is written here once, as a sympy
expression in the symbols :data:`q_l`, :data:`q_h` (and :data:`p_l`, :data:`p_h`); the numeric
functions are derived from them with :func:`sympy.lambdify`.

The equilibrium (Lemma 22, eq. 3.4):

.. math::

    p_l^* = \frac{q_l (q_h - q_l)}{4 q_h - q_l}, \quad
    p_h^* = \frac{2 q_h (q_h - q_l)}{4 q_h - q_l}, \quad
    U_l = \frac{q_l q_h (q_h - q_l)}{(4 q_h - q_l)^2}, \quad
    U_h = \frac{4 q_h^2 (q_h - q_l)}{(4 q_h - q_l)^2}.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ.propositions import (
    Verdict,
    all_zero,
    is_zero,
    on_points,
    proposition,
    proved,
    refuted,
    sign_on_interval,
)
from econ.validation import unit_interval

# --------------------------------------------------------------------------------------------
# Symbols and primitives (Definition 2, Lemma 21)
# --------------------------------------------------------------------------------------------

q_l, q_h = sp.symbols("q_l q_h", positive=True)
p_l, p_h = sp.symbols("p_l p_h", nonnegative=True)
theta = sp.Symbol("theta", nonnegative=True)
rho = sp.Symbol("rho", nonnegative=True)  # quality ratio q_l / q_h

#: Indifferent types: theta q_l - p_l = 0 (3.6) and theta q_l - p_l = theta q_h - p_h (3.7).
THETA_L = p_l / q_l
THETA_H = (p_h - p_l) / (q_h - q_l)

#: Demands of Lemma 21 (valid for 0 < q_l < q_h and 0 <= THETA_L <= THETA_H <= 1).
DEMAND_L = THETA_H - THETA_L
DEMAND_H = 1 - THETA_H

#: Revenues for arbitrary prices (Definition 3, eq. 3.3; zero marginal costs).
REVENUE_L = p_l * DEMAND_L
REVENUE_H = p_h * DEMAND_H

# --------------------------------------------------------------------------------------------
# Equilibrium (Lemma 22) and the quantities derived from it
# --------------------------------------------------------------------------------------------

#: Equilibrium prices, Lemma 22 (3.12)-(3.13); ``thesis.ch3.lemma22`` proves they solve both
#: first-order conditions.
PRICE_L = q_l * (q_h - q_l) / (4 * q_h - q_l)
PRICE_H = 2 * q_h * (q_h - q_l) / (4 * q_h - q_l)
_AT_EQUILIBRIUM = {p_l: PRICE_L, p_h: PRICE_H}

EQ_THETA_L = sp.factor(THETA_L.subs(_AT_EQUILIBRIUM))
EQ_THETA_H = sp.factor(THETA_H.subs(_AT_EQUILIBRIUM))
EQ_DEMAND_L = sp.factor(DEMAND_L.subs(_AT_EQUILIBRIUM))
EQ_DEMAND_H = sp.factor(DEMAND_H.subs(_AT_EQUILIBRIUM))
#: Price-optimal revenues U_l(q_l, q_h), U_h(q_l, q_h) of eq. (3.4).
U_L = sp.factor(REVENUE_L.subs(_AT_EQUILIBRIUM))
U_H = sp.factor(REVENUE_H.subs(_AT_EQUILIBRIUM))

#: Consumer surplus: the integral of theta q - p over the buyers of each firm.
CONSUMER_SURPLUS = sp.factor(
    (
        sp.integrate(theta * q_l - p_l, (theta, THETA_L, THETA_H))
        + sp.integrate(theta * q_h - p_h, (theta, THETA_H, 1))
    ).subs(_AT_EQUILIBRIUM)
)
WELFARE = sp.factor(CONSUMER_SURPLUS + U_L + U_H)

#: Revenues per unit of q_h as functions of rho = q_l / q_h (degree-1 homogeneity).
u_l_rho = sp.factor((U_L / q_h).subs(q_l, rho * q_h))
u_h_rho = sp.factor((U_H / q_h).subs(q_l, rho * q_h))

# --------------------------------------------------------------------------------------------
# Cournot variant (Remark 1; spec ch3 section 14.2)
# --------------------------------------------------------------------------------------------

x_l, x_h = sp.symbols("x_l x_h", nonnegative=True)  # quantities (market shares)
#: Inverse demands of the vertical model when the firms sell shares x_l, x_h.
COURNOT_PRICE_L = q_l * (1 - x_l - x_h)
COURNOT_PRICE_H = q_h * (1 - x_h) - q_l * x_l
#: Cournot equilibrium shares; ``thesis.ch3.remark1.cournot`` proves they solve both FOCs.
COURNOT_X_L = q_h / (4 * q_h - q_l)
COURNOT_X_H = (2 * q_h - q_l) / (4 * q_h - q_l)
_AT_COURNOT = {x_l: COURNOT_X_L, x_h: COURNOT_X_H}
COURNOT_U_L = sp.factor((x_l * COURNOT_PRICE_L).subs(_AT_COURNOT))
COURNOT_U_H = sp.factor((x_h * COURNOT_PRICE_H).subs(_AT_COURNOT))


# --------------------------------------------------------------------------------------------
# Numeric twins
# --------------------------------------------------------------------------------------------


def _numeric(expr: sp.Expr) -> Callable[..., NDArray[np.float64]]:
    return sp.lambdify((q_l, q_h), expr, modules="numpy")


def _numeric_rho(expr: sp.Expr) -> Callable[..., NDArray[np.float64]]:
    return sp.lambdify(rho, expr, modules="numpy")


_FIELDS: dict[str, sp.Expr] = {
    "p_l": PRICE_L,
    "p_h": PRICE_H,
    "D_l": EQ_DEMAND_L,
    "D_h": EQ_DEMAND_H,
    "theta_l": EQ_THETA_L,
    "theta_h": EQ_THETA_H,
    "U_l": U_L,
    "U_h": U_H,
    "consumer_surplus": CONSUMER_SURPLUS,
    "welfare": WELFARE,
}
_NUMERIC = {name: _numeric(expr) for name, expr in _FIELDS.items()}
_COURNOT = {
    "x_l": _numeric(COURNOT_X_L),
    "x_h": _numeric(COURNOT_X_H),
    "p_l": _numeric(COURNOT_PRICE_L.subs(_AT_COURNOT)),
    "p_h": _numeric(COURNOT_PRICE_H.subs(_AT_COURNOT)),
    "U_l": _numeric(COURNOT_U_L),
    "U_h": _numeric(COURNOT_U_H),
}
u_l = _numeric_rho(u_l_rho)
u_h = _numeric_rho(u_h_rho)


def u_h_inverse(y: ArrayLike) -> NDArray[np.float64]:
    r"""Inverse of :math:`u_h(\rho) = 4(1-\rho)/(4-\rho)^2` on :math:`y \in [0, 1/4]`.

    .. math:: u_h^{-1}(y) = 4 - \frac{6}{1 + \sqrt{1 - 3y}}

    ``thesis.ch3.uh_inverse`` proves the identity :math:`u_h(u_h^{-1}(y)) = y`.
    """
    y = np.asarray(y, dtype=np.float64)
    return 4.0 - 6.0 / (1.0 + np.sqrt(1.0 - 3.0 * y))


U_H_INVERSE = 4 - 6 / (1 + sp.sqrt(1 - 3 * sp.Symbol("y", nonnegative=True)))


@dataclass(frozen=True, slots=True)
class DuopolyEquilibrium:
    """Equilibrium of the quality duopoly (Lemmas 21-22), arrays broadcast from the inputs.

    Attributes are named as in the thesis: prices ``p_l, p_h``, demands ``D_l, D_h``,
    indifferent types ``theta_l, theta_h``, revenues ``U_l, U_h``, and the consumer surplus
    and total welfare (surplus plus revenues).
    """

    q_l: NDArray[np.float64]
    q_h: NDArray[np.float64]
    p_l: NDArray[np.float64]
    p_h: NDArray[np.float64]
    D_l: NDArray[np.float64]
    D_h: NDArray[np.float64]
    theta_l: NDArray[np.float64]
    theta_h: NDArray[np.float64]
    U_l: NDArray[np.float64]
    U_h: NDArray[np.float64]
    consumer_surplus: NDArray[np.float64]
    welfare: NDArray[np.float64]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


def _plain(a: NDArray[np.float64]) -> Any:
    return a.item() if a.ndim == 0 else a.tolist()


def _qualities(q_low: ArrayLike, q_high: ArrayLike, *, order: bool, literal: bool = False):
    ql = unit_interval("q_l", q_low)
    qh = unit_interval("q_h", q_high)
    ql, qh = np.broadcast_arrays(ql, qh)
    if order:
        ql, qh = np.minimum(ql, qh), np.maximum(ql, qh)
    elif not literal and np.any(ql > qh):
        bad = np.flatnonzero(np.ravel(ql > qh))[0]
        raise ValueError(
            "q_l must not exceed q_h (the low firm has the lower quality); got "
            f"q_l={float(np.ravel(ql)[bad])!r} > q_h={float(np.ravel(qh)[bad])!r}. "
            "Pass order=True to sort each pair."
        )
    return ql.astype(np.float64), qh.astype(np.float64)


def _evaluate(table: dict[str, Callable[..., Any]], ql: NDArray, qh: NDArray) -> dict[str, NDArray]:
    """Evaluate closed forms, with every quantity 0 where both qualities are 0."""
    empty = qh == 0
    safe_h = np.where(empty, 1.0, qh)
    safe_l = np.where(empty, 0.0, ql)
    out = {}
    for name, fn in table.items():
        value = np.broadcast_to(np.asarray(fn(safe_l, safe_h), dtype=np.float64), ql.shape)
        out[name] = np.where(empty, 0.0, value)
    return out


def equilibrium(q_l: ArrayLike, q_h: ArrayLike, *, order: bool = False) -> DuopolyEquilibrium:
    r"""Bertrand equilibrium of the quality duopoly (Werner 2024, Lemmas 21-23, eq. 3.4).

    Parameters
    ----------
    q_l, q_h
        Qualities in [0, 1], with ``q_l <= q_h``; arrays broadcast.
    order
        Sort each pair so that the better model gets the high firm's formulas, instead of
        raising when ``q_l > q_h``.

    Returns
    -------
    DuopolyEquilibrium
        Prices, demands, indifferent types, revenues, consumer surplus and welfare.

    Notes
    -----
    Complete collaboration, ``q_l == q_h`` (Lemma 23), is the limit of the closed forms:
    prices and revenues 0, every consumer buys, consumer surplus and welfare :math:`q_h/2`;
    the demands are the limit ``1/3, 2/3`` (any split is an equilibrium at zero prices).
    Where both qualities are 0 nothing is worth buying and every quantity is 0.

    Consumer surplus (spec ch3, C27):

    .. math:: CS^* = \frac{q_h^2 (4 q_h + 5 q_l)}{2 (4 q_h - q_l)^2}
    """
    ql, qh = _qualities(q_l, q_h, order=order)
    return DuopolyEquilibrium(q_l=ql, q_h=qh, **_evaluate(_NUMERIC, ql, qh))


def revenues(
    q_l: ArrayLike, q_h: ArrayLike, *, literal: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Price-optimal revenues ``(U_l, U_h)`` of eq. (3.4).

    With ``literal=True`` the formulas are evaluated with fixed firm labels even when
    ``q_l > q_h``, as the thesis does in Figure 3.2a (``U_h`` may then be negative).
    """
    ql, qh = _qualities(q_l, q_h, order=False, literal=literal)
    table = {"U_l": _NUMERIC["U_l"], "U_h": _NUMERIC["U_h"]}
    out = _evaluate(table, ql, qh)
    return out["U_l"], out["U_h"]


def cournot_equilibrium(q_l: ArrayLike, q_h: ArrayLike, *, order: bool = False) -> dict[str, Any]:
    r"""Cournot variant of the duopoly (Remark 1): firms choose market shares.

    Inverse demands :math:`p_l = q_l(1 - x_l - x_h)`, :math:`p_h = q_h(1 - x_h) - q_l x_l`;
    the equilibrium has :math:`x_l = q_h/(4q_h - q_l)`, :math:`x_h = (2q_h - q_l)/(4q_h - q_l)`
    and :math:`U_l = q_l q_h^2/(4q_h - q_l)^2`, :math:`U_h = q_h(2q_h - q_l)^2/(4q_h - q_l)^2`.
    Unlike Bertrand, complete collaboration leaves each firm :math:`q/9 > 0`.
    """
    ql, qh = _qualities(q_l, q_h, order=order)
    return {k: _plain(v) for k, v in _evaluate(_COURNOT, ql, qh).items()}


def equilibrium_exact(q_low: sp.Rational | int, q_high: sp.Rational | int) -> dict[str, sp.Expr]:
    """The equilibrium at exact rational qualities ``0 < q_l < q_h``, as sympy numbers."""
    point = {q_l: sp.nsimplify(q_low), q_h: sp.nsimplify(q_high)}
    return {name: sp.nsimplify(expr.subs(point)) for name, expr in _FIELDS.items()}


def demands(
    p_low: ArrayLike, p_high: ArrayLike, q_low: ArrayLike, q_high: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Demands at arbitrary prices: Lemma 21 extended piecewise (spec ch3, section 3).

    Types in :math:`[\hat\theta_l, \hat\theta_h)` buy the low model and types above
    :math:`\hat\theta_h` the high one, each clipped to [0, 1]; when the low model is dominated
    (:math:`\hat\theta_l \ge \hat\theta_h`) it sells nothing and the high firm faces
    :math:`1 - \min(p_h/q_h, 1)`. Requires ``0 < q_l < q_h``.
    """
    pl, ph, ql, qh = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (p_low, p_high, q_low, q_high))
    )
    if np.any(ql <= 0) or np.any(qh <= ql):
        raise ValueError("demands needs 0 < q_l < q_h")
    th_l = pl / ql
    th_h = (ph - pl) / (qh - ql)
    low_sells = th_l < th_h
    d_l = np.where(low_sells, np.clip(th_h, 0, 1) - np.clip(th_l, 0, 1), 0.0)
    d_h = np.where(low_sells, 1 - np.clip(th_h, 0, 1), 1 - np.clip(ph / qh, 0, 1))
    return d_l, d_h


# --------------------------------------------------------------------------------------------
# Propositions (Werner 2024, ch. 3, sections 3.2-3.3; spec ch3 sections 3-5, 12-14)
# --------------------------------------------------------------------------------------------


_SRC = "Werner (2024), ch. 3"


def _ratio_form(expr: sp.Expr) -> sp.Expr:
    """``expr`` with q_l = rho q_h, simplified: degree-0 expressions become functions of rho."""
    return sp.factor(sp.simplify(expr.subs(q_l, rho * q_h)))


@proposition(
    "thesis.ch3.lemma21",
    source=f"{_SRC}, Lemma 21, eqs. (3.6)-(3.7)",
    statement="D_l = (p_h-p_l)/(q_h-q_l) - p_l/q_l and D_h = 1 - (p_h-p_l)/(q_h-q_l) from the two indifferent types",
)
def _lemma21() -> Verdict:
    t = sp.Symbol("t")
    t_l = sp.solve(sp.Eq(t * q_l - p_l, 0), t)[0]
    t_h = sp.solve(sp.Eq(t * q_l - p_l, t * q_h - p_h), t)[0]
    printed_l = (p_h - p_l) / (q_h - q_l) - p_l / q_l
    printed_h = 1 - (p_h - p_l) / (q_h - q_l)
    return all_zero(
        [(t_h - t_l - printed_l, "D_l"), (1 - t_h - printed_h, "D_h")], "demands from (3.6)-(3.7)"
    )


@proposition(
    "thesis.ch3.lemma22",
    source=f"{_SRC}, Lemma 22, eqs. (3.4), (3.8)-(3.13)",
    statement="p_l* = q_l(q_h-q_l)/(4q_h-q_l), p_h* = 2q_h(q_h-q_l)/(4q_h-q_l) solve both FOCs, with negative SOCs, "
    "and give U_l = q_l q_h (q_h-q_l)/(4q_h-q_l)^2, U_h = 4 q_h^2 (q_h-q_l)/(4q_h-q_l)^2",
)
def _lemma22() -> Verdict:
    foc_l = sp.diff(REVENUE_L, p_l).subs(_AT_EQUILIBRIUM)
    foc_h = sp.diff(REVENUE_H, p_h).subs(_AT_EQUILIBRIUM)
    soc_l = _ratio_form(sp.diff(REVENUE_L, p_l, 2) * q_l)  # times q_l > 0
    soc_h = _ratio_form(sp.diff(REVENUE_H, p_h, 2) * q_h)
    printed_l = q_l * q_h * (q_h - q_l) / (4 * q_h - q_l) ** 2
    printed_h = 4 * q_h**2 * (q_h - q_l) / (4 * q_h - q_l) ** 2
    identities = all_zero(
        [
            (foc_l, "FOC of U_l"),
            (foc_h, "FOC of U_h"),
            (U_L - printed_l, "U_l"),
            (U_H - printed_h, "U_h"),
        ],
        "Lemma 22",
    )
    if not identities.holds:
        return identities
    if sign_on_interval(soc_l, rho, 0, 1) > 0 or sign_on_interval(soc_h, rho, 0, 1) > 0:
        return refuted("a second-order condition is not negative", {"soc_l": soc_l, "soc_h": soc_h})
    return proved(
        f"FOCs vanish at p*; q_l d2U_l/dp_l2 = {soc_l} < 0 and q_h d2U_h/dp_h2 = {soc_h} < 0 on rho in (0,1)"
    )


@proposition(
    "thesis.ch3.lemma22.argmax",
    source=f"{_SRC}, proof of Lemma 22 (spec ch3 typo 1)",
    statement="as printed: p_l* = argmax_{p_l} dU_l/dp_l",
    holds=False,
)
def _lemma22_argmax() -> Verdict:
    slope = sp.diff(sp.diff(REVENUE_L, p_l), p_l)  # dU_l/dp_l is affine in p_l with this slope
    point = {
        q_l: sp.Rational(3, 10),
        q_h: sp.Rational(4, 5),
        p_h: PRICE_H.subs({q_l: sp.Rational(3, 10), q_h: sp.Rational(4, 5)}),
    }
    if (
        slope.subs(point) < 0
    ):  # decreasing derivative: its argmax over p_l >= 0 is p_l = 0, not p_l*
        return refuted(
            "dU_l/dp_l decreases in p_l, so its argmax over p_l >= 0 is 0, while p_l* > 0",
            {"q_l": "3/10", "q_h": "4/5", "argmax dU_l/dp_l": 0, "p_l*": str(PRICE_L.subs(point))},
        )
    return proved("dU_l/dp_l is non-decreasing")


@proposition(
    "thesis.ch3.lemma22.argmax.corrected",
    source=f"{_SRC}, proof of Lemma 22 (spec ch3 typo 1)",
    statement="p_l* = argmax_{p_l} U_l, the root of dU_l/dp_l = 0 (U_l is concave in p_l)",
)
def _lemma22_argmax_corrected() -> Verdict:
    root = sp.solve(sp.diff(REVENUE_L, p_l), p_l)[0]
    concave = sp.diff(REVENUE_L, p_l, 2)
    at_star = is_zero(root.subs(p_h, PRICE_H) - PRICE_L, "root of dU_l/dp_l at p_h*")
    if not at_star.holds:
        return at_star
    return proved(
        f"dU_l/dp_l = 0 at p_l = {sp.factor(root)} = p_l* at p_h*, and d2U_l/dp_l2 = {sp.factor(concave)} < 0"
    )


@proposition(
    "thesis.ch3.lemma22.global",
    source=f"{_SRC}, Lemma 22; spec ch3 C1",
    statement="p_l*, p_h* are global best responses under the piecewise demand (grid search over [0, 1.2 q_h])",
)
def _lemma22_global() -> Verdict:
    def best_responses(ql: float, qh: float) -> bool:
        eq = equilibrium(ql, qh)
        grid = np.linspace(0.0, 1.2 * qh, 120_001)
        d_l, _ = demands(grid, eq.p_h, ql, qh)
        _, d_h = demands(eq.p_l, grid, ql, qh)
        return bool(
            abs(grid[np.argmax(grid * d_l)] - eq.p_l) < 1e-5
            and abs(grid[np.argmax(grid * d_h)] - eq.p_h) < 1e-5
        )

    pts = [
        {"ql": 0.3, "qh": 0.8},
        {"ql": 0.2, "qh": 0.6},
        {"ql": 0.7, "qh": 0.8},
        {"ql": 0.05, "qh": 0.95},
        {"ql": 0.5, "qh": 1.0},
    ]
    return on_points(best_responses, pts, "grid argmax of each revenue is within 1e-5 of p*")


@proposition(
    "thesis.ch3.lemma23",
    source=f"{_SRC}, Lemma 23",
    statement="under complete collaboration (q_l = q_h) both equilibrium revenues are 0",
)
def _lemma23() -> Verdict:
    return all_zero(
        [(U_L.subs(q_l, q_h), "U_l(q, q)"), (U_H.subs(q_l, q_h), "U_h(q, q)")], "Lemma 23"
    )


_PRINTED_PARTIALS = {
    "dU_h/dq_h": (
        U_H,
        q_h,
        4 * q_h * (4 * q_h**2 - 3 * q_h * q_l + 2 * q_l**2) / (4 * q_h - q_l) ** 3,
    ),
    "dU_h/dq_l": (U_H, q_l, -4 * q_h**2 * (2 * q_h + q_l) / (4 * q_h - q_l) ** 3),
    "dU_l/dq_h": (U_L, q_h, q_l**2 * (2 * q_h + q_l) / (4 * q_h - q_l) ** 3),
    "dU_l/dq_l": (U_L, q_l, q_h**2 * (4 * q_h - 7 * q_l) / (4 * q_h - q_l) ** 3),
}


def _monotone(name: str, sign: int) -> Callable[[], Verdict]:
    expr, var, printed = _PRINTED_PARTIALS[name]

    def check() -> Verdict:
        derivative = sp.diff(expr, var)
        as_printed = is_zero(derivative - printed, f"printed {name}")
        if not as_printed.holds:
            return as_printed
        in_rho = _ratio_form(derivative)
        found = sign_on_interval(in_rho, rho, 0, 1)
        if found != sign:
            return refuted(f"{name} = {in_rho} has sign {found} on (0, 1)", {"rho": "1/2"})
        return proved(
            f"{name} = {in_rho} (as printed), sign {'+' if sign > 0 else '-'} on rho in (0, 1)"
        )

    return check


for _item, (_name, _sign, _words) in enumerate(
    [
        ("dU_h/dq_h", +1, "U_h is increasing in q_h"),
        ("dU_h/dq_l", -1, "U_h is decreasing in q_l"),
        ("dU_l/dq_h", +1, "U_l is increasing in q_h"),
    ],
    start=1,
):
    proposition(
        f"thesis.ch3.prop1.{_item}",
        source=f"{_SRC}, Proposition 1.{_item}",
        statement=f"for q_l <= q_h, {_words}",
    )(_monotone(_name, _sign))


@proposition(
    "thesis.ch3.prop1.4",
    source=f"{_SRC}, Proposition 1.4",
    statement="U_l is increasing in q_l for q_l <= 4q_h/7 and decreasing otherwise; its maximum is q_h/48",
)
def _prop1_4() -> Verdict:
    derivative = sp.diff(U_L, q_l)
    as_printed = is_zero(derivative - _PRINTED_PARTIALS["dU_l/dq_l"][2], "printed dU_l/dq_l")
    if not as_printed.holds:
        return as_printed
    in_rho = _ratio_form(derivative)
    four_sevenths = sp.Rational(4, 7)
    up, down = (
        sign_on_interval(in_rho, rho, 0, four_sevenths),
        sign_on_interval(in_rho, rho, four_sevenths, 1),
    )
    peak = sp.simplify(U_L.subs(q_l, four_sevenths * q_h))
    if (up, down) != (1, -1) or sp.simplify(peak - q_h / 48) != 0:
        return refuted("sign pattern or peak differs", {"signs": (up, down), "peak": peak})
    return proved(f"dU_l/dq_l = {in_rho}: + on (0, 4/7), - on (4/7, 1); U_l(4q_h/7, q_h) = {peak}")


@proposition(
    "thesis.ch3.identities",
    source=f"{_SRC}, eq. (3.4); spec ch3 C10",
    statement="U_l, U_h are homogeneous of degree 1 and U_l/U_h = q_l/(4q_h)",
)
def _identities() -> Verdict:
    lam = sp.Symbol("lambda", positive=True)
    scaled = {q_l: lam * q_l, q_h: lam * q_h}
    return all_zero(
        [
            (U_L.subs(scaled, simultaneous=True) - lam * U_L, "U_l homogeneity"),
            (U_H.subs(scaled, simultaneous=True) - lam * U_H, "U_h homogeneity"),
            (U_L / U_H - q_l / (4 * q_h), "U_l/U_h = q_l/(4q_h)"),
        ],
        "degree-1 homogeneity and the revenue ratio",
    )


@proposition(
    "thesis.ch3.uh_inverse",
    source="spec ch3 section 3 [NEW]",
    statement="u_h(rho) = 4(1-rho)/(4-rho)^2 is decreasing on [0,1] with inverse 4 - 6/(1 + sqrt(1 - 3y)) on [0, 1/4]",
)
def _uh_inverse() -> Verdict:
    y = sp.Symbol("y", nonnegative=True)
    inverse = U_H_INVERSE.subs(sp.Symbol("y", nonnegative=True), y)
    s = sp.Symbol("s", positive=True)  # s = sqrt(1 - 3y) in (0, 1]
    composed = u_h_rho.subs(rho, inverse).subs(sp.sqrt(1 - 3 * y), s).subs(y, (1 - s**2) / 3)
    inverse_ok = is_zero(composed - (1 - s**2) / 3, "u_h(u_h^{-1}(y)) - y")
    if not inverse_ok.holds:
        return inverse_ok
    if sign_on_interval(sp.diff(u_h_rho, rho), rho, 0, 1) >= 0:
        return refuted("u_h is not decreasing", {})
    return proved("u_h(u_h^{-1}(y)) = y (with s = sqrt(1-3y)); du_h/drho < 0 on (0, 1)")


@proposition(
    "thesis.ch3.surplus",
    source="spec ch3 C27 (conclusion: consumer welfare) [NEW]",
    statement="CS* = q_h^2(4q_h + 5q_l)/(2(4q_h - q_l)^2) and W* = q_h(12q_h^2 - q_h q_l - 2q_l^2)/(2(4q_h - q_l)^2)",
)
def _surplus() -> Verdict:
    cs = q_h**2 * (4 * q_h + 5 * q_l) / (2 * (4 * q_h - q_l) ** 2)
    w = q_h * (12 * q_h**2 - q_h * q_l - 2 * q_l**2) / (2 * (4 * q_h - q_l) ** 2)
    return all_zero(
        [(CONSUMER_SURPLUS - cs, "CS*"), (WELFARE - w, "W*")],
        "integrating theta q - p over the buyers",
    )


@proposition(
    "thesis.ch3.remark1.cournot",
    source=f"{_SRC}, Remark 1; spec ch3 section 14.2 [NEW]",
    statement="Cournot shares x_l = q_h/(4q_h-q_l), x_h = (2q_h-q_l)/(4q_h-q_l) solve both FOCs; complete collaboration leaves q/9 each",
)
def _cournot() -> Verdict:
    return all_zero(
        [
            (sp.diff(x_l * COURNOT_PRICE_L, x_l).subs(_AT_COURNOT), "Cournot FOC of l"),
            (sp.diff(x_h * COURNOT_PRICE_H, x_h).subs(_AT_COURNOT), "Cournot FOC of h"),
            (COURNOT_U_L.subs(q_l, q_h) - q_h / 9, "U_l(q, q) = q/9"),
            (COURNOT_U_H.subs(q_l, q_h) - q_h / 9, "U_h(q, q) = q/9"),
        ],
        "Cournot equilibrium",
    )


@proposition(
    "thesis.ch3.oligopoly.n2",
    source="spec ch3 section 14.1, C26 [NEW]",
    statement="the n-firm vertical Bertrand equilibrium with n = 2 is Lemma 22",
)
def _oligopoly_n2() -> Verdict:
    from econ.oligopoly import oligopoly_equilibrium

    def agrees(ql: float, qh: float) -> bool:
        n_firm, two = oligopoly_equilibrium([ql, qh]), equilibrium(ql, qh)
        return bool(
            np.allclose(n_firm.price, [two.p_l, two.p_h], rtol=1e-12)
            and np.allclose(n_firm.revenue, [two.U_l, two.U_h], rtol=1e-12)
        )

    rng = np.random.default_rng(20240626)
    pts = [
        {"ql": float(lo), "qh": float(hi)}
        for lo, hi in np.sort(rng.uniform(0.01, 1, (200, 2)), axis=1)
    ]
    return on_points(agrees, pts, "prices and revenues agree to 1e-12")
