"""Seller algorithms: Exp3-IX presets and updates, reward normalisation, committed sellers."""

import math

import numpy as np
import pytest

from games.price_discrimination.exp3 import (
    ContextualExp3,
    Exp3,
    Exp3Bank,
    exp3_parameters,
    normalised_loss,
)
from games.price_discrimination.game import PARAMETER_SETS
from games.price_discrimination.sellers import SELLERS, AlphaPD, BeliefTracking, FixedProduct

P0, P2 = PARAMETER_SETS["P0"], PARAMETER_SETS["P2"]


def test_exp3_bank_starts_uniform_and_signs_the_losses():
    # k = 2, eta = 0.1: P = (1/2, 1/2); the logit moves by +eta Y_0 or -eta Y_1 (exp3_round)
    bank = Exp3Bank((2,), eta=0.1, gamma=0.05)
    assert bank.prob_high().tolist() == [0.5, 0.5]
    losses = np.array([[0.3, 0.0], [0.4, 0.9]])  # arm 0, arm 1 for each learner
    np.testing.assert_allclose(bank.signed(losses), [[0.03, 0.0], [-0.04, -0.09]])
    bank.logit[0] = -0.1 * 0.4 / 0.55
    assert bank.prob_high()[0] == pytest.approx(1 / (1 + math.exp(0.1 * 0.4 / 0.55)), abs=1e-12)


def test_reward_normalisation_p0():
    # P0's revenues mapped to [0, 1]: r = -5 -> loss 1, r = 15 -> loss 0, r = 7.5 -> reward 0.625
    np.testing.assert_allclose(1 - normalised_loss(P0, np.array([-5.0, 15.0, 7.5])), [0, 1, 0.625])


def test_presets():
    # the presets' formulas (exp3_parameters) at T = 20,000, k = 2
    assert exp3_parameters("paper_code", 20_000) == (pytest.approx(0.0041628, abs=1e-7), 0.0)
    eta, gamma = exp3_parameters("book_ix", 20_000)
    assert (eta, gamma) == (pytest.approx(0.0074115, abs=1e-7), pytest.approx(0.0037058, abs=1e-7))
    eta, gamma = exp3_parameters("neu_ix", 20_000)
    assert (eta, gamma) == (pytest.approx(0.0058871, abs=1e-7), pytest.approx(0.0029435, abs=1e-7))
    with pytest.raises(ValueError, match="preset"):
        exp3_parameters("nope", 10)


def _second_round(seller, game, runs, belief=None):
    """Prices of round 2 when the buyers' belief is ``belief`` (0 by default)."""
    from games.price_discrimination.buyers import Block, RoundTypes, draw_block
    from games.price_discrimination.estimator import ConsistentEstimator
    from games.price_discrimination.rounds import play

    policy = seller.start(game, runs, 2)
    types = RoundTypes.of(game)
    block = draw_block(types, np.random.default_rng(0), 2, runs)
    pricing = policy.pricing(block)
    estimator = ConsistentEstimator(game, runs, 2)
    estimator.total[:] = 2 * (np.zeros(runs) if belief is None else belief)  # S_1
    play(  # round 2 alone
        1,
        Block(types, block.buyers[1:], block.uniforms[1:], None),
        types,
        estimator,
        estimator.increments(types.informative()).reshape(-1),
        (np.empty((2, runs), bool), *np.empty((2, 2, runs), np.int32), *np.empty((2, 2, runs))),
        pricing._replace(differ=pricing.differ[1:]),
    )
    low_high, high_high = (x[1] for x in policy.prices())
    return low_high, high_high, [m[1] for m in policy.marginals()]


def test_alpha_pd_marginals_in_both_regimes():
    for game, (a, b) in ((P0, (1.0, 0.7)), (P2, (0.3, 0.0))):
        low_high, high_high, (ma, mb, alpha) = _second_round(AlphaPD(0.3), game, 50_000)
        assert ma[0] == pytest.approx(a) and mb[0] == pytest.approx(b)
        assert alpha[0] == pytest.approx(0.3)
        assert (low_high != high_high).mean() == pytest.approx(0.3, abs=0.01)
        assert high_high.mean() == pytest.approx(a, abs=0.01)
        assert low_high.mean() == pytest.approx(b, abs=0.01)
    assert AlphaPD().commitment(P0) == pytest.approx(0.49)


def test_fixed_product_and_belief_tracking():
    low_high, high_high, (_, _, alpha) = _second_round(FixedProduct(0.8, 0.3), P0, 40_000)
    assert high_high.mean() == pytest.approx(0.8, abs=0.01)
    assert low_high.mean() == pytest.approx(0.3, abs=0.01)
    assert alpha[0] == pytest.approx(0.8 * 0.7 + 0.2 * 0.3)
    low_high, high_high, (_, _, alpha) = _second_round(
        BeliefTracking(0.01), P0, 2, np.array([0.2, 0.495])
    )
    assert alpha.tolist() == [1.0, 0.0]
    assert low_high.tolist() == [False, True] and high_high.all()


def test_registry_and_overrides():
    assert set(SELLERS) == {"exp3", "exp3-ix", "cexp3", "alpha-pd", "always-pd", "never-pd"}
    assert isinstance(SELLERS["cexp3"](), ContextualExp3)
    policy = Exp3(eta=0.5, gamma=0.1).start(P0, 3, 100)
    assert (policy.bank.eta, policy.bank.gamma) == (0.5, 0.1)
    with pytest.raises(ValueError, match="eta"):
        Exp3(eta=-1.0).start(P0, 3, 100)
