"""The brute-force best-response certificate (Theorem 6, section 4.2)."""

from fractions import Fraction as F

from hypothesis import given
from hypothesis import strategies as st

from games.price_discrimination.certificate import certify
from games.price_discrimination.equilibrium import equilibrium_profile
from games.price_discrimination.game import PARAMETER_SETS, PDGame

P0, P3 = PARAMETER_SETS["P0"], PARAMETER_SETS["P3"]


def _cert(game, alpha, convention):
    return certify(game, alpha, equilibrium_profile(game, alpha, convention))


def test_thesis_profile_fails_exactly_for_the_high_buyer_in_regime_b_above_alpha_star():
    for game, alpha, deviation in ((P0, F(3, 4), F(5, 2)), (P0, F(1), 5), (P3, F(1, 2), 1)):
        cert = _cert(game, alpha, "thesis")
        assert not cert.is_equilibrium
        assert [v.player for v in cert.violations] == ["high_buyer"]
        assert cert.by_player("high_buyer").payoffs == {"s_high": 0, "s_low": deviation}
        assert _cert(game, alpha, "strict").is_equilibrium


def test_thesis_profile_passes_in_regime_a_and_below_alpha_star():
    for name in ("P1", "P2"):
        g = PARAMETER_SETS[name]
        for alpha in (F(0), g.alpha_star, F(3, 4), F(1)):
            assert _cert(g, alpha, "thesis").is_equilibrium
    for alpha in (F(0), F(1, 4), F(1, 2)):
        assert _cert(P0, alpha, "thesis").is_equilibrium


def test_a_wrong_profile_is_caught():
    profile = equilibrium_profile(P0, F(1, 4))
    bad = type(profile)(q_high=0, q_low=0, aware_a=1, aware_b=1, blind_high=0)
    players = {v.player for v in certify(P0, F(1, 4), bad).violations}
    assert players == {"aware_seller_after_s_low", "blind_seller"}


@given(
    st.fractions(F(1, 20), F(19, 20)),
    st.fractions(1, 20),
    st.fractions(F(1, 4), 20),
    st.fractions(F(1, 20), F(19, 20)),
    st.fractions(0, 10),
    st.fractions(0, 1),
)
def test_strict_profile_is_an_equilibrium_everywhere(mu, low, gap, cb_share, c_s, alpha):
    game = PDGame(mu, low, low + gap, gap * cb_share, c_s)
    assert _cert(game, alpha, "strict").is_equilibrium
    thesis_ok = _cert(game, alpha, "thesis").is_equilibrium
    assert thesis_ok == (game.regime == "A" or alpha <= game.alpha_star)


def test_sellers_may_also_not_sell():
    # the seller prices on the positive reals: above theta_high nobody buys and it earns 0
    cert = _cert(P0, F(3, 4), "strict")
    for player in ("aware_seller_after_s_low", "aware_seller_after_s_high", "blind_seller"):
        assert cert.by_player(player).payoffs["no_sale"] == 0
    costly = PDGame(F(1, 2), F(5), F(15), F(5), F(100))  # evasion costs the seller 100
    assert _cert(costly, F(3, 4), "strict").is_equilibrium  # sunk when it prices
