r"""How far the low firm may improve without costing either firm revenue (Werner 2024, ch. 3).

In round :math:`t` of Algorithm 5 the high firm moves from :math:`q_{h,t-1}` to
:math:`q_{h,t} = b\, q_{h,t-1}`. The low firm may then raise its quality up to

.. math::

    \hat q_{l,t} = B(\rho_{t-1}, b)\, q_{h,t}, \qquad
    B(a, b) = 4 - \frac{(4-a)^2}{2(1-a)} \Big( b - \sqrt{b^2 - \tfrac{12(1-a)}{(4-a)^2} b} \Big)

(Algorithm 5, step 8). Written as :math:`B(a, b) = u_h^{-1}(u_h(a)/b)` it keeps the high
firm's revenue exactly where it was; the numerically stable form used here is

.. math:: B(a, b) = 4 - \frac{6}{1 + \sqrt{1 - 12(1-a) / (b (4-a)^2)}}.

The paper's form cancels catastrophically for large ``b``; ``thesis.ch3.B.forms`` proves the
two equal. The propositions registered in :mod:`econ.quality_caps_propositions` are Algorithm
5's cap, Lemma 24, the properties of :math:`B` that the toolkit relies on, and the constant
:math:`\tilde b` of the proof of Proposition 5; the proof of Proposition 3 (Werner 2024, ch. 3,
§3.4 p. 64 and §3.7 pp. 70ff) is in :mod:`econ.quality_caps_guarantee_propositions` and, for the
low firm's step size, :mod:`econ.quality_caps_step_propositions`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq, minimize_scalar

from econ.outputs import scalar_or_array
from econ.validation import in_interval

a, b = sp.symbols("a b", positive=True)


#: B(a, b) as printed in Algorithm 5, step 8.
B_PAPER = 4 - (4 - a) ** 2 / (2 * (1 - a)) * (b - sp.sqrt(b**2 - 12 * (1 - a) / (4 - a) ** 2 * b))


#: The stable form, which is u_h^{-1}(u_h(a)/b).
B_STABLE = 4 - 6 / (1 + sp.sqrt(1 - 12 * (1 - a) / (b * (4 - a) ** 2)))


_HUGE = float(np.finfo(np.float64).max)


def cap_ratio(a: ArrayLike, b: ArrayLike, *, form: str = "stable") -> NDArray[np.float64]:
    r"""The cap factor :math:`B(a, b)` of Algorithm 5 (Werner 2024, ch. 3, step 8).

    Parameters
    ----------
    a
        Quality ratio :math:`\rho_{t-1} = q_{l,t-1}/q_{h,t-1}` in [0, 1).
    b
        Growth factor :math:`q_{h,t}/q_{h,t-1} \ge 1` of the high firm.
    form
        ``"stable"`` (default) or ``"paper"`` (the printed form, for comparison).

    References
    ----------
    Werner (2024), ch. 3, Algorithm 5, step 8 and Lemma 24 (:math:`B(a, 1) = a`).

    Examples
    --------
    >>> round(float(cap_ratio(0.5, 1.0)), 12)  # no growth of the high firm: no room to grow
    0.5
    >>> round(float(cap_ratio(0.5, 2.0)), 6), round(float(cap_ratio(0.5, 2.0, form="paper")), 6)
    (0.789669, 0.789669)
    """
    ratio = in_interval("a", a, 0.0, 1.0, high_open=True)
    growth = in_interval("b", b, 1.0)
    k = 12.0 * (1.0 - ratio) / (4.0 - ratio) ** 2
    if form == "stable":
        return scalar_or_array(4.0 - 6.0 / (1.0 + np.sqrt(1.0 - k / growth)), a, b)
    if form == "paper":
        printed = 4.0 - (4.0 - ratio) ** 2 / (2.0 * (1.0 - ratio)) * (
            growth - np.sqrt(growth * growth - k * growth)
        )
        return scalar_or_array(printed, a, b)
    raise ValueError(f"form must be 'stable' or 'paper', got {form!r}")


def cap_high(q_l_prev: ArrayLike, q_h_prev: ArrayLike, q_h_new: ArrayLike) -> NDArray[np.float64]:
    r"""Largest :math:`q_{l,t}` keeping the high firm's revenue: :math:`B(\rho_{t-1}, b) q_{h,t}`.

    This is the right root :math:`q^h_{l,t}` of the quadratic (3.14) in the proof of
    Proposition 3. Requires ``q_l_prev < q_h_prev <= q_h_new``.

    References
    ----------
    Werner (2024), ch. 3, §3.7, proof of Proposition 3, eq. (3.14).

    Examples
    --------
    >>> round(float(cap_high(0.3, 0.6, 0.9)), 6)
    0.634029
    """
    ql, qh, qn = _round(q_l_prev, q_h_prev, q_h_new)
    with np.errstate(over="ignore"):  # B(a, b) -> 1 as b -> inf: the largest float will do
        growth = np.minimum(qn / qh, _HUGE)
    return scalar_or_array(cap_ratio(ql / qh, growth) * qn, q_l_prev, q_h_prev, q_h_new)


def cap_low(q_l_prev: ArrayLike, q_h_prev: ArrayLike, q_h_new: ArrayLike) -> NDArray[np.float64]:
    r"""Largest :math:`q_{l,t}` that keeps the low firm's revenue: the right root of (3.15).

    With :math:`\rho = \rho_{t-1}`, :math:`h = q_{h,t-1}`, :math:`c = q_{h,t}`:

    .. math::

        q^l_{l,t} = c\,\frac{8(1-\rho)\rho h + (4-\rho)^2 c
            + (4-\rho)\sqrt{(4-\rho)^2 c^2 - 48 \rho (1-\rho) h c}}
            {2\big((1-\rho)\rho h + (4-\rho)^2 c\big)}

    The thesis prints this without the leading factor :math:`c = q_{h,t}`
    (``thesis.ch3.prop3.cap_low`` refutes the printed form; docs/errata.md). It is never
    below :func:`cap_high`, so the high firm's cap is the one that binds (``thesis.ch3.prop3``).

    References
    ----------
    Werner (2024), ch. 3, §3.7, proof of Proposition 3, eq. (3.15).

    Examples
    --------
    >>> round(float(cap_low(0.3, 0.6, 0.9)), 6)  # above cap_high(0.3, 0.6, 0.9) = 0.634029
    0.753781
    """
    ql, h_, c = _round(q_l_prev, q_h_prev, q_h_new)
    r = ql / h_
    h = h_ / c  # the cap is degree-1 homogeneous in (h, c): evaluate at c = 1, times c
    root = np.sqrt((4 - r) ** 2 - 48 * r * (1 - r) * h)
    cap = (
        c
        * (8 * (1 - r) * r * h + (4 - r) ** 2 + (4 - r) * root)
        / (2 * ((1 - r) * r * h + (4 - r) ** 2))
    )
    return scalar_or_array(cap, q_l_prev, q_h_prev, q_h_new)


def min_high_quality(q_l_new: ArrayLike, revenue_h: ArrayLike) -> NDArray[np.float64]:
    r"""Smallest :math:`q_h` that keeps :math:`U_h(x, q_h) \ge U` when the low firm moves to ``x``.

    The largest real root :math:`y` of :math:`4y^3 - (4x + 16U) y^2 + 8Uxy - Ux^2 = 0`,
    which is :math:`U_h(x, y) = U` of eq. (3.4) with the denominator cleared.

    References
    ----------
    Werner (2024), ch. 3, Lemma 22, eq. (3.4).

    Examples
    --------
    >>> round(float(min_high_quality(0.3, 0.1)), 6)
    0.607303
    """
    x = in_interval("q_l_new", q_l_new, 0.0, 1.0)
    u = in_interval("revenue_h", revenue_h, 0.0, 0.25)
    x, u = np.broadcast_arrays(x, u)
    out = np.empty(x.shape)
    for i, (xi, ui) in enumerate(zip(x.ravel(), u.ravel(), strict=True)):
        roots = np.roots([4.0, -(4 * xi + 16 * ui), 8 * ui * xi, -ui * xi * xi])
        out.flat[i] = roots[np.abs(roots.imag) < 1e-9].real.max()
    return scalar_or_array(out, q_l_new, revenue_h)


def hat_q(
    q_l_prev: ArrayLike,
    q_h_prev: ArrayLike,
    q_h_new: ArrayLike,
    *,
    factor: Callable[..., Any] = cap_ratio,
) -> NDArray[np.float64]:
    r"""Algorithm 5's cap :math:`\hat q_{l,t} = B(\rho_{t-1}, b)\, q_{h,t}` (step 8).

    :math:`\rho_{t-1} = q_{l,t-1}/q_{h,t-1}` is held below 1 (the domain of :func:`cap_ratio`) and the
    growth :math:`b = q_{h,t}/q_{h,t-1}` is taken as 1 where the high firm did not improve
    (:math:`B(\rho, 1) = \rho`, Lemma 24), and as the largest float where it overflows
    (:math:`B(a, b) \to 1` as :math:`b \to \infty`). ``factor`` is :func:`cap_ratio` or another
    formula of :math:`(a, b)` to compare with it.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, step 8; Lemma 24 (§3.7).

    Examples
    --------
    >>> round(float(hat_q(0.3, 0.6, 0.62)), 6)
    0.323805
    """
    ql, qh, qn = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (q_l_prev, q_h_prev, q_h_new))
    )
    with np.errstate(over="ignore"):  # B(a, b) -> 1 as b -> inf: the largest float will do
        growth = np.minimum(np.where(qn > qh, qn / np.where(qh > 0, qh, 1.0), 1.0), _HUGE)
    ratio = np.where(qh > 0, ql / np.where(qh > 0, qh, 1.0), 0.0)
    cap = factor(np.minimum(ratio, np.nextafter(1.0, 0.0)), growth) * qn
    return scalar_or_array(cap, q_l_prev, q_h_prev, q_h_new)


def next_low_quality(
    q_l_prev: ArrayLike,
    q_h_prev: ArrayLike,
    q_h_new: ArrayLike,
    *,
    rho_star: ArrayLike,
    q_l_star: ArrayLike,
    cap_mode: str = "recommended",
    factor: Callable[..., Any] = cap_ratio,
) -> NDArray[np.float64]:
    r"""The quality the low firm may reach this round of Algorithm 5 (Werner 2024, ch. 3).

    ``cap_mode="recommended"``: :math:`\max(q_{l,t-1}, \min(\hat q_{l,t}, \rho^* q_{h,t}, q_l^*))`;
    ``"literal"``: :math:`\max(q_{l,t-1}, \hat q_{l,t})` as Algorithm 5 prints it, with
    :math:`\hat q_{l,t}` from :func:`hat_q` (``factor`` is its cap factor). When the
    high firm did not improve (:math:`b \le 1`) the low firm stays where it is: Algorithm 5
    computes :math:`B(\rho_{t-1}, b)` for :math:`b \ge 1` only (Lemma 24), and below 1 the
    cap falls under :math:`q_{l,t-1}`. The recommended cap keeps :math:`\rho_t \le \rho^*`
    and :math:`q_{l,t} \le q_l^*`, which the proof of Proposition 5 (Case 1) and line 7 of
    Algorithm 5 require. Qualities never fall (assumption A2).

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, steps 7-11; proof of Proposition 5 (Case 1),
    §3.7.

    Examples
    --------
    >>> round(float(next_low_quality(0.3, 0.6, 0.62, rho_star=0.6, q_l_star=0.6)), 6)
    0.323805
    """
    ql, qh, qn = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (q_l_prev, q_h_prev, q_h_new))
    )
    cap = np.asarray(hat_q(ql, qh, qn, factor=factor))
    if cap_mode == "recommended":
        cap = np.minimum(cap, np.minimum(np.asarray(rho_star) * qn, q_l_star))
    elif cap_mode != "literal":
        raise ValueError(f"cap_mode must be 'recommended' or 'literal', got {cap_mode!r}")
    reached = np.where(qn > qh, np.maximum(ql, cap), ql)
    return scalar_or_array(reached, q_l_prev, q_h_prev, q_h_new, rho_star, q_l_star)


def b_rho(rho: float, *, base: float = 10.0) -> float:
    r"""First crossing :math:`b_\rho` of :math:`(4 - 5\rho)\log b \le B(\rho, b) - \rho`.

    The bound defined in the proof of Proposition 5 with :math:`\log_{10}` (Werner 2024,
    ch. 3, §3.7); ``base`` is there to compare other bases (with the natural log
    :math:`b_\rho = 1` at :math:`\rho = 0`). "Max" is read as the first crossing, the point
    at which :math:`(4 - 5\rho)\log b` "goes from being a lower to an upper bound" on
    :math:`B(\rho, b) - \rho`, as the proof glosses it. Returns ``inf`` when
    :math:`4 - 5\rho \le 0`, and 1 when the inequality fails right above :math:`b = 1`.

    References
    ----------
    Werner (2024), ch. 3, §3.7 (pp. 70ff), proof of Proposition 5 (:math:`b_\rho`, Figure 3.6).
    """
    r = float(in_interval("rho", rho, 0.0, 1.0, high_open=True))
    slope = 4.0 - 5.0 * r
    if slope <= 0:
        return float("inf")

    def gap(x: float) -> float:
        return float(cap_ratio(r, x)) - r - slope * np.log(x) / np.log(base)

    lo, hi = 1.0, 1.0 + 1e-9
    if gap(hi) < 0:
        return 1.0
    while gap(hi) >= 0:
        lo, hi = hi, 1.0 + 2.0 * (hi - 1.0)
    return float(brentq(gap, lo, hi, xtol=1e-14, rtol=1e-14))


def b_tilde() -> tuple[float, float]:
    r""":math:`\tilde b = \min_\rho b_\rho` and its argmin (Proposition 5; about 1.0297 at 0.341).

    References
    ----------
    Werner (2024), ch. 3, §3.7 (pp. 70ff), proof of Proposition 5 (:math:`\tilde b`, Figure 3.6).
    """
    res = minimize_scalar(
        lambda r: b_rho(r), bounds=(0.2, 0.5), method="bounded", options={"xatol": 1e-10}
    )
    return float(res.fun), float(res.x)


def _round(
    q_l_prev: ArrayLike, q_h_prev: ArrayLike, q_h_new: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    ql = in_interval("q_l_prev", q_l_prev, 0.0, 1.0)
    qh = in_interval("q_h_prev", q_h_prev, 0.0, 1.0, low_open=True)
    qn = in_interval("q_h_new", q_h_new, 0.0, 1.0, low_open=True)
    if np.any(ql >= qh):
        raise ValueError("q_l_prev must be below q_h_prev")
    if np.any(qn < qh):
        raise ValueError("q_h_new must be at least q_h_prev (the high firm does not fall back)")
    return ql, qh, qn
