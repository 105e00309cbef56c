"""The registered statements about the n-firm defection-free rule of :mod:`games.defection_free.n_firms`.

Derived for Algorithm 5 of Werner (2024), ch. 3, §3.4 (p. 64) extended to n firms in the
uniform market (ids ``defection_free.n_firms.*``, kind ``derived``): raising the top
quality raises every revenue (why the top firm moves first); no revenue falls in any round
(Proposition 3 for n firms); and how close the rounds come to the n-firm Nash bargaining
solution. The registry runs small samples; the test suite's slow tests run 10,000 starts.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from econ.propositions import Kind, Verdict, checked, proposition, refuted
from econ.quality_bargaining import Revenues, uniform_revenues
from games.defection_free.n_firms import n_firm_path
from games.defection_free.rules import B_TILDE

_SRC = "Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 and Proposition 3, extended to n firms"


def random_starts(seed: int, count: int) -> list[NDArray[np.float64]]:
    """Seeded starts of 2 to 6 firms, qualities uniform on [0.01, 1), rounded to 4 decimals."""
    rng = np.random.default_rng(seed)
    return [np.round(0.01 + 0.99 * rng.random(int(rng.integers(2, 7))), 4) for _ in range(count)]


@proposition(
    "oligopoly.defection_free.top_first",
    source=f"{_SRC} (games.defection_free.n_firms, the order of the firms)",
    statement="in the uniform n-firm market, raising the highest quality (distinct qualities,"
    " the top one below 1) raises no firm's revenue less than 0: every revenue weakly rises",
    kind=Kind.DERIVED,
    perturb={"rank": 2},
)
def _top_first(*, rank: int = 1, count: int = 200) -> Verdict:
    rng = np.random.default_rng(11)
    for _ in range(count):
        q = np.sort(rng.random(int(rng.integers(2, 9))))
        raised = q.copy()
        raised[-rank] = min(q[-rank] * (1 + rng.random() * 0.2), q[-rank + 1] if rank > 1 else 1.0)
        fall = float(np.max(uniform_revenues(q) - uniform_revenues(raised)))
        if fall > 1e-15:
            return refuted(
                f"a revenue falls by {fall:.3g}", {"before": q.tolist(), "after": raised.tolist()}
            )
    return checked(
        "no revenue falls by more than 1e-15",
        count,
        drawn=f"{count} seeded markets of 2-8 firms, uniform qualities, the top one raised by a"
        " factor uniform in [1, 1.2] (at most to 1)",
    )


def no_revenue_falls(
    *,
    pace: float = B_TILDE,
    count: int = 2,
    seed: int = 21,
    guard: bool = True,
    revenues: Revenues = uniform_revenues,
) -> tuple[int, int]:
    """Run the rule from ``count`` starts of :func:`random_starts`; (rounds checked, the bad start).

    ``revenues`` is the market (the uniform one by default; any population's through
    :func:`econ.population_market.population_revenues`). The second number is the index of the
    first start on which a revenue fell, or -1.
    """
    rounds = 0
    for k, q0 in enumerate(random_starts(seed, count)):
        path = n_firm_path(q0, pace=pace, guard=guard, revenues=revenues)
        rounds += path.qualities.shape[0] - 1
        if path.worst_drop > 0.0:
            return rounds, k
    return rounds, -1


@proposition(
    "oligopoly.defection_free.no_revenue_falls",
    source=f"{_SRC} (games.defection_free.n_firms)",
    statement="in the uniform market no round of the n-firm defection-free rule lowers any"
    " firm's revenue, for any pace b > 1 and any number of firms",
    kind=Kind.DERIVED,
    perturb={"guard": False},
)
def _no_revenue_falls(
    *, pace: float = 1.2, count: int = 5, seed: int = 21, guard: bool = True
) -> Verdict:
    rounds, bad = no_revenue_falls(pace=pace, count=count, seed=seed, guard=guard)
    if bad >= 0:
        return refuted(
            "a revenue falls in a round",
            {"start": random_starts(seed, count)[bad].tolist(), "pace": pace},
        )
    return checked(
        "no revenue is lower after a round than before it (exactly, in floating point)",
        rounds,
        drawn=f"every round of the rule from {count} seeded starts of 2-6 firms uniform on"
        f" [0.01, 1), pace {pace}; the test suite's slow test checks 10,000 starts at the pace"
        " b~ of Proposition 5",
    )


@proposition(
    "oligopoly.defection_free.reaches",
    source=f"{_SRC} (games.defection_free.n_firms); Proposition 5 for two firms",
    statement="at the pace b~ the n-firm rule comes to rest; for two firms at the Nash"
    " bargaining solution (within 1e-6), for 3 to 6 firms within 0.1 of it in every"
    " quality, and not always at it",
    kind=Kind.DERIVED,
    perturb={"within": 0.005},
)
def _reaches(*, within: float = 0.1, extra: int = 0, seed: int = 31) -> Verdict:
    starts = [
        np.array([0.2, 0.6]),
        np.array([0.0756, 0.1457, 0.339, 0.4038, 0.4053]),
        *random_starts(seed, extra),
    ]
    short, worst = 0, 0.0
    for q0 in starts:
        path = n_firm_path(q0)
        bound = 1e-6 if q0.size == 2 else within
        if not path.settled or path.gap > bound:
            return refuted(
                f"the rule rests {path.gap:.3g} from the bargain (bound {bound})",
                {"start": q0.tolist(), "final": path.qualities[-1].tolist()},
            )
        short += q0.size > 2 and path.gap > 1e-6
        worst = max(worst, path.gap if q0.size > 2 else 0.0)
    if short == 0:
        return refuted("every start reached the bargain: 'not always at it' fails", {})
    return checked(
        f"every run comes to rest within the bound; {short} of the runs of 3+ firms rest"
        f" more than 1e-6 from the bargain, the farthest {worst:.3g} in a quality (the top"
        " firm reaches Q before the firms below have caught up with their caps)",
        len(starts),
        drawn="the duopoly start (0.2, 0.6), the five-firm start"
        " (0.0756, 0.1457, 0.339, 0.4038, 0.4053)"
        + (f" and {extra} seeded starts of 2-6 firms" if extra else ""),
    )
