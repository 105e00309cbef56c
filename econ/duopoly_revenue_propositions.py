"""The propositions of Werner (2024), ch. 3 about the duopoly's revenues: Proposition 1.

Section 3.2 (pp. 59-62), with the proofs of section 3.7 (pp. 70ff): the monotonicity of the
equilibrium revenues of eq. (3.4) (Proposition 1), their homogeneity, :math:`u_h^{-1}`, consumer
surplus and welfare, and the Cournot variant, checked against :mod:`econ.duopoly`.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp

from econ.duopoly import (
    AT_EQUILIBRIUM,
    COURNOT_PRICE_H,
    COURNOT_PRICE_L,
    COURNOT_X_H,
    COURNOT_X_L,
    THETA_H,
    THETA_L,
    U_H,
    U_L,
    p_h,
    p_l,
    q_h,
    q_l,
    rho,
    theta,
    u_h_rho,
    x_h,
    x_l,
)
from econ.duopoly_propositions import ratio_form, rho_sign, same_expression
from econ.propositions import Verdict, proposition, proved, refuted, sign_on_interval

_SRC = "Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3"


_S32 = f"{_SRC}, section 3.2 (pp. 59-62)"


_FOUR_SEVENTHS = sp.Rational(4, 7)


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


def _monotone(name: str) -> Callable[..., Verdict]:
    expr, var, printed_default = _PRINTED_PARTIALS[name]

    def check(
        derivative: sp.Expr = printed_default, increasing: bool = name != "dU_h/dq_l"
    ) -> Verdict:
        as_printed = same_expression(sp.diff(expr, var), derivative, f"printed {name}")
        if not as_printed.holds:
            return as_printed
        in_rho = ratio_form(derivative)
        found = rho_sign(in_rho, 0, 1)
        want = 1 if increasing else -1
        if found != want:
            return refuted(
                f"{name} = {in_rho} is {'not ' if found is None else ''}of sign {found} on rho in (0, 1), "
                f"so the function is not {'increasing' if increasing else 'decreasing'}",
                {"rho": "1/2", name: str(in_rho.subs(rho, sp.Rational(1, 2)))},
            )
        ends = {str(e): str(in_rho.subs(rho, e)) for e in (0, 1)}
        return proved(
            f"{name} = {in_rho} with rho = q_l/q_h (as printed in the proof); Sturm: no root in (0, 1), "
            f"sign {'+' if want > 0 else '-'} on the whole of 0 < q_l < q_h; at rho = 0, 1: {ends}"
        )

    return check


for _item, (_name, _words) in enumerate(
    [
        ("dU_h/dq_h", "U_h is increasing in q_h"),
        ("dU_h/dq_l", "U_h is decreasing in q_l"),
        ("dU_l/dq_h", "U_l is increasing in q_h"),
    ],
    start=1,
):
    proposition(
        f"thesis.ch3.prop1.{_item}",
        source=f"{_S32}, Proposition 1.{_item}; derivative printed in its proof, section 3.7",
        statement=f"for q_l <= q_h, {_words}; {_name} = {_PRINTED_PARTIALS[_name][2]}",
        perturb={"increasing": _name == "dU_h/dq_l"},
    )(_monotone(_name))


@proposition(
    "thesis.ch3.prop1.4",
    source=f"{_S32}, Proposition 1.4; derivative printed in its proof, section 3.7",
    statement="U_l is increasing in q_l for q_l <= 4q_h/7 and decreasing otherwise; dU_l/dq_l = q_h^2(4q_h - 7q_l)/(4q_h - q_l)^3",
    perturb={"threshold": sp.Rational(3, 5)},
)
def _prop1_4(
    threshold: sp.Expr = _FOUR_SEVENTHS, derivative: sp.Expr = _PRINTED_PARTIALS["dU_l/dq_l"][2]
) -> Verdict:
    as_printed = same_expression(sp.diff(U_L, q_l), derivative, "printed dU_l/dq_l")
    if not as_printed.holds:
        return as_printed
    in_rho = ratio_form(derivative)
    up, down = rho_sign(in_rho, 0, threshold), rho_sign(in_rho, threshold, 1)
    if (up, down) != (1, -1):
        return refuted(
            f"dU_l/dq_l = {in_rho} does not change sign at rho = {threshold}",
            {"threshold": str(threshold), "sign below": up, "sign above": down},
        )
    return proved(
        f"dU_l/dq_l = {in_rho} (as printed): Sturm gives sign + on (0, {threshold}) and - on ({threshold}, 1)"
    )


@proposition(
    "thesis.ch3.identities",
    source=f"derived from {_S32}, eq. (3.4)",
    statement="U_l, U_h are homogeneous of degree 1 in (q_l, q_h), and U_l/U_h = q_l/(4q_h)",
    kind="derived",
    perturb={"ratio": q_l / (3 * q_h)},
)
def _identities(ratio: sp.Expr = q_l / (4 * q_h), degree: int = 1) -> Verdict:
    lam = sp.Symbol("lambda", positive=True)
    scaled = {q_l: lam * q_l, q_h: lam * q_h}
    for derived, printed, what in (
        (U_L.subs(scaled, simultaneous=True), lam**degree * U_L, "U_l homogeneity"),
        (U_H.subs(scaled, simultaneous=True), lam**degree * U_H, "U_h homogeneity"),
        (U_L / U_H, ratio, "U_l/U_h"),
    ):
        verdict = same_expression(derived, printed, what)
        if not verdict.holds:
            return verdict
    return proved(
        f"U(lambda q) = lambda^{degree} U(q) for both firms and U_l/U_h = {ratio}, identically"
    )


_Y = sp.Symbol("y", nonnegative=True)


U_H_INVERSE = 4 - 6 / (1 + sp.sqrt(1 - 3 * _Y))


@proposition(
    "thesis.ch3.uh_inverse",
    source=f"derived from {_S32}, eq. (3.4): u_h(rho) = U_h(rho, 1)",
    statement="u_h(rho) = 4(1-rho)/(4-rho)^2 is decreasing on [0, 1] with inverse 4 - 6/(1 + sqrt(1 - 3y)) on [0, 1/4]",
    kind="derived",
    perturb={"inverse": 4 - 5 / (1 + sp.sqrt(1 - 3 * _Y))},
)
def _uh_inverse(inverse: sp.Expr = U_H_INVERSE) -> Verdict:
    s = sp.Symbol("s", positive=True)  # s = sqrt(1 - 3y), in (0, 1] for y in [0, 1/3)
    in_s = inverse.subs(sp.sqrt(1 - 3 * _Y), s).subs(_Y, (1 - s**2) / 3)
    composed = same_expression(
        u_h_rho.subs(rho, in_s), (1 - s**2) / 3, "u_h(u_h^{-1}(y)) - y, s = sqrt(1-3y)"
    )
    if not composed.holds:
        return composed
    if rho_sign(sp.diff(u_h_rho, rho), 0, 1) != -1:
        return refuted("u_h is not decreasing", {})
    # the right branch: y = 0 (s = 1) maps to rho = 1 and y = 1/4 (s = 1/2) to rho = 0, and in
    # between the inverse is monotone, so it maps [0, 1/4] onto [0, 1]
    ends = [sp.simplify(in_s.subs(s, v)) for v in (1, sp.Rational(1, 2))]
    if ends != [1, 0]:
        return refuted(
            f"inverse(0) = {ends[0]} and inverse(1/4) = {ends[1]}, not 1 and 0: another branch",
            {"inverse(0)": str(ends[0]), "inverse(1/4)": str(ends[1])},
        )
    try:
        sign_on_interval(sp.diff(in_s, s), s, sp.Rational(1, 2), 1)
    except ValueError:
        return refuted("the inverse is not monotone for y in [0, 1/4]", {})
    return proved(
        "u_h(inverse(y)) = y identically (with s = sqrt(1-3y)); du_h/drho < 0 on (0, 1) (Sturm); "
        "inverse(0) = 1, inverse(1/4) = 0, and the inverse is monotone in between (Sturm), so it "
        "maps [0, 1/4] onto [0, 1]"
    )


@proposition(
    "thesis.ch3.surplus",
    source=f"derived from {_S32}, Definition 2 (eq. 3.2) and Lemma 22",
    statement="CS* = q_h^2(4q_h + 5q_l)/(2(4q_h - q_l)^2) and W* = CS* + U_l + U_h = q_h(12q_h^2 - q_h q_l - 2q_l^2)/(2(4q_h - q_l)^2)",
    kind="derived",
    perturb={"surplus": q_h**2 * (4 * q_h + 4 * q_l) / (2 * (4 * q_h - q_l) ** 2)},
)
def _surplus(
    surplus: sp.Expr = q_h**2 * (4 * q_h + 5 * q_l) / (2 * (4 * q_h - q_l) ** 2),
    welfare: sp.Expr = q_h * (12 * q_h**2 - q_h * q_l - 2 * q_l**2) / (2 * (4 * q_h - q_l) ** 2),
) -> Verdict:
    integral = (
        sp.integrate(theta * q_l - p_l, (theta, THETA_L, THETA_H))
        + sp.integrate(theta * q_h - p_h, (theta, THETA_H, 1))
    ).subs(AT_EQUILIBRIUM)
    cs = same_expression(integral, surplus, "CS*")
    if not cs.holds:
        return cs
    w = same_expression(integral + U_L + U_H, welfare, "W*")
    if not w.holds:
        return w
    return proved(
        "integrating theta q - p over each firm's buyers at p* gives CS*; adding U_l + U_h gives W*"
    )


@proposition(
    "thesis.ch3.remark1.cournot",
    source=f"derived; the thesis names Cournot competition as the alternative to its Bertrand model ({_S32}, Remark 1)",
    statement="with inverse demands p_l = q_l(1 - x_l - x_h), p_h = q_h(1 - x_h) - q_l x_l, the Cournot shares "
    "x_l = q_h/(4q_h-q_l), x_h = (2q_h-q_l)/(4q_h-q_l) solve both FOCs (each profit concave); equal qualities leave q/9 each",
    kind="derived",
    perturb={"share_l": q_h / (3 * q_h - q_l)},
)
def _cournot(
    share_l: sp.Expr = COURNOT_X_L, share_h: sp.Expr = COURNOT_X_H, tie: sp.Expr = q_h / 9
) -> Verdict:
    at = {x_l: share_l, x_h: share_h}
    profit_l, profit_h = x_l * COURNOT_PRICE_L, x_h * COURNOT_PRICE_H
    for derived, printed, what in (
        (sp.diff(profit_l, x_l).subs(at), sp.Integer(0), "Cournot FOC of l"),
        (sp.diff(profit_h, x_h).subs(at), sp.Integer(0), "Cournot FOC of h"),
        (profit_l.subs(at).subs(q_l, q_h), tie, "U_l(q, q)"),
        (profit_h.subs(at).subs(q_l, q_h), tie, "U_h(q, q)"),
    ):
        verdict = same_expression(derived, printed, what)
        if not verdict.holds:
            return verdict
    if sp.diff(profit_l, x_l, 2) != -2 * q_l or sp.diff(profit_h, x_h, 2) != -2 * q_h:
        return refuted("a Cournot profit is not concave in its own share", {})
    return proved(
        "both FOCs vanish at the shares; profits have second derivatives -2q_l, -2q_h < 0; ties give q/9"
    )
