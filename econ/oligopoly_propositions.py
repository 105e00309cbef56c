"""The registered statements about the n-firm market of :mod:`econ.oligopoly`.

Two results derived for the market of Werner (2024), ch. 3, §3.2 extended to n firms (ids
``market.bertrand.*``, kind ``derived``): the prices of
:func:`~econ.oligopoly.oligopoly_equilibrium` are mutual best responses, checked by brute
force with :func:`~econ.oligopoly.deviation_gains`; and which firms sell, checked with the
bottom-up recursion of the module notes in exact rationals.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from econ.oligopoly import demands, deviation_gains, oligopoly_equilibrium
from econ.propositions import Kind, Verdict, checked, proposition, refuted


def market_cases(seed: int, count: int) -> list[NDArray[np.float64]]:
    """Quality vectors for the checks: 7 edge markets, then seeded random ones up to ``count``.

    The edge markets: a monopoly, a tied pair, a zero, ties below the top, a near-tie 1e-12
    apart, zeros with a tie; the random ones have 2-8 firms, 40% a tie and 20% a zero,
    rounded to 2-5 decimals.
    """
    rng = np.random.default_rng(seed)
    out = [
        np.array(v) for v in ([0.3], [0.4, 0.4], [0.0, 0.6], [0.2, 0.5, 0.5, 0.9], [1.0, 1.0, 0.7])
    ]
    out += [np.array([0.5, 0.5 + 1e-12, 0.9]), np.array([0.0, 0.0, 0.3, 0.3, 0.3])]
    while len(out) < count:
        n = int(rng.integers(2, 9))
        v = rng.random(n)
        if rng.random() < 0.4:  # a tie, as measured accuracies have
            v[rng.integers(n)] = v[rng.integers(n)]
        if rng.random() < 0.2:
            v[rng.integers(n)] = 0.0
        out.append(np.round(v, int(rng.integers(2, 6))))
    return out


@proposition(
    "market.bertrand.equilibrium",
    source="Werner (2024), ch. 3, §3.2, Definitions 2-3, extended to n firms with ties (econ.oligopoly)",
    statement="oligopoly_equilibrium's prices are mutual best responses for any qualities in [0, 1]; "
    "where the equilibrium is not unique it takes a tied group's demand split equally and every "
    "priced-out firm (below the highest tie, or of quality 0) at price 0; any other price of a "
    "priced-out firm is an equilibrium too, with the same revenues for every firm",
    kind=Kind.DERIVED,
    perturb={"price_factor": 1.05},
)
def _equilibrium(*, price_factor: float = 1.0) -> Verdict:
    markets = market_cases(0, 60)
    worst = 0.0
    alternatives = 0
    for q in markets:
        eq = oligopoly_equilibrium(q)
        p = eq.price * price_factor
        out = eq.priced_out & (q > 0)
        # the solver's profile, then each priced-out firm at q_i/2 and at q_i instead of 0
        profiles = [p] + ([np.where(out, f * q, p) for f in (0.5, 1.0)] if out.any() else [])
        for k, prices in enumerate(profiles):
            gain = float(deviation_gains(q, prices, grid=801).max())
            worst = max(worst, gain)
            moved = float(np.max(np.abs(prices * demands(q, prices) - eq.revenue)))
            if gain > 1e-6 or (k and moved > 1e-12):
                return refuted(
                    f"a firm gains {gain:.3g} by deviating from the prices, or a revenue moves "
                    f"by {moved:.3g} when a priced-out firm's price moves",
                    {"qualities": q.tolist(), "prices": prices.tolist()},
                )
            alternatives += bool(k)
    return checked(
        f"no firm gains more than {worst:.2g} by any price on an 801-point grid of [0, q_i],"
        " at the others' prices, or just below them; which equilibrium: tied groups split their"
        " demand equally at price 0 (any split earns each tied firm 0, and a tied firm's"
        " deviations do not depend on it) and priced-out firms price at 0; over all equilibria,"
        f" {alternatives} profiles with the priced-out firms at q_i/2 or q_i are equilibria too,"
        " with every revenue unchanged",
        len(markets),
        drawn="7 edge markets (monopoly, a tied pair, a zero, ties below the top, a near-tie"
        " 1e-12 apart, zeros with a tie) and 53 seeded random markets of 2-8 firms, 40% with"
        " a tie and 20% with a zero, rounded to 2-5 decimals; each market with a priced-out"
        " firm of positive quality also with those firms at q_i/2 and at q_i",
    )


def _exact_sellers(qs: list[Fraction]) -> list[Fraction]:
    """Exact demands of the distinct-quality game (base 0) by the recursion, in rationals."""
    gaps = [b - a for a, b in zip([Fraction(0), *qs[:-1]], qs, strict=True)]
    r: list[Fraction] = []
    for i in range(len(qs) - 1):
        prev = r[-1] if r else Fraction(0)
        r.append(1 / (2 + gaps[i + 1] / gaps[i] * (2 - prev)))
    p = [gaps[-1] / (2 - (r[-1] if r else 0))]
    for ri in reversed(r):
        p.insert(0, ri * p[0])
    theta = [pi * (1 - (r[i - 1] if i else 0)) / gaps[i] for i, pi in enumerate(p)]
    bounds = [*theta, Fraction(1)]
    # first-order conditions of each revenue p_i (theta_{i+1} - theta_i), exactly
    for i, pi in enumerate(p):
        slope = 1 / gaps[i] + (1 / gaps[i + 1] if i + 1 < len(qs) else 0)
        if bounds[i + 1] - bounds[i] != pi * slope:
            raise ArithmeticError(f"first-order condition {i} fails")
    return [bounds[i + 1] - bounds[i] for i in range(len(qs))]


@proposition(
    "market.bertrand.survivors",
    source="Werner (2024), ch. 3, §3.2, extended to n firms (econ.oligopoly, module notes)",
    statement="every firm of distinct positive quality above the highest tied quality sells a"
    " positive amount in equilibrium, the tied firms share positive demand at price 0, and the"
    " firms below the tie (and any of quality 0) sell nothing",
    kind=Kind.DERIVED,
    perturb={"above_ties_only": False},
)
def _survivors(*, above_ties_only: bool = True) -> Verdict:
    rng = np.random.default_rng(1)
    n_markets = 0
    for trial in range(120):
        n = int(rng.integers(1, 12))
        qs = sorted({Fraction(int(k), 1000) for k in rng.integers(1, 1001, n)})
        demand = _exact_sellers(qs)
        n_markets += 1
        if any(d <= 0 for d in demand):
            return refuted(
                "a firm of distinct quality sells nothing", {"qualities": [str(x) for x in qs]}
            )
        if trial % 3 == 0 and len(qs) > 1:  # a second firm at a middle quality
            q = np.array([float(x) for x in qs] + [float(qs[len(qs) // 2])])
            eq = oligopoly_equilibrium(q)
            sells = eq.demand > 0
            expected = q >= (q[-1] if above_ties_only else 0.0)
            if not np.array_equal(sells, expected):
                return refuted(
                    "which firms sell differs from the statement",
                    {"qualities": q.tolist(), "demand": eq.demand.tolist()},
                )
    return checked(
        "the exact rational recursion satisfies every first-order condition and gives every"
        " firm positive demand; with a tie, exactly the tied and the higher firms sell",
        n_markets,
        drawn="120 seeded random markets of 1-11 distinct qualities k/1000, in exact"
        " rationals; every third one also with its middle quality duplicated, in floats",
    )
