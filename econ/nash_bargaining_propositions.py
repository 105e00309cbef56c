"""The registered statements about Nash bargaining over the qualities of n firms.

Two results derived for :func:`econ.nash_bargaining.market_nash_solution` (ids
``market.nash.*``, kind ``derived``): with two firms it is the duopoly's solution of Werner
(2024), ch. 3, §3.4 (:func:`econ.bargaining.duopoly_nash_solution`); with three it is
individually rational and no point of a dense grid of the feasible box Pareto-dominates it.
"""

from __future__ import annotations

import numpy as np

from econ.bargaining import duopoly_nash_solution
from econ.nash_bargaining import market_nash_solution, market_revenues
from econ.population import Population
from econ.propositions import Kind, Verdict, checked, proposition, refuted

#: Starts (q_l0, q_h0, Q) of market.nash.duopoly: interior solutions, and starts whose low
#: firm already sits above the unconstrained q_l* (it keeps its quality).
_DUOPOLY_STARTS = (
    (0.3, 0.6, 1.0),
    (0.2, 0.6, 1.0),
    (0.5, 0.6, 1.0),
    (0.1, 0.2, 0.5),
    (0.45, 0.5, 0.9),
)


@proposition(
    "market.nash.duopoly",
    source="Werner (2024), ch. 3, §3.4 and Proposition 2 (econ.bargaining), extended to n firms"
    " (econ.nash_bargaining)",
    statement="with two firms (uniform types) market_nash_solution over q_i in [q_i0, Q] gives"
    " duopoly_nash_solution(q_l0, q_h0, Q) with qualities never below the start: the top firm"
    " at Q, the other at max(q_l0, rho* Q), in either order of the firms",
    kind=Kind.DERIVED,
    perturb={"allow_lower": True},
)
def _duopoly(*, allow_lower: bool = False) -> Verdict:
    worst = 0.0
    for q_l0, q_h0, top in _DUOPOLY_STARTS:
        deal = duopoly_nash_solution(q_l0, q_h0, top, allow_lower=allow_lower)
        expected = np.array([float(deal.q_l_star), float(deal.q_h_star)])
        for order in ((0, 1), (1, 0)):
            got = market_nash_solution(np.array([q_l0, q_h0])[list(order)], top, grid=9)
            gap = float(np.max(np.abs(got.quality - expected[list(order)])))
            worst = max(worst, gap)
            if gap > 1e-6:
                return refuted(
                    f"the n-firm solution is {gap:.3g} away from the duopoly's",
                    {"start": [q_l0, q_h0], "q_max": top, "got": got.quality.tolist()},
                )
    return checked(
        f"the bargained qualities agree to {worst:.2g} (tolerance 1e-6)",
        2 * len(_DUOPOLY_STARTS),
        drawn="5 starts (q_l0, q_h0, Q): (0.3, 0.6, 1), (0.2, 0.6, 1), (0.5, 0.6, 1) and"
        " (0.45, 0.5, 0.9) with the low firm above q_l* (it keeps its start), (0.1, 0.2, 0.5);"
        " each with the firms in both orders",
    )


#: Starts of market.nash.n_firms: three firms, Q = 1.
_TRIPLES = ((0.2, 0.4, 0.6), (0.5, 0.1, 0.3))


@proposition(
    "market.nash.n_firms",
    source="Nash (1950); Werner (2024), ch. 3, §3.4, extended to n firms (econ.nash_bargaining)",
    statement="with three firms (uniform types) market_nash_solution over q_i in [q_i0, Q] is"
    " individually rational (R_i(q*) >= R_i(q0)) and Pareto optimal: no feasible quality"
    " vector gives every firm at least its revenue and one firm more",
    kind=Kind.DERIVED,
    perturb={"solve_q_max": 0.9},
)
def _n_firms(*, solve_q_max: float = 1.0, grid: int = 9) -> Verdict:
    uniform = Population.uniform()
    for start in _TRIPLES:
        q0 = np.array(start)
        deal = market_nash_solution(q0, solve_q_max, uniform, grid=7)
        if np.any(deal.revenue < deal.disagreement - 1e-15):
            return refuted("a firm ends below its disagreement revenue", {"start": list(start)})
        axes = [np.linspace(lo, 1.0, grid) for lo in q0]
        box = np.stack([m.ravel() for m in np.meshgrid(*axes, indexing="ij")], axis=-1)
        for q in box:
            better = market_revenues(q, uniform) - deal.revenue
            if better.min() >= 0 and better.max() > 1e-9:
                return refuted(
                    "a feasible quality vector Pareto-dominates the bargained one",
                    {"start": list(start), "solution": deal.quality.tolist(), "better": q.tolist()},
                )
    return checked(
        "every firm gains over its disagreement revenue, and no grid point gives every firm"
        " at least its bargained revenue and one more than 1e-9 more",
        len(_TRIPLES) * grid**3,
        drawn=f"two starts (0.2, 0.4, 0.6) and (0.5, 0.1, 0.3), Q = 1; for each, the {grid}^3"
        " grid of the feasible box [q_i0, 1]^3",
    )
