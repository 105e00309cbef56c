"""The propositions of Werner (2024), ch. 3 about Algorithm 5's cap: Lemma 24 and Proposition 3.

Algorithm 5's cap :math:`B` (§3.4, p. 64) in the paper's and the stable form, Lemma 24, the
quadratics (3.14)-(3.15) and caps of the proof of Proposition 3, the step rule it needs, and the
constant :math:`\\tilde b` of the proof of Proposition 5 (§3.7, pp. 70ff), checked against
:mod:`econ.quality_caps`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import NDArray
from scipy.optimize import minimize_scalar

from econ import duopoly
from econ.propositions import (
    Verdict,
    checked,
    proposition,
    proved,
    refuted,
    sign_on_interval,
)
from econ.quality_caps import B_PAPER, B_STABLE, a, b, b_rho, cap_ratio

_SRC = "Werner (2024), ch. 3"


_ALG5 = f"{_SRC}, §3.4 (p. 64), Algorithm 5"


_PROOF3 = f"{_SRC}, §3.7 (pp. 70ff), proof of Proposition 3"


_PROOF5 = f"{_SRC}, §3.7 (pp. 70ff), proof of Proposition 5"


_s = sp.Symbol("s", positive=True)  # s = sqrt(1 - k/b), in (0, 1) for b >= 1 > k


_k = 12 * (1 - a) / (4 - a) ** 2


_S0 = (a + 2) / (4 - a)  # s at b = 1


_e, _w = sp.symbols("e w", positive=True)  # a = 1 - e (a < 1) and s = 1/(1 + w) (s < 1)


_z = sp.Symbol("z", nonnegative=True)  # a quality ratio


_U_H = duopoly.u_h_rho.subs(duopoly.rho, _z)  # u_h(z) = 4(1-z)/(4-z)^2


_U_L = duopoly.u_l_rho.subs(duopoly.rho, _z)  # u_l(z) = z(1-z)/(4-z)^2


_ONE = sp.Integer(1)


#: (a, b) points at which a formula that sympy does not reduce to the printed one is compared.
_AB_POINTS = [(0.3, 1.05), (0.5, 1.5), (0.05, 1.01), (0.9, 3.0), (0.0, 1.2), (0.7, 20.0)]


def _b_printed(twelve: int = 12, two: int = 2) -> sp.Expr:
    r""":math:`B(a, b)` transcribed from Algorithm 5, step 8; the arguments are its constants."""
    k = twelve * (1 - a) / (4 - a) ** 2
    return 4 - (4 - a) ** 2 / (two * (1 - a)) * (b - sp.sqrt(b**2 - k * b))


def _in_s(expr: sp.Expr) -> sp.Expr:
    """Rewrite an expression of (a, b) in s = sqrt(1 - k/b), i.e. b = k/(1 - s^2).

    For b > 0, sqrt(b^2 - k b) = b s. The map b -> s is a bijection of [1, inf) onto
    [(a+2)/(4-a), 1) for every a in [0, 1), so an identity in (a, s) on that set is one in (a, b).
    """
    out = expr.subs(sp.sqrt(b**2 - _k * b), b * _s).subs(sp.sqrt(1 - _k / b), _s)
    return out.subs(b, _k / (1 - _s**2))


def _zero_in_s(residual: sp.Expr, what: str) -> Verdict | None:
    """``proved`` if ``residual(a, b)`` vanishes identically, else ``refuted`` at a point.

    Returns None when sympy does not reduce it and no sample point shows a difference.
    """
    reduced = sp.cancel(sp.together(_in_s(residual)))
    if reduced == 0:
        return proved(f"{what}: in s = sqrt(1 - 12(1-a)/(b(4-a)^2)) the difference is 0")
    value = sp.lambdify((a, b), residual, modules="numpy")
    for pa, pb in _AB_POINTS:
        diff = complex(value(pa, pb))
        if abs(diff) > 1e-9:
            return refuted(f"{what}: differs", {"a": pa, "b": pb, "difference": diff.real})
    if sp.cancel(sp.together(sp.simplify(reduced))) == 0:
        return proved(f"{what}: in s = sqrt(1 - 12(1-a)/(b(4-a)^2)) the difference is 0")
    return None


def _decided(verdict: Verdict | None, what: str) -> Verdict:
    if verdict is None:
        raise ValueError(f"sympy could not decide {what}")
    return verdict


@proposition(
    "thesis.ch3.B.forms",
    source=f"{_ALG5}, step 8 (the stable form is collabecon's)",
    statement="B(a,b) as printed in Algorithm 5 equals 4 - 6/(1 + sqrt(1 - 12(1-a)/(b(4-a)^2))) "
    "for a in [0, 1), b >= 1",
    kind="derived",
    perturb={"printed": _b_printed(twelve=11)},
)
def _b_forms(printed: sp.Expr = B_PAPER, stable: sp.Expr = B_STABLE) -> Verdict:
    what = "printed B minus the stable form"
    return _decided(_zero_in_s(printed - stable, what), what)


def _lemma24_chain(cap: sp.Expr) -> Verdict:
    """B(a, b) - a as a function of s: zero at b = 1 and increasing in b."""
    in_s = sp.cancel(sp.together(_in_s(cap)))
    at_one = _zero_in_s(sp.cancel(sp.together(in_s.subs(_s, _S0))) - a, "B(a, 1) - a")
    if at_one is None or not at_one.holds:
        return _decided(at_one, "B(a, 1) = a")
    d = sp.Symbol("d", positive=True)  # s - s0 > 0, i.e. b > 1
    above = sp.factor(sp.cancel((in_s - a).subs(_s, _S0 + d)).subs(a, 4 - _w))  # w = 4 - a > 0
    if above.is_positive is not True:
        raise ValueError(f"sympy could not sign B - a above b = 1: {above}")
    return proved(
        f"with s = sqrt(1 - k/b), s0 = (a+2)/(4-a) (b = 1, since k/(1 - s0^2) = 1) and s = s0 + d, "
        f"B - a = {above} with w = 4 - a, positive for d > 0; s increases with b"
    )


@proposition(
    "thesis.ch3.lemma24",
    source=f"{_PROOF5}, Lemma 24 (pictorial proof, Fig. 3.5)",
    statement="B(a, b) >= a for all b >= 1 (a in [0, 1))",
    perturb={"b_min": sp.Rational(9, 10)},
)
def _lemma24(cap: sp.Expr = B_PAPER, b_min: sp.Expr = _ONE) -> Verdict:
    """Proved for ``b_min >= 1``; below 1 the first ``a`` with ``B(a, b_min) < a`` refutes it."""
    k_one = _zero_in_s(_k / (1 - _S0**2) - 1, "s0 is b = 1")
    if k_one is None or not k_one.holds:
        return _decided(k_one, "s0 = (a+2)/(4-a) at b = 1")
    chain = _lemma24_chain(cap)
    if not chain.holds:
        return chain
    if b_min >= 1:
        return proved(f"{chain.evidence}; so B(a, b) >= B(a, 1) = a for b >= 1")
    value = sp.lambdify((a, b), cap - a, modules="numpy")
    for pa in np.linspace(0.0, 0.99, 100):
        if float(_k.subs(a, pa)) < float(b_min):  # the square root is real
            gap = float(value(pa, float(b_min)))
            if gap < 0:
                return refuted(
                    f"B(a, b) < a at b = {b_min} < 1",
                    {"a": float(pa), "b": float(b_min), "B_minus_a": gap},
                )
    raise ValueError(f"no a in [0, 0.99] with B(a, {b_min}) < a")


@proposition(
    "thesis.ch3.B.properties",
    source=f"{_ALG5}, step 8, and {_PROOF5}, Lemma 24 and Fig. 3.5 (collabecon derives these)",
    statement="for a in [0, 1): B(a,1) = a; dB/db(a,1) = (1-a)(4-a)/(2+a); B strictly increasing "
    "and strictly concave in b >= 1; B -> 1 as b -> inf; b u_h(B(a,b)) = u_h(a), hence "
    "B(B(a,b1),b2) = B(a,b1 b2)",
    kind="derived",
    perturb={"slope": (1 - a) * (4 - a) / (3 + a)},
)
def _b_properties(slope: sp.Expr = (1 - a) * (4 - a) / (2 + a), limit: sp.Expr = _ONE) -> Verdict:
    in_s = 4 - 6 / (1 + _s)  # B_STABLE in s
    b_of_s = _k / (1 - _s**2)
    if sp.cancel(sp.together(_in_s(B_STABLE) - in_s)) != 0:
        raise ValueError("B_STABLE is not 4 - 6/(1 + s)")
    d1 = sp.diff(in_s, _s) / sp.diff(b_of_s, _s)  # dB/db by the chain rule
    d2 = sp.diff(d1, _s) / sp.diff(b_of_s, _s)
    identities = [
        (b_of_s.subs(_s, _S0) - 1, "s0 = (a+2)/(4-a) is b = 1"),
        (in_s.subs(_s, _S0) - a, "B(a, 1) = a"),
        (d1.subs(_s, _S0) - slope, "dB/db at b = 1"),
        (in_s.subs(_s, 1) - limit, "B at s = 1 (b -> inf, since s^2 = 1 - k/b -> 1)"),
        (b_of_s * _U_H.subs(_z, in_s) - _U_H.subs(_z, a), "b u_h(B(a, b)) = u_h(a)"),
    ]
    for expr, label in identities:
        residual = sp.cancel(sp.together(expr))
        if residual != 0:
            point = {a: sp.Rational(3, 10), _s: sp.Rational(4, 5)}
            return refuted(
                f"{label} fails", {"a": 0.3, "s": 0.8, "difference": float(residual.subs(point))}
            )
    signs = {_s: 1 / (1 + _w), a: 1 - _e}  # s in (0, 1), a < 1
    slope_sign = sp.factor(d1.subs(signs)).is_positive
    curvature_sign = sp.factor(d2.subs(signs)).is_negative
    falls = sign_on_interval(sp.diff(_U_H, _z), _z, 0, 1)
    if not (slope_sign and curvature_sign and falls < 0):
        raise ValueError("sympy could not sign dB/db, d2B/db2 or du_h/dz")
    return proved(
        "in s = sqrt(1 - k/b) (a bijection of b in [1, inf) onto [(a+2)/(4-a), 1)): "
        + "; ".join(label for _, label in identities)
        + "; dB/db > 0 and d2B/db2 < 0 (signed with a = 1 - e, s = 1/(1 + w), e, w > 0); "
        "u_h strictly decreases on (0, 1) (Sturm), and B(a, b) in [a, 1), so "
        "u_h(B(B(a,b1),b2)) = u_h(a)/(b1 b2) = u_h(B(a,b1 b2)) gives the semigroup law"
    )


# The quadratics of the proof of Proposition 3: round t moves q_h from h to c and q_l from
# q = q_{l,t-1} to x. Transcribed with their printed constants.
_x, _c, _h, _ql = sp.symbols("x c h q_lprev", positive=True)


_rho = sp.Symbol("rho", positive=True)


def _quad_314(four: int = 4, thirty_two: int = 32, sixty_four: int = 64) -> sp.Expr:
    """The left side of the rearranged (3.14), as printed."""
    k, m = _h**2 * (_h - _ql), (4 * _h - _ql) ** 2
    return (
        four * k * _x**2
        + (4 * m * _c**2 - thirty_two * k * _c) * _x
        + (sixty_four * k * _c**2 - 4 * m * _c**3)
    )


def _quad_315(eight: int = 8, sixteen: int = 16) -> sp.Expr:
    """The left side of the rearranged (3.15), as printed."""
    p, m = _ql * _h * (_h - _ql), (4 * _h - _ql) ** 2
    return (p + m * _c) * _x**2 + (-eight * p * _c - m * _c**2) * _x + sixteen * p * _c**2


QUAD_314 = _quad_314()


QUAD_315 = _quad_315()


_DU_H = duopoly.U_H.subs({duopoly.q_l: _x, duopoly.q_h: _c}) - duopoly.U_H.subs(
    {duopoly.q_l: _ql, duopoly.q_h: _h}
)


_DU_L = duopoly.U_L.subs({duopoly.q_l: _x, duopoly.q_h: _c}) - duopoly.U_L.subs(
    {duopoly.q_l: _ql, duopoly.q_h: _h}
)


_DENOMINATOR = (4 * _h - _ql) ** 2 * (4 * _c - _x) ** 2


#: (q_{l,t-1}, q_{h,t-1}, q_{h,t}, q_{l,t}) points inside the hypotheses, exact.
_QPOINTS = [
    (sp.Rational(1, 5), sp.Rational(3, 5), sp.Rational(33, 50), sp.Rational(1, 4)),
    (sp.Rational(1, 10), sp.Rational(1, 2), sp.Rational(3, 5), sp.Rational(1, 5)),
    (sp.Rational(3, 10), sp.Rational(4, 5), sp.Rational(17, 20), sp.Rational(7, 10)),
]


def _sign_of_denominator() -> bool:
    """(4h - q)^2 (4c - x)^2 > 0 for q < h and x <= c: with h = q + u, c = x + v, u > 0, v >= 0."""
    u, v = sp.symbols("u v", positive=True)
    return bool(sp.expand(_DENOMINATOR.subs({_h: _ql + u}).subs({_c: _x + v})).is_positive)


def _minus_quadratic(change: sp.Expr, quad: sp.Expr, label: str) -> Verdict:
    residual = sp.cancel(sp.together(change + quad / _DENOMINATOR))
    if residual == 0:
        return proved(f"{label}: revenue change = -quadratic / ((4h - q)^2 (4c - x)^2)")
    for ql, h, c, x in _QPOINTS:
        value = residual.subs({_ql: ql, _h: h, _c: c, _x: x})
        if value != 0:
            return refuted(
                f"{label}: the printed quadratic is not minus the revenue change times a positive factor",
                {
                    "q_l_prev": str(ql),
                    "q_h_prev": str(h),
                    "q_h_new": str(c),
                    "q_l_new": str(x),
                    "difference": float(value),
                },
            )
    raise ValueError(f"sympy could not decide {label}")


@proposition(
    "thesis.ch3.prop3.quadratics",
    source=f"{_PROOF3}, (3.14)-(3.15) and the two quadratics rearranged from them",
    statement="for 0 <= q_{l,t-1} < q_{h,t-1} <= q_{h,t} and 0 <= q_{l,t} <= q_{h,t}: (3.14) "
    "holds iff the printed quadratic [4h^2(h-q)]x^2 + [4(4h-q)^2c^2 - 32h^2(h-q)c]x + "
    "[64h^2(h-q)c^2 - 4(4h-q)^2c^3] is <= 0, and (3.15) iff [qh(h-q) + (4h-q)^2c]x^2 + "
    "[-8qh(h-q)c - (4h-q)^2c^2]x + 16qh(h-q)c^2 is <= 0",
    perturb={"quad_h": _quad_314(thirty_two=16)},
)
def _prop3_quadratics(quad_h: sp.Expr = QUAD_314, quad_l: sp.Expr = QUAD_315) -> Verdict:
    for change, quad, label in ((_DU_H, quad_h, "(3.14)"), (_DU_L, quad_l, "(3.15)")):
        verdict = _minus_quadratic(change, quad, label)
        if not verdict.holds:
            return verdict
    if not _sign_of_denominator():
        raise ValueError("sympy could not sign (4h - q)^2 (4c - x)^2")
    return proved(
        "U_h(x,c) - U_h(q,h) = -(3.14 quadratic)/D and U_l(x,c) - U_l(q,h) = -(3.15 quadratic)/D "
        "with D = (4h - q)^2 (4c - x)^2 > 0 (q < h, x <= c), so each revenue does not fall iff "
        "its quadratic is <= 0"
    )


#: A round with rational cap: rho = 1/3 (q = 1/5, h = 3/5), s = 8/11, b = 24/19, c = 72/95,
#: and q^h = B c = 144/361 exactly.
_EXACT_ROUND = {
    "q_l_prev": sp.Rational(1, 5),
    "q_h_prev": sp.Rational(3, 5),
    "q_h_new": sp.Rational(72, 95),
    "q_l_new": sp.Rational(144, 361),
}


def _prop3_314(strict: bool) -> Verdict:
    r = _EXACT_ROUND
    point = {_ql: r["q_l_prev"], _h: r["q_h_prev"], _c: r["q_h_new"], _x: r["q_l_new"]}
    change, quad = _DU_H.subs(point), QUAD_314.subs(point)
    kept = change >= 0
    said = quad < 0 if strict else quad <= 0
    if kept != said:
        return refuted(
            f"at q_l,t = the cap, U_h is unchanged (change {change}) but the quadratic is {quad}, "
            f"not {'<' if strict else '<='} 0 (exact rationals; 1/5 < 3/5 <= 72/95, x <= c)",
            {k: str(v) for k, v in r.items()} | {"quadratic": str(quad), "U_h_change": str(change)},
        )
    if strict:
        raise ValueError("the exact round does not separate < from <=")
    verdict = _minus_quadratic(_DU_H, QUAD_314, "(3.14)")
    if not verdict.holds or not _sign_of_denominator():
        return verdict
    return proved(
        "U_h(x,c) - U_h(q,h) = -(3.14 quadratic)/((4h - q)^2 (4c - x)^2) with a positive "
        "denominator, so U_h does not fall iff the quadratic is <= 0; at the exact round "
        "(1/5, 3/5) -> (144/361, 72/95) both are 0"
    )


@proposition(
    "thesis.ch3.prop3.strict",
    source=f"{_PROOF3}, the quadratic rearranged from (3.14)",
    statement="as printed: U_h does not decrease iff the (3.14) quadratic is < 0 (strict)",
    holds=False,
    perturb={"strict": False},
)
def _prop3_strict(strict: bool = True) -> Verdict:
    return _prop3_314(strict)


@proposition(
    "thesis.ch3.prop3.strict.corrected",
    source=f"{_PROOF3}, the quadratic rearranged from (3.14)",
    statement="U_h does not decrease iff the (3.14) quadratic is <= 0",
    perturb={"strict": True},
)
def _prop3_strict_corrected(strict: bool = False) -> Verdict:
    return _prop3_314(strict)


def _root_residual(quad: sp.Expr, root: sp.Expr, radicand: sp.Expr) -> sp.Expr:
    """quad(root) with sqrt(radicand) -> r reduced modulo r^2 = radicand (rho, h, c symbols)."""
    r = sp.Symbol("r", positive=True)
    quad = quad.subs(_ql, _rho * _h)
    value = sp.together(quad.subs(_x, root.subs(sp.sqrt(radicand), r)))
    numerator, _ = sp.fraction(value)
    return sp.rem(sp.expand(numerator), r**2 - radicand, r)


#: q^h_{l,t} and its radicand, as printed in the proof of Proposition 3 (rho = rho_{t-1},
#: h = q_{h,t-1}, c = q_{h,t}).
def _cap_high_printed(twelve: int = 12) -> tuple[sp.Expr, sp.Expr]:
    radicand = _c**4 / _h**2 - twelve * (1 - _rho) / (4 - _rho) ** 2 * _c**3 / _h
    root = 4 * _c - (4 - _rho) ** 2 / (2 * (1 - _rho)) * (_c**2 / _h - sp.sqrt(radicand))
    return root, radicand


def _cap_low_printed(with_c: bool = False) -> tuple[sp.Expr, sp.Expr]:
    radicand = (4 - _rho) ** 2 * _c**2 - 48 * _rho * (1 - _rho) * _h * _c
    root = (
        1
        / (2 * ((1 - _rho) * _rho * _h + (4 - _rho) ** 2 * _c))
        * (8 * (1 - _rho) * _rho * _h + (4 - _rho) ** 2 * _c + (4 - _rho) * sp.sqrt(radicand))
    )
    return (_c * root if with_c else root), radicand


CAP_HIGH_PRINTED, _CAP_HIGH_RADICAND = _cap_high_printed()


CAP_LOW_PRINTED, _CAP_LOW_RADICAND = _cap_low_printed()


CAP_LOW_CORRECTED = _cap_low_printed(with_c=True)[0]


#: (rho_{t-1}, q_{h,t-1}, q_{h,t}) points inside the hypotheses.
_RHC_POINTS = [
    (sp.Rational(1, 4), sp.Rational(3, 5), sp.Rational(33, 50)),
    (sp.Rational(1, 3), sp.Rational(3, 5), sp.Rational(72, 95)),
    (sp.Rational(1, 10), sp.Rational(1, 2), sp.Rational(9, 10)),
]


def _right_root(quad: sp.Expr, root: sp.Expr, radicand: sp.Expr, label: str, extra: str) -> Verdict:
    """``proved`` if ``root`` (the + sign of sqrt) solves ``quad``; else ``refuted`` at a point."""
    residual = _root_residual(quad, root, radicand)
    if sp.cancel(residual) == 0:
        return proved(
            f"{label}: the printed root, with sqrt(radicand) -> r, satisfies the quadratic "
            f"modulo r^2 = radicand for either sign of r; the + sign is the larger root; {extra}"
        )
    f_root = sp.lambdify((_rho, _h, _c), root, modules="mpmath")
    f_quad = sp.lambdify((_x, _rho, _h, _c), quad.subs(_ql, _rho * _h), modules="mpmath")
    for rho, h, c in _RHC_POINTS:
        value = f_root(rho, h, c)
        at = f_quad(value, rho, h, c)
        if abs(at) > 1e-12:
            coefficients = sp.Poly(quad.subs({_ql: rho * h, _h: h, _c: c}), _x).all_coeffs()
            right = max(np.roots([float(v) for v in coefficients]).real)
            return refuted(
                f"{label}: the printed expression is not a root of the quadratic",
                {
                    "rho": str(rho),
                    "q_h_prev": str(h),
                    "q_h_new": str(c),
                    "printed_root": float(value),
                    "quadratic_there": float(at),
                    "right_root": float(right),
                },
            )
    raise ValueError(f"sympy could not decide {label}")


@proposition(
    "thesis.ch3.prop3.cap_high",
    source=f"{_PROOF3}, the right-most root q^h_{{l,t}} of (3.14); {_ALG5}, step 8",
    statement="q^h_{l,t} = 4c - ((4-rho)^2/(2(1-rho)))(c^2/h - sqrt(c^4/h^2 - (12(1-rho)/(4-rho)^2) "
    "c^3/h)) is the right-most root of the (3.14) quadratic, and equals hat q_{l,t} = B(rho, c/h) c",
    perturb={"root": _cap_high_printed(twelve=11)[0]},
)
def _prop3_cap_high(root: sp.Expr = CAP_HIGH_PRINTED) -> Verdict:
    verdict = _right_root(QUAD_314, root, _CAP_HIGH_RADICAND, "q^h_{l,t}", "")
    if not verdict.holds:
        return verdict
    as_b = sp.simplify((root / _c).subs(_c, b * _h).subs(_rho, a) - B_PAPER)
    if as_b != 0:
        raise ValueError(f"sympy could not reduce q^h/c to B: {as_b}")
    return proved(f"{verdict.evidence} and q^h/c with c = b h simplifies to B(rho, b)")


@proposition(
    "thesis.ch3.prop3.cap_low",
    source=f"{_PROOF3}, the right-most root q^l_{{l,t}} of (3.15)",
    statement="as printed: q^l_{l,t} = [8(1-rho)rho h + (4-rho)^2 c + (4-rho) sqrt((4-rho)^2 c^2 "
    "- 48 rho(1-rho) h c)] / [2((1-rho)rho h + (4-rho)^2 c)] is the right-most root of the "
    "(3.15) quadratic",
    holds=False,
    perturb={"root": CAP_LOW_CORRECTED},
)
def _prop3_cap_low(root: sp.Expr = CAP_LOW_PRINTED) -> Verdict:
    return _right_root(QUAD_315, root, _CAP_LOW_RADICAND, "q^l_{l,t}", _CAP_LOW_REAL)


_CAP_LOW_REAL = (
    "the radicand is c((4-rho)^2 (c - h) + h (7 rho - 4)^2) >= 0 for c >= h, so the root is real"
)


@proposition(
    "thesis.ch3.prop3.cap_low.corrected",
    source=f"{_PROOF3}, the right-most root q^l_{{l,t}} of (3.15)",
    statement="q^l_{l,t} = q_{h,t} x (the printed expression) is the right-most root of the "
    "(3.15) quadratic",
    perturb={"root": CAP_LOW_PRINTED},
)
def _prop3_cap_low_corrected(root: sp.Expr = CAP_LOW_CORRECTED) -> Verdict:
    real = sp.expand(
        _CAP_LOW_RADICAND - _c * ((4 - _rho) ** 2 * (_c - _h) + _h * (7 * _rho - 4) ** 2)
    )
    if real != 0:
        raise ValueError("the radicand is not c((4-rho)^2 (c-h) + h (7rho-4)^2)")
    return _right_root(QUAD_315, root, _CAP_LOW_RADICAND, "q^l_{l,t}", _CAP_LOW_REAL)


def _revenue_fall(cap: sp.Expr) -> Verdict | None:
    """A round at which the low firm at ``cap(rho, b) q_{h,t}`` lowers U_h, if there is one."""
    value = sp.lambdify((a, b), cap, modules="numpy")
    for pa, pb in _AB_POINTS:
        h = 0.6
        ql, c = pa * h, min(pb * h, 1.0)
        x = float(value(pa, c / h)) * c
        if not 0.0 <= x <= c:
            continue
        ul0, uh0 = duopoly.revenues(ql, h)
        ul1, uh1 = duopoly.revenues(x, c)
        if uh1 < uh0 or ul1 < ul0:
            return refuted(
                "at q_{l,t} = the cap a revenue falls",
                {
                    "q_l_prev": ql,
                    "q_h_prev": h,
                    "q_h_new": c,
                    "q_l_new": x,
                    "U_h_change": float(uh1 - uh0),
                    "U_l_change": float(ul1 - ul0),
                },
            )
    return None


@proposition(
    "thesis.ch3.prop3",
    source=f"{_SRC}, §3.4 (p. 64), Proposition 3, and {_PROOF3}",
    statement="(the qualities of the proof) if q_{h,t-1} <= q_{h,t} and q_{l,t-1} <= q_{l,t} <= "
    "hat q_{l,t} = B(rho_{t-1}, q_{h,t}/q_{h,t-1}) q_{h,t}, neither revenue falls; in particular "
    "q^h_{l,t} <= q^l_{l,t} for all feasible parameters (which the proof verifies 'with graphing "
    "software')",
    perturb={"cap": _b_printed(twelve=11)},
)
def _prop3(cap: sp.Expr = B_PAPER) -> Verdict:
    keeps = b * _U_H.subs(_z, cap) - _U_H.subs(_z, a)  # U_h(cap c, c) - U_h(a h, h), over h
    value = sp.lambdify((a, b), keeps, modules="numpy")
    if any(abs(complex(value(pa, pb))) > 1e-9 for pa, pb in _AB_POINTS):
        return _decided(_revenue_fall(cap), "whether a revenue falls at the cap")
    cap_s = sp.cancel(sp.together(_in_s(cap)))
    if sp.cancel(sp.together((_k / (1 - _s**2)) * _U_H.subs(_z, cap_s) - _k / 3)) != 0:
        raise ValueError("sympy could not reduce b u_h(B(a, b)) - u_h(a) to 0")
    if sp.cancel(sp.together(_U_L - _z * _U_H / 4)) != 0:
        raise ValueError("u_l is not z u_h / 4")
    if sp.cancel(sp.together(_U_H.subs(_z, a) - _k / 3)) != 0:
        raise ValueError("u_h(a) is not k/3")
    below_one = sp.cancel(sp.together(1 - cap_s - 3 * (1 - _s) / (1 + _s)))
    falls = sign_on_interval(sp.diff(_U_H, _z), _z, 0, 1)
    concave = sign_on_interval(sp.diff(_U_L, _z, 2), _z, 0, 1)
    lemma = _lemma24_chain(cap)
    if below_one != 0 or falls > 0 or concave > 0 or not lemma.holds:
        raise ValueError("a step of the proof of Proposition 3 did not go through")
    return proved(
        "with b = q_{h,t}/q_{h,t-1}, z = q_{l,t}/q_{h,t} in [rho/b, B]: (1) b u_h(B(rho,b)) = "
        "u_h(rho) (in s), u_h strictly decreasing on (0,1) (Sturm) and B = 1 - 3(1-s)/(1+s) < 1, so "
        "U_h(q_{l,t}, q_{h,t}) - U_{h,t-1} = q_{h,t-1}(b u_h(z) - u_h(rho)) >= 0; (2) u_l = z u_h/4 "
        "and u_l'' < 0 on (0,1) (Sturm), so q_{h,t-1}(b u_l(z) - u_l(rho)) is concave in z, equal "
        "to q_{h,t-1}(B - rho) u_h(rho)/4 >= 0 at z = B (Lemma 24: " + lemma.evidence + ") and to "
        "q_{h,t-1} rho (u_h(rho/b) - u_h(rho))/4 >= 0 at z = rho/b, hence >= 0 between; (3) so the "
        "(3.15) quadratic is <= 0 at hat q (thesis.ch3.prop3.quadratics) and q^h <= q^l"
    )


def _one(L: float) -> float:
    """The constant 1 of the printed step size."""
    return 1.0


def _one_over_l(L: float) -> float:
    """1/L."""
    return 1.0 / L


#: The round of the in-domain counterexample: the joint loss f(x) = 1/50 + 2 x_1^2 + x_2^2/20
#: of f(x; l) = f(x) + x_2/50 and f(x; h) = f(x) - x_2/50, each convex and 4-smooth;
#: x_{h,0} = (2/5, 0), x_{l,0} = (1/9, 39/10).
_STEP_CURVATURE = np.array([4.0, 0.1])


_STEP_F_MIN = 0.02


_STEP_X_H0 = np.array([0.4, 0.0])


_STEP_X_L0 = np.array([1 / 9, 3.9])


_Loss = tuple[Callable[[NDArray[np.float64]], float], Callable[[NDArray[np.float64]], Any]]


def _quadratic(curvature: NDArray[np.float64], centre: NDArray[np.float64], fmin: float) -> _Loss:
    """f(x) = fmin + (x - centre)' H (x - centre)/2 (H a matrix, or a vector for diagonal H)."""
    hess = np.diag(curvature) if curvature.ndim == 1 else curvature

    def loss(y: NDArray[np.float64]) -> float:
        return float(fmin + 0.5 * (y - centre) @ hess @ (y - centre))

    return loss, lambda y: hess @ (y - centre)


def _softplus(mat: NDArray[np.float64], coef: float) -> _Loss:
    """f(x) = coef mean(log(1 + exp(A x)))."""

    def loss(y: NDArray[np.float64]) -> float:
        return float(coef * np.mean(np.logaddexp(0, mat @ y)))

    return loss, lambda y: coef * mat.T @ (1 / (1 + np.exp(-(mat @ y)))) / mat.shape[0]


def _step_instances(seed: int, n: int) -> Iterator[tuple[_Loss, float, Any, float, Any]]:
    """The round of the in-domain counterexample, then ``n`` random convex L-smooth losses.

    Each instance is ((loss, gradient), L, x, gap, round) with ``round`` the duopoly round
    where there is one (None otherwise). Random ones: quadratics f* + (x-x*)' H (x-x*)/2 in
    2-5 dimensions with eigenvalues spread over up to 4 decades, and softplus losses
    c mean(log(1 + e^{Ax})); each scaled so that f(x) <= 1, with a gap of 1e-6, 1/2, 1, 2
    or 50 times ||g||^2/L.
    """
    joint, grad = _quadratic(_STEP_CURVATURE, np.zeros(2), _STEP_F_MIN)
    lip = float(_STEP_CURVATURE.max())
    x_h1 = _STEP_X_H0 - grad(_STEP_X_H0) / lip  # Algorithm 5, lines 3-4 with alpha_h = 1/L
    q_h0, q_h1, q_l0 = (1 - joint(x) for x in (_STEP_X_H0, x_h1, _STEP_X_L0))
    hat_q = float(cap_ratio(q_l0 / q_h0, q_h1 / q_h0)) * q_h1
    duopoly_round = {
        "q_l_prev": q_l0,
        "q_h_prev": q_h0,
        "q_h_new": q_h1,
        "hat_q": hat_q,
        "points": [_STEP_X_H0, x_h1, _STEP_X_L0],
        "q_max": 1 - _STEP_F_MIN,
    }
    yield (joint, grad), lip, _STEP_X_L0, hat_q - q_l0, duopoly_round
    rng = np.random.default_rng(seed)
    for i in range(n):
        d = int(rng.integers(2, 6))
        x = rng.normal(size=d)
        if i % 2 == 0:
            basis, _ = np.linalg.qr(rng.normal(size=(d, d)))
            hess = basis @ np.diag(10.0 ** rng.uniform(-4, 0, d)) @ basis.T
            centre, fstar = rng.normal(size=d), float(rng.uniform(0, 0.3))
            scale = (1 - fstar) / max(0.5 * (x - centre) @ hess @ (x - centre), 1e-12)
            hess = hess * scale * float(rng.uniform(0.2, 1.0))
            pair = _quadratic(hess, centre, fstar)
            lip_i = float(np.linalg.eigvalsh(hess).max())
        else:
            mat = rng.normal(size=(8, d))
            coef = float(rng.uniform(0.2, 1.0)) / float(np.mean(np.logaddexp(0, mat @ x)))
            pair = _softplus(mat, coef)
            lip_i = coef * float(np.linalg.eigvalsh(mat.T @ mat).max()) / (4 * mat.shape[0])
        g = pair[1](x)
        gap = float((1e-6, 0.5, 1.0, 2.0, 50.0)[i % 5] * (g @ g) / lip_i)
        yield pair, lip_i, x, gap, None


def _prop3_step(step_cap: Callable[[float], float]) -> Verdict:
    from econ import bargaining  # bargaining imports this module

    n = 0
    for (loss, grad), lip, x, gap, rnd in _step_instances(seed=5, n=400):
        g = grad(x)
        alpha = min(gap / float(g @ g), step_cap(lip))
        after = x - alpha * g
        q0, q1 = 1 - loss(x), 1 - loss(after)
        if rnd is not None:
            values = [
                loss(p) + sign * p[1] / 50 for p in (*rnd["points"], after) for sign in (1, -1)
            ]
            sol = bargaining.duopoly_nash_solution(rnd["q_l_prev"], rnd["q_h_prev"], rnd["q_max"])
            inside = (
                all(0 <= v <= 1 for v in values)
                and rnd["q_l_prev"] < float(sol.q_l_star)
                and rnd["q_l_prev"] / rnd["q_h_new"] <= float(sol.rho_star)
            )
            if not inside:
                raise ValueError("the round of the step check is outside Algorithm 5's hypotheses")
            ul0, uh0 = duopoly.revenues(rnd["q_l_prev"], rnd["q_h_prev"])
            ul1, uh1 = duopoly.revenues(q1, rnd["q_h_new"])
            if q1 < q0 or ul1 < ul0 or uh1 < uh0:
                return refuted(
                    "the step alpha_l = min{(hat q - q_{l,t-1})/||g||^2, 1} = 1 exceeds 2/L = 1/2 and "
                    "raises the loss: q_{l,t} and U_l fall. Inside the hypotheses, checked in code: "
                    "f(x;l), f(x;h) = 1/50 + 2x_1^2 + x_2^2/20 +- x_2/50 are convex and 4-smooth with "
                    "the joint loss f = 1/50 + 2x_1^2 + x_2^2/20, their values at "
                    "x_{l,0}, x_{l,1}, x_{h,0}, x_{h,1} lie in [0, 1], alpha_h = 1/L, and line 7's gate "
                    "passes (q_{l,0} < q_l*, q_{l,0}/q_{h,1} <= rho*)",
                    {
                        "x_l0": "(1/9, 39/10)",
                        "x_h0": "(2/5, 0)",
                        "L": lip,
                        "alpha_l": alpha,
                        "q_l_prev": q0,
                        "q_l_new": q1,
                        "q_h_prev": rnd["q_h_prev"],
                        "q_h_new": rnd["q_h_new"],
                        "hat_q": rnd["hat_q"],
                        "U_l_prev": float(ul0),
                        "U_l_new": float(ul1),
                        "rho_star": float(sol.rho_star),
                    },
                )
        n += 1
        if not (q0 - 1e-14 <= q1 <= q0 + gap + 1e-14):
            return refuted(
                "the step lowers the quality or passes hat q",
                {"L": lip, "alpha": alpha, "gap": gap, "q_before": q0, "q_after": q1},
            )
    return checked(
        "q_{l,t-1} <= q_{l,t} <= hat q_{l,t} after one step, and at the duopoly round neither "
        "revenue falls",
        n,
        drawn="the duopoly round f = 1/50 + 2x_1^2 + x_2^2/20 from x_{l,0} = (1/9, 39/10), plus 400 "
        "random convex L-smooth losses scaled into [0, 1] (seed 5): quadratics in 2-5 dimensions "
        "with eigenvalues over 4 decades and softplus losses, each with a gap of 1e-6, 1/2, 1, 2 "
        "or 50 times ||g||^2/L (both branches of the min)",
    )


@proposition(
    "thesis.ch3.prop3.step",
    source=f"{_PROOF3}, alpha_{{l,t}} = min{{(hat q_{{l,t}} - q_{{l,t-1}})/||grad f_{{l,t-1}}||^2, 1}}",
    statement="as printed: the low firm's step alpha_{l,t} = min{(hat q_{l,t} - q_{l,t-1})/"
    "||grad f_{l,t-1}||^2, 1} keeps q_{l,t-1} <= q_{l,t} <= hat q_{l,t}, so no revenue falls",
    holds=False,
    perturb={"step_cap": _one_over_l},
)
def _prop3_step_printed(step_cap: Callable[[float], float] = _one) -> Verdict:
    return _prop3_step(step_cap)


@proposition(
    "thesis.ch3.prop3.step.corrected",
    source=f"{_PROOF3}, the low firm's step size",
    statement="alpha_{l,t} = min{(hat q_{l,t} - q_{l,t-1})/||grad f_{l,t-1}||^2, 1/L} keeps "
    "q_{l,t-1} <= q_{l,t} <= hat q_{l,t} for convex L-smooth losses",
    perturb={"step_cap": _one},
)
def _prop3_step_corrected(step_cap: Callable[[float], float] = _one_over_l) -> Verdict:
    return _prop3_step(step_cap)


@proposition(
    "thesis.ch3.prop5.b_tilde",
    source=f"{_PROOF5}, the definitions of b_rho and b~ and Fig. 3.6",
    statement="b~ = min_{rho <= 1} b_rho ~ 1.03 = b_{rho ~ 0.33}, with b_rho = max{b >= 1 : "
    "(4 - 5rho) log10 b <= B(rho, b) - rho} > 1",
    perturb={"printed": 1.05},
)
def _prop5_b_tilde(printed: float = 1.03, at: float = 0.33, base: float = 10.0) -> Verdict:
    grid = np.linspace(0.0, 0.79, 80)
    values = np.array([b_rho(float(r), base=base) for r in grid])
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(
        lambda r: b_rho(r, base=base), bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}
    )
    tilde, arg = float(min(res.fun, values.min())), float(res.x)
    found = {"b_tilde": tilde, "argmin_rho": arg, "min_b_rho_on_grid": float(values.min())}
    if values.min() <= 1.0 or round(tilde, 2) != printed or abs(arg - at) > 0.02:
        return refuted(f"b~ is not {printed} at rho ~ {at}, or some b_rho = 1", found)
    return checked(
        f"b_rho > 1 at every grid point; b~ = {tilde:.10f} rounds to {printed}, at rho = {arg:.6f} "
        f"(within 0.02, a reading of Fig. 3.6, of {at})",
        grid.size,
        drawn="rho on a uniform grid of [0, 0.79] (b_rho = inf from 0.8 on), refined by a bounded "
        "scalar minimisation around the grid's minimum",
    )
