"""The registered statements about the n-firm Nash bargaining of :mod:`econ.quality_bargaining`.

Derived for the market of Werner (2024), ch. 3, §3.2 with n firms (ids
``oligopoly.bargaining.*``, kind ``derived``): for two firms the solver finds the duopoly's
closed form (:func:`econ.bargaining.duopoly_nash_solution` over reachable qualities); its
solution is individually rational; and for three firms no point of a grid over the box
Pareto-improves on it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from econ.bargaining import duopoly_nash_solution
from econ.propositions import Kind, Verdict, checked, proposition, refuted
from econ.quality_bargaining import quality_bargaining, uniform_revenues

_SRC = "Werner (2024), ch. 3, §3.4, the Nash bargaining program, extended to n firms"


def _starts(seed: int, count: int, n_low: int, n_high: int) -> list[NDArray[np.float64]]:
    """Seeded random disagreement qualities of ``n_low`` to ``n_high`` distinct firms."""
    rng = np.random.default_rng(seed)
    return [np.round(rng.random(int(rng.integers(n_low, n_high + 1))), 4) for _ in range(count)]


@proposition(
    "oligopoly.bargaining.duopoly",
    source=f"{_SRC} (econ.quality_bargaining); Proposition 2 and econ.bargaining",
    statement="for two firms the n-firm Nash bargaining over the box [q_i0, Q] gives the"
    " qualities (max(q_l0, q_l*), Q) and the product of duopoly_nash_solution with"
    " allow_lower=False, whichever order the firms are given in",
    kind=Kind.DERIVED,
    perturb={"allow_lower": True},
)
def _duopoly(*, allow_lower: bool = False) -> Verdict:
    starts = [np.array([0.5, 0.6]), np.array([0.9, 0.2]), np.array([0.3, 1.0])]
    starts += _starts(2, 2, 2, 2)
    for q0 in starts:
        ql0, qh0 = float(q0.min()), float(q0.max())
        closed = duopoly_nash_solution(ql0, qh0, 1.0, allow_lower=allow_lower)
        deal = quality_bargaining(q0)
        low, high = np.argmin(q0), np.argmax(q0)
        moved = max(
            abs(deal.quality[low] - float(closed.q_l_star)),
            abs(deal.quality[high] - float(closed.q_h_star)),
        )
        product = abs(deal.nash_product - float(closed.nash_product))
        if moved > 1e-6 or product > 1e-9:
            return refuted(
                f"the solver's qualities differ by {moved:.3g} (product by {product:.3g})",
                {"start": q0.tolist(), "solver": deal.quality.tolist()},
            )
    return checked(
        "the solver's qualities agree with the closed form within 1e-6 and the products"
        " within 1e-9",
        len(starts),
        drawn="three edge starts (the low firm above q_l*, the firms given high first, the"
        " high firm at Q) and two seeded uniform starts rounded to 4 decimals, Q = 1",
    )


@proposition(
    "oligopoly.bargaining.rational",
    source=f"{_SRC} (econ.quality_bargaining)",
    statement="the n-firm Nash bargaining solution is individually rational: every firm's"
    " revenue gain R_i(q*) - R_i(q0) is >= 0, and the product is that of the gains",
    kind=Kind.DERIVED,
    perturb={"least_gain": 1e-4},
)
def _rational(*, least_gain: float = 0.0) -> Verdict:
    starts = [np.array([0.1, 0.2, 0.4, 0.5, 0.7, 0.8]), np.array([0.4, 0.4, 0.9])]
    starts += _starts(3, 2, 3, 5)
    for q0 in starts:
        deal = quality_bargaining(q0)
        gains = uniform_revenues(deal.quality) - uniform_revenues(q0)
        if gains.min() < least_gain or abs(float(np.prod(gains)) - deal.nash_product) > 1e-15:
            return refuted(
                f"a gain of {gains.min():.3g} (or a product that is not theirs)",
                {"start": q0.tolist(), "solution": deal.quality.tolist()},
            )
    return checked(
        "every gain is >= 0 and the reported product is the product of the gains",
        len(starts),
        drawn="six firms whose lowest earns about 1e-6, a tied pair, and two seeded"
        " uniform starts of 3-5 firms rounded to 4 decimals, Q = 1",
    )


def pareto_dominated(
    q0: NDArray[np.float64], claimed: NDArray[np.float64], grid: int, *, tol: float = 1e-9
) -> NDArray[np.float64] | None:
    """A point of the grid over [q0_i, 1] (or the solver's own) that Pareto-improves ``claimed``.

    Improves means every revenue at least ``claimed``'s (less 1e-12) and one more than
    ``tol`` above it; ``None`` where there is none.
    """
    axes = [np.linspace(lo, 1.0, grid) for lo in q0]
    points = np.stack([m.ravel() for m in np.meshgrid(*axes, indexing="ij")], axis=-1)
    points = np.vstack([points, quality_bargaining(q0).quality])
    base = uniform_revenues(claimed)
    r = uniform_revenues(points)
    better = np.all(r >= base - 1e-12, axis=1) & np.any(r > base + tol, axis=1)
    return points[np.argmax(better)] if better.any() else None


@proposition(
    "oligopoly.bargaining.pareto",
    source=f"{_SRC} (econ.quality_bargaining)",
    statement="for three firms no point of the box [q_i0, 1]^3 weakly raises every revenue"
    " above its value at the n-firm Nash bargaining solution and one by more than 1e-9",
    kind=Kind.DERIVED,
    perturb={"scale": 0.95},
)
def _pareto(*, scale: float = 1.0, grid: int = 10, count: int = 1) -> Verdict:
    starts = [np.array([0.1, 0.3, 0.6]), *_starts(4, count - 1, 3, 3)]
    for q0 in starts:
        claimed = np.maximum(q0, scale * quality_bargaining(q0).quality)
        better = pareto_dominated(q0, claimed, grid)
        if better is not None:
            return refuted(
                "a point of the box Pareto-improves on the solution",
                {"start": q0.tolist(), "solution": claimed.tolist(), "better": better.tolist()},
            )
    return checked(
        f"none of the {grid}**3 grid points (nor the solver's own point) Pareto-improves on"
        " the solution by more than 1e-9",
        len(starts) * (grid**3 + 1),
        drawn=f"a {grid}-point grid per axis over [q_i0, 1] for the start (0.1, 0.3, 0.6)"
        + (f" and {count - 1} seeded uniform starts" if count > 1 else ""),
    )
