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

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ.outputs import fields_frame, plain_fields, scalar_or_array
from econ.validation import unit_interval

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


#: Equilibrium prices, Lemma 22 (3.12)-(3.13); ``thesis.ch3.lemma22`` proves they solve both
#: first-order conditions.
PRICE_L = q_l * (q_h - q_l) / (4 * q_h - q_l)


PRICE_H = 2 * q_h * (q_h - q_l) / (4 * q_h - q_l)


#: The substitution of the equilibrium prices for ``p_l``, ``p_h``.
AT_EQUILIBRIUM = {p_l: PRICE_L, p_h: PRICE_H}


EQ_THETA_L = sp.factor(THETA_L.subs(AT_EQUILIBRIUM))


EQ_THETA_H = sp.factor(THETA_H.subs(AT_EQUILIBRIUM))


EQ_DEMAND_L = sp.factor(DEMAND_L.subs(AT_EQUILIBRIUM))


EQ_DEMAND_H = sp.factor(DEMAND_H.subs(AT_EQUILIBRIUM))


#: Price-optimal revenues U_l(q_l, q_h), U_h(q_l, q_h) of eq. (3.4).
U_L = sp.factor(REVENUE_L.subs(AT_EQUILIBRIUM))


U_H = sp.factor(REVENUE_H.subs(AT_EQUILIBRIUM))


#: Consumer surplus: the integral of theta q - p over the buyers of each firm.
CONSUMER_SURPLUS = sp.factor(
    (
        sp.integrate(theta * q_l - p_l, (theta, THETA_L, THETA_H))
        + sp.integrate(theta * q_h - p_h, (theta, THETA_H, 1))
    ).subs(AT_EQUILIBRIUM)
)


WELFARE = sp.factor(CONSUMER_SURPLUS + U_L + U_H)


#: Revenues per unit of q_h as functions of rho = q_l / q_h (degree-1 homogeneity).
u_l_rho = sp.factor((U_L / q_h).subs(q_l, rho * q_h))


u_h_rho = sp.factor((U_H / q_h).subs(q_l, rho * q_h))


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


def _numeric_rho(expr: sp.Expr) -> Callable[..., NDArray[np.float64]]:
    return sp.lambdify(rho, expr, modules="numpy")


def _homogeneous(expr: sp.Expr) -> tuple[Callable[..., NDArray[np.float64]], int]:
    r"""``(f, d)`` with ``expr(q_l, q_h) = q_h**d * f(q_l / q_h)``.

    Every closed form of the duopoly is homogeneous in :math:`(q_l, q_h)` (degree 0 for
    demands and indifferent types, 1 for prices, revenues and surplus). Evaluating it in the
    ratio keeps it finite for qualities down to the smallest subnormal, where products such
    as :math:`q_l q_h (q_h - q_l)` underflow and the quotient of the raw form is 0/0.
    """
    scale = sp.Symbol("t", positive=True)
    factor = sp.simplify(expr.subs({q_l: scale * q_l, q_h: scale * q_h}, simultaneous=True) / expr)
    degree = int(sp.Poly(factor, scale).degree())
    if sp.simplify(factor - scale**degree) != 0:
        raise ValueError(f"{expr} is not homogeneous in (q_l, q_h)")
    in_rho = sp.simplify(expr.subs(q_l, rho * q_h) / q_h**degree)
    return _numeric_rho(in_rho), degree


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


_NUMERIC = {name: _homogeneous(expr) for name, expr in _FIELDS.items()}


_COURNOT = {
    "x_l": _homogeneous(COURNOT_X_L),
    "x_h": _homogeneous(COURNOT_X_H),
    "p_l": _homogeneous(COURNOT_PRICE_L.subs(_AT_COURNOT)),
    "p_h": _homogeneous(COURNOT_PRICE_H.subs(_AT_COURNOT)),
    "U_l": _homogeneous(COURNOT_U_L),
    "U_h": _homogeneous(COURNOT_U_H),
}


u_l = _numeric_rho(u_l_rho)


u_h = _numeric_rho(u_h_rho)


def u_h_inverse(y: ArrayLike) -> NDArray[np.float64]:
    r"""Inverse of :math:`u_h(\rho) = 4(1-\rho)/(4-\rho)^2` on :math:`y \in [0, 1/4]`.

    .. math:: u_h^{-1}(y) = 4 - \frac{6}{1 + \sqrt{1 - 3y}}

    ``thesis.ch3.uh_inverse`` proves the identity :math:`u_h(u_h^{-1}(y)) = y`.

    References
    ----------
    Werner (2024), ch. 3, §3.7 (the revenue ratio :math:`u_h` of Lemma 22).

    Examples
    --------
    >>> round(u_h_inverse(4 * (1 - 0.4) / (4 - 0.4) ** 2), 10)
    0.4
    """
    if isinstance(y, float) and 0.0 <= y <= 0.25:  # one number in the domain: no array
        return _u_h_inverse(y, math.sqrt)
    arr = np.asarray(y, dtype=np.float64)
    return scalar_or_array(_u_h_inverse(arr, np.sqrt), y)


def _u_h_inverse(y: Any, sqrt: Callable[[Any], Any]) -> Any:
    return 4.0 - 6.0 / (1.0 + sqrt(1.0 - 3.0 * y))


@dataclass(frozen=True, slots=True)
class DuopolyEquilibrium:
    """Equilibrium of the quality duopoly (Lemmas 21-22), arrays broadcast from the inputs.

    Attributes are named as in the thesis: prices ``p_l, p_h``, demands ``D_l, D_h``,
    indifferent types ``theta_l, theta_h``, revenues ``U_l, U_h``, and the consumer surplus
    and total welfare (surplus plus revenues). Each is a Python ``float`` when both
    qualities were scalars, else an array of their broadcast shape.

    References
    ----------
    Werner (2024), ch. 3, §3.2 (pp. 59-61), Definitions 2-3, Lemmas 21-22, eqs. (3.2)-(3.4).
    """

    q_l: Any
    q_h: Any
    p_l: Any
    p_h: Any
    D_l: Any
    D_h: Any
    theta_l: Any
    theta_h: Any
    U_l: Any
    U_h: Any
    consumer_surplus: Any
    welfare: Any

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: floats, or nested lists of the broadcast shape."""
        return plain_fields(self)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per pair of qualities (needs pandas)."""
        return fields_frame(self, "DuopolyEquilibrium")


def _qualities(
    q_low: ArrayLike, q_high: ArrayLike, *, order: bool, literal: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
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


def _evaluate(
    table: dict[str, tuple[Callable[..., Any], int]], ql: NDArray, qh: NDArray
) -> dict[str, NDArray]:
    """Evaluate closed forms in the ratio ``q_l / q_h`` (:func:`_homogeneous`).

    Every quantity is 0 where both qualities are 0.
    """
    empty = qh == 0
    safe_h = np.where(empty, 1.0, qh)
    ratio = np.where(empty, 0.0, ql) / safe_h
    out = {}
    for name, (fn, degree) in table.items():
        value = np.asarray(fn(ratio), dtype=np.float64) * safe_h**degree
        out[name] = np.where(empty, 0.0, np.broadcast_to(value, ql.shape)) + 0.0  # no -0.0
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

    Consumer surplus, integrating :math:`\theta q - p` over the buyers of each firm:

    .. math:: CS^* = \frac{q_h^2 (4 q_h + 5 q_l)}{2 (4 q_h - q_l)^2}

    References
    ----------
    M. Werner, *Collaborative Learning: Aligning Goals and Outcomes*, PhD thesis, UC Berkeley
    (2024), ch. 3, §3.2, Lemmas 21-23, eq. (3.4), pp. 59-62.

    Examples
    --------
    :math:`p_l^* = 0.3 \cdot 0.5 / 2.9` and :math:`p_h^* = 2 \cdot 0.8 \cdot 0.5 / 2.9`:

    >>> eq = equilibrium(0.3, 0.8)
    >>> round(eq.p_l, 4), round(eq.p_h, 4), round(eq.D_l, 4), round(eq.D_h, 4)
    (0.0517, 0.2759, 0.2759, 0.5517)
    >>> round(eq.U_l, 4), round(eq.U_h, 4), round(eq.consumer_surplus, 4), round(eq.welfare, 4)
    (0.0143, 0.1522, 0.1788, 0.3453)

    Equal qualities price at zero and every consumer buys (Lemma 23):

    >>> eq = equilibrium(0.5, 0.5)
    >>> eq.p_h, eq.U_h, eq.welfare
    (0.0, 0.0, 0.25)

    Arrays broadcast:

    >>> equilibrium([0.2, 0.4], 0.8).p_h.round(4)
    array([0.32  , 0.2286])
    """
    ql, qh = _qualities(q_l, q_h, order=order)
    values = {"q_l": ql, "q_h": qh, **_evaluate(_NUMERIC, ql, qh)}
    return DuopolyEquilibrium(**{k: scalar_or_array(v, q_l, q_h) for k, v in values.items()})


def revenues(
    q_l: ArrayLike, q_h: ArrayLike, *, literal: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Price-optimal revenues ``(U_l, U_h)`` of eq. (3.4).

    With ``literal=True`` the formulas are evaluated with fixed firm labels even when
    ``q_l > q_h``, as the thesis does in Figure 3.2a (``U_h`` may then be negative).

    References
    ----------
    Werner (2024), ch. 3, §3.2, eq. (3.4); Figure 3.2a.

    Examples
    --------
    >>> [round(u, 4) for u in revenues(0.3, 0.8)]
    [0.0143, 0.1522]
    """
    ql, qh = _qualities(q_l, q_h, order=False, literal=literal)
    table = {"U_l": _NUMERIC["U_l"], "U_h": _NUMERIC["U_h"]}
    out = _evaluate(table, ql, qh)
    return scalar_or_array(out["U_l"], q_l, q_h), scalar_or_array(out["U_h"], q_l, q_h)


@dataclass(frozen=True, slots=True)
class CournotEquilibrium:
    """Equilibrium of the Cournot variant of the duopoly (Remark 1), arrays broadcast.

    Market shares ``x_l, x_h``, prices ``p_l, p_h`` and revenues ``U_l, U_h``. Each is a
    Python ``float`` when both qualities were scalars, else an array of their broadcast shape.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Remark 1.
    """

    x_l: Any
    x_h: Any
    p_l: Any
    p_h: Any
    U_l: Any
    U_h: Any

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: floats, or nested lists of the broadcast shape."""
        return plain_fields(self)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per pair of qualities (needs pandas)."""
        return fields_frame(self, "CournotEquilibrium")


def cournot_equilibrium(
    q_l: ArrayLike, q_h: ArrayLike, *, order: bool = False
) -> CournotEquilibrium:
    r"""Cournot variant of the duopoly (Remark 1): firms choose market shares.

    Inverse demands :math:`p_l = q_l(1 - x_l - x_h)`, :math:`p_h = q_h(1 - x_h) - q_l x_l`;
    the equilibrium has :math:`x_l = q_h/(4q_h - q_l)`, :math:`x_h = (2q_h - q_l)/(4q_h - q_l)`
    and :math:`U_l = q_l q_h^2/(4q_h - q_l)^2`, :math:`U_h = q_h(2q_h - q_l)^2/(4q_h - q_l)^2`.
    Unlike Bertrand, complete collaboration leaves each firm :math:`q/9 > 0`.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Remark 1.

    Examples
    --------
    >>> eq = cournot_equilibrium(0.3, 0.8)
    >>> round(eq.x_l, 4), round(eq.x_h, 4), round(eq.U_l, 4), round(eq.U_h, 4)
    (0.2759, 0.4483, 0.0228, 0.1608)
    >>> round(cournot_equilibrium(0.9, 0.9).U_h, 4)  # q/9
    0.1
    """
    ql, qh = _qualities(q_l, q_h, order=order)
    values = _evaluate(_COURNOT, ql, qh)
    return CournotEquilibrium(**{k: scalar_or_array(v, q_l, q_h) for k, v in values.items()})


def equilibrium_exact(q_low: sp.Rational | int, q_high: sp.Rational | int) -> dict[str, sp.Expr]:
    """The equilibrium at exact rational qualities ``0 < q_l < q_h``, as sympy numbers.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemma 22, eq. (3.4).

    Examples
    --------
    >>> exact = equilibrium_exact(1, 2)
    >>> exact["p_l"], exact["p_h"], exact["U_h"], exact["welfare"]
    (1/7, 4/7, 16/49, 44/49)
    """
    point = {q_l: sp.nsimplify(q_low), q_h: sp.nsimplify(q_high)}
    return {name: sp.nsimplify(expr.subs(point)) for name, expr in _FIELDS.items()}


def demands(
    p_low: ArrayLike, p_high: ArrayLike, q_low: ArrayLike, q_high: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Demands at arbitrary prices: Lemma 21 extended piecewise.

    Types in :math:`[\hat\theta_l, \hat\theta_h)` buy the low model and types above
    :math:`\hat\theta_h` the high one, each clipped to [0, 1]; when the low model is dominated
    (:math:`\hat\theta_l \ge \hat\theta_h`) it sells nothing and the high firm faces
    :math:`1 - \min(p_h/q_h, 1)`. Requires ``0 < q_l < q_h``.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemma 21, eqs. (3.6)-(3.7).

    Examples
    --------
    At the equilibrium prices of qualities 0.3 and 0.8 (Lemma 22):

    >>> d_l, d_h = demands(0.3 * 0.5 / 2.9, 2 * 0.8 * 0.5 / 2.9, 0.3, 0.8)
    >>> round(d_l, 4), round(d_h, 4)
    (0.2759, 0.5517)
    >>> demands(0.5, 0.1, 0.3, 0.8)  # the low model is dominated
    (0.0, 0.875)
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
    given = (p_low, p_high, q_low, q_high)
    return scalar_or_array(d_l, *given), scalar_or_array(d_h, *given)
