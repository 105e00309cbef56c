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


def test_exp3_ix_update_by_hand():
    # one Exp3-IX update by hand: k = 2, eta = 0.1, gamma = 0.05, P = (1/2, 1/2), arm 1 played, loss 0.4
    bank = Exp3Bank((2,), eta=0.1, gamma=0.05)
    assert bank.prob_high().tolist() == [0.5, 0.5]
    # learner 0 plays arm 1 (loss 0.4); learner 1 plays arm 0 with loss 0 (an empty class)
    losses = np.array([[0.3, 0.0], [0.4, 0.9]])  # arm 0, arm 1 for each learner
    p_log, high_log = np.empty(2), np.empty(2, bool)
    high = bank.play(np.array([0.2, 0.7]), bank.signed(losses), p_log, high_log)
    assert high.tolist() == high_log.tolist() == [True, False] and p_log.tolist() == [0.5, 0.5]
    assert bank.logit[0] == pytest.approx(-0.1 * 0.4 / 0.55)  # L_1 = 0.4 / 0.55
    assert bank.prob_high()[0] == pytest.approx(1 / (1 + math.exp(0.1 * 0.4 / 0.55)), abs=1e-12)
    assert bank.prob_high()[0] == pytest.approx(0.481826, abs=1e-6)
    assert bank.prob_high()[1] == 0.5


def test_exp3_never_divides_by_a_vanishing_probability():
    bank = Exp3Bank((3,), eta=1.0, gamma=0.0)
    bank.logit[:] = [800.0, -800.0, 0.0]  # P_1 rounds to 1, to 0, and 1/2
    losses = np.ones((2, 3))
    with np.errstate(all="raise"):
        high = bank.play(
            np.array([0.5, 0.5, 0.9]), bank.signed(losses), np.empty(3), np.empty(3, bool)
        )
    assert high.tolist() == [True, False, False]
    assert np.all(np.isfinite(bank.logit))


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
    from games.price_discrimination.buyers import RoundTypes, draw_block
    from games.price_discrimination.estimator import ConsistentEstimator

    policy = seller.start(game, runs, 2)
    block = draw_block(RoundTypes.of(game), np.random.default_rng(0), 2, runs)
    policy.begin(block, None)
    estimator = ConsistentEstimator(game, runs, 2)
    estimator.begin(0, 2, None)
    estimator.sums[1] = 2 * (np.zeros(runs) if belief is None else belief)
    policy.step(1, 1, None, estimator)
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
