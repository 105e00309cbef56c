"""Theorem 6 of Werner (2024), ch. 4, checkable: the one-shot game's equilibrium.

Holds the registered statements about the one-shot game's equilibrium: the profile of
Theorem 6 and its corrected form, the sellers' indifference, and uniqueness. The pricing and
buying rules of Theorem 6 and its proof (the blind seller's price, the buying rule at a tie,
the display f(p)) are in :mod:`games.price_discrimination.theorem6_rules_propositions`.

References
----------
Werner (2024), PhD thesis, ch. 4, section 4.2 (pp. 83-88), Theorem 6, and its proof in
section 4.7 (pp. 98-109).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import sympy as sp

from econ.propositions import (
    Kind,
    Verdict,
    checked,
    on_points,
    proposition,
    proved,
    refuted,
)
from games.price_discrimination.certificate import certify
from games.price_discrimination.checked_games import (
    ALPHAS_DRAWN,
    GAMES,
    GAMES_DRAWN,
    alpha_grid,
    assumption1,
)
from games.price_discrimination.equilibrium import Profile, equilibrium_profile
from games.price_discrimination.game import PDGame, high_buyer_utility, posterior_after_low
from games.price_discrimination.propositions import S42, S47, F
from games.price_discrimination.symbolic_regimes import regime_game, regime_instance


def _printed_aware_b(game: PDGame, alpha: Fraction) -> Any:
    """Theorem 6(c): the aware seller charges theta_L after s_L, so P(theta_H | s_L) = 0."""
    return 0


def _equilibrium_aware_b(game: PDGame, alpha: Fraction) -> Any:
    """Correction: in regime B above alpha* the aware seller charges theta_L w.p. alpha*/alpha."""
    return equilibrium_profile(game, alpha).aware_b


def _theorem6_profile(game: PDGame, alpha: Fraction, aware_b: Callable[..., Any]) -> Profile:
    """Theorem 6 (a)-(d) as printed, with the aware seller's low-signal price from ``aware_b``."""
    q_star = min(1, (1 - game.mu) * game.theta_low / (game.mu * (game.theta_high - game.theta_low)))
    q = q_star if alpha > game.c_b / (game.theta_high - game.theta_low) else 0
    blind_high = 0 if game.theta_low >= game.mu * game.theta_high else 1
    return Profile(q, 0, 1, aware_b(game, alpha), blind_high)


def _pbne_points() -> list[dict[str, Any]]:
    return [{"game": name, "alpha": str(a)} for name, g in GAMES.items() for a in alpha_grid(g)]


@proposition(
    "thesis.ch4.thm6",
    source=f"{S42}, Theorem 6",
    statement="the profile (a)-(e) (high types evade w.p. q* iff alpha > c_B/Delta, the aware "
    "seller prices s_L -> theta_L and s_H -> theta_H, the blind seller theta_L iff theta_L >= "
    "mu theta_H) is a perfect Bayes Nash equilibrium of the PD game",
    holds=False,
    perturb={"aware_b": _equilibrium_aware_b},
)
def _thm6(aware_b: Callable[..., Any] = _printed_aware_b) -> Verdict:
    def is_pbne(game: str, alpha: str) -> bool:
        g = GAMES[game]
        return certify(g, F(alpha), _theorem6_profile(g, F(alpha), aware_b)).is_equilibrium

    verdict = on_points(
        is_pbne,
        _pbne_points(),
        "no pure deviation gains at any information set (brute-force certificate)",
        drawn=f"{GAMES_DRAWN}, each at {ALPHAS_DRAWN}",
        hypothesis=assumption1,
    )
    if verdict.holds or verdict.counterexample is None:
        return verdict
    name, alpha = verdict.counterexample["game"], F(verdict.counterexample["alpha"])
    g = GAMES[name]
    cert = certify(g, alpha, _theorem6_profile(g, alpha, aware_b))
    dev = cert.violations[0]
    return refuted(
        f"{dev.player} gains {dev.gain} by deviating: in regime {g.regime} with alpha = {alpha} > "
        f"alpha* = {g.alpha_star} the aware seller charges theta_L after s_L for sure, so the high "
        "buyer earns alpha Delta - c_B > 0 from s_L and 0 from s_H and strictly prefers to evade "
        "always, not w.p. q*. The game satisfies Assumption 1 (c_B < Delta)",
        {
            "game": name,
            "mu": str(g.mu),
            "theta_L": str(g.theta_low),
            "theta_H": str(g.theta_high),
            "c_B": str(g.c_b),
            "c_S": str(g.c_s),
            "alpha": str(alpha),
            "player": dev.player,
            **{k: str(v) for k, v in dev.payoffs.items()},
            "prescribed": str(dev.prescribed),
        },
    )


def _r_star(star: Any, alpha: Any) -> Any:
    return star / alpha


@proposition(
    "thesis.ch4.thm6.corrected",
    source=f"{S42}, Theorem 6(c), the aware seller's price theta_L after s_L; {S47}, proof of "
    "Theorem 6, p_signal aware(s_L) = theta_L; docs/errata.md, thesis.ch4.thm6",
    statement="the equilibrium is Theorem 6's profile except that in regime B (theta_L < mu "
    "theta_H) with alpha > alpha* the aware seller charges theta_L after s_L w.p. r* = "
    "alpha*/alpha (else theta_H); Theorem 6's own profile is an equilibrium iff theta_L >= mu "
    "theta_H or alpha <= alpha*",
    perturb={"r_star": lambda star, alpha: (star + alpha) / (2 * alpha)},
)
def _thm6_corrected(r_star: Callable[[Any, Any], Any] = _r_star) -> Verdict:
    def aware_b(game: PDGame, alpha: Fraction) -> Any:
        if game.regime == "B" and alpha > game.alpha_star:
            return 1 - r_star(game.alpha_star, alpha)
        return 0

    def holds(game: str, alpha: str) -> bool:
        g, a = GAMES[game], F(alpha)
        corrected = certify(g, a, _theorem6_profile(g, a, aware_b)).is_equilibrium
        printed = certify(g, a, _theorem6_profile(g, a, _printed_aware_b)).is_equilibrium
        return corrected and printed == (g.regime == "A" or a <= g.alpha_star)

    return on_points(
        holds,
        _pbne_points(),
        "brute-force best responses at every information set, both profiles",
        drawn=f"{GAMES_DRAWN}, each at {ALPHAS_DRAWN}",
        hypothesis=assumption1,
    )


@proposition(
    "thesis.ch4.thm6.indifference",
    source=f"{S47}, proof of Theorem 6 (the seller's best response after s_L)",
    statement="at q = q_bar = (1-mu) theta_L/(mu Delta) the aware seller is indifferent after s_L "
    "(theta_L = mu_hat theta_H), and with r* = alpha*/alpha the high buyer is indifferent "
    "between s_L and s_H (regime B): this is what makes the corrected profile an equilibrium",
    kind=Kind.DERIVED,
    perturb={"r_star": lambda star, alpha: star / alpha**2},
)
def _thm6_indifference(r_star: Callable[[Any, Any], Any] = _r_star) -> Verdict:
    game, q_bar = regime_game("B")
    seller_gap = game.theta_low - posterior_after_low(game, q_bar) * game.theta_high
    alpha = sp.Symbol("alpha", positive=True)
    b = 1 - r_star(game.c_b / game.delta, alpha)  # aware P(theta_H | s_L); blind price theta_H
    a_eff, b_eff = 1, alpha * b + (1 - alpha)
    buyer_gap = high_buyer_utility(game, 1, a_eff, b_eff) - high_buyer_utility(
        game, 0, a_eff, b_eff
    )
    total = sp.cancel(sp.together(seller_gap**2 + buyer_gap**2))
    if total == 0:
        return proved(
            "theta_L - mu_hat(q_bar) theta_H and U_H(s_L) - U_H(s_H) simplify to 0 for every "
            "regime B game and alpha"
        )
    point = {**regime_instance("B"), alpha: sp.Rational(3, 4)}
    return refuted(
        "the high buyer is not indifferent",
        {
            **{str(k): str(v) for k, v in point.items()},
            "U_H(s_L) - U_H(s_H)": str(sp.nsimplify(buyer_gap.subs(point))),
        },
    )


def _other_equilibria(name: str, alpha: Fraction) -> list[dict[str, float]]:
    """Profiles other than :func:`equilibrium_profile`'s that the certificate accepts.

    Searched over the high type's evasion rate q on a grid of 11 plus q*, the aware seller's
    P(theta_H | s_L) on a grid of 11 plus 1 - alpha*/alpha, the blind seller's P(theta_H) in
    {0, 1/2, 1}; the low type is truthful and the aware seller charges theta_H after s_H (both
    strictly dominant on path; off path the proof's belief that s_H comes from a high type).
    """
    g = GAMES[name].numeric()
    a = float(alpha)
    eq = equilibrium_profile(g, a)
    grid = [i / 10 for i in range(11)]
    qs = sorted(set(grid) | {float(g.q_star)})
    bs = sorted(set(grid) | {float(eq.aware_b)})
    found = []
    for q in qs:
        for b in bs:
            for blind in (0.0, 0.5, 1.0):
                candidate = Profile(q, 0, 1, b, blind)
                same = (q, b, blind) == (float(eq.q_high), float(eq.aware_b), float(eq.blind_high))
                if not same and certify(g, a, candidate, tol=1e-9).is_equilibrium:
                    found.append({"q": q, "aware_b": b, "blind_high": blind})
    return found


def _uniqueness(exclude_ties: bool) -> Verdict:
    names = ["P0", "P1", "P2", "P3", *[f"random{i}" for i in range(4)]]
    points = [{"game": n, "alpha": str(a)} for n in names for a in alpha_grid(GAMES[n])]

    def tie(game: str, alpha: str) -> bool:
        g = GAMES[game]
        return F(alpha) == g.alpha_star or g.theta_low == g.mu * g.theta_high

    verdict = on_points(
        lambda game, alpha: not _other_equilibria(game, F(alpha)),
        points,
        "no other profile of the searched family is an equilibrium",
        drawn=f"P0-P3 (P1 on the boundary theta_L = mu theta_H) and 4 seeded random games, each "
        f"at {ALPHAS_DRAWN}; per point 432 candidate profiles (q and the aware seller's "
        "P(theta_H | s_L) on grids of 11 plus q* and 1 - alpha*/alpha, blind P(theta_H) in "
        "{0, 1/2, 1})",
        hypothesis=lambda game, alpha: (
            assumption1(game) and not (exclude_ties and tie(game, alpha))
        ),
    )
    if verdict.holds or verdict.counterexample is None:
        return verdict
    name, alpha = verdict.counterexample["game"], F(verdict.counterexample["alpha"])
    other = _other_equilibria(name, alpha)
    return refuted(
        f"another equilibrium exists at alpha = {alpha} (alpha* = {GAMES[name].alpha_star}): at "
        "alpha = alpha* the high buyer is indifferent between s_L and s_H, and on the boundary "
        "theta_L = mu theta_H the blind seller is indifferent between its prices; Assumption 1 "
        "holds",
        {**verdict.counterexample, "other_equilibria": other[:3], "count": len(other)},
    )


@proposition(
    "thesis.ch4.thm6.unique",
    source=f"{S42}, Theorem 6 ('the following unique perfect Bayes Nash equilibrium')",
    statement="the PD game has a unique perfect Bayes Nash equilibrium (for every alpha and "
    "every parameter set)",
    holds=False,
    perturb={"exclude_ties": True},
)
def _thm6_unique(exclude_ties: bool = False) -> Verdict:
    return _uniqueness(exclude_ties)


@proposition(
    "thesis.ch4.thm6.unique.corrected",
    source=f"{S42}, Theorem 6; docs/errata.md, thesis.ch4.thm6.unique",
    statement="for alpha != alpha* and theta_L != mu theta_H the equilibrium (docs/errata.md, "
    "thesis.ch4.thm6.corrected) is unique, with the off-path belief that s_H comes from a high "
    "type; at alpha = alpha* every evasion rate q in [0, q*] is an equilibrium, at theta_L = "
    "mu theta_H every blind price mix",
    perturb={"exclude_ties": False},
)
def _thm6_unique_corrected(exclude_ties: bool = True) -> Verdict:
    verdict = _uniqueness(exclude_ties)
    if not verdict.holds:
        return verdict
    ties = []
    for name in ("P0", "P1", "P2", "P3"):
        g = GAMES[name].numeric()
        star, rule = float(g.alpha_star), float(g.blind_price_high)
        for i in range(11):
            q = float(g.q_star) * i / 10
            ties.append({"game": name, "alpha": star, "q": q, "blind": rule})
        if g.theta_low == g.mu * g.theta_high:
            for a in (0.0, star / 2, 1.0):
                eq = equilibrium_profile(g, a)
                ties += [
                    {"game": name, "alpha": a, "q": float(eq.q_high), "blind": x}
                    for x in (0.0, 0.5, 1.0)
                ]
    tie_verdict = on_points(
        lambda game, alpha, q, blind: (
            certify(
                GAMES[game].numeric(), alpha, Profile(q, 0, 1, 0, blind), tol=1e-9
            ).is_equilibrium
        ),
        ties,
        "at alpha = alpha* each q in [0, q*] and on the boundary each blind mix is an equilibrium",
        drawn="P0-P3 at alpha*, q = q* i/10 for i = 0..10; P1 (boundary) at alpha in {0, "
        "alpha*/2, 1} with blind P(theta_H) in {0, 1/2, 1}",
    )
    if not tie_verdict.holds:
        return tie_verdict
    return checked(
        f"{verdict.evidence}; and {tie_verdict.evidence}",
        (verdict.n_points or 0) + (tie_verdict.n_points or 0),
        drawn=f"{verdict.drawn}; {tie_verdict.drawn}",
    )
