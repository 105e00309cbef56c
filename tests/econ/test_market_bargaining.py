"""Nash bargaining over the qualities of n firms (econ.nash_bargaining.market_nash_solution)."""

import numpy as np
import pytest

from econ.bargaining import duopoly_nash_solution
from econ.nash_bargaining import market_nash_solution, market_revenues
from econ.population import Population


def test_two_firms_are_the_duopoly_in_either_order():
    deal = duopoly_nash_solution(0.2, 0.6, 1.0)
    for q0, order in (([0.2, 0.6], [0, 1]), ([0.6, 0.2], [1, 0])):
        got = market_nash_solution(q0, 1.0, grid=9)
        expected = np.array([float(deal.q_l_star), float(deal.q_h_star)])[order]
        np.testing.assert_allclose(got.quality, expected, atol=1e-7)
        assert got.nash_product == pytest.approx(float(deal.nash_product), rel=1e-8)


def test_a_monopolist_goes_to_the_top_quality():
    got = market_nash_solution([0.4], 0.8)
    assert got.quality.tolist() == [0.8]
    assert got.revenue[0] == pytest.approx(0.2) and got.disagreement[0] == pytest.approx(0.1)


def test_three_firms_gain_and_the_top_one_reaches_q():
    got = market_nash_solution([0.2, 0.4, 0.6], 1.0, grid=7)
    assert np.all(got.revenue > got.disagreement) and got.quality[2] == pytest.approx(1.0)
    assert np.all(got.quality >= [0.2, 0.4, 0.6])
    np.testing.assert_allclose(got.revenue, market_revenues(got.quality, Population.uniform()))


def test_no_agreement_at_a_point_box():
    got = market_nash_solution([1.0, 1.0], 1.0)
    assert got.nash_product == 0 and got.quality.tolist() == [1.0, 1.0]


def test_other_populations_bargain_too():
    got = market_nash_solution([0.3, 0.6], 1.0, "beta:2,5", grid=3)
    assert got.population == "beta:2,5" and np.all(got.revenue > got.disagreement)
    assert got.quality[1] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    ("q0", "q_max", "match"),
    [([0.1] * 5, 1.0, "1 to 4 firms"), ([0.3, 0.9], 0.8, "q_max must lie in"), ([], 1.0, "1 to 4")],
)
def test_bad_input(q0, q_max, match):
    with pytest.raises(ValueError, match=match):
        market_nash_solution(q0, q_max)
