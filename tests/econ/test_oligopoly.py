import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from collabecon.bench.market import recursion_equilibrium
from econ import duopoly
from econ.oligopoly import demands, deviation_gains, oligopoly_equilibrium


def test_three_firms_exact_values():
    # the first-order system solved by hand in rationals
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
    ("q", "match"), [([], "at least one"), ([1.5], r"\[0, 1\]"), ([float("nan")], "qualities")]
)
def test_bad_input(q, match):
    with pytest.raises(ValueError, match=match):
        oligopoly_equilibrium(q)


def test_ties_price_at_zero_and_firms_below_exit():
    eq = oligopoly_equilibrium([0.2, 0.5, 0.5, 0.9])
    # above the tie: a monopolist over a free product of quality 0.5
    assert eq.price.tolist() == [0, 0, 0, pytest.approx(0.2)]
    assert eq.demand.tolist() == [0, 0.25, 0.25, pytest.approx(0.5)]
    assert eq.priced_out.tolist() == [True, False, False, False]
    assert eq.consumer_surplus == pytest.approx(0.5 * 0.5**2 / 2 + 0.9 * (1 - 0.25) / 2 - 0.1)
    assert np.all(deviation_gains([0.2, 0.5, 0.5, 0.9], eq.price) <= 1e-12)


def test_zero_quality_sells_nothing_and_changes_nothing():
    eq = oligopoly_equilibrium([0.0, 0.5])
    assert eq.priced_out.tolist() == [True, False]
    assert eq.price.tolist() == [0, 0.25] and eq.demand.tolist() == [0, 0.5]
    assert oligopoly_equilibrium([0.0]).revenue.tolist() == [0]


def test_demands_at_any_prices_cover_at_most_the_market():
    q = np.array([0.3, 0.6, 0.6, 0.9])
    d = demands(q, [0.1, 0.2, 0.2, 0.5])  # the tied pair splits its buyers
    assert d[1] == d[2] and d.sum() <= 1
    assert demands(q, [0.1, 0.2, 0.3, 0.5])[2] == 0  # the dearer twin sells nothing


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


def _random_market(rng, n):
    """Qualities of ``n`` firms: uniform, on a coarse grid (many ties), with zeros, or spread
    over the float range."""
    kind = rng.integers(4)
    if kind == 0:
        return rng.random(n)
    if kind == 1:
        return rng.integers(0, max(2, n // 3), n) / max(2, n // 3)
    if kind == 2:
        return np.where(rng.random(n) < 0.2, 0.0, rng.random(n))
    return 10.0 ** rng.uniform(-320, 0, n)


@pytest.mark.parametrize("seed", range(4))
def test_ladder_equals_the_recursion_bit_for_bit(seed):
    """The vectorised ladder (sweeps to the fixed point) gives the sequential recursion's
    prices, demands and consumer surplus exactly, on random markets with and without ties."""
    rng = np.random.default_rng(seed)
    for n in [1, 2, 3, 4, 5, 8, 17, 100, 1000, 20_000]:
        for _ in range(3 if n < 20_000 else 1):
            q = _random_market(rng, n)
            eq = oligopoly_equilibrium(q)
            price, demand, surplus = recursion_equilibrium(q)
            np.testing.assert_array_equal(eq.price, price)
            np.testing.assert_array_equal(eq.demand, demand)
            assert eq.consumer_surplus == surplus
