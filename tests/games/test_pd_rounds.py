"""The compiled rounds of Algorithm 6 against a plain per-round, per-run loop on the same draws.

The reference plays Werner (2024), section 4.6, Algorithm 6 one round and one run at a time in
Python floats, from the draws the simulator makes (one generator, ``(rounds, 3 [+ 1], runs)``
uniforms: the buyers' pair by inverse CDF, the seller's two uniforms, the bias's) and the same
per-pair tables; every log of :func:`~games.price_discrimination.repeated.simulate` must equal it
exactly, for every kind of seller, with and without bias, one run and many, and across the
blocks in which the simulator draws.
"""

import math

import numpy as np
import pytest

from games.price_discrimination import repeated
from games.price_discrimination.buyers import RoundTypes
from games.price_discrimination.estimator import ConsistentEstimator
from games.price_discrimination.exp3 import ContextualExp3, Exp3, exp3_parameters, normalised_loss
from games.price_discrimination.game import PARAMETER_SETS
from games.price_discrimination.repeated import simulate
from games.price_discrimination.rounds import exp3_round
from games.price_discrimination.sellers import AlphaPD, BeliefTracking, FixedProduct

P0, P2, P3 = PARAMETER_SETS["P0"], PARAMETER_SETS["P2"], PARAMETER_SETS["P3"]


def _steps(game, seller):
    """Per learner, the normalised loss of each arm, ``[learner][mode][arm][pair]``."""
    types = RoundTypes.of(game)
    th, tl = float(game.theta_high), float(game.theta_low)
    if isinstance(seller, ContextualExp3):
        high = normalised_loss(game, np.array([tl, th]))[None, :, None] * types.has_high()[:, None]
        low = normalised_loss(game, types.low_reward()) * types.has_low()[:, None]
        return [high, low]
    return [normalised_loss(game, types.everyone_reward())]


def _reference(game, seller, rounds, runs, seed, bias=None, init=0.0):
    """Algorithm 6 round by round and run by run: the logs of :func:`simulate`, ``(rounds, runs)``."""
    game = game.numeric()
    types = RoundTypes.of(game)
    u = np.random.default_rng(seed).random((rounds, 3 + (bias is not None), runs))
    pair = np.searchsorted(types.cdf, u[:, 0], side="right")
    estimator = ConsistentEstimator(game, runs, rounds)
    gain = estimator.inv_rho.tolist()
    informative = types.informative()
    alpha_star = float(game.alpha_star)
    blind = game.blind_price_high
    exp3 = isinstance(seller, Exp3)
    if exp3:
        eta, gamma = exp3_parameters(seller.preset, rounds)
        losses = _steps(game, seller)
    logs = {
        k: np.zeros((rounds, runs), dtype)
        for k, dtype in (("strategic", bool), ("low", bool), ("high", bool), ("sums", float))
    }
    for r in range(runs):
        total, logit, eps_prev = 0.0, [0.0, 0.0], 0.0
        for t in range(rounds):
            if t == 0:
                strategic = init > alpha_star
            else:
                strategic = alpha_star < 1 and total > (t + 1) * (alpha_star - eps_prev)
            mode, c = int(strategic), int(pair[t, r])
            if isinstance(seller, AlphaPD):
                alpha = seller.commitment(game)
                pd = u[t, 1, r] < alpha
                low, high = (not pd) and blind, pd or blind
            elif isinstance(seller, FixedProduct):
                a, b = (np.broadcast_to(x, (runs,))[r] for x in (seller.a, seller.b))
                low, high = u[t, 2, r] < b, u[t, 1, r] < a
            elif isinstance(seller, BeliefTracking):
                belief = init if t == 0 else total / (t + 1)
                if bias is not None and t > 0:
                    belief = min(max(belief + eps_prev, 0.0), 1.0)
                pd = belief < alpha_star - seller.margin
                low, high = (not pd) and blind, pd or blind
            else:
                arms = []
                for k, loss in enumerate(losses):
                    p = 1.0 / (1.0 + math.exp(-logit[k]))
                    arm = u[t, 1 + k, r] < p
                    step = -eta * loss[mode][1][c] if arm else eta * loss[mode][0][c]
                    logit[k] += step / (p + gamma if arm else 1.0 + gamma - p)
                    arms.append(arm)
                high = arms[0]
                low = arms[-1]
            differ = low != high
            total += gain[mode] * informative[mode, c] * differ
            logs["strategic"][t, r], logs["low"][t, r], logs["high"][t, r] = strategic, low, high
            logs["sums"][t, r] = total
            if bias is not None:
                eps_prev = bias[0] + (bias[1] - bias[0]) * u[t, 3, r]
    logs["pair"] = pair
    return logs


CASES = [
    (P0, Exp3(), 1, 300, None, 0.0),
    (P0, ContextualExp3(), 1, 700, None, 0.0),
    (P0, ContextualExp3(preset="neu_ix"), 3, 200, (-0.1, 0.2), 0.6),
    (P3, ContextualExp3(), 2, 150, None, 0.0),
    (P0, Exp3(preset="book_ix"), 4, 150, (0.3, 0.5), 0.0),
    (P0, AlphaPD(), 2, 300, None, 0.0),
    (P2, AlphaPD(1.0), 3, 200, None, 0.0),
    (P0, BeliefTracking(0.01), 2, 300, (-0.05, 0.05), 0.0),
    (P0, BeliefTracking(0.01), 1, 200, None, 0.7),
    (P0, FixedProduct(np.array([0.9, 0.2]), 0.3), 2, 200, None, 0.0),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_simulate_equals_the_per_round_reference(case):
    game, seller, runs, rounds, bias, init = CASES[case]
    if isinstance(seller, FixedProduct):
        seller = FixedProduct(seller.a, np.full(runs, seller.b))
    run = simulate(game, seller, rounds, runs, 7 + case, bias=bias, alpha_hat_init=init)
    ref = _reference(game, seller, rounds, runs, 7 + case, bias, init)
    types = RoundTypes.of(game.numeric())
    np.testing.assert_array_equal(run.strategic, ref["strategic"].T)
    np.testing.assert_array_equal(run.low_price_high, ref["low"].T)
    np.testing.assert_array_equal(run.high_price_high, ref["high"].T)
    np.testing.assert_array_equal(run.high_types, types.high_types[ref["pair"]].T)
    n_rounds = np.arange(1, rounds + 1)
    if bias is None:  # the belief of round t + 1 is S_t / (t + 1)
        np.testing.assert_array_equal(run.alpha_hat[:, 1:], (ref["sums"][:-1].T / n_rounds[1:]))
        np.testing.assert_array_equal(run.final_belief, ref["sums"][-1] / (rounds + 1))


def test_the_draws_do_not_depend_on_the_block_size(monkeypatch):
    # blocks of 16 rounds: the learners, the estimator and the logs carry over between blocks
    monkeypatch.setattr(repeated, "BLOCK_RUN_ROUNDS", 32)
    rounds, runs = 40, 2
    many = simulate(P0, ContextualExp3(), rounds, runs, 5)
    ref = _reference(P0, ContextualExp3(), rounds, runs, 5)
    np.testing.assert_array_equal(many.strategic, ref["strategic"].T)
    np.testing.assert_array_equal(many.high_price_high, ref["high"].T)
    np.testing.assert_array_equal(many.low_price_high, ref["low"].T)


def test_exp3_round_by_hand_and_at_vanishing_probabilities():
    # eta = 0.1, gamma = 0.05, P_1 = 1/2: arm 1 played with loss 0.4 -> G = -0.1 * 0.4 / 0.55
    p, high, logit = exp3_round(0.0, 0.2, 0.1 * 0.3, -0.1 * 0.4, 0.05)
    assert (p, high) == (0.5, True) and logit == pytest.approx(-0.1 * 0.4 / 0.55)
    assert 1 / (1 + math.exp(-logit)) == pytest.approx(0.481826, abs=1e-6)
    assert exp3_round(0.0, 0.7, 0.0, -0.09, 0.05) == (0.5, False, 0.0)  # an empty class
    # P_1 rounds to 1 and to 0: the played arm's probability is never 0
    assert exp3_round(800.0, 0.5, 1.0, -1.0, 0.0) == (1.0, True, 799.0)
    assert exp3_round(-800.0, 0.5, 1.0, -1.0, 0.0) == (0.0, False, -799.0)
