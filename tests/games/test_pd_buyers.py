"""Blocks of CBER buyers: the count law, and the precomputed rewards against eq. (4.2)."""

import math

import numpy as np
import pytest

from games.price_discrimination.buyers import _counts_table, draw_block, realised_seller_utility
from games.price_discrimination.game import PARAMETER_SETS

P0 = PARAMETER_SETS["P0"].numeric()


def test_count_law_is_binomial_then_binomial():
    cdf, ks, es = _counts_table(10, 0.5, 0.5)
    assert np.all(es <= ks)
    prob = np.diff(cdf, prepend=0.0)
    assert cdf[-1] == 1.0 and np.all(prob >= 0)
    for k in range(11):
        assert prob[ks == k].sum() == pytest.approx(math.comb(10, k) / 1024)
    block = draw_block(P0, np.random.default_rng(0), 100_000, 2)
    k, e = block.high_types.ravel(), block.would_evade.ravel()
    assert np.all(e <= k)
    assert k.mean() == pytest.approx(5, abs=0.02) and k.var() == pytest.approx(2.5, abs=0.05)
    assert e.mean() == pytest.approx(2.5, abs=0.02) and e.var() == pytest.approx(1.875, abs=0.05)


def test_block_tables_agree_with_the_realised_utility():
    block = draw_block(P0, np.random.default_rng(1), 500, 3)
    evaders = block.evaders()
    senders_high = block.high_types[:, None, :] - evaders
    assert np.array_equal(block.informative, (senders_high > 0) & (senders_high < P0.n))
    everyone = block.everyone_reward()
    for price in (0, 1):
        direct = realised_seller_utility(
            P0, block.high_types[:, None, :], evaders, bool(price), bool(price)
        )
        np.testing.assert_allclose(everyone[:, :, price], direct)
    # the low class's reward times its size plus the high class's revenue is the round's total
    low = block.low_reward()
    size_low = P0.n - senders_high
    for pl in (0, 1):
        for ph in (0, 1):
            total = low[:, :, pl] * size_low + senders_high * (15.0 if ph else 5.0)
            direct = realised_seller_utility(
                P0, block.high_types[:, None, :], evaders, bool(pl), bool(ph)
            )
            np.testing.assert_allclose(total / P0.n, direct)
