"""The n-firm defection-free rule (games.defection_free.n_firms)."""

import numpy as np
import pytest

from econ.quality_bargaining import quality_bargaining
from games.defection_free import DefectionFree
from games.defection_free.n_firms import n_firm_path, n_firm_step
from games.defection_free.n_firms_propositions import _reaches, no_revenue_falls
from games.defection_free.rules import B_TILDE


@pytest.mark.parametrize("start", [(0.2, 0.6), (0.05, 0.5), (0.5, 0.6), (0.01, 0.9)])
def test_two_firms_take_algorithm_5s_path(start):
    """Same path as the default rule with a paced high firm and a low firm landing on its cap."""
    rule = DefectionFree(*start)
    path = n_firm_path(start)
    q_l, q_h = start
    for row in path.qualities[1:]:
        q_h_new = min(B_TILDE * q_h, 1.0)
        q_l, q_h = rule.low_move(q_l, q_h, q_h_new).cap, q_h_new
        assert row == pytest.approx([q_l, q_h], abs=1e-7)
    assert path.settled and path.gap < 1e-6


def test_a_round_never_lowers_a_quality_or_a_revenue():
    q = np.array([0.1, 0.3, 0.35, 0.8])
    goal = quality_bargaining(q).quality
    nxt = n_firm_step(q, goal)
    assert np.all(nxt >= q) and np.all(nxt <= goal + 1e-12)
    path = n_firm_path(q)
    assert path.worst_drop <= 0 and path.to_dict()["rounds"] == path.qualities.shape[0] - 1


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="pace"):
        n_firm_step([0.2, 0.6], [0.4, 1.0], pace=1.0)
    with pytest.raises(ValueError, match="one entry per firm"):
        n_firm_step([0.2, 0.6], [0.4])


@pytest.mark.slow
def test_no_revenue_falls_on_10000_starts():
    rounds, bad = no_revenue_falls(pace=B_TILDE, count=10_000)
    assert bad == -1 and rounds > 10_000


@pytest.mark.slow
@pytest.mark.parametrize("population", ["beta:2,5", "beta:5,2"])
def test_no_revenue_falls_under_other_populations(population):
    """Every round from 5 seeded starts of 2-6 firms at pace 1.2, in each population's market."""
    import functools

    from econ.population_market import population_revenues

    market = functools.partial(population_revenues, population=population)
    rounds, bad = no_revenue_falls(pace=1.2, count=5, revenues=market)
    assert bad == -1 and rounds >= 5


@pytest.mark.slow
def test_rests_near_the_bargain_on_more_starts():
    assert _reaches(extra=400).holds
