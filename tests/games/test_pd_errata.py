"""The errors the registry finds in thesis ch. 4, confirmed from first principles.

Each test recomputes a counterexample without the code that the registry's check uses (no
certificate, no closed forms, no library simulator): payoffs by hand in exact rationals, or a
from-scratch simulation of the repeated game.
"""

from fractions import Fraction as F

import numpy as np

from games.price_discrimination.game import PDGame

MU, TL, TH, CB, CS = F(1, 2), F(5), F(15), F(5), F(5)  # the experiments' parameters (P0)
DELTA = TH - TL
STAR = CB / DELTA  # alpha* = 1/2
Q_STAR = min(F(1), (1 - MU) * TL / (MU * DELTA))  # 1/2


def _high_buyer_payoffs(alpha, p_low_after_s_low):
    """(payoff of s_H, payoff of s_L) for a high buyer; the blind seller charges theta_H
    (theta_L < mu theta_H), the aware seller theta_H after s_H and theta_L after s_L w.p.
    ``p_low_after_s_low``."""
    s_high = 0  # charged theta_H by both seller types
    s_low = alpha * p_low_after_s_low * (TH - TL) - CB
    return s_high, s_low


def test_theorem6_profile_is_not_an_equilibrium_above_alpha_star():
    alpha = F(3, 4)
    s_high, s_low = _high_buyer_payoffs(alpha, 1)  # Theorem 6(c): theta_L after s_L
    assert s_low - s_high == F(5, 2) > 0  # evading always beats the prescribed mix
    # the equilibrium: the aware seller charges theta_L w.p. alpha*/alpha, the buyer is indifferent
    s_high, s_low = _high_buyer_payoffs(alpha, STAR / alpha)
    assert s_low == s_high == 0
    posterior = MU * Q_STAR / (MU * Q_STAR + 1 - MU)  # P(theta_H | s_L) = 1/3
    assert TL == posterior * TH  # the seller is indifferent after s_L, so it may mix
    # so u_B(1) = 0 = u_B(0): Corollary 2(b)'s u_B(1) > u_B(0) fails at the equilibrium
    assert _high_buyer_payoffs(F(1), STAR)[1] == 0


def test_lemma27_bound_is_attained_when_evasion_is_free_for_the_seller():
    c_s = F(0)
    full = MU * TH + (1 - MU) * TL  # PD against truthful buyers: 10
    u_0 = MU * TH  # blind price theta_H against truthful buyers: 7.5
    u_1 = MU * ((1 - Q_STAR) * TH + Q_STAR * (TL - c_s)) + (1 - MU) * TL  # PD, strategic: 7.5
    u1_star = STAR * full + (1 - STAR) * u_0
    assert STAR * full + (1 - STAR) * u_1 == u1_star == F(35, 4)


def test_consistent_beliefs_need_not_concentrate():
    # Lemma 26 and Lemma 29 against Definition 6: beliefs 1{previous buyer 1 was high}
    outcomes = {F(1): MU, F(0): 1 - MU}
    assert sum(b * p for b, p in outcomes.items()) == F(1, 2)  # = alpha_bar for alpha_t = 1/2
    assert sum(p for b, p in outcomes.items() if abs(b - F(1, 2)) >= F(1, 4)) == 1
    # Lemma 29: alpha_t alternates 1, 0; truthful iff the belief is 0 (alpha* = 1/10 < 1)
    rounds = 1000
    expected_beta = sum((1 - MU) * (t % 2 == 0) for t in range(1, rounds + 1)) / rounds
    assert expected_beta == F(1, 4) > F(1, 10)


def test_one_buyer_per_round_cannot_tell_price_discrimination():
    # Proposition 6 with n = 1: independent prices (alpha_t = 1/2) against both prices equal
    # by a fair coin (alpha_t = 0); a round shows one price, theta_H w.p. 1/2 in both cases
    independent = {(lo, hi): F(1, 4) for lo in "LH" for hi in "LH"}
    correlated = {("H", "H"): F(1, 2), ("L", "L"): F(1, 2)}
    for side in (0, 1):
        for law in (independent, correlated):
            assert sum(w for k, w in law.items() if k[side] == "H") == F(1, 2)
    differ = [
        sum(w for (lo, hi), w in law.items() if lo != hi) for law in (independent, correlated)
    ]
    assert differ == [F(1, 2), 0]


def test_zero_regret_seller_reaches_u1_star_when_evasion_is_free():
    """Proposition 8 with c_S = 0, simulated from scratch: CBER buyers with estimator (4.7),
    a seller that price-discriminates iff alpha_hat_t < alpha* and charges theta_H otherwise."""
    game = PDGame(MU, TL, TH, CB, F(0))
    n, rounds, runs = 10, 8000, 4
    mu, q_star, star = float(MU), float(Q_STAR), float(STAR)
    rng = np.random.default_rng(123)
    total = np.zeros(runs)
    for run in range(runs):
        s, belief = 0.0, 0.0
        for t in range(1, rounds + 1):
            strategic = belief > star
            discriminate = belief < star
            q = q_star if strategic else 0.0
            high = rng.random(n) < mu
            evade = high & (rng.random(n) < q)
            low_signal = ~high | evade
            # expected per-buyer utility of the round, c_S = 0
            if discriminate:
                total[run] += mu * ((1 - q) * 15 + q * 5) + (1 - mu) * 5
            else:
                total[run] += mu * 15  # theta_H to everyone: only high types buy
            informative = low_signal.any() and (~low_signal).any()
            p_low = (1 - mu) + mu * q
            rho = 1 - p_low**n - (1 - p_low) ** n
            s += (discriminate and informative) / rho
            belief = s / (t + 1)
    average = total / rounds
    assert np.all(np.abs(average - float(game.U1_star)) < 0.01)


def test_zero_regret_seller_beats_u1_star_against_coin_beliefs():
    """Propositions 8 and 10 against Definition 6: beliefs 1{previous buyer 1 was high}."""
    mu, tl, th, cb, cs = F(1, 2), F(5), F(15), F(1), F(5)
    star = cb / (th - tl)  # 1/10
    q_star = min(F(1), (1 - mu) * tl / (mu * (th - tl)))  # 1/2 (regime B)
    truthful_pd = mu * th + (1 - mu) * tl  # 10: the most any price earns from truthful buyers
    strategic_blind = mu * ((1 - q_star) * th + q_star * (th - cs))  # 25/4
    # against q*, after s_L the seller is indifferent: theta_L earns the same as theta_H
    strategic_pd = mu * ((1 - q_star) * th + q_star * (tl - cs)) + (1 - mu) * tl
    assert strategic_pd == strategic_blind == F(25, 4)
    u1_star = star * truthful_pd + (1 - star) * mu * th  # 31/4
    # belief 0 (prob 1 - mu) -> truthful buyers, PD; belief 1 (prob mu) -> strategic, theta_H
    average = (1 - mu) * truthful_pd + mu * strategic_blind
    assert average == F(65, 8) > u1_star == F(31, 4)
    # consistency: E alpha_hat = mu = 1/2 and alpha_bar_T -> P(belief 0) = 1/2
    assert mu == 1 - mu


def test_corrected_propositions_8_and_10_need_estimator_beliefs():
    from games.price_discrimination import regret_propositions as P

    assert not P._prop8_corrected(beliefs="consistent").holds
    assert not P._prop10(beliefs="consistent").holds
    assert not P._prop8_corrected(no_regret_only=False).holds
