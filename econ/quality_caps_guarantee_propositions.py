"""The propositions of Werner (2024), ch. 3 about Algorithm 5's guarantee: Proposition 3.

The proof of Proposition 3 (§3.7, pp. 70ff): the quadratics rearranged from (3.14)-(3.15), their
right-most roots (the caps), and Proposition 3 itself, that a low firm below the cap lowers
neither revenue, checked against :mod:`econ.quality_caps` with the symbols of
:mod:`econ.quality_caps_propositions`.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from econ import duopoly
from econ.propositions import Verdict, proposition, proved, refuted, sign_on_interval
from econ.quality_caps import B_PAPER, a, b
from econ.quality_caps_propositions import (
    AB_POINTS,
    U_H_Z,
    b_printed,
    decided,
    in_s,
    k,
    lemma24_chain,
    s,
    z,
)

_SRC = "Werner (2024), ch. 3"


_ALG5 = f"{_SRC}, §3.4 (p. 64), Algorithm 5"


_PROOF3 = f"{_SRC}, §3.7 (pp. 70ff), proof of Proposition 3"


U_L_Z = duopoly.u_l_rho.subs(duopoly.rho, z)  # u_l(z) = z(1-z)/(4-z)^2


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

#: A round at which U_l is unchanged: rho = 4/7 (u_l(4/7) = 1/48) and q_{l,t}/q_{h,t} = 2/3
#: (u_l(2/3) = 1/50), so c/h = 50/48 = 25/24: q = 12/35, h = 3/5, c = 5/8 and x = 5/12 >= q.
_EXACT_ROUND_L = {
    "q_l_prev": sp.Rational(12, 35),
    "q_h_prev": sp.Rational(3, 5),
    "q_h_new": sp.Rational(5, 8),
    "q_l_new": sp.Rational(5, 12),
}

#: Per rearranged inequality: the firm's revenue change, its printed quadratic, its exact round.
_REARRANGED = {
    "(3.14)": ("U_h", _DU_H, QUAD_314, _EXACT_ROUND),
    "(3.15)": ("U_l", _DU_L, QUAD_315, _EXACT_ROUND_L),
}


def _prop3_rearranged(strict: bool, label: str) -> Verdict:
    """Whether the revenue of ``label``'s firm does not fall iff its quadratic is < 0 (``strict``) or <= 0."""
    firm, delta, quadratic, r = _REARRANGED[label]
    point = {_ql: r["q_l_prev"], _h: r["q_h_prev"], _c: r["q_h_new"], _x: r["q_l_new"]}
    change, quad = delta.subs(point), quadratic.subs(point)
    kept = change >= 0
    said = quad < 0 if strict else quad <= 0
    if kept != said:
        return refuted(
            f"at q_l,t on the boundary of {label}, {firm} is unchanged (change {change}) but the "
            f"quadratic is {quad}, not {'<' if strict else '<='} 0 (exact rationals; "
            f"{r['q_l_prev']} < {r['q_h_prev']} <= {r['q_h_new']}, {r['q_l_prev']} <= "
            f"{r['q_l_new']} <= {r['q_h_new']})",
            {k: str(v) for k, v in r.items()}
            | {"quadratic": str(quad), f"{firm}_change": str(change)},
        )
    if strict:
        raise ValueError("the exact round does not separate < from <=")
    verdict = _minus_quadratic(delta, quadratic, label)
    if not verdict.holds or not _sign_of_denominator():
        return verdict
    return proved(
        f"{firm}(x,c) - {firm}(q,h) = -({label} quadratic)/((4h - q)^2 (4c - x)^2) with a positive "
        f"denominator, so {firm} does not fall iff the quadratic is <= 0; at the exact round "
        f"({r['q_l_prev']}, {r['q_h_prev']}) -> ({r['q_l_new']}, {r['q_h_new']}) both are 0"
    )


@proposition(
    "thesis.ch3.prop3.strict",
    source=f"{_PROOF3}, the quadratic rearranged from (3.14), '... < 0'",
    statement="as printed: U_h does not decrease iff the (3.14) quadratic is < 0 (strict)",
    holds=False,
    perturb={"strict": False},
)
def _prop3_strict(strict: bool = True) -> Verdict:
    return _prop3_rearranged(strict, "(3.14)")


@proposition(
    "thesis.ch3.prop3.strict.corrected",
    source=f"{_PROOF3}, the quadratic rearranged from (3.14), '... < 0', whose < becomes <=",
    statement="U_h does not decrease iff the (3.14) quadratic is <= 0",
    perturb={"strict": True},
)
def _prop3_strict_corrected(strict: bool = False) -> Verdict:
    return _prop3_rearranged(strict, "(3.14)")


@proposition(
    "thesis.ch3.prop3.strict_l",
    source=f"{_PROOF3}, the quadratic rearranged from (3.15), '... < 0'",
    statement="as printed: U_l does not decrease iff the (3.15) quadratic is < 0 (strict)",
    holds=False,
    perturb={"strict": False},
)
def _prop3_strict_l(strict: bool = True) -> Verdict:
    return _prop3_rearranged(strict, "(3.15)")


@proposition(
    "thesis.ch3.prop3.strict_l.corrected",
    source=f"{_PROOF3}, the quadratic rearranged from (3.15), '... < 0', whose < becomes <=",
    statement="U_l does not decrease iff the (3.15) quadratic is <= 0",
    perturb={"strict": True},
)
def _prop3_strict_l_corrected(strict: bool = False) -> Verdict:
    return _prop3_rearranged(strict, "(3.15)")


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
    for pa, pb in AB_POINTS:
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
    perturb={"cap": b_printed(twelve=11)},
)
def _prop3(cap: sp.Expr = B_PAPER) -> Verdict:
    keeps = b * U_H_Z.subs(z, cap) - U_H_Z.subs(z, a)  # U_h(cap c, c) - U_h(a h, h), over h
    value = sp.lambdify((a, b), keeps, modules="numpy")
    if any(abs(complex(value(pa, pb))) > 1e-9 for pa, pb in AB_POINTS):
        return decided(_revenue_fall(cap), "whether a revenue falls at the cap")
    cap_s = sp.cancel(sp.together(in_s(cap)))
    if sp.cancel(sp.together((k / (1 - s**2)) * U_H_Z.subs(z, cap_s) - k / 3)) != 0:
        raise ValueError("sympy could not reduce b u_h(B(a, b)) - u_h(a) to 0")
    if sp.cancel(sp.together(U_L_Z - z * U_H_Z / 4)) != 0:
        raise ValueError("u_l is not z u_h / 4")
    if sp.cancel(sp.together(U_H_Z.subs(z, a) - k / 3)) != 0:
        raise ValueError("u_h(a) is not k/3")
    below_one = sp.cancel(sp.together(1 - cap_s - 3 * (1 - s) / (1 + s)))
    falls = sign_on_interval(sp.diff(U_H_Z, z), z, 0, 1)
    concave = sign_on_interval(sp.diff(U_L_Z, z, 2), z, 0, 1)
    lemma = lemma24_chain(cap)
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
