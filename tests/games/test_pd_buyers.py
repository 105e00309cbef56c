"""Rounds of CBER buyers: the pair law, the guide-table draw, and the per-pair rewards against
eq. (4.2)."""

import math

import numpy as np
import pytest

from games.price_discrimination.buyers import RoundTypes, draw_block, realised_seller_utility
from games.price_discrimination.game import PARAMETER_SETS

P0 = PARAMETER_SETS["P0"].numeric()


def test_pair_law_is_binomial_then_binomial():
    types = RoundTypes.of(P0)  # n = 10, mu = 1/2, q* = 1/2
    ks, es, cdf = types.high_types, types.would_evade, types.cdf
    assert ks.size == 66 and np.all(es <= ks)
    prob = np.diff(cdf, prepend=0.0)
    assert cdf[-1] == 1.0 and np.all(prob >= 0)
    for k in range(11):
        assert prob[ks == k].sum() == pytest.approx(math.comb(10, k) / 1024)
    block = draw_block(types, np.random.default_rng(0), 100_000, 2)
    pair = types.draw(block.buyers)
    k, e = types.high_types[pair].ravel(), types.would_evade[pair].ravel()
    assert np.all(e <= k)
    assert k.mean() == pytest.approx(5, abs=0.02) and k.var() == pytest.approx(2.5, abs=0.05)
    assert e.mean() == pytest.approx(2.5, abs=0.02) and e.var() == pytest.approx(1.875, abs=0.05)


def test_the_pair_law_holds_where_binomial_coefficients_pass_the_largest_float():
    # C(1100, 550) is about 1e330: the law is computed without forming it
    game = PARAMETER_SETS["P0"].numeric()
    types = RoundTypes.of(type(game)(game.mu, game.theta_low, game.theta_high, 5.0, 5.0, n=1100))
    ks, es = types.high_types, types.would_evade
    prob = np.diff(types.cdf, prepend=0.0)
    assert ks.size == 1101 * 1102 // 2 and np.all(es <= ks) and np.all(prob >= 0)
    assert float(prob @ ks) == pytest.approx(550, rel=1e-9)  # E k = n mu
    assert float(prob @ es) == pytest.approx(275, rel=1e-9)  # E e = n mu q*


def test_a_round_of_more_buyers_than_memory_holds_is_refused():
    game = PARAMETER_SETS["P0"].numeric()
    huge = type(game)(game.mu, game.theta_low, game.theta_high, 5.0, 5.0, n=10**8)
    with pytest.raises(ValueError, match=r"a round of n=100000000 buyers .* needs about"):
        RoundTypes.of(huge)


def test_guide_table_draw_is_exactly_the_inverse_cdf():
    types = RoundTypes.of(P0, guide_size=8)  # a coarse guide: cells with many boundaries
    u = np.concatenate([np.random.default_rng(3).random(50_000), types.cdf[:-1], [0.0]])
    expected = np.searchsorted(types.cdf, u, side="right")
    np.testing.assert_array_equal(types.draw(u), expected)
    np.testing.assert_array_equal(RoundTypes.of(P0).draw(u), expected)
    # any shape, strided views and empty arrays included
    grid = u[: 3 * 4 * 5].reshape(3, 4, 5)
    for part in (grid, grid[:, 1], grid[:, :0], u[:0], u[7]):
        np.testing.assert_array_equal(types.draw(part), np.searchsorted(types.cdf, part, "right"))


def test_block_shapes_and_optional_noise():
    types = RoundTypes.of(P0)
    block = draw_block(types, np.random.default_rng(1), 7, 3, noise=True)
    assert block.buyers.shape == (7, 3) and block.uniforms.shape == (7, 2, 3)
    assert block.noise is not None and block.noise.shape == (7, 3)
    assert draw_block(types, np.random.default_rng(1), 7, 3).noise is None
    again = np.random.default_rng(1).random((7, 4, 3))  # rows: buyers, seller, seller, bias
    np.testing.assert_array_equal(block.buyers, again[:, 0])
    np.testing.assert_array_equal(block.uniforms, again[:, 1:3])
    np.testing.assert_array_equal(block.noise, again[:, 3])


def test_pair_tables_agree_with_the_realised_utility():
    types = RoundTypes.of(P0)
    evaders = types.evaders()
    senders_high = types.high_types - evaders
    assert np.array_equal(types.informative(), (senders_high > 0) & (senders_high < P0.n))
    everyone = types.everyone_reward()
    for price in (0, 1):
        direct = realised_seller_utility(P0, types.high_types, evaders, bool(price), bool(price))
        np.testing.assert_allclose(everyone[:, price], direct)
    # the low class's reward times its size plus the high class's revenue is the round's total
    low = types.low_reward()
    size_low = P0.n - senders_high
    for pl in (0, 1):
        for ph in (0, 1):
            total = low[:, pl] * size_low + senders_high * (15.0 if ph else 5.0)
            direct = realised_seller_utility(P0, types.high_types, evaders, bool(pl), bool(ph))
            np.testing.assert_allclose(total / P0.n, direct)
