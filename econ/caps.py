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
two equal.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq, minimize_scalar

from econ import duopoly
from econ.propositions import (
    Verdict,
    all_zero,
    checked,
    is_zero,
    on_points,
    proposition,
    proved,
    refuted,
    sign_on_interval,
)
from econ.validation import in_interval

a, b = sp.symbols("a b", positive=True)

#: B(a, b) as printed in Algorithm 5, step 8.
B_PAPER = 4 - (4 - a) ** 2 / (2 * (1 - a)) * (b - sp.sqrt(b**2 - 12 * (1 - a) / (4 - a) ** 2 * b))
#: The stable form, which is u_h^{-1}(u_h(a)/b).
B_STABLE = 4 - 6 / (1 + sp.sqrt(1 - 12 * (1 - a) / (b * (4 - a) ** 2)))


def B(a: ArrayLike, b: ArrayLike, *, form: str = "stable") -> NDArray[np.float64]:
    r"""The cap factor :math:`B(a, b)` of Algorithm 5 (Werner 2024, ch. 3, step 8).

    Parameters
    ----------
    a
        Quality ratio :math:`\rho_{t-1} = q_{l,t-1}/q_{h,t-1}` in [0, 1).
    b
        Growth factor :math:`q_{h,t}/q_{h,t-1} \ge 1` of the high firm.
    form
        ``"stable"`` (default) or ``"paper"`` (the printed form, for comparison).
    """
    a = in_interval("a", a, 0.0, 1.0, high_open=True)
    b = in_interval("b", b, 1.0)
    k = 12.0 * (1.0 - a) / (4.0 - a) ** 2
    if form == "stable":
        return 4.0 - 6.0 / (1.0 + np.sqrt(1.0 - k / b))
    if form == "paper":
        return 4.0 - (4.0 - a) ** 2 / (2.0 * (1.0 - a)) * (b - np.sqrt(b * b - k * b))
    raise ValueError(f"form must be 'stable' or 'paper', got {form!r}")


def cap_high(q_l_prev: ArrayLike, q_h_prev: ArrayLike, q_h_new: ArrayLike) -> NDArray[np.float64]:
    r"""Largest :math:`q_{l,t}` that keeps the high firm's revenue: :math:`B(\rho_{t-1}, b) q_{h,t}`.

    This is the right root :math:`q^h_{l,t}` of the quadratic (3.14) in the proof of
    Proposition 3. Requires ``q_l_prev < q_h_prev <= q_h_new``.
    """
    ql, qh, qn = _round(q_l_prev, q_h_prev, q_h_new)
    return B(ql / qh, qn / qh) * qn


def cap_low(q_l_prev: ArrayLike, q_h_prev: ArrayLike, q_h_new: ArrayLike) -> NDArray[np.float64]:
    r"""Largest :math:`q_{l,t}` that keeps the low firm's revenue: the right root of (3.15).

    With :math:`\rho = \rho_{t-1}`, :math:`h = q_{h,t-1}`, :math:`c = q_{h,t}`:

    .. math::

        q^l_{l,t} = c\,\frac{8(1-\rho)\rho h + (4-\rho)^2 c
            + (4-\rho)\sqrt{(4-\rho)^2 c^2 - 48 \rho (1-\rho) h c}}
            {2\big((1-\rho)\rho h + (4-\rho)^2 c\big)}

    The thesis prints this without the leading factor :math:`c = q_{h,t}` (spec ch3, typo 3;
    ``thesis.ch3.prop3.cap_low`` refutes the printed form). It is never below
    :func:`cap_high`, so the high firm's cap is the one that binds.
    """
    ql, h, c = _round(q_l_prev, q_h_prev, q_h_new)
    r = ql / h
    root = np.sqrt((4 - r) ** 2 * c**2 - 48 * r * (1 - r) * h * c)
    return (
        c
        * (8 * (1 - r) * r * h + (4 - r) ** 2 * c + (4 - r) * root)
        / (2 * ((1 - r) * r * h + (4 - r) ** 2 * c))
    )


def min_high_quality(q_l_new: ArrayLike, revenue_h: ArrayLike) -> NDArray[np.float64]:
    r"""Smallest :math:`q_h` that keeps :math:`U_h(x, q_h) \ge U` when the low firm moves to ``x``.

    The largest real root :math:`y` of :math:`4y^3 - (4x + 16U) y^2 + 8Uxy - Ux^2 = 0`
    (spec ch3, section 5).
    """
    x = in_interval("q_l_new", q_l_new, 0.0, 1.0)
    u = in_interval("revenue_h", revenue_h, 0.0, 0.25)
    x, u = np.broadcast_arrays(x, u)
    out = np.empty(x.shape)
    for i, (xi, ui) in enumerate(zip(x.ravel(), u.ravel(), strict=True)):
        roots = np.roots([4.0, -(4 * xi + 16 * ui), 8 * ui * xi, -ui * xi * xi])
        out.flat[i] = roots[np.abs(roots.imag) < 1e-9].real.max()
    return out


def next_low_quality(
    q_l_prev: ArrayLike,
    q_h_prev: ArrayLike,
    q_h_new: ArrayLike,
    *,
    rho_star: ArrayLike,
    q_l_star: ArrayLike,
    cap_mode: str = "recommended",
) -> NDArray[np.float64]:
    r"""The quality the low firm may reach this round (spec ch3, section 8.3, oracle inner mode).

    ``cap_mode="recommended"``: :math:`\max(q_{l,t-1}, \min(\hat q_{l,t}, \rho^* q_{h,t}, q_l^*))`;
    ``"literal"``: :math:`\max(q_{l,t-1}, \hat q_{l,t})` as Algorithm 5 prints it. When the
    high firm did not improve (:math:`b \le 1`) the low firm stays where it is (the guard the
    paper lacks, spec typo 10). Qualities never fall (assumption A2).
    """
    ql, qh, qn = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (q_l_prev, q_h_prev, q_h_new))
    )
    moved = qn > qh
    growth = np.where(moved, qn / np.where(qh > 0, qh, 1.0), 1.0)
    ratio = np.where(qh > 0, ql / np.where(qh > 0, qh, 1.0), 0.0)
    cap = B(np.minimum(ratio, np.nextafter(1.0, 0.0)), growth) * qn
    if cap_mode == "recommended":
        cap = np.minimum(cap, np.minimum(np.asarray(rho_star) * qn, q_l_star))
    elif cap_mode != "literal":
        raise ValueError(f"cap_mode must be 'recommended' or 'literal', got {cap_mode!r}")
    return np.where(moved, np.maximum(ql, cap), ql)


def b_rho(rho: float, *, base: float = 10.0) -> float:
    r"""First crossing :math:`b_\rho` of :math:`(4 - 5\rho)\log b \le B(\rho, b) - \rho`.

    The bound used in the proof of Proposition 5 (logarithm in ``base``; the thesis needs
    base 10, since with the natural log :math:`b_\rho = 1` at :math:`\rho = 0`). Returns
    ``inf`` when :math:`4 - 5\rho \le 0`, and 1 when the inequality fails right above
    :math:`b = 1`.
    """
    r = float(in_interval("rho", rho, 0.0, 1.0, high_open=True))
    slope = 4.0 - 5.0 * r
    if slope <= 0:
        return float("inf")

    def gap(x: float) -> float:
        return float(B(r, x)) - r - slope * np.log(x) / np.log(base)

    lo, hi = 1.0, 1.0 + 1e-9
    if gap(hi) < 0:
        return 1.0
    while gap(hi) >= 0:
        lo, hi = hi, 1.0 + 2.0 * (hi - 1.0)
    return float(brentq(gap, lo, hi, xtol=1e-14, rtol=1e-14))


def b_tilde() -> tuple[float, float]:
    r""":math:`\tilde b = \min_\rho b_\rho` and its argmin (Proposition 5; about 1.0297 at 0.341)."""
    res = minimize_scalar(
        lambda r: b_rho(r), bounds=(0.2, 0.5), method="bounded", options={"xatol": 1e-10}
    )
    return float(res.fun), float(res.x)


def _round(q_l_prev: ArrayLike, q_h_prev: ArrayLike, q_h_new: ArrayLike):
    ql = in_interval("q_l_prev", q_l_prev, 0.0, 1.0)
    qh = in_interval("q_h_prev", q_h_prev, 0.0, 1.0, low_open=True)
    qn = in_interval("q_h_new", q_h_new, 0.0, 1.0, low_open=True)
    if np.any(ql >= qh):
        raise ValueError("q_l_prev must be below q_h_prev")
    if np.any(qn < qh):
        raise ValueError("q_h_new must be at least q_h_prev (the high firm does not fall back)")
    return ql, qh, qn


# --------------------------------------------------------------------------------------------
# Propositions (Werner 2024, ch. 3: Algorithm 5, Lemma 24, Proposition 3; spec ch3 sections 7-9)
# --------------------------------------------------------------------------------------------


_SRC = "Werner (2024), ch. 3"
_s = sp.Symbol("s", positive=True)  # s = sqrt(1 - k/b) in (0, 1)
_k = 12 * (1 - a) / (4 - a) ** 2


def _in_s(expr: sp.Expr) -> sp.Expr:
    """Rewrite an expression of B in s = sqrt(1 - k/b), i.e. b = k/(1 - s^2)."""
    return expr.subs(sp.sqrt(1 - _k / b), _s).subs(b, _k / (1 - _s**2))


@proposition(
    "thesis.ch3.B.forms",
    source=f"{_SRC}, Algorithm 5 step 8; spec ch3 D11",
    statement="B(a,b) as printed equals the stable form 4 - 6/(1 + sqrt(1 - 12(1-a)/(b(4-a)^2)))",
)
def _b_forms() -> Verdict:
    paper = B_PAPER.subs(sp.sqrt(b**2 - _k * b), b * sp.sqrt(1 - _k / b))
    return is_zero(_in_s(paper) - _in_s(B_STABLE), "paper form - stable form, in s = sqrt(1 - k/b)")


@proposition(
    "thesis.ch3.lemma24",
    source=f"{_SRC}, Lemma 24 (pictorial proof, Fig. 3.5)",
    statement="B(a, b) >= a for all b >= 1",
)
def _lemma24() -> Verdict:
    y = sp.Symbol("y", nonnegative=True)
    inverse_form = is_zero(
        B_STABLE - duopoly.U_H_INVERSE.subs(y, duopoly.u_h_rho.subs(duopoly.rho, a) / b),
        "B = u_h^{-1}(u_h(a)/b)",
    )
    if not inverse_form.holds:
        return inverse_form
    if sign_on_interval(sp.diff(duopoly.u_h_rho, duopoly.rho), duopoly.rho, 0, 1) >= 0:
        return refuted("u_h is not decreasing", {})
    return proved(
        "B(a,b) = u_h^{-1}(u_h(a)/b) and u_h is decreasing, so u_h(a)/b <= u_h(a) gives B >= a"
    )


@proposition(
    "thesis.ch3.B.properties",
    source="spec ch3 section 7, properties of B [NEW]",
    statement="B(a,1) = a; dB/db(a,1) = (1-a)(4-a)/(2+a); B increasing and concave in b; B -> 1 as b -> inf; "
    "B(B(a,b1),b2) = B(a,b1 b2)",
)
def _b_properties() -> Verdict:
    in_s = _in_s(B_STABLE)  # B as a function of s = sqrt(1 - k/b); b = 1 is s = (a+2)/(4-a)
    at_one = (a + 2) / (4 - a)
    db_ds = sp.diff(_k / (1 - _s**2), _s)
    symbolic = all_zero(
        [
            (_k / (1 - at_one**2) - 1, "s = (a+2)/(4-a) is b = 1"),
            (in_s.subs(_s, at_one) - a, "B(a, 1) = a"),
            (
                (sp.diff(in_s, _s) / db_ds).subs(_s, at_one) - (1 - a) * (4 - a) / (2 + a),
                "slope at b = 1",
            ),
            (in_s.subs(_s, 1) - 1, "limit b -> inf (s -> 1)"),
        ],
        "boundary, slope and limit",
    )
    if not symbolic.holds:
        return symbolic
    d1, d2 = sp.diff(B_STABLE, b), sp.diff(B_STABLE, b, 2)
    rng = np.random.default_rng(7)
    aa, b1, b2 = (
        rng.uniform(0, 0.999, 2000),
        np.exp(rng.uniform(0, 5, 2000)),
        np.exp(rng.uniform(0, 5, 2000)),
    )
    semigroup = np.max(np.abs(B(B(aa, b1), b2) - B(aa, b1 * b2)))
    slope = sp.lambdify((a, b), d1)(aa, b1)
    curvature = sp.lambdify((a, b), d2)(aa, b1)
    if semigroup > 1e-12 or np.any(slope <= 0) or np.any(curvature >= 0):
        return refuted("a numeric property fails", {"semigroup_error": float(semigroup)})
    return checked(
        f"boundary, slope and limit proved symbolically; semigroup error {semigroup:.1e}, dB/db > 0 and "
        "d2B/db2 < 0 at random (a, b)",
        2000,
    )


# The two quadratics of the proof of Proposition 3: round t moves q_h from h to c, q_l to x.
_x, _c, _h, _ql = sp.symbols("x c h q_lprev", positive=True)
_K = 4 * _h**2 * (_h - _ql)
_M = (4 * _h - _ql) ** 2
_P = _ql * _h * (_h - _ql)
_QUAD_H = (
    _K * _x**2 + (4 * _M * _c**2 - 8 * _K * _c) * _x + (16 * _K * _c**2 - 4 * _M * _c**3)
)  # (3.14)
_QUAD_L = (_P + _M * _c) * _x**2 + (-8 * _P * _c - _M * _c**2) * _x + 16 * _P * _c**2  # (3.15)
_UH = duopoly.U_H.subs({duopoly.q_l: _x, duopoly.q_h: _c}) - duopoly.U_H.subs(
    {duopoly.q_l: _ql, duopoly.q_h: _h}
)
_UL = duopoly.U_L.subs({duopoly.q_l: _x, duopoly.q_h: _c}) - duopoly.U_L.subs(
    {duopoly.q_l: _ql, duopoly.q_h: _h}
)
_C19 = {"q_l_prev": 0.2, "q_h_prev": 0.6, "q_h_new": 0.66}


@proposition(
    "thesis.ch3.prop3.quadratics",
    source=f"{_SRC}, proof of Proposition 3, (3.14)-(3.15)",
    statement="U_h and U_l do not decrease iff the quadratics (3.14) and (3.15) in q_{l,t} are <= 0",
)
def _prop3_quadratics() -> Verdict:
    return all_zero(
        [
            (
                _UH + _QUAD_H / (_M * (4 * _c - _x) ** 2),
                "U_h(x,c) - U_{h,t-1} = -(3.14)/(M (4c-x)^2)",
            ),
            (
                _UL + _QUAD_L / (_M * (4 * _c - _x) ** 2),
                "U_l(x,c) - U_{l,t-1} = -(3.15)/(M (4c-x)^2)",
            ),
        ],
        "revenue changes are minus the quadratics over positive factors",
    )


@proposition(
    "thesis.ch3.prop3.strict",
    source=f"{_SRC}, proof of Proposition 3 (spec ch3 typo 2)",
    statement="as printed: U_h does not decrease iff (3.14) < 0 (strict)",
    holds=False,
)
def _prop3_strict() -> Verdict:
    x_hat = float(cap_high(**_C19))
    point = {_x: x_hat, _c: _C19["q_h_new"], _h: _C19["q_h_prev"], _ql: _C19["q_l_prev"]}
    change, quad = float(_UH.subs(point)), float(_QUAD_H.subs(point))
    if abs(change) < 1e-12 and quad > -1e-12:
        return refuted(
            "at x = hat q the revenue is unchanged (not decreased) but (3.14) = 0 is not < 0",
            {**_C19, "x": x_hat, "quadratic": quad, "revenue_change": change},
        )
    return proved("strict inequality characterises non-decrease")


@proposition(
    "thesis.ch3.prop3.strict.corrected",
    source=f"{_SRC}, proof of Proposition 3 (spec ch3 typo 2)",
    statement="U_h does not decrease iff (3.14) <= 0",
)
def _prop3_strict_corrected() -> Verdict:
    return _prop3_quadratics()


@proposition(
    "thesis.ch3.prop3.cap_low",
    source=f"{_SRC}, proof of Proposition 3, the root q^l_{{l,t}} (spec ch3 typo 3)",
    statement="as printed: q^l_{l,t} = [8(1-rho)rho h + (4-rho)^2 c + (4-rho)sqrt(...)] / [2((1-rho)rho h + (4-rho)^2 c)]",
    holds=False,
)
def _prop3_cap_low() -> Verdict:
    r, h, c = 0.25, 0.6, 0.66
    printed = float(cap_low(r * h, h, c)) / c
    ul_prev = float(duopoly.revenues(r * h, h)[0])
    ul_there = float(duopoly.revenues(min(printed, c), c)[0])
    return refuted(
        "the printed root is homogeneous of degree 0, so cannot be a quality: U_l there differs from U_{l,t-1}",
        {
            "rho": r,
            "h": h,
            "c": c,
            "printed_root": printed,
            "U_l_prev": ul_prev,
            "U_l_at_printed_root": ul_there,
        },
    )


@proposition(
    "thesis.ch3.prop3.cap_low.corrected",
    source=f"{_SRC}, proof of Proposition 3 (spec ch3 typo 3)",
    statement="q^l_{l,t} = q_{h,t} x (the printed expression) is the right root of (3.15): U_l there equals U_{l,t-1}",
)
def _prop3_cap_low_corrected() -> Verdict:
    quad = sp.lambdify((_x, _c, _h, _ql), _QUAD_L, modules="numpy")

    def root_of_quad(ql: float, h: float, c: float) -> bool:
        x = float(cap_low(ql, h, c))
        return abs(float(quad(x, c, h, ql))) < 1e-12 and x >= ql

    rng = np.random.default_rng(11)
    h = rng.uniform(0.05, 0.9, 300)
    pts = [
        {"ql": float(q), "h": float(hh), "c": float(hh * g)}
        for q, hh, g in zip(rng.uniform(0, 0.99, 300) * h, h, rng.uniform(1, 1.1, 300), strict=True)
        if hh * g <= 1
    ]
    return on_points(
        root_of_quad, pts, "(3.15) vanishes at the corrected root, which is >= q_{l,t-1}"
    )


@proposition(
    "thesis.ch3.prop3",
    source=f"{_SRC}, Proposition 3",
    statement="with the low firm capped at hat q = B(rho_{t-1}, b) q_{h,t}, no step of Algorithm 5 lowers either revenue",
)
def _prop3() -> Verdict:
    rng = np.random.default_rng(3)
    ratio = rng.uniform(0, 0.999, 4000)
    growth = np.exp(rng.uniform(0, np.log(1e6), 4000))
    h = rng.uniform(
        1e-3, 1, 4000
    )  # q_{h,t-1}; q_{h,t} = b h may exceed 1: every quantity is scale-free
    ql, c = ratio * h, growth * h
    x_hat = B(ratio, growth) * c
    cap_l = _cap_low_unscaled(ql, h, c)
    ul0, uh0 = _revenues_unscaled(ql, h)
    ul1, uh1 = _revenues_unscaled(x_hat, c)
    worst = min(
        float(np.min((ul1 - ul0) / c)), float(np.min((uh1 - uh0) / c))
    )  # per unit of quality scale
    if np.any(x_hat > cap_l * (1 + 1e-12)) or worst < -1e-12:
        i = int(np.argmin(cap_l - x_hat))
        return refuted("the U_h cap exceeds the U_l cap", {"a": ratio[i], "b": growth[i]})
    return checked(
        "q^h <= q^l (analytically: U_l(hat q) = (B/4) U_{h,t-1} >= (rho/4) U_{h,t-1} = U_{l,t-1}), and both "
        f"revenues are not lower at hat q (worst change {worst:.1e} per unit q_h) for a in [0, 0.999), b in [1, 1e6]",
        4000,
    )


def _revenues_unscaled(ql: np.ndarray, qh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Revenues by degree-1 homogeneity, for qualities on any positive scale."""
    r = ql / qh
    return qh * duopoly.u_l(r), qh * duopoly.u_h(r)


def _cap_low_unscaled(ql: np.ndarray, h: np.ndarray, c: np.ndarray) -> np.ndarray:
    scale = c  # cap_low is homogeneous of degree 1 in (q_l, h, c)
    return cap_low(ql / scale, h / scale, np.ones_like(c)) * scale


@proposition(
    "thesis.ch3.prop3.step",
    source=f"{_SRC}, proof of Proposition 3, alpha_l = min{{(hat q - q_l)/||g||^2, 1}} (spec ch3 typo 5)",
    statement="as printed: the low firm's step alpha = min{gap/||g||^2, 1} never lowers its quality",
    holds=False,
)
def _prop3_step() -> Verdict:
    lipschitz, x0, gap = (
        4.0,
        1.0,
        100.0,
    )  # f(x) = L x^2 / 2, quality 1 - f on a scale where gap is large
    grad = lipschitz * x0
    alpha = min(gap / grad**2, 1.0)
    before, after = lipschitz * x0**2 / 2, lipschitz * (x0 - alpha * grad) ** 2 / 2
    return refuted(
        "a step larger than 1/L raises the loss of an L-smooth convex f, lowering the quality (violates A2)",
        {"L": lipschitz, "x": x0, "alpha": alpha, "loss_before": before, "loss_after": after},
    )


@proposition(
    "thesis.ch3.prop3.step.corrected",
    source=f"{_SRC}, proof of Proposition 3 (spec ch3 typo 5, section 8.3 inner-loop fact)",
    statement="with alpha = min{gap/||g||^2, 1/L} the step neither lowers the quality nor overshoots the target",
)
def _prop3_step_corrected() -> Verdict:
    rng = np.random.default_rng(5)

    def one(seed: int) -> bool:
        local = np.random.default_rng(seed)
        m = local.normal(size=(4, 4))
        hess = m @ m.T + 0.1 * np.eye(4)
        lip = float(np.linalg.eigvalsh(hess).max())
        x = local.normal(size=4)
        g = hess @ x
        gap = float(local.uniform(0, 2) * (g @ g) / lip)
        alpha = min(gap / float(g @ g), 1 / lip)
        gain = (
            x @ hess @ x - (x - alpha * g) @ hess @ (x - alpha * g)
        ) / 2  # quality gain = loss decrease
        return bool(alpha / 2 * (g @ g) - 1e-12 <= gain <= min(alpha * (g @ g), gap) + 1e-12)

    return on_points(
        one,
        [{"seed": int(s)} for s in rng.integers(0, 2**31, 500)],
        "alpha/2 ||g||^2 <= gain <= gap on random convex quadratics",
    )


@proposition(
    "thesis.ch3.cor1.log",
    source=f"{_SRC}, Proposition 5 and Corollary 1, 'log' (spec ch3 typo 13)",
    statement="read with the natural log: b_rho > 1 for every rho, so tilde b > 1",
    holds=False,
)
def _cor1_log() -> Verdict:
    b0 = b_rho(0.0, base=float(np.e))
    if b0 <= 1.0:
        return refuted(
            "with ln, (4 - 5 rho) ln b exceeds B(rho, b) - rho right above b = 1 at rho = 0 (slope 2 < 4)",
            {"rho": 0.0, "b_rho": b0},
        )
    return checked("b_rho > 1 with ln", 1)


@proposition(
    "thesis.ch3.cor1.log.corrected",
    source=f"{_SRC}, Proposition 5 and Corollary 1 (spec ch3 typo 13)",
    statement="with log10: b_rho > 1 for every rho in [0, 1), tilde b = min b_rho = 1.0297284244 at rho = 0.341",
)
def _cor1_log_corrected() -> Verdict:
    grid = np.linspace(0.0, 0.999, 2000)
    margin = (1 - grid) * (4 - grid) / (2 + grid) - (4 - 5 * grid) / np.log(10)
    tilde, at = b_tilde()
    if margin.min() <= 0 or abs(tilde - 1.0297284244) > 1e-8 or abs(at - 0.340994) > 1e-4:
        return refuted(
            "slope condition or tilde b differs",
            {"min_margin": float(margin.min()), "b_tilde": tilde, "rho": at},
        )
    return checked(
        f"slope margin >= {margin.min():.7f} > 0 on [0, 0.999]; tilde b = {tilde:.10f} at rho = {at:.6f}",
        grid.size,
    )
