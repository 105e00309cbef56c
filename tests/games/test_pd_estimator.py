"""The consistent estimator (4.7) and its normaliser (proof of Proposition 6, section 4.7)."""

from fractions import Fraction as F

import numpy as np

from games.price_discrimination.estimator import (
    ConsistentEstimator,
    belief_of,
    informative_probability,
    is_strategic,
)
from games.price_discrimination.exp3 import Exp3
from games.price_discrimination.game import PARAMETER_SETS
from games.price_discrimination.repeated import simulate
from games.price_discrimination.sellers import AlphaPD

P0, P2 = PARAMETER_SETS["P0"], PARAMETER_SETS["P2"]


def test_rho_for_p0():
    assert informative_probability(P0, 0) == F(511, 512)
    assert informative_probability(P0, P0.q_star) == F(494763, 524288)
    assert informative_probability(P2, P2.q_star) == 0  # regime A, strategic: all send s_L


def test_estimator_starts_at_zero_and_divides_by_t():
    # alpha_hat_1 = 0, then alpha_hat_t = S_{t-1} / t
    est = ConsistentEstimator(P0, runs=2, rounds=3)
    est.begin(0, 3, None)
    assert not is_strategic(0.0, 0, 0.5, 0.0, 0.0)  # round 1 truthful: belief 0 <= alpha*
    for t, threshold in ((1, 2 * 0.5), (2, 3 * 0.5)):  # strategic iff S_t > (t + 1) alpha*
        assert not is_strategic(threshold, t, 0.5, 0.0, 0.0)  # the tie is truthful
        assert is_strategic(np.nextafter(threshold, 9), t, 0.5, 0.0, 0.0)
    assert not is_strategic(1e9, 5, 1.0, 0.0, 0.0)  # alpha* = 1: never strategic
    increments = est.increments(np.ones((2, 2), bool))  # (mode, runs)
    np.testing.assert_allclose(increments[:, 0], [512 / 511, 524288 / 494763])
    # round 1 shows discrimination in run 0 only; S_1 stays the sum after rounds 2 and 3
    s_1 = increments[0] * np.array([1, 0])
    for t in (1, 2):
        np.testing.assert_allclose(belief_of(s_1, t + 1, 0.0, False), [512 / 511 / (t + 1), 0])
    est.total[:] = s_1
    np.testing.assert_allclose(est.final_belief(), [512 / 511 / 4, 0])


def test_initial_belief_above_alpha_star_makes_round_one_strategic():
    est = ConsistentEstimator(P0, runs=1, rounds=2, alpha_hat_init=0.6)
    assert is_strategic(0.0, 0, 0.5, 0.0, 0.6) and est.init == 0.6
    run = simulate(P0, AlphaPD(0.0), 2, 1, seed=0, alpha_hat_init=0.6)
    assert run.alpha_hat[0, 0] == 0.6 and run.strategic[0, 0]


def test_bias_is_added_each_round_without_compounding_and_clipped():
    lo, hi = np.array([-1.0, 0.2]), np.array([-0.9, 0.3])
    est = ConsistentEstimator(P0, runs=2, rounds=2, bias=(lo, hi))
    est.begin(0, 2, np.full((2, 2), 0.5))
    np.testing.assert_allclose(est.eps[1], [-0.95, 0.25])  # drawn after round 1
    for eps in est.eps[1]:  # the belief clip(S / 2 + eps) exceeds 1/2 iff S > 2 (1/2 - eps)
        assert not is_strategic(2 * (0.5 - eps), 1, 0.5, eps, 0.0)
        assert is_strategic(np.nextafter(2 * (0.5 - eps), 9), 1, 0.5, eps, 0.0)
    s_1 = np.full(2, 512 / 511)  # the sum stays unbiased: each belief adds its own bias
    np.testing.assert_allclose(belief_of(s_1, 2, est.eps[1], True), [0.0, 512 / 511 / 2 + 0.25])
    np.testing.assert_allclose(belief_of(s_1, 3, est.eps[2], True), [0.0, 512 / 511 / 3 + 0.25])
    est.total[:] = s_1
    np.testing.assert_allclose(est.final_belief(), [0.0, 512 / 511 / 3 + 0.25])


def test_blind_seller_gives_a_zero_belief():
    run = simulate(P0, Exp3(), 300, 3, seed=1)
    assert np.all(run.alpha_hat == 0) and np.all(run.final_belief == 0)


def test_regime_a_strategic_rounds_are_not_identifiable():
    run = simulate(P2, AlphaPD(1.0), 400, 2, seed=2)  # rho = 0: no division, flagged
    assert run.strategic.any()
    assert not run.identifiable().any()
    assert np.all(run.rho[run.strategic] == 0)
    truthful = simulate(P0, AlphaPD(1.0), 400, 2, seed=2)
    assert truthful.identifiable().all()
