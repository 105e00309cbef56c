"""The one-shot PD game: derived quantities, workhorse utilities, equilibrium and its numbers.

Exact values of the parameter sets P0-P3, derived by hand from eqs. (4.1)-(4.3) and the proof of
Corollary 2 (Werner 2024, section 4.7), compared with the code and with brute-force enumeration.
"""

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from games.price_discrimination.equilibrium import (
    equilibrium,
    high_buyer_deviation_gain,
    utility_curves,
)
from games.price_discrimination.game import (
    PARAMETER_SETS,
    Q_H,
    Q_L,
    SYMBOLS,
    U_H_EXPR,
    U_S_EXPR,
    A,
    AssumptionWarning,
    B,
    PDGame,
    alpha_of,
    high_buyer_utility,
    posterior_after_low,
    seller_utility,
)

P0, P1, P2, P3 = (PARAMETER_SETS[k] for k in ("P0", "P1", "P2", "P3"))
VERTICES = {"HH": (1, 1), "LL": (0, 0), "PD": (1, 0), "RPD": (0, 1)}


def test_derived_quantities_of_the_parameter_sets():
    table = {
        "P0": ("B", 10, F(1, 2), F(1, 2), 15),
        "P1": ("A", 5, F(1, 2), 1, 5),
        "P2": ("A", 5, F(2, 5), 1, 5),
        "P3": ("B", 8, F(3, 8), F(1, 3), 12),
    }
    for name, (regime, delta, star, q_star, p_blind) in table.items():
        g = PARAMETER_SETS[name]
        assert (g.regime, g.delta, g.alpha_star, g.q_star, g.p_blind) == (
            regime,
            delta,
            star,
            q_star,
            p_blind,
        )
    assert P2.q_bar == F(3, 2)
    assert posterior_after_low(P0, P0.q_star) == F(1, 3)
    assert P0.theta_low == posterior_after_low(P0, P0.q_star) * P0.theta_high  # indifferent
    assert (P0.kappa, P2.kappa, P3.kappa) == (F(5, 2), 2, F(8, 5))


def test_vertex_tables():
    # (U_S, U_H) at the four seller vertices
    p0 = {
        0: {"HH": (7.5, 0), "LL": (5, 10), "PD": (10, 0), "RPD": (2.5, 10)},
        F(1, 2): {"HH": (6.25, -2.5), "LL": (3.75, 7.5), "PD": (6.25, 2.5), "RPD": (3.75, 2.5)},
    }
    p2 = {
        0: {"HH": (4, 0), "LL": (5, 5), "PD": (7, 0), "RPD": (2, 5)},
        1: {"HH": (3.2, -2), "LL": (4.2, 3), "PD": (4.2, 3), "RPD": (3.2, -2)},
    }
    for game, table in ((P0, p0), (P2, p2)):
        for q, row in table.items():
            for v, (u_s, u_h) in row.items():
                a, b = VERTICES[v]
                assert seller_utility(game, q, a, b) == F(u_s).limit_denominator()
                assert high_buyer_utility(game, q, a, b) == F(u_h).limit_denominator()


def _closed_form(name, alpha):
    """u_S and u_H of the thesis profile, by hand from the proof of Corollary 2."""
    a = F(alpha)
    forms = {
        "P0": (lambda: 7.5 + 2.5 * a, lambda: 6.25, lambda: 0, lambda: 5 * a - 2.5),
        "P1": (lambda: 5 + 2.5 * a, lambda: 3.75, lambda: 5 * (1 - a), lambda: 2.5),
        "P2": (lambda: 5 + 2 * a, lambda: 4.2, lambda: 5 * (1 - a), lambda: 3),
        "P3": (lambda: 7.2 + 1.6 * a, lambda: 7.0, lambda: 0, lambda: (8 * a - 3) / 3),
    }[name]
    below = a <= PARAMETER_SETS[name].alpha_star
    return (forms[0]() if below else forms[1](), forms[2]() if below else forms[3]())


def _enumerate(game, alpha, profile):
    """One buyer, by brute force over (chi, theta, signal, price): eqs. (4.1)-(4.2)."""
    seller = high = 0
    for chi, theta, evade, price_high in itertools.product((0, 1), (0, 1), (0, 1), (0, 1)):
        p_chi = alpha if chi else 1 - alpha
        p_theta = game.mu if theta else 1 - game.mu
        q = profile.q_high if theta else profile.q_low
        p_sig = q if evade else 1 - q
        signal_high = theta != evade  # high type truthful or low type evading
        if chi:
            p_hi = profile.aware_a if signal_high else profile.aware_b
        else:
            p_hi = profile.blind_high
        p_price = p_hi if price_high else 1 - p_hi
        prob = p_chi * p_theta * p_sig * p_price
        value = game.theta_high if theta else game.theta_low
        price = game.theta_high if price_high else game.theta_low
        buys = price <= value
        seller += prob * (price * buys - game.c_s * evade)
        if theta:
            high += p_chi * p_sig * p_price * ((value - price) * buys - game.c_b * evade)
    return seller, high


@pytest.mark.parametrize("name", ["P0", "P1", "P2", "P3"])
def test_closed_forms_equal_enumeration(name):
    # closed forms (thesis profile, as the proof of Corollary 2 evaluates it) = enumeration
    game = PARAMETER_SETS[name]
    star = game.alpha_star
    for alpha in (F(0), star / 2, star, star + F(1, 100), (1 + star) / 2, F(1)):
        eq = equilibrium(game, alpha, "thesis")
        u_s, u_h = _closed_form(name, alpha)
        assert eq.seller == F(u_s).limit_denominator()
        assert eq.high_buyer == F(u_h).limit_denominator()
        assert (eq.seller, eq.high_buyer) == _enumerate(game, alpha, eq.profile)
        assert eq.low_buyer == 0
        strict = equilibrium(game, alpha)
        assert (strict.seller, strict.high_buyer) == _enumerate(game, alpha, strict.profile)
        assert strict.seller == eq.seller
        assert eq.buyer_avg == game.mu * eq.high_buyer
        assert eq.seller_total == game.n * eq.seller


def test_p0_numbers():
    values = {0: 7.5, F(1, 4): 8.125, F(45, 100): 8.625, F(49, 100): 8.725, F(1, 2): 8.75}
    for alpha, u in values.items():
        assert equilibrium(P0, alpha).seller == F(u).limit_denominator()
    for alpha in (F(51, 100), F(3, 4), 1):
        assert equilibrium(P0, alpha).seller == F(25, 4)
    assert [equilibrium(P0, a, "thesis").high_buyer for a in (F(51, 100), F(3, 4), 1)] == [
        F(1, 20),
        F(5, 4),
        F(5, 2),
    ]
    assert equilibrium(P0, 1, "thesis").buyer_avg == F(5, 4)
    assert [equilibrium(P0, a).high_buyer for a in (F(51, 100), F(3, 4), 1)] == [0, 0, 0]
    assert [equilibrium(P0, a).seller_total for a in (0, F(1, 2), 1)] == [75, F(175, 2), F(125, 2)]
    # strict convention: same seller utility, high buyer 0, r* = alpha*/alpha
    strict = equilibrium(P3, 1)
    assert strict.seller == equilibrium(P3, 1, "thesis").seller == 7
    assert strict.high_buyer == 0 and 1 - strict.profile.aware_b == F(3, 8)
    assert equilibrium(P3, 1, "thesis").high_buyer == F(5, 3)
    assert high_buyer_deviation_gain(P3, 1, "thesis") == F(2, 3) * (
        8 - 3
    )  # (1 - q*)(alpha Delta - c_B)
    assert high_buyer_deviation_gain(P3, 1) == 0


def test_commitment_value_and_jumps():
    expected = {
        "P0": (F(35, 4), F(25, 4)),
        "P1": (F(25, 4), F(15, 4)),
        "P2": (F(29, 5), F(21, 5)),
        "P3": (F(39, 5), F(7)),
    }
    for name, (top, after) in expected.items():
        g = PARAMETER_SETS[name]
        assert g.U1_star == top == equilibrium(g, g.alpha_star).seller
        assert equilibrium(g, g.alpha_star + F(1, 10**6)).seller == after
        assert (
            g.U1_star
            == g.alpha_star * g.full_extraction + (1 - g.alpha_star) * equilibrium(g, 0).seller
        )
    assert P0.n * P0.U1_star == F(175, 2)


def test_corollary2_orderings_p0_p1():
    # Corollary 2's orderings for the thesis profile; in equilibrium the regime B buyer gets 0
    for g, (s, h) in (
        (P0, ((8.75, 7.5, 6.25), (2.5, 0, 0))),
        (P1, ((6.25, 5, 3.75), (5, 2.5, 2.5))),
    ):
        star = g.alpha_star
        assert tuple(float(equilibrium(g, a).seller) for a in (star, 0, 1)) == s
        order = (1, 0, star) if g.regime == "B" else (0, 1, star)
        assert tuple(float(equilibrium(g, a, "thesis").high_buyer) for a in order) == h
    assert tuple(float(equilibrium(P0, a).high_buyer) for a in (1, 0, P0.alpha_star)) == (0, 0, 0)


def test_regime_b_strategic_seller_is_indifferent():
    # aware = blind under strategic buyers, and U_S(q*; 1, b) is flat in b
    for g in (P0, P3):
        q = g.q_star
        assert seller_utility(g, q, 1, 0) == seller_utility(g, q, 1, 1)
        assert seller_utility(g, q, 1, F(1, 3)) == seller_utility(g, q, 1, 0)


def test_utility_curves_match_scalar_equilibrium():
    alphas = np.linspace(0, 1, 11)
    curves = utility_curves(P0, alphas)
    assert (
        curves["seller"][0] == 7.5 and curves["seller"][5] == 8.75 and curves["seller"][-1] == 6.25
    )
    assert curves["high_buyer"][-1] == 0
    assert utility_curves(P0, alphas, "thesis")["high_buyer"][-1] == 2.5


def test_workhorse_sympy_expression_matches_numeric_twin():
    rng = np.random.default_rng(0)
    f = sp.lambdify((Q_H, Q_L, A, B, *SYMBOLS._numbers()), U_S_EXPR, "numpy")
    q_h, q_l, a, b = rng.random((4, 200))
    g = P3.numeric()
    np.testing.assert_allclose(
        f(q_h, q_l, a, b, *g._numbers()), seller_utility(g, q_h, a, b, q_l), rtol=1e-12
    )
    h = sp.lambdify((Q_H, A, B, *SYMBOLS._numbers()), U_H_EXPR, "numpy")
    np.testing.assert_allclose(h(q_h, a, b, *g._numbers()), high_buyer_utility(g, q_h, a, b))


def test_validation_and_assumption_warning():
    with pytest.raises(ValueError, match="mu"):
        PDGame(1.2, 5, 15, 5, 5)
    with pytest.raises(ValueError, match="theta_high"):
        PDGame(0.5, 5, 4, 1, 1)
    with pytest.raises(ValueError, match="c_s"):
        PDGame(0.5, 5, 15, 1, -1)
    with pytest.raises(ValueError, match="n"):
        PDGame(0.5, 5, 15, 1, 1, n=0)
    with pytest.raises(ValueError, match="convention"):
        equilibrium(P0, 0.5, "other")
    with pytest.raises(ValueError, match="alpha"):
        equilibrium(P0, 1.5)
    with pytest.warns(AssumptionWarning):
        g = PDGame(0.5, 5, 15, 12, 5)
    assert equilibrium(g, 1).profile.q_high == 0  # buyers always truthful


def test_one_shot_monte_carlo_matches_formula():
    # n = 10 buyers, 10^5 rounds of the P0 game at alpha = 3/4, one price per class (thesis profile)
    rng = np.random.default_rng(3)
    g, alpha, rounds = P0.numeric(), 0.75, 100_000
    eq = equilibrium(g, alpha, "thesis")
    high = rng.random((rounds, g.n)) < g.mu
    evade = high & (rng.random((rounds, g.n)) < eq.profile.q_high)
    aware = rng.random((rounds, 1)) < alpha
    signal_high = high & ~evade
    price = np.where(aware & ~signal_high, g.theta_low, g.theta_high)  # blind price is theta_H
    value = np.where(high, g.theta_high, g.theta_low)
    seller = ((price <= value) * price - g.c_s * evade).mean(axis=1)
    se = seller.std(ddof=1) / np.sqrt(rounds)
    assert abs(seller.mean() - eq.seller) < 3 * se


@given(
    st.fractions(F(1, 20), F(19, 20)),
    st.fractions(1, 20),
    st.fractions(F(1, 4), 20),
    st.fractions(F(1, 20), F(19, 20)),
    st.fractions(F(1, 10), 10),
)
def test_corollary2_on_random_games(mu, low, gap, cb_share, c_s):
    g = PDGame(mu, low, low + gap, gap * cb_share, c_s)
    star = g.alpha_star
    s0, ss, s1 = (equilibrium(g, a).seller for a in (0, star, 1))
    assert ss > s0 > s1
    h0, hs, h1 = (equilibrium(g, a, "thesis").high_buyer for a in (0, star, 1))
    assert (h0 > h1 == hs) if g.regime == "A" else (h1 > h0 == hs)
    h0, hs, h1 = (equilibrium(g, a).high_buyer for a in (0, star, 1))
    assert (h0 > h1 == hs) if g.regime == "A" else (h1 == h0 == hs == 0)
    # PD is a best response to truthful and to strategic buyers (Prop 7's zero regret)
    for q in (0, g.q_star):
        assert seller_utility(g, q, 1, 0) == max(
            seller_utility(g, q, a, b) for a, b in VERTICES.values()
        )


@given(st.floats(0, 1), st.floats(0, 1))
def test_lemma30_alpha_dominates_a_minus_b(a, b):
    assert alpha_of(a, b) >= a - b - 1e-15


def test_q_bar_where_mu_delta_underflows() -> None:
    """q_bar = (1 - mu) theta_low / (mu delta) also where mu * delta is 0 in floating point."""
    from games.price_discrimination.game import PDGame

    g = PDGame(mu=5e-324, theta_low=1e-300, theta_high=1e-300 + 1e-30, c_b=0.0, c_s=0.0)
    exact = (1 - F(5e-324)) * F(1e-300) / (F(5e-324) * (F(g.theta_high) - F(1e-300)))
    assert g.q_bar == pytest.approx(float(exact), rel=1e-9)
    assert g.q_star == 1
    tiny = PDGame(mu=5e-324, theta_low=0.0, theta_high=5e-324, c_b=0.0, c_s=0.0)
    assert tiny.q_bar == 0.0


@pytest.mark.parametrize("mu", [5e-324, 1e-300])
def test_regime_is_decided_exactly_when_mu_theta_high_underflows(mu):
    """theta_low = 0 < mu * theta_high holds for any mu > 0 (regime B), though the float
    product 5e-324 * 0.5 rounds to 0; the strict equilibrium then leaves the high buyer
    nothing to gain."""
    from games.price_discrimination.equilibrium import high_buyer_deviation_gain

    g = PDGame(mu, 0.0, 0.5, 0.0, 0.0)
    assert g.regime == "B" and g.blind_price_high
    assert high_buyer_deviation_gain(g, 1.0, "strict") == 0.0
