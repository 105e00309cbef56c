r"""The propositions of Werner (2024), ch. 3 about the bargained ratio rho* of the two firms.

The proof of Lemma 25 (section 3.7, pp. 70ff): the Nash product along :math:`q_h = Q`
(3.17), its derivative (3.18) and the cubic whose root is :math:`\rho^*`, the limit ratio,
Lemma 25's bound on :math:`\rho^*`, and Proposition 5's Figure 3.7 and catch-up, checked
against :mod:`econ.bargaining` and :mod:`econ.quality_caps`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import sympy as sp
from numpy.typing import NDArray

from econ import duopoly, quality_caps
from econ.bargaining import CUBIC, NASH_RHO, RHO_INF, A, H, duopoly_nash_solution, rho
from econ.bargaining_propositions import NASH_PRODUCT, U_H0, U_L0, start_grid
from econ.duopoly_propositions import same_expression
from econ.propositions import Verdict, on_points, proposition, proved, refuted

_SRC = "Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3"


_S37 = f"{_SRC}, section 3.7 (pp. 70ff)"


_q_l, _q_h = duopoly.q_l, duopoly.q_h


@functools.cache
def _grid_solution(n: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Starting grid and its rho*, shared by the checks that sweep it."""
    ql0, qh0 = start_grid(n)
    return ql0, qh0, duopoly_nash_solution(ql0, qh0, allow_lower=True).rho_star


_PRINTED_CUBIC = (
    (4 + 7 * H + 4 * A) * rho**3
    + (32 - 60 * H - 24 * A) * rho**2
    + (144 * H - 52) * rho
    + (16 - 64 * H + 128 * A)
)


@proposition(
    "thesis.ch3.nash.cubic",
    source=f"derived from {_S37}, eqs. (3.17)-(3.18), for any Q (the thesis takes Q = 1)",
    statement="the stationary points of N(rho Q, Q) are the roots of (4+7H+4A)rho^3 + (32-60H-24A)rho^2 + "
    "(144H-52)rho + (16-64H+128A), A = U_l0/Q, H = U_h0/Q",
    kind="derived",
    perturb={"cubic": _PRINTED_CUBIC + H * rho**3},
)
def _nash_cubic(cubic: sp.Expr = _PRINTED_CUBIC) -> Verdict:
    return same_expression(
        sp.cancel(sp.diff(NASH_RHO, rho) * (4 - rho) ** 5), cubic, "(4 - rho)^5 dN/drho"
    )


_QL0, _QH0 = sp.symbols("q_l0 q_h0", positive=True)


_START = {
    U_L0: duopoly.U_L.subs({_q_l: _QL0, _q_h: _QH0}, simultaneous=True),
    U_H0: duopoly.U_H.subs({_q_l: _QL0, _q_h: _QH0}, simultaneous=True),
}


_PRINTED_317 = (_q_l * (1 - _q_l) / (4 - _q_l) ** 2 - U_L0) * (
    4 * (1 - _q_l) / (4 - _q_l) ** 2 - U_H0
)


_RHO0 = sp.Symbol("rho_0", nonnegative=True)


_PRINTED_318 = (
    (7 * U_H0 + U_H0 * _RHO0 + 4) * _q_l**3
    + (-60 * U_H0 - 6 * U_H0 * _RHO0 + 32) * _q_l**2
    + (144 * U_H0 - 52) * _q_l
    + (-64 * U_H0 + 32 * U_H0 * _RHO0 + 16)
) / (4 - _q_l) ** 5


@proposition(
    "thesis.ch3.eq3.17",
    source=f"{_S37}, proof of Lemma 25, eq. (3.17)",
    statement="N(q_l, q_h* = 1) = (q_l(1-q_l)/(4-q_l)^2 - U_l0)(4(1-q_l)/(4-q_l)^2 - U_h0)",
    perturb={
        "printed": (_q_l * (1 - _q_l) / (4 - _q_l) ** 2 - U_L0)
        * (3 * (1 - _q_l) / (4 - _q_l) ** 2 - U_H0)
    },
)
def _eq317(printed: sp.Expr = _PRINTED_317) -> Verdict:
    return same_expression(NASH_PRODUCT.subs(_q_h, 1), printed, "N(q_l, 1) minus (3.17)")


@proposition(
    "thesis.ch3.eq3.18",
    source=f"{_S37}, proof of Lemma 25, eq. (3.18)",
    statement="dN(q_l, 1)/dq_l = (1/(4-q_l)^5)((7U_h0 + U_h0 rho_0 + 4) q_l^3 + (-60U_h0 - 6U_h0 rho_0 + 32) q_l^2 "
    "+ (144U_h0 - 52) q_l + (-64U_h0 + 32U_h0 rho_0 + 16)), with U_h0 = U_h(q_l0, q_h0), rho_0 = q_l0/q_h0",
    perturb={"printed": _PRINTED_318 + U_H0 * _q_l**3 / (4 - _q_l) ** 5},
)
def _eq318(printed: sp.Expr = _PRINTED_318) -> Verdict:
    # U_l0 is not in (3.18): it is rho_0 U_h0/4 (U_l/U_h = q_l/(4 q_h)); here both are computed from
    # the start qualities, so the check does not assume that identity.
    derived = sp.diff(NASH_PRODUCT.subs(_q_h, 1), _q_l).subs(_START)
    return same_expression(
        derived, printed.subs({**_START, _RHO0: _QL0 / _QH0}), "dN(q_l, 1)/dq_l minus (3.18)"
    )


_LIMIT_QUADRATIC = rho**2 + 9 * rho - 4


@proposition(
    "thesis.ch3.nash.rho_inf",
    source=f"derived from {_S37}, eq. (3.18), as the disagreement revenues vanish",
    statement="with A = H = 0 the cubic is 4(rho-1)(rho^2+9rho-4), so rho* -> rho_inf = (sqrt(97)-9)/2 = 0.424429 "
    "as the start's revenues vanish",
    kind="derived",
    perturb={"quadratic": rho**2 + 9 * rho - 3},
)
def _rho_inf(quadratic: sp.Expr = _LIMIT_QUADRATIC) -> Verdict:
    limit = same_expression(
        CUBIC.as_expr().subs({A: 0, H: 0}), 4 * (rho - 1) * quadratic, "cubic at A = H = 0"
    )
    if not limit.holds:
        return limit
    root = max(sp.solve(quadratic, rho), key=lambda r: float(r) if r.is_real else -1)
    got = duopoly_nash_solution(
        np.zeros(3), np.array([1e-9, 1e-6, 1e-3]), allow_lower=True
    ).rho_star
    if np.any(np.abs(got - float(root)) > 1e-2):
        return refuted(
            "the solver does not approach the root",
            {"q_h0": [1e-9, 1e-6, 1e-3], "rho_star": got.tolist()},
        )
    return proved(
        f"cubic at A = H = 0 is 4(rho-1)({quadratic}) identically; its root in (0, 1) is {root} = {float(root):.12f}; "
        f"the solver gives {got.tolist()} at q_l0 = 0, q_h0 = 1e-9, 1e-6, 1e-3"
    )


def _cubic_roots_in_unit(ql0: NDArray, qh0: NDArray) -> NDArray[np.float64]:
    """The real roots in [0, 1] of the cubic (3.18) (Q = 1) per start, NaN-padded to 3 columns."""
    u_l0, u_h0 = duopoly.revenues(ql0, qh0)
    coefficients = [
        np.broadcast_to(sp.lambdify((A, H), c, modules="numpy")(u_l0, u_h0), ql0.shape)
        for c in CUBIC.all_coeffs()
    ]
    lead = coefficients[0]
    companion = np.zeros((ql0.size, 3, 3))
    companion[:, 0, :] = -np.stack([c / lead for c in coefficients[1:]], axis=1)
    companion[:, 1, 0] = companion[:, 2, 1] = 1.0
    roots = np.linalg.eigvals(companion)
    real = (np.abs(roots.imag) < 1e-9) & (roots.real >= 0) & (roots.real <= 1)
    return np.where(real, roots.real, np.nan)


@proposition(
    "thesis.ch3.lemma25",
    source=f"{_S37}, Lemma 25 and Fig. 3.8 (checked with graphing software in the thesis)",
    statement="for all rho_0 with rho_0 <= rho*, rho* <= 0.43 (q_h* = 1); rho* is the maximiser "
    "of N on the individually rational interval, one of the two roots of the cubic (3.18) in "
    "[0, 1] (the other lies above that interval and is not bounded by 0.43)",
    perturb={"bound": 0.42},
)
def _lemma25(bound: float = 0.43) -> Verdict:
    ql0, qh0, r = _grid_solution(150)
    inside = ql0 / qh0 <= r
    roots = _cubic_roots_in_unit(ql0[inside], qh0[inside])
    other = np.nanmax(np.where(np.abs(roots - r[inside, None]) > 1e-6, roots, np.nan), axis=1)
    high = duopoly_nash_solution(ql0[inside], qh0[inside], allow_lower=True).rho_high
    return on_points(
        lambda rho_0, rho_star, other_root, rho_high: (
            rho_star <= bound and not other_root <= rho_high
        ),
        [
            {
                "rho_0": float(a / b),
                "rho_star": float(c),
                "other_root": float(o),
                "rho_high": float(h),
            }
            for a, b, c, o, h in zip(ql0[inside], qh0[inside], r[inside], other, high, strict=True)
        ],
        f"rho* <= {bound} (largest {float(r[inside].max()):.6f}); the cubic (3.18) has "
        f"{sorted({int(n) for n in np.sum(~np.isnan(roots), axis=1)})} roots in [0, 1] per start, "
        f"rho* and another in [{np.nanmin(other):.4f}, {np.nanmax(other):.4f}], above the "
        f"individually rational interval (by >= {np.nanmin(other - high):.1e}): the proof's 'the "
        "roots of this cubic are at most 0.43' holds for the root that is rho* only",
        drawn=f"the {int(inside.sum())} starts with rho_0 <= rho* of a 150 x 150 grid of q_h0 in "
        "[0.02, 0.99] and rho_0 in [0, 0.98], Q = 1",
    )


@proposition(
    "thesis.ch3.lemma25.sharp",
    source=f"derived; sharpens {_S37}, Lemma 25",
    statement="rho* lies between rho_0 and rho_inf = (sqrt(97)-9)/2 = 0.424429; so rho_0 <= rho* iff rho_0 <= rho_inf, "
    "and then rho* < rho_inf",
    kind="derived",
    perturb={"limit": 0.42},
)
def _lemma25_sharp(limit: float = RHO_INF) -> Verdict:
    ql0, qh0, r = _grid_solution(150)
    return on_points(
        lambda rho_0, rho_star: min(rho_0, limit) - 1e-12 <= rho_star <= max(rho_0, limit) + 1e-12,
        [
            {"rho_0": float(a / b), "rho_star": float(c)}
            for a, b, c in zip(ql0, qh0, r, strict=True)
        ],
        f"rho* between rho_0 and {limit}",
        drawn="150 x 150 grid of q_h0 in [0.02, 0.99] and rho_0 in [0, 0.98], Q = 1",
    )


@proposition(
    "thesis.ch3.prop5.fig37",
    source=f"{_S37}, proof of Proposition 5, Fig. 3.7 (empirical verification in the thesis)",
    statement="for every start with rho_0 <= rho* (q_h* = 1): (4 - 5 rho*) log10(q_h*/q_h0) >= rho* - rho_0",
    perturb={"intercept": 2.0},
)
def _fig37(intercept: float = 4.0, slope: float = 5.0, base: float = 10.0) -> Verdict:
    ql0, qh0, r = _grid_solution(200)
    rho0 = ql0 / qh0
    margin = (intercept - slope * r) * np.log(1 / qh0) / np.log(base) - (r - rho0)
    return on_points(
        lambda rho_0, q_h0, rho_star, margin: margin >= -1e-12,
        [
            {"rho_0": float(a), "q_h0": float(b), "rho_star": float(c), "margin": float(m)}
            for a, b, c, m in zip(rho0, qh0, r, margin, strict=True)
        ],
        f"({intercept} - {slope} rho*) log_{base:g}(1/q_h0) - (rho* - rho_0) >= 0 (smallest margin "
        f"{margin[rho0 <= r].min():.2e})",
        drawn="200 x 200 grid of q_h0 in [0.02, 0.99] and rho_0 in [0, 0.98], Q = 1",
        hypothesis=lambda rho_0, q_h0, rho_star, margin: rho_0 <= rho_star,
    )


def _printed_threshold(u_h0: NDArray, rho_star: NDArray) -> NDArray:
    return u_h0 / duopoly.u_h(rho_star)


@proposition(
    "thesis.ch3.prop5.catchup",
    source=f"derived from {_SRC}, Algorithm 5 line 8 (the cap B, section 3.4) and Lemma 24 (section 3.7)",
    statement="from a start with rho_0 < rho*, a low firm that steps to the cap hat q reaches rho* exactly when q_h "
    "reaches U_h0/u_h(rho*), and this threshold is <= Q",
    kind="derived",
    perturb={"threshold": lambda u_h0, rho_star: u_h0 / duopoly.u_h(rho_star) * 0.99},
)
def _catchup(threshold: Callable[[NDArray, NDArray], NDArray] = _printed_threshold) -> Verdict:
    ql0, qh0 = start_grid(80)
    sol = duopoly_nash_solution(ql0, qh0, allow_lower=True)
    _, uh0 = duopoly.revenues(ql0, qh0)
    thr = threshold(uh0, sol.rho_star)
    growth = thr / qh0
    reached = np.where(
        growth >= 1, quality_caps.cap_ratio(ql0 / qh0, np.maximum(growth, 1.0)), np.nan
    )
    return on_points(
        lambda q_l0, q_h0, rho_star, threshold, rho_reached: (
            threshold <= 1 + 1e-12 and abs(rho_reached - rho_star) <= 1e-9
        ),
        [
            {
                "q_l0": float(a),
                "q_h0": float(b),
                "rho_star": float(c),
                "threshold": float(d),
                "rho_reached": float(e),
            }
            for a, b, c, d, e in zip(ql0, qh0, sol.rho_star, thr, reached, strict=True)
        ],
        "one jump of q_h from q_h0 to the threshold lets the low firm reach B(rho_0, threshold/q_h0) = rho* "
        "(to 1e-9), and the threshold is <= Q; B composes over rounds (B(B(a, b1), b2) = B(a, b1 b2)), so any "
        "path of q_h reaching the threshold does the same",
        drawn="80 x 80 grid of q_h0 in [0.02, 0.99] and rho_0 in [0, 0.98], Q = 1",
        hypothesis=lambda q_l0, q_h0, rho_star, threshold, rho_reached: (
            q_l0 / q_h0 < rho_star - 1e-9
        ),
    )
