r"""The propositions of Werner (2024), ch. 3 about Algorithm 5's cap: Lemma 24 and B's properties.

Algorithm 5's cap :math:`B` (§3.4, p. 64) in the paper's and the stable form, Lemma 24, the
properties of :math:`B` in :math:`b`, and the constant :math:`\tilde b` of the proof of
Proposition 5 (§3.7, pp. 70ff), checked against :mod:`econ.quality_caps`. The symbols and
helpers here (:data:`s`, :func:`in_s`, :func:`lemma24_chain`, ...) also serve Proposition 3,
whose statements are in :mod:`econ.quality_caps_guarantee_propositions` and
:mod:`econ.quality_caps_step_propositions`.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
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


_PROOF5 = f"{_SRC}, §3.7 (pp. 70ff), proof of Proposition 5"


s = sp.Symbol("s", positive=True)  # s = sqrt(1 - k/b), in (0, 1) for b >= 1 > k


k = 12 * (1 - a) / (4 - a) ** 2


_S0 = (a + 2) / (4 - a)  # s at b = 1


_e, _w = sp.symbols("e w", positive=True)  # a = 1 - e (a < 1) and s = 1/(1 + w) (s < 1)


z = sp.Symbol("z", nonnegative=True)  # a quality ratio


U_H_Z = duopoly.u_h_rho.subs(duopoly.rho, z)  # u_h(z) = 4(1-z)/(4-z)^2


_ONE = sp.Integer(1)


#: (a, b) points at which a formula that sympy does not reduce to the printed one is compared.
AB_POINTS = [(0.3, 1.05), (0.5, 1.5), (0.05, 1.01), (0.9, 3.0), (0.0, 1.2), (0.7, 20.0)]


def b_printed(twelve: int = 12, two: int = 2) -> sp.Expr:
    r""":math:`B(a, b)` transcribed from Algorithm 5, step 8; the arguments are its constants."""
    k = twelve * (1 - a) / (4 - a) ** 2
    return 4 - (4 - a) ** 2 / (two * (1 - a)) * (b - sp.sqrt(b**2 - k * b))


def in_s(expr: sp.Expr) -> sp.Expr:
    """Rewrite an expression of (a, b) in s = sqrt(1 - k/b), i.e. b = k/(1 - s^2).

    For b > 0, sqrt(b^2 - k b) = b s. The map b -> s is a bijection of [1, inf) onto
    [(a+2)/(4-a), 1) for every a in [0, 1), so an identity in (a, s) on that set is one in (a, b).
    """
    out = expr.subs(sp.sqrt(b**2 - k * b), b * s).subs(sp.sqrt(1 - k / b), s)
    return out.subs(b, k / (1 - s**2))


def _zero_in_s(residual: sp.Expr, what: str) -> Verdict | None:
    """``proved`` if ``residual(a, b)`` vanishes identically, else ``refuted`` at a point.

    Returns None when sympy does not reduce it and no sample point shows a difference.
    """
    reduced = sp.cancel(sp.together(in_s(residual)))
    if reduced == 0:
        return proved(f"{what}: in s = sqrt(1 - 12(1-a)/(b(4-a)^2)) the difference is 0")
    value = sp.lambdify((a, b), residual, modules="numpy")
    for pa, pb in AB_POINTS:
        diff = complex(value(pa, pb))
        if abs(diff) > 1e-9:
            return refuted(f"{what}: differs", {"a": pa, "b": pb, "difference": diff.real})
    if sp.cancel(sp.together(sp.simplify(reduced))) == 0:
        return proved(f"{what}: in s = sqrt(1 - 12(1-a)/(b(4-a)^2)) the difference is 0")
    return None


def decided(verdict: Verdict | None, what: str) -> Verdict:
    """The verdict of a check that sympy must decide.

    Raises
    ------
    ValueError
        When ``verdict`` is ``None``: sympy could not decide ``what``.
    """
    if verdict is None:
        raise ValueError(f"sympy could not decide {what}")
    return verdict


@proposition(
    "thesis.ch3.B.forms",
    source=f"{_ALG5}, step 8 (the stable form is collabecon's)",
    statement="B(a,b) as printed in Algorithm 5 equals 4 - 6/(1 + sqrt(1 - 12(1-a)/(b(4-a)^2))) "
    "for a in [0, 1), b >= 1",
    kind="derived",
    perturb={"printed": b_printed(twelve=11)},
)
def _b_forms(printed: sp.Expr = B_PAPER, stable: sp.Expr = B_STABLE) -> Verdict:
    what = "printed B minus the stable form"
    return decided(_zero_in_s(printed - stable, what), what)


def lemma24_chain(cap: sp.Expr) -> Verdict:
    """B(a, b) - a as a function of s: zero at b = 1 and increasing in b."""
    cap_s = sp.cancel(sp.together(in_s(cap)))
    at_one = _zero_in_s(sp.cancel(sp.together(cap_s.subs(s, _S0))) - a, "B(a, 1) - a")
    if at_one is None or not at_one.holds:
        return decided(at_one, "B(a, 1) = a")
    d = sp.Symbol("d", positive=True)  # s - s0 > 0, i.e. b > 1
    above = sp.factor(sp.cancel((cap_s - a).subs(s, _S0 + d)).subs(a, 4 - _w))  # w = 4 - a > 0
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
    k_one = _zero_in_s(k / (1 - _S0**2) - 1, "s0 is b = 1")
    if k_one is None or not k_one.holds:
        return decided(k_one, "s0 = (a+2)/(4-a) at b = 1")
    chain = lemma24_chain(cap)
    if not chain.holds:
        return chain
    if b_min >= 1:
        return proved(f"{chain.evidence}; so B(a, b) >= B(a, 1) = a for b >= 1")
    value = sp.lambdify((a, b), cap - a, modules="numpy")
    for pa in np.linspace(0.0, 0.99, 100):
        if float(k.subs(a, pa)) < float(b_min):  # the square root is real
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
    b_in_s = 4 - 6 / (1 + s)  # B_STABLE in s
    b_of_s = k / (1 - s**2)
    if sp.cancel(sp.together(in_s(B_STABLE) - b_in_s)) != 0:
        raise ValueError("B_STABLE is not 4 - 6/(1 + s)")
    d1 = sp.diff(b_in_s, s) / sp.diff(b_of_s, s)  # dB/db by the chain rule
    d2 = sp.diff(d1, s) / sp.diff(b_of_s, s)
    identities = [
        (b_of_s.subs(s, _S0) - 1, "s0 = (a+2)/(4-a) is b = 1"),
        (b_in_s.subs(s, _S0) - a, "B(a, 1) = a"),
        (d1.subs(s, _S0) - slope, "dB/db at b = 1"),
        (b_in_s.subs(s, 1) - limit, "B at s = 1 (b -> inf, since s^2 = 1 - k/b -> 1)"),
        (b_of_s * U_H_Z.subs(z, b_in_s) - U_H_Z.subs(z, a), "b u_h(B(a, b)) = u_h(a)"),
    ]
    for expr, label in identities:
        residual = sp.cancel(sp.together(expr))
        if residual != 0:
            point = {a: sp.Rational(3, 10), s: sp.Rational(4, 5)}
            return refuted(
                f"{label} fails", {"a": 0.3, "s": 0.8, "difference": float(residual.subs(point))}
            )
    signs = {s: 1 / (1 + _w), a: 1 - _e}  # s in (0, 1), a < 1
    slope_sign = sp.factor(d1.subs(signs)).is_positive
    curvature_sign = sp.factor(d2.subs(signs)).is_negative
    falls = sign_on_interval(sp.diff(U_H_Z, z), z, 0, 1)
    if not (slope_sign and curvature_sign and falls < 0):
        raise ValueError("sympy could not sign dB/db, d2B/db2 or du_h/dz")
    return proved(
        "in s = sqrt(1 - k/b) (a bijection of b in [1, inf) onto [(a+2)/(4-a), 1)): "
        + "; ".join(label for _, label in identities)
        + "; dB/db > 0 and d2B/db2 < 0 (signed with a = 1 - e, s = 1/(1 + w), e, w > 0); "
        "u_h strictly decreases on (0, 1) (Sturm), and B(a, b) in [a, 1), so "
        "u_h(B(B(a,b1),b2)) = u_h(a)/(b1 b2) = u_h(B(a,b1 b2)) gives the semigroup law"
    )


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
    # b_rho as printed, max{b >= 1 : (4 - 5 rho) log b <= B(rho, b) - rho}, on a grid of b: the
    # set must be the interval [1, first crossing], so that the max is b_rho's first crossing
    bs = 1.0 + np.logspace(-9, 12, 20001)
    beyond = 0
    for r, first in zip(grid, values, strict=True):
        gap = cap_ratio(float(r), bs) - r - (4 - 5 * r) * np.log(bs) / np.log(base)
        beyond += int(np.sum((gap >= 0) & (bs > first * (1 + 1e-12))))
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(
        lambda r: b_rho(r, base=base), bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}
    )
    tilde, arg = float(min(res.fun, values.min())), float(res.x)
    found = {
        "b_tilde": tilde,
        "argmin_rho": arg,
        "min_b_rho_on_grid": float(values.min()),
        "b_above_first_crossing_in_the_set": beyond,
    }
    if values.min() <= 1.0 or round(tilde, 2) != printed or abs(arg - at) > 0.02 or beyond:
        return refuted(
            f"b~ is not {printed} at rho ~ {at}, or some b_rho = 1, or the printed max differs "
            "from the first crossing",
            found,
        )
    return checked(
        f"b_rho > 1 at every grid point; b~ = {tilde:.10f} rounds to {printed}, at rho = {arg:.6f} "
        f"(within 0.02, a reading of Fig. 3.6, of {at}); the printed max equals the first "
        "crossing (no b past it satisfies the inequality), so b_rho is as printed",
        grid.size,
        drawn="rho on a uniform grid of [0, 0.79] (b_rho = inf from 0.8 on), refined by a bounded "
        "scalar minimisation around the grid's minimum; for the max, b - 1 on 20001 log-spaced "
        "points of [1e-9, 1e12] at each grid rho",
    )
