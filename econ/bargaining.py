r"""The Nash bargaining solution of the duopoly, in closed form.

The Nash bargaining solution (Nash 1950; Werner 2024, ch. 3, section 3.4) maximises the Nash
product over the *individually rational* part of the feasible set;
:mod:`econ.nash_bargaining` solves that program for any two players over a box of parameters.

No firm accepts a bargained model worse than the one it starts with, and section 3.3
assumes that model qualities never degrade: by default (``allow_lower=False``) the
bargaining is over the qualities reachable from the disagreement point,
:math:`q_l \ge q_{l,0}, q_h \ge q_{h,0}` (``thesis.ch3.nash.reachable``). The thesis's
program constrains the two revenues and nothing else: its :math:`q_l^*` may lie below the
low firm's starting quality, and Proposition 4 ("if :math:`q_{l,0} > q_l^*`, Algorithm 5
cannot converge") is about exactly those starts; ``allow_lower=True`` solves that program
(``thesis.ch3.nash.program``), as the reproductions of the thesis's Algorithm 5 and
figures do.

With disagreement point :math:`(q_{l,0}, q_{h,0})` and maximal quality :math:`Q`,
Proposition 2 gives :math:`q_h^* = Q`, and homogeneity reduces the problem to the ratio
:math:`\rho = q_l/q_h`: :math:`N(\rho Q, Q) = Q^2 (u_l(\rho) - A)(u_h(\rho) - H)` with
:math:`A = U_{l,0}/Q`, :math:`H = U_{h,0}/Q`. Its stationary points are the roots of the cubic

.. math::

    (4 + 7H + 4A)\rho^3 + (32 - 60H - 24A)\rho^2 + (144H - 52)\rho + (16 - 64H + 128A) = 0,

which is derived below from :data:`econ.duopoly.U_L` and :data:`econ.duopoly.U_H` (and with
:math:`Q = 1`, :math:`A = \rho_0 H / 4` is the thesis's eq. 3.18). :math:`\rho^*` is the
cubic's root inside the individually rational interval :math:`[\rho_a, \min(\rho_b, \rho_U)]`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize_scalar

from econ import duopoly
from econ.outputs import fields_frame, plain_fields, scalar_or_array
from econ.validation import in_interval

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

    Each attribute is a Python ``float`` when the starting point was given as scalars.

    Attributes
    ----------
    rho_star, q_l_star, q_h_star
        Optimal ratio and qualities; :math:`q_h^* = Q` (Proposition 2).
    nash_product
        :math:`N(q_l^*, q_h^*)`.
    U_l_star, U_h_star
        The revenues at the solution.
    rho_low, rho_high
        The feasible interval of ratios at :math:`q_h = Q` (individually rational, and at
        least :math:`q_{l,0}/Q` where lowering is not allowed).

    References
    ----------
    Werner (2024), ch. 3, §3.4, the Nash bargaining program and Proposition 2; §3.7, eqs.
    (3.17)-(3.18).
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
        """JSON-ready: floats, or nested lists of the starting points' shape."""
        return plain_fields(self)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per starting point (needs pandas)."""
        return fields_frame(self, "DuopolyNashSolution")


def firm_revenues(
    q_a: ArrayLike, q_b: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each firm's equilibrium revenue, with roles by current quality (eq. 3.4).

    Firm ``a`` sells quality ``q_a``: it earns the low firm's :math:`U_l` while its model is
    the worse one and the high firm's :math:`U_h` once it is the better one, so no revenue is
    negative (Definition 3 prices and demands are non-negative).

    References
    ----------
    Werner (2024), ch. 3, Lemma 22, eq. (3.4).

    Examples
    --------
    >>> u_a, u_b = firm_revenues(0.3, 0.8)
    >>> round(float(u_a), 6), round(float(u_b), 6)
    (0.014269, 0.1522)
    """
    qa, qb = np.broadcast_arrays(
        np.asarray(q_a, dtype=np.float64), np.asarray(q_b, dtype=np.float64)
    )
    low, high = duopoly.revenues(np.minimum(qa, qb), np.maximum(qa, qb))
    a_is_low = qa <= qb
    return (
        scalar_or_array(np.where(a_is_low, low, high), q_a, q_b),
        scalar_or_array(np.where(a_is_low, high, low), q_a, q_b),
    )


def nash_product(
    q_l: ArrayLike, q_h: ArrayLike, q_l0: ArrayLike, q_h0: ArrayLike
) -> NDArray[np.float64]:
    r""":math:`N = (U_l(q_l, q_h) - U_{l,0})(U_h(q_l, q_h) - U_{h,0})` (section 3.4).

    The firms keep their names (``l`` started low); revenues follow :func:`firm_revenues`.
    The product alone does not say whether the point is individually rational (it is also
    positive when both firms lose): :func:`nash_report` does.

    References
    ----------
    Werner (2024), ch. 3, §3.4, the Nash bargaining program.

    Examples
    --------
    >>> round(float(nash_product(0.3, 0.8, 0.2, 0.6)), 8)
    0.00014443
    """
    return nash_report(q_l, q_h, q_l0, q_h0).product


@dataclass(frozen=True, slots=True)
class NashReport:
    """The Nash product of a point together with what makes it a bargaining outcome or not.

    Each attribute is a Python ``float`` (``rational`` a ``bool``) when the qualities were scalars.

    Attributes
    ----------
    product
        :math:`(U_l - U_{l,0})(U_h - U_{h,0})`, whatever the signs.
    gain_l, gain_h
        :math:`U_l - U_{l,0}` and :math:`U_h - U_{h,0}`.
    rational
        Both gains are at least ``-tol``: the point lies in the individually rational set
        over which the Nash bargaining solution is defined. Outside it the product is no
        measure of progress (both factors negative give a positive product).
    nash_value
        The product where the point is rational, NaN elsewhere.

    References
    ----------
    Werner (2024), ch. 3, §3.4, the Nash product :math:`N(q_l, q_h, q_{l,0}, q_{h,0})` and its
    constraints.
    """

    product: NDArray[np.float64]
    gain_l: NDArray[np.float64]
    gain_h: NDArray[np.float64]
    rational: NDArray[np.bool_]
    nash_value: NDArray[np.float64]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: numbers, or nested lists of the points' shape (NaN as None)."""
        return plain_fields(self)


def nash_report(
    q_l: ArrayLike, q_h: ArrayLike, q_l0: ArrayLike, q_h0: ArrayLike, *, tol: float = 1e-12
) -> NashReport:
    """Nash product of ``(q_l, q_h)`` against the start ``(q_l0, q_h0)``, flagged rational or not.

    Firms keep their names and earn by current quality (:func:`firm_revenues`), at the point
    and at the start alike.

    References
    ----------
    Werner (2024), ch. 3, §3.4, the Nash product :math:`N(q_l, q_h, q_{l,0}, q_{h,0})`; revenues of
    Lemma 22, eq. (3.4).

    Examples
    --------
    >>> r = nash_report(0.35, 0.8, 0.3, 0.6)
    >>> round(float(r.product), 8), bool(r.rational)
    (0.00014335, True)
    """
    ul, uh = firm_revenues(q_l, q_h)
    ul0, uh0 = firm_revenues(q_l0, q_h0)
    gain_l, gain_h = np.asarray(ul - ul0), np.asarray(uh - uh0)
    product = gain_l * gain_h
    rational = (gain_l >= -tol) & (gain_h >= -tol)
    values = {
        "product": product,
        "gain_l": gain_l,
        "gain_h": gain_h,
        "rational": rational,
        "nash_value": np.where(rational, product, np.nan),
    }
    given = (q_l, q_h, q_l0, q_h0)
    return NashReport(**{k: scalar_or_array(v, *given) for k, v in values.items()})


def feasible_interval(
    q_l0: ArrayLike, q_h0: ArrayLike, q_max: ArrayLike = 1.0, *, allow_lower: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Ratios :math:`\rho` at :math:`q_h = Q` where neither firm is worse off than at the start.

    :math:`U_l \ge U_{l,0}` on :math:`[\rho_a, \rho_b]`,
    :math:`\rho_{a,b} = ((1 + 8A) \mp \sqrt{1 - 48A}) / (2(1 + A))`, and :math:`U_h \ge U_{h,0}`
    for :math:`\rho \le \rho_U = u_h^{-1}(H)`. The interval always contains
    :math:`q_{l,0}/Q`. Its lower end is at least :math:`q_{l,0}/Q` unless ``allow_lower``
    (the thesis's program, module docstring).

    References
    ----------
    Werner (2024), ch. 3, §3.4, the constraints of the Nash bargaining program at :math:`q_h = Q`
    (Proposition 2); eq. (3.17).

    Examples
    --------
    >>> lo, hi = feasible_interval(0.3, 0.6, allow_lower=True)
    >>> round(float(lo), 6), round(float(hi), 6)
    (0.225191, 0.739681)
    >>> round(float(feasible_interval(0.3, 0.6)[0]), 6)  # no lower than the start
    0.3
    """
    a_, h_, q = disagreement_ratios(q_l0, q_h0, q_max)
    lo, hi = _interval(a_, h_)
    if not allow_lower:
        lo = np.maximum(lo, np.asarray(q_l0, dtype=np.float64) / q)
    given = (q_l0, q_h0, q_max)
    return scalar_or_array(lo, *given), scalar_or_array(hi, *given)


def duopoly_nash_solution(
    q_l0: ArrayLike, q_h0: ArrayLike, q_max: ArrayLike = 1.0, *, allow_lower: bool = False
) -> DuopolyNashSolution:
    r"""Nash bargaining solution of the quality duopoly, vectorised over starting points.

    Parameters
    ----------
    q_l0, q_h0
        The disagreement point: qualities before collaboration, ``0 <= q_l0 <= q_h0``.
    q_max
        :math:`Q = \max_x q(x)`, the best quality collaboration can reach (``q_h0 <= Q <= 1``).
    allow_lower
        The feasible set. ``False`` (the default): only qualities reachable when models never
        degrade (section 3.3, assumption 4), :math:`q_l \ge q_{l,0}`,
        :math:`q_h \ge q_{h,0}`, so no firm ends below its disagreement quality; the
        solution is :math:`(\max(q_{l,0}, q_l^*), Q)`, the Nash product being unimodal in
        :math:`\rho` on the rational interval (``thesis.ch3.nash.reachable``). ``True``
        (the thesis's program, section 3.4): every :math:`q_l \le q_h \le Q` whose revenues
        are individually rational, so :math:`q_l^*` may lie below :math:`q_{l,0}` (the
        starts of Proposition 4).

    Notes
    -----
    :math:`\rho^*` is the root of :data:`CUBIC` inside the feasible interval. Every cubic is
    solved in closed form, vectorised: the middle of its three real roots (which is
    :math:`\rho^*` wherever the registry's grids reach) for all points at once, and all roots,
    with a bounded scalar search behind them, only where that middle root is not feasible.
    A start given as three scalars takes the same steps in Python floats
    (:func:`_scalar_solution`); one that is out of range or whose middle root is not
    feasible goes the general way, with its checks and messages.

    References
    ----------
    Werner (2024), ch. 3, §3.4 and Proposition 2.

    Examples
    --------
    >>> deal = duopoly_nash_solution(0.2, 0.6, 1.0)
    >>> round(float(deal.q_l_star), 6), float(deal.q_h_star)
    (0.396832, 1.0)
    >>> float(duopoly_nash_solution(0.5, 0.6, 1.0).q_l_star)  # the low firm keeps its 0.5
    0.5
    >>> round(float(duopoly_nash_solution(0.5, 0.6, 1.0, allow_lower=True).q_l_star), 6)
    0.45255
    """
    if _is_scalar(q_l0) and _is_scalar(q_h0) and _is_scalar(q_max):
        fast = _scalar_solution(float(q_l0), float(q_h0), float(q_max), allow_lower)
        if fast is not None:
            return fast
    a_, h_, q = disagreement_ratios(q_l0, q_h0, q_max)
    lo, hi = _interval(a_, h_)
    monic = _monic_cubic(a_, h_)
    best = _middle_root(*monic)
    settled = (best >= lo - 1e-12) & (best <= hi + 1e-12)
    best = np.array(np.clip(best, lo, hi), dtype=np.float64)  # an array, also for scalars
    rest = np.flatnonzero(~settled.ravel())
    if rest.size:
        best.flat[rest] = _best_rational_root(*(v.ravel()[rest] for v in (a_, h_, lo, hi, *monic)))
    q_l_star = best * q
    if not allow_lower:
        start = np.broadcast_to(np.asarray(q_l0, dtype=np.float64), q.shape)
        floor = start / q
        lo = np.maximum(lo, floor)
        best = np.maximum(best, floor)
        q_l_star = np.maximum(best * q, start)  # never below the start, also in floating point
    # inside the rational interval both gains are >= 0, so the product is; where the interval
    # is a point (the high firm already at Q) rounding leaves a product of order -1e-35
    product = np.maximum(q**2 * nash_product_at_q_max(best, a_, h_), 0.0)
    arrays = (
        best,
        q_l_star,
        q,
        product,
        q * duopoly.u_l(best),
        q * duopoly.u_h(best),
        lo,
        hi,
    )
    given = (q_l0, q_h0, q_max)
    return DuopolyNashSolution(
        *(scalar_or_array(np.array(v, dtype=np.float64) + 0.0, *given) for v in arrays)
    )


def _is_scalar(value: object) -> TypeGuard[float | np.floating | np.integer]:
    """A Python or numpy real number (not an array): the inputs of the scalar fast path."""
    return isinstance(value, (float, int, np.floating, np.integer))


def _scalar_solution(
    ql0: float, qh0: float, q: float, allow_lower: bool
) -> DuopolyNashSolution | None:
    """:func:`duopoly_nash_solution` of one start in Python floats; ``None`` sends it the general way.

    The steps and formulas are the general path's (:func:`disagreement_ratios`,
    :func:`_interval`, :func:`_monic_cubic`, :func:`_middle_root`), so the two agree to
    round-off (``math`` and numpy's elementary functions may differ in the last bit). A start
    that fails a check (NaN included: every comparison with it is false) or whose middle root
    is not feasible returns ``None``: the general path raises the same one-line error, or
    solves it.
    """
    if not (0.0 <= ql0 <= qh0 <= q <= 1.0 and q > 0.0):
        return None
    share = qh0 / q
    ratio = ql0 / qh0 if qh0 > 0 else 0.0
    a_ = share * float(duopoly.u_l(ratio)) if qh0 > 0 else 0.0
    h_ = share * float(duopoly.u_h(ratio)) if qh0 > 0 else 0.0
    disc = math.sqrt(max(1.0 - 48.0 * a_, 0.0))
    lo = ((1 + 8 * a_) - disc) / (2 * (1 + a_))
    rho_b = ((1 + 8 * a_) + disc) / (2 * (1 + a_))
    hi = max(min(rho_b, float(duopoly.u_h_inverse(min(h_, 0.25)))), lo)
    c3, c2, c1, c0 = _CUBIC_COEFFS(a_, h_)
    b2, b1, b0 = c2 / c3, c1 / c3, c0 / c3
    shift, p, qq = (float(v) for v in _depressed(b2, b1, b0))
    if not 4 * p * p * p + 27 * qq * qq < 0:  # one real root: the general path's search
        return None
    m = 2 * math.sqrt(-p / 3)
    angle = math.acos(min(max(3 * qq / (p * m), -1.0), 1.0)) / 3
    best = m * math.cos(angle - 2 * math.pi / 3) - shift
    for _ in range(2):  # _newton's two steps
        slope = (3 * best + 2 * b2) * best + b1
        if slope != 0:
            best = best - (((best + b2) * best + b1) * best + b0) / slope
    if not (lo - 1e-12 <= best <= hi + 1e-12):
        return None
    best = min(max(best, lo), hi)
    q_l_star = best * q
    if not allow_lower:
        floor = ql0 / q
        lo, best = max(lo, floor), max(best, floor)
        q_l_star = max(best * q, ql0)
    u_l, u_h = float(duopoly.u_l(best)), float(duopoly.u_h(best))
    product = max(q * q * ((u_l - a_) * (u_h - h_)), 0.0)  # nash_product_at_q_max in floats
    values: tuple[Any, ...] = (best, q_l_star, q, product, q * u_l, q * u_h, lo, hi)
    return DuopolyNashSolution(*(v + 0.0 for v in values))


def disagreement_ratios(
    q_l0: ArrayLike, q_h0: ArrayLike, q_max: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    r"""The start's revenues per unit of :math:`Q`: ``(A, H, Q)``, broadcast, inputs checked.

    :math:`A = U_{l,0}/Q` and :math:`H = U_{h,0}/Q` are computed in ratios,
    :math:`(q_{h,0}/Q)\, u(q_{l,0}/q_{h,0})`, so they stay finite for any tiny quality.

    References
    ----------
    Werner (2024), ch. 3, §3.4, the disagreement point of the Nash bargaining program; §3.7,
    eqs. (3.17)-(3.18).

    Examples
    --------
    >>> a_, h_, q = disagreement_ratios(0.2, 0.6, 1.0)
    >>> round(float(a_), 6), round(float(h_), 6)
    (0.009917, 0.119008)
    """
    ql0 = in_interval("q_l0", q_l0, 0.0, 1.0)
    qh0 = in_interval("q_h0", q_h0, 0.0, 1.0)
    q = in_interval("q_max", q_max, 0.0, 1.0, low_open=True)
    ql0, qh0, q = np.broadcast_arrays(ql0, qh0, q)
    if np.any(ql0 > qh0):
        raise ValueError("q_l0 must not exceed q_h0")
    if np.any(qh0 > q):
        raise ValueError("q_h0 must not exceed q_max (Q is the best reachable quality)")
    # A = U_l0/Q = (q_h0/Q) u_l(q_l0/q_h0), H likewise: in ratios, finite for any tiny quality
    share = qh0 / q
    ratio = np.divide(ql0, qh0, out=np.zeros(qh0.shape), where=qh0 > 0)
    a_ = np.where(qh0 > 0, share * duopoly.u_l(ratio), 0.0)
    h_ = np.where(qh0 > 0, share * duopoly.u_h(ratio), 0.0)
    return a_, h_, q.astype(np.float64)


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

    On the registry's grids of starts the cubic has three real roots, a negative one, rho*
    and a larger infeasible one, so this is the one root worth computing everywhere.
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
    value = np.where(inside, nash_product_at_q_max(roots, a_[:, None], h_[:, None]), -np.inf)
    best = np.take_along_axis(roots, np.argmax(value, axis=-1)[:, None], axis=-1)[:, 0]
    for i in np.flatnonzero(~np.isfinite(value.max(axis=-1))):
        best[i] = _bounded_argmax(float(a_[i]), float(h_[i]), float(lo[i]), float(hi[i]))
    return best


def nash_product_at_q_max(r: ArrayLike, a_: ArrayLike, h_: ArrayLike) -> NDArray[np.float64]:
    r"""The Nash product along :math:`q_h = Q`, divided by :math:`Q^2`.

    :math:`N(\rho Q, Q)/Q^2 = (u_l(\rho) - A)(u_h(\rho) - H)`.

    ``a_`` and ``h_`` are :math:`A` and :math:`H` of :func:`disagreement_ratios`.

    References
    ----------
    Werner (2024), ch. 3, §3.7, eq. (3.17), for any :math:`Q` (the thesis takes :math:`Q = 1`).

    Examples
    --------
    >>> round(float(nash_product_at_q_max(0.4, 0.01, 0.1)), 8)
    0.00072565
    """
    r, a_, h_ = (np.asarray(v, dtype=np.float64) for v in (r, a_, h_))
    return np.asarray((duopoly.u_l(r) - a_) * (duopoly.u_h(r) - h_), dtype=np.float64)


def _bounded_argmax(a_: float, h_: float, lo: float, hi: float) -> float:
    if hi <= lo:
        return lo
    res = minimize_scalar(
        lambda r: -float(nash_product_at_q_max(np.float64(r), a_, h_)),
        bounds=(lo, hi),
        method="bounded",
    )
    return float(res.x)
