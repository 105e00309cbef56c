"""The seller contract, checked on every entry of
:data:`games.price_discrimination.sellers.SELLERS`.

A registered seller builds without arguments under its registered name, plays Algorithm 6's
repeated game against belief-consistent buyers with prices, utilities, beliefs and action
frequencies of the right shapes, repeats itself exactly from the same seed and draws afresh
from another.
"""

import numpy as np
import pytest

from games.price_discrimination.game import PARAMETER_SETS
from games.price_discrimination.repeated import simulate
from games.price_discrimination.sellers import SELLERS

P0 = PARAMETER_SETS["P0"]
ROUNDS, RUNS = 200, 3


def _named_as_registered(name):
    assert SELLERS[name]().name == name


def _plays_the_repeated_game(name):
    run = simulate(P0, SELLERS[name](), ROUNDS, RUNS, seed=5)
    assert run.seller == name
    assert run.seller_utility().shape == (RUNS, ROUNDS)
    assert np.isfinite(run.seller_utility()).all() and np.isfinite(run.buyer_utility()).all()
    assert run.alpha_hat.shape == (RUNS, ROUNDS)
    assert np.isfinite(run.alpha_hat).all()
    assert sum(run.action_frequencies().values()) == pytest.approx(1.0)


def _same_seed_same_result(name):
    one = simulate(P0, SELLERS[name](), ROUNDS, RUNS, seed=5, bias=(-0.1, 0.1))
    two = simulate(P0, SELLERS[name](), ROUNDS, RUNS, seed=5, bias=(-0.1, 0.1))
    np.testing.assert_array_equal(one.seller_utility(), two.seller_utility())
    np.testing.assert_array_equal(one.alpha_hat, two.alpha_hat)
    other = simulate(P0, SELLERS[name](), ROUNDS, RUNS, seed=6)
    assert not np.array_equal(one.high_types, other.high_types)


def check_seller(name):
    """The checks every registered seller passes (each called with its name)."""
    return [_named_as_registered, _plays_the_repeated_game, _same_seed_same_result]


@pytest.mark.parametrize("name", sorted(SELLERS))
def test_every_seller_keeps_the_contract(name):
    for check in check_seller(name):
        check(name)
