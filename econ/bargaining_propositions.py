r"""The propositions of Werner (2024), ch. 3 about Nash bargaining between the two firms.

Section 3.4 (pp. 64-69), with the proofs of section 3.7 (pp. 70ff): Proposition 2 and the Nash
program with and without reachable qualities, as printed and as the authors' code solves it,
checked against :mod:`econ.bargaining`. The bargained ratio :math:`\rho^*` (its cubic, Lemma 25
and Proposition 5) is in :mod:`econ.bargaining_ratio_propositions`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import NDArray
from scipy.optimize import minimize_scalar

from econ import duopoly
from econ.bargaining import (
    disagreement_ratios,
    duopoly_nash_solution,
    nash_product_at_q_max,
    nash_report,
)
from econ.duopoly_propositions import ratio_form, rho_sign, same_expression
from econ.propositions import (
    Verdict,
    checked,
    on_points,
    proposition,
    proved,
    refuted,
)

_SRC = "Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3"


_S34 = f"{_SRC}, section 3.4 (pp. 64-69)"


_CODE = "mwerner28/defection-free-collaborative-learning, mnist_dfcl.py"


def start_grid(n: int = 60) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Starting points 0 <= q_l0 < q_h0 <= 1 on a grid over (r = q_h0, rho_0)."""
    r, rho0 = np.meshgrid(np.linspace(0.02, 0.99, n), np.linspace(0.0, 0.98, n), indexing="ij")
    return (rho0 * r).ravel(), r.ravel()


_q_l, _q_h = duopoly.q_l, duopoly.q_h


#: The disagreement revenues U_l0, U_h0 as symbols.
U_L0, U_H0 = sp.symbols("U_l0 U_h0", nonnegative=True)


#: The Nash product N(q_l, q_h) = (U_l - U_l0)(U_h - U_h0) of section 3.4.
NASH_PRODUCT = (duopoly.U_L - U_L0) * (duopoly.U_H - U_H0)


_DN_DQH = sp.diff(NASH_PRODUCT, _q_h)


def _dn_dqh_signs() -> tuple[sp.Expr, sp.Expr, int | None, int | None]:
    """dU_l/dq_h and dU_h/dq_h in rho = q_l/q_h, with their signs on (0, 1)."""
    dul = ratio_form(sp.diff(duopoly.U_L, _q_h))
    duh = ratio_form(sp.diff(duopoly.U_H, _q_h))
    return dul, duh, rho_sign(dul, 0, 1), rho_sign(duh, 0, 1)


@proposition(
    "thesis.ch3.prop2",
    source=f"{_S34}, Proposition 2 and its proof",
    statement="the Nash bargaining solution has q_h* = max_x q(x) = Q",
    perturb={"q_h_star": "start"},
)
def _prop2(q_h_star: str = "max") -> Verdict:
    product_rule = same_expression(
        _DN_DQH,
        sp.diff(duopoly.U_L, _q_h) * (duopoly.U_H - U_H0)
        + (duopoly.U_L - U_L0) * sp.diff(duopoly.U_H, _q_h),
        "dN/dq_h = dU_l/dq_h (U_h - U_h0) + (U_l - U_l0) dU_h/dq_h",
    )
    if not product_rule.holds:
        return product_rule
    dul, duh, s_l, s_h = _dn_dqh_signs()
    # Raising q_h keeps q_l <= q_h, raises both revenues (so keeps the point individually
    # rational), and then raises N: dN/dq_h is a sum of products of non-negative factors.
    rises = (s_l, s_h) == (1, 1)
    claimed_top = {"max": True, "start": False}[q_h_star]
    if rises != claimed_top:
        # the two ends of q_h in [q_h0, Q] from the start (1/5, 1/2), Q = 1, exactly
        start = {_q_l: sp.Rational(1, 5), _q_h: sp.Rational(1, 2)}
        gains = {U_L0: duopoly.U_L.subs(start), U_H0: duopoly.U_H.subs(start)}
        at = {
            end: sp.nsimplify(NASH_PRODUCT.subs({**gains, _q_l: sp.Rational(1, 5), _q_h: end}))
            for end in (sp.Rational(1, 2), 1)
        }
        claimed, other = (1, sp.Rational(1, 2)) if claimed_top else (sp.Rational(1, 2), 1)
        if at[claimed] < at[other]:
            return refuted(
                f"from (q_l0, q_h0) = (1/5, 1/2) with Q = 1, q_h* = {q_h_star} gives N = {at[claimed]}"
                f" < N = {at[other]} at the other end",
                {
                    "q_l0": "1/5",
                    "q_h0": "1/2",
                    "Q": 1,
                    "N_claimed": str(at[claimed]),
                    "N_other": str(at[other]),
                },
            )
        raise ValueError("the sign of dN/dq_h and the exact ends disagree")
    return proved(
        f"product rule (identity); dU_l/dq_h = {dul} and dU_h/dq_h = {duh} are > 0 for rho = q_l/q_h in "
        "(0, 1) (Sturm). So moving (q_l, q_h) to (q_l, Q) keeps q_l <= q_h and both revenue gains >= 0, and "
        "N rises along the way (dN/dq_h >= 0 wherever both gains are >= 0, > 0 where N > 0): every "
        "maximiser has q_h = Q"
    )


@proposition(
    "thesis.ch3.prop2.step",
    source=f"{_S34}, proof of Proposition 2",
    statement="as printed in the proof: dN(q_l, q_h)/dq_h >= 0 for all q_l <= q_h",
    holds=False,
    perturb={"domain": "rational"},
)
def _prop2_step(domain: str = "all") -> Verdict:
    if domain not in ("all", "rational"):
        raise ValueError(f"domain must be 'all' or 'rational', got {domain!r}")
    # exact rational arithmetic: the expressions have integer coefficients, so Fractions stay exact
    args = (_q_l, _q_h, U_L0, U_H0)
    dn_dqh = sp.lambdify(args, _DN_DQH, modules="math")
    u_l, u_h = (sp.lambdify((_q_l, _q_h), u, modules="math") for u in (duopoly.U_L, duopoly.U_H))
    grid = [Fraction(k, 10) for k in range(1, 11)]
    n = 0
    for ql0, qh0, ql, qh in (
        (a, b, c, d) for a in grid for b in grid for c in grid for d in grid if a < b and c < d
    ):
        ul0, uh0 = u_l(ql0, qh0), u_h(ql0, qh0)
        gains = (u_l(ql, qh) - ul0, u_h(ql, qh) - uh0)
        if domain == "rational" and min(gains) < 0:
            continue
        n += 1
        value = dn_dqh(ql, qh, ul0, uh0)
        if value < 0:
            exact = _DN_DQH.subs(
                {
                    _q_l: sp.Rational(ql),
                    _q_h: sp.Rational(qh),
                    U_L0: sp.Rational(ul0),
                    U_H0: sp.Rational(uh0),
                }
            )
            signs = "both negative" if max(gains) < 0 else f"{gains[0]} and {gains[1]}"
            return refuted(
                f"dN/dq_h = {exact} < 0 at a point with q_l < q_h, the revenue gains there {signs} "
                "(exact rationals, confirmed by sympy)",
                {
                    "q_l0": str(ql0),
                    "q_h0": str(qh0),
                    "q_l": str(ql),
                    "q_h": str(qh),
                    "U_l - U_l0": str(gains[0]),
                    "U_h - U_h0": str(gains[1]),
                    "dN/dq_h": str(exact),
                },
            )
    return checked(
        "dN/dq_h >= 0, exactly",
        n,
        drawn=f"every (q_l0 < q_h0, q_l < q_h) on the grid k/10, k = 1..10, restricted to {domain} points",
    )


proposition(
    "thesis.ch3.prop2.step.corrected",
    source=f"{_S34}, proof of Proposition 2, restricted to the individually rational set",
    statement="dN(q_l, q_h)/dq_h >= 0 wherever q_l <= q_h and both revenue gains U - U_0 are >= 0",
    perturb={"domain": "all"},
)(lambda domain="rational": _prop2_step(domain))


def _program_starts() -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Starts (q_l0, q_h0, Q): 300 seeded uniform with q_l0 <= q_h0 <= Q, plus edge cases."""
    rng = np.random.default_rng(0)
    u = np.sort(rng.uniform(0.0, 1.0, (300, 3)), axis=1)
    edges = np.array(
        [
            [0.6, 0.6, 0.6],
            [0.0, 0.5, 1.0],
            [0.49, 0.88, 1.0],
            [0.6, 0.9, 1.0],
            [0.3, 0.3, 1.0],
            [0.2, 0.6, 0.6],
            [0.9, 0.95, 1.0],
            [0.05, 0.1, 1.0],
        ]
    )
    s = np.vstack([u, edges])
    return s[:, 0], s[:, 1], s[:, 2]


def _brute_force_nash(
    ql0: NDArray, qh0: NDArray, q: NDArray, *, quality_floor: bool
) -> tuple[NDArray, NDArray]:
    """Best Nash product and its point over a (q_l, q_h) grid of the feasible set, per start.

    The set is q_l <= q_h <= Q with both revenues at least the start's; with
    ``quality_floor`` also q_l >= q_l0 and q_h >= q_h0. The grid (21 values of q_h, 101 of
    q_l, plus 1001 values of q_l on the line q_h = Q) does not assume Proposition 2.
    """
    ul0, uh0 = duopoly.revenues(ql0, qh0)
    best = np.full(ql0.shape, -np.inf)
    for fine, hs in ((101, np.linspace(0.0, 1.0, 22)[1:]), (1001, np.array([1.0]))):
        qh = (qh0[:, None] if quality_floor else 0.0) * (1 - hs[None, :]) + q[:, None] * hs[None, :]
        ls = np.linspace(0.0, 1.0, fine)
        lo = ql0[:, None, None] if quality_floor else 0.0
        ql = np.minimum(lo + (qh[:, :, None] - lo) * ls[None, None, :], qh[:, :, None])
        ul, uh = duopoly.revenues(ql, np.broadcast_to(qh[:, :, None], ql.shape))
        gl, gh = ul - ul0[:, None, None], uh - uh0[:, None, None]
        value = np.where((gl >= 0) & (gh >= 0), gl * gh, -np.inf)
        best = np.maximum(best, value.reshape(len(ql0), -1).max(axis=1))
    return best, ul0 + uh0


def _program_check(quality_floor: bool, allow_lower: bool) -> Verdict:
    ql0, qh0, q = _program_starts()
    sol = duopoly_nash_solution(ql0, qh0, q, allow_lower=allow_lower)
    grid_best, _ = _brute_force_nash(ql0, qh0, q, quality_floor=quality_floor)
    report = nash_report(sol.q_l_star, sol.q_h_star, ql0, qh0)
    below = int(np.sum(sol.q_l_star < ql0 - 1e-12))
    points = [
        {
            "q_l0": float(a),
            "q_h0": float(b),
            "Q": float(c),
            "q_l_star": float(d),
            "q_h_star": float(e),
            "N_star": float(f),
            "N_grid": float(g),
            "rational": bool(r),
        }
        for a, b, c, d, e, f, g, r in zip(
            ql0,
            qh0,
            q,
            sol.q_l_star,
            sol.q_h_star,
            sol.nash_product,
            grid_best,
            report.rational,
            strict=True,
        )
    ]

    def in_set_and_best(
        q_l0: float,
        q_h0: float,
        Q: float,
        q_l_star: float,
        q_h_star: float,
        N_star: float,
        N_grid: float,
        rational: bool,
    ) -> bool:
        inside = rational and q_l_star <= q_h_star <= Q + 1e-12
        if quality_floor:
            inside = inside and q_l_star >= q_l0 - 1e-12 and q_h_star >= q_h0 - 1e-12
        return bool(inside and N_star >= N_grid - 1e-14)

    floor = "with q_l >= q_l0, q_h >= q_h0" if quality_floor else "with no floor on the qualities"
    verdict = on_points(
        in_set_and_best,
        points,
        f"the solver (allow_lower={allow_lower}) returns a point of the set {floor} whose Nash product "
        f"is at least the best of a 21 x 101 (q_l, q_h) grid of that set and of 1001 points on q_h = Q "
        f"(tolerance 1e-14); q_l* < q_l0 at {below} starts",
        drawn="300 seeded uniform starts q_l0 <= q_h0 <= Q in [0, 1] (sorted triples, seed 0), plus "
        "(0.6, 0.6, 0.6), (0, 0.5, 1), (0.49, 0.88, 1), (0.6, 0.9, 1), (0.3, 0.3, 1), (0.2, 0.6, 0.6), "
        "(0.9, 0.95, 1), (0.05, 0.1, 1)",
    )
    return verdict


@proposition(
    "thesis.ch3.nash.program",
    source=f"{_S34}, the Nash bargaining program and Proposition 4",
    statement="(q_l*, q_h*) = argmax N(q_l, q_h) s.t. U_l >= U_l0 and U_h >= U_h0: the feasible set bounds the "
    "revenues, not the qualities, so q_l* < q_l0 is allowed (Proposition 4 is about such starts); "
    "duopoly_nash_solution (allow_lower=True) returns a maximiser in it",
    perturb={"quality_floor": True},
)
def _nash_program(quality_floor: bool = False) -> Verdict:
    return _program_check(quality_floor=quality_floor, allow_lower=True)


@proposition(
    "thesis.ch3.nash.reachable",
    source=f"derived from {_S34} (the Nash bargaining program) and section 3.3 (pp. 62-64), the assumption that model qualities never degrade",
    statement="over the qualities reachable without degrading (q_l >= q_l0, q_h >= q_h0, q_l <= q_h <= Q) the Nash "
    "bargaining solution is (max(q_l0, q_l*), Q); duopoly_nash_solution(allow_lower=False) returns it",
    kind="derived",
    perturb={"quality_floor": False},
)
def _nash_reachable(quality_floor: bool = True) -> Verdict:
    return _program_check(quality_floor=quality_floor, allow_lower=False)


def _code_nash_optimum(a_: float, h_: float, lo: float, hi: float) -> float:
    """The authors' compute_nash_optimum: a bounded scalar search of the Nash product.

    The search runs over (lo, hi).
    """
    res = minimize_scalar(
        lambda r: -float(nash_product_at_q_max(np.float64(r), a_, h_)),
        bounds=(lo, hi),
        method="bounded",
    )
    return float(res.x)


def _code_points(rational_only: bool) -> list[dict[str, Any]]:
    ql0, qh0 = start_grid(25)
    sol = duopoly_nash_solution(ql0, qh0, allow_lower=True)
    a_, h_, _ = disagreement_ratios(ql0, qh0, 1.0)
    out = []
    for i in range(ql0.size):
        lo, hi = (float(sol.rho_low[i]), float(sol.rho_high[i])) if rational_only else (0.0, 1.0)
        r = _code_nash_optimum(float(a_[i]), float(h_[i]), lo, hi)
        gl, gh = float(duopoly.u_l(r) - a_[i]), float(duopoly.u_h(r) - h_[i])
        out.append(
            {
                "q_l0": float(ql0[i]),
                "q_h0": float(qh0[i]),
                "rho_code": r,
                "gain_l": gl,
                "gain_h": gh,
                "rho_star": float(sol.rho_star[i]),
            }
        )
    return out


@proposition(
    "thesis.ch3.nash.unconstrained",
    source=f"{_CODE}, compute_nash_optimum: minimize_scalar(neg_ratio_obj, bounds=(0, 1), method='bounded')",
    statement="as computed by the authors' code: rho* = argmax over (0, 1) of (u_l(rho) - U_l0)(u_h(rho) - U_h0) "
    "(Q = 1), with no constraint U_l >= U_l0, U_h >= U_h0",
    holds=False,
    kind="code",
    perturb={"rational_only": True},
)
def _nash_unconstrained(rational_only: bool = False) -> Verdict:
    return on_points(
        lambda q_l0, q_h0, rho_code, gain_l, gain_h, rho_star: (
            gain_l >= -1e-12 and gain_h >= -1e-12 and abs(rho_code - rho_star) < 1e-4
        ),
        _code_points(rational_only),
        "the bounded search returns an individually rational ratio within 1e-4 of the cubic's root rho*",
        drawn="625 starts on a 25 x 25 grid of q_h0 in [0.02, 0.99], rho_0 in [0, 0.98], Q = 1; search over "
        + ("the individually rational interval" if rational_only else "(0, 1) as in the code"),
    )


proposition(
    "thesis.ch3.nash.unconstrained.corrected",
    source=f"{_CODE}, compute_nash_optimum, with the search bounded to the individually rational interval",
    statement="a bounded search over the individually rational interval [rho_a, min(rho_b, rho_U)] returns the "
    "Nash bargaining rho* (the cubic's root inside it)",
    perturb={"rational_only": False},
)(lambda rational_only=True: _nash_unconstrained(rational_only))
