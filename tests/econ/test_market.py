"""The market a set of qualities creates: exact rationals, ties and exits, brute-force best responses."""

from fractions import Fraction as F

import numpy as np
import pytest

from econ.market import market_history, market_round, sampled_market
from econ.oligopoly import deviation_gains
from econ.qualities import ModelQualities


def _f(x):
    return float(F(x))


def test_two_firms_match_lemma22_and_its_consumer_surplus():
    m = market_round(ModelQualities.from_mapping({"l": 0.3, "h": 0.8}))
    assert m.price == pytest.approx([_f("3/58"), _f("8/29")], rel=1e-12)
    assert m.share == pytest.approx([_f("8/29"), _f("16/29")], rel=1e-12)
    assert m.revenue == pytest.approx([_f("12/841"), _f("128/841")], rel=1e-12)
    assert m.consumer_surplus == pytest.approx(_f("752/4205"), rel=1e-12)
    assert m.welfare == pytest.approx(m.consumer_surplus + m.revenue.sum(), rel=1e-12)


def test_order_of_the_firms_does_not_matter():
    a = market_round([0.3, 0.8])
    b = market_round([0.8, 0.3])
    assert b.price == pytest.approx(a.price[::-1])
    assert b.revenue == pytest.approx(a.revenue[::-1])
    assert b.names == ("firm0", "firm1")


def test_three_firms_exact_rationals():
    m = market_round([0.2, 0.5, 0.9])
    assert m.price == pytest.approx([_f("2/195"), _f("2/39"), _f("44/195")], rel=1e-12)
    assert m.revenue == pytest.approx([_f("4/4563"), _f("70/4563"), _f("968/7605")], rel=1e-12)
    assert m.share == pytest.approx([_f("10/117"), _f("35/117"), _f("22/39")], rel=1e-12)


def test_monopoly_and_equal_qualities():
    m = market_round([0.6])
    assert (m.price[0], m.share[0], m.revenue[0]) == pytest.approx((0.3, 0.5, 0.15))
    assert m.consumer_surplus == pytest.approx(0.6 / 8)
    tied = market_round([0.7, 0.7])  # Lemma 23: complete collaboration
    assert tied.price.tolist() == [0, 0] and tied.revenue.tolist() == [0, 0]
    assert tied.share.tolist() == [0.5, 0.5]
    assert tied.consumer_surplus == pytest.approx(0.35)


def test_a_worthless_model_sells_nothing():
    m = market_round([0.0, 0.4, 0.9])
    assert m.share[0] == 0 and m.revenue[0] == 0
    assert m.revenue[1:] == pytest.approx(market_round([0.4, 0.9]).revenue)


def test_history_rows_and_names():
    rounds = [ModelQualities.from_mapping({"low": ql, "high": 0.8}) for ql in (0.1, 0.3)]
    h = market_history(rounds)
    assert h.revenue.shape == (2, 2) and h.consumer_surplus.shape == (2,)
    assert h.rows()[1]["revenue_high"] == pytest.approx(_f("128/841"))
    with pytest.raises(ValueError, match="names"):
        market_history([rounds[0], ModelQualities.from_mapping({"a": 0.1, "b": 0.2})])
    with pytest.raises(ValueError):
        market_history([])


def test_sampled_population_agrees_as_it_grows():
    exact = market_round([0.2, 0.5, 0.9])
    errors = []
    for n in (1_000, 400_000):
        s = sampled_market([0.2, 0.5, 0.9], n, seed=3)
        err = max(
            np.abs(s.share - exact.share).max(), abs(s.consumer_surplus - exact.consumer_surplus)
        )
        assert err < 5 / np.sqrt(n)
        errors.append(err)
    assert errors[1] < errors[0]


def test_sampled_market_same_seed_same_result():
    a = sampled_market([0.3, 0.8], 5000, seed=11)
    b = sampled_market([0.3, 0.8], 5000, seed=11)
    assert np.array_equal(a.share, b.share) and a.consumer_surplus == b.consumer_surplus


def test_bad_input():
    with pytest.raises(ValueError):
        market_round([1.2, 0.3])
    with pytest.raises(ValueError):
        market_round([])
    with pytest.raises(ValueError):
        sampled_market([0.2, 0.5], 0)


def _assert_economic(m):
    assert np.all(m.price >= 0) and np.all(m.share >= 0) and np.all(m.revenue >= 0)
    assert m.share.sum() <= 1 + 1e-12
    assert m.welfare == pytest.approx(m.consumer_surplus + m.revenue.sum(), rel=1e-12)


def test_measured_accuracies_with_ties_are_a_market():
    # eight IFCA clients of one small run: three tie at 0.711, two at 0.689
    q = [0.711, 0.778, 0.711, 0.711, 0.644, 0.689, 0.578, 0.689]
    m = market_round(q)
    _assert_economic(m)
    # the tie at 0.711 prices at 0 and shares equally; every model below it sells nothing
    assert m.price[[0, 2, 3]].tolist() == [0, 0, 0]
    assert m.share[0] == m.share[2] == m.share[3] > 0
    assert m.priced_out.tolist() == [False, False, False, False, True, True, True, True]
    assert m.revenue[[4, 5, 6, 7]].tolist() == [0, 0, 0, 0]
    # the best model is a monopolist over a free product of quality 0.711
    d = 0.778 - 0.711
    assert m.price[1] == pytest.approx(d / 2) and m.share[1] == pytest.approx(0.5)
    assert deviation_gains(q, m.price).max() <= 1e-12


def test_a_thousand_random_qualities_are_a_market():
    rng = np.random.default_rng(0)
    q = rng.random(1000)
    m = market_round(q)
    _assert_economic(m)
    assert not m.priced_out.any()  # distinct qualities: every firm sells, if only a little
    top = np.argsort(q)[::-1]
    # brute-force best responses of the 25 best firms (the others' revenues underflow)
    gains = deviation_gains(q, m.price, grid=401, firms=top[:25])
    assert np.nanmax(gains) <= 1e-12
    assert m.share.sum() == pytest.approx(1 - 0.0, abs=1e-9)  # every type buys something


def test_sampled_population_splits_ties_at_random():
    s = sampled_market([0.5, 0.5, 0.9], 200_000, seed=1)
    exact = market_round([0.5, 0.5, 0.9])
    assert s.share == pytest.approx(exact.share, abs=5 / np.sqrt(200_000))


def test_subnormal_qualities_keep_exact_shares() -> None:
    """The docstring's market scaled by 2**-1060 (subnormal qualities): the tie still shares
    half the market and the top firm sells 1/2 (theta = p/d = 1/2 exactly)."""
    a, b = 0.711 * 2.0**-1060, 0.778 * 2.0**-1060
    m = market_round([a, b, a])
    assert m.share.tolist() == [0.25, 0.5, 0.25]
    assert m.price[0] == m.price[2] == 0.0 and m.price[1] > 0


def test_qualities_spanning_the_float_range_sum_to_at_most_one() -> None:
    m = market_round([1e-320, 1e-300, 0.75, 0.25, 1e-320, 2.2250738585e-313])
    assert m.share.sum() <= 1.0 and np.all(m.share >= 0)
    assert m.welfare == pytest.approx(m.consumer_surplus + m.revenue.sum(), rel=1e-14)
    assert deviation_gains([5e-324], [0.0], grid=11)[0] == 0.0
