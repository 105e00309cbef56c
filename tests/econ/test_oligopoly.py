import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from econ import duopoly
from econ.oligopoly import oligopoly_equilibrium


def test_three_firms_exact_values():
    # exact: the three first-order conditions solved in rationals for q = (1/5, 1/2, 9/10)
    eq = oligopoly_equilibrium([0.2, 0.5, 0.9])
    np.testing.assert_allclose(eq.price, [2 / 195, 2 / 39, 44 / 195], rtol=1e-12)
    np.testing.assert_allclose(eq.revenue, [4 / 4563, 70 / 4563, 968 / 7605], rtol=1e-12)
    np.testing.assert_allclose(eq.demand, [10 / 117, 35 / 117, 22 / 39], rtol=1e-12)


def test_two_firms_is_lemma_22_in_any_order():
    eq = oligopoly_equilibrium([0.8, 0.3])
    two = duopoly.equilibrium(0.3, 0.8)
    np.testing.assert_allclose(eq.revenue, [two.U_h, two.U_l], rtol=1e-12)
    assert eq.consumer_surplus == pytest.approx(float(two.consumer_surplus), rel=1e-12)


def test_monopoly():
    eq = oligopoly_equilibrium([0.6])
    assert eq.price[0] == pytest.approx(0.3) and eq.revenue[0] == pytest.approx(0.15)


@pytest.mark.parametrize(
    ("q", "match"),
    [([0.3, 0.3], "distinct"), ([0.0, 0.5], "> 0"), ([], "at least one"), ([1.5], r"\[0, 1\]")],
)
def test_bad_input(q, match):
    with pytest.raises(ValueError, match=match):
        oligopoly_equilibrium(q)


@given(st.lists(st.floats(0.01, 1.0), min_size=2, max_size=8, unique=True))
def test_prices_are_best_responses(qualities):
    q = np.array(qualities)
    if np.min(np.diff(np.sort(q))) < 1e-3:
        return
    eq = oligopoly_equilibrium(q)
    assert np.all(eq.demand > 0) and eq.demand.sum() <= 1 + 1e-12
    for i in range(len(q)):  # no unilateral price deviation on a grid pays
        grid = np.linspace(0, q[i], 801)
        deviations = grid * _demand_of(q, eq.price, i, grid)
        assert eq.revenue[i] >= deviations.max() - 1e-12
        assert eq.revenue[i] == pytest.approx(
            float(_demand_of(q, eq.price, i, eq.price[i : i + 1])[0] * eq.price[i]), rel=1e-9
        )


def _demand_of(q, prices, i, p):
    """Exact share of types in [0, 1] that buy from firm i when it charges each price in ``p``."""
    lo = p / q[i]  # theta q_i - p >= 0
    hi = np.ones_like(p)
    for j in range(len(q)):
        if j == i:
            continue
        cut = (p - prices[j]) / (q[i] - q[j])
        if q[j] < q[i]:
            lo = np.maximum(lo, cut)
        else:
            hi = np.minimum(hi, cut)
    return np.clip(np.minimum(hi, 1) - np.clip(lo, 0, 1), 0, None)
