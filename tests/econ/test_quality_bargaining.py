"""The n-firm Nash bargaining over qualities (econ.quality_bargaining)."""

import numpy as np
import pytest

from econ.bargaining import duopoly_nash_solution
from econ.quality_bargaining import quality_bargaining, uniform_revenues
from econ.quality_bargaining_propositions import _pareto


def test_two_firms_match_the_closed_form_in_either_order():
    closed = duopoly_nash_solution(0.2, 0.6)
    for start, low in (([0.2, 0.6], 0), ([0.6, 0.2], 1)):
        deal = quality_bargaining(start)
        assert deal.quality[low] == pytest.approx(float(closed.q_l_star), abs=1e-6)
        assert deal.quality[1 - low] == pytest.approx(1.0)
        assert deal.nash_product == pytest.approx(float(closed.nash_product), rel=1e-7)


def test_solution_is_rational_and_reports_its_bounds():
    deal = quality_bargaining([0.1, 0.3, 0.6])
    assert np.all(deal.gains >= 0) and deal.nash_product == pytest.approx(np.prod(deal.gains))
    assert bool(deal.at_high[2]) and not deal.interior
    assert deal.to_dict()["quality"] == deal.quality.tolist()


def test_the_market_is_a_parameter():
    calls = []

    def market(q):
        calls.append(np.shape(q))
        return uniform_revenues(q)

    assert quality_bargaining([0.2, 0.6], revenues=market).quality[0] == pytest.approx(
        quality_bargaining([0.2, 0.6]).quality[0]
    )
    assert (72, 2) in calls and (2,) in calls  # corners, samples and the ray at once


def test_no_gain_anywhere_returns_the_start():
    deal = quality_bargaining([0.5, 0.7], bounds=[(0.5, 0.5), (0.7, 0.7)])
    assert deal.quality.tolist() == [0.5, 0.7] and deal.nash_product == 0.0


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="q_max"):
        quality_bargaining([0.2, 0.9], q_max=0.8)
    with pytest.raises(ValueError, match="one"):
        quality_bargaining([0.2, 0.9], bounds=[(0.2, 1.0)])


@pytest.mark.slow
def test_pareto_on_a_denser_grid_and_more_starts():
    assert _pareto(grid=25, count=4).holds


def test_a_population_market_bargains_rationally_and_beats_a_grid():
    """Two firms under Beta(2, 5) types: the bargain is individually rational, its top firm
    ends at Q, and no point of a 9 x 9 grid of the box has a larger Nash product."""
    import functools

    from econ.population_market import population_revenues

    market = functools.partial(population_revenues, population="beta:2,5")
    deal = quality_bargaining([0.3, 0.6], q_max=1.0, revenues=market)
    assert np.all(deal.gains > 0)
    assert deal.quality[1] == pytest.approx(1.0)
    low, high = np.meshgrid(np.linspace(0.3, 1.0, 9), np.linspace(0.6, 1.0, 9))
    grid = np.stack([low.ravel(), high.ravel()], axis=1)
    gains = market(grid) - deal.disagreement
    products = np.where(np.all(gains >= 0, axis=1), np.prod(gains, axis=1), 0.0)
    assert products.max() <= deal.nash_product * (1 + 1e-6)
