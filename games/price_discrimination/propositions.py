"""Chapter 4's theorem, corollaries, propositions and lemmas as registered, checkable objects.

Werner (2024), PhD thesis, Chapter 4 ("Privacy Dynamics in Systems of Learning Agents"):
Theorem 6 and Corollaries 2-3 in section 4.2 (pp. 83-88), Lemma 26 and Propositions 6-10 with
Lemmas 27-29 in section 4.3 (pp. 88-94), the proofs and Lemma 30 in section 4.7 (pp. 98-109).

Each check takes the printed pieces of its statement (a formula, a threshold, a hypothesis) as
keyword arguments whose defaults are the printed ones. Statements about limits of the
repeated game are checked through deterministic finite-horizon inequalities that sympy proves
for every sequence of play, and through simulations of the one step a limit needs (that the
buyers' beliefs track the seller's rate of price discrimination); the evidence says which
part is proved and which is sampled.

This module holds the sources the statements cite and Corollaries 2-3; the games, awareness
levels and repeated-play runs they are checked on are in
:mod:`games.price_discrimination.checked_games`, the symbolic regimes and sympy's proofs of
sign in :mod:`games.price_discrimination.symbolic_regimes`. Theorem 6 is in
:mod:`games.price_discrimination.theorem6_propositions` (its pricing and buying rules in
:mod:`games.price_discrimination.theorem6_rules_propositions`), Lemma 26 and Proposition 6 in
:mod:`games.price_discrimination.belief_propositions`, Proposition 7 and Lemmas 27, 28 and 30
in :mod:`games.price_discrimination.one_round_propositions`, Lemma 29 and Propositions 8 and 10
in :mod:`games.price_discrimination.regret_propositions`, Proposition 9 and the commitment of
Proposition 10's proof in :mod:`games.price_discrimination.commitment_propositions`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from operator import attrgetter
from typing import Any

import sympy as sp

from econ.propositions import (
    Kind,
    Verdict,
    on_points,
    proposition,
    proved,
    refuted,
)
from games.price_discrimination.certificate import certify
from games.price_discrimination.checked_games import GAMES, GAMES_DRAWN, assumption1
from games.price_discrimination.equilibrium import Equilibrium, Profile, equilibrium
from games.price_discrimination.game import (
    C_B,
    C_S,
    MU,
    PARAMETER_SETS,
    SYMBOLS,
    THETA_H,
    THETA_L,
    PDGame,
    high_buyer_utility,
    seller_utility,
)

F = Fraction


SRC = "Werner (2024), PhD thesis, ch. 4"


S42 = f"{SRC}, section 4.2 (pp. 83-88)"


S43 = f"{SRC}, section 4.3 (pp. 88-94)"


S47 = f"{SRC}, section 4.7 (pp. 98-109)"


_RELATIONS: dict[str, Callable[[Any, Any], bool]] = {
    ">": lambda x, y: bool(x > y),
    "=": lambda x, y: bool(x == y),
}


#: Corollaries 2 and 3 compare the seller's utility at alpha* with that on the grid
#: alpha = i/_GRID (and, for Corollary 3, at alpha* +- 1/1000): a changed commitment or
#: ordering fails on it.
_GRID = 20


@functools.lru_cache(maxsize=None, typed=True)
def _equilibrium_at(game: str, alpha: Any, convention: str = "strict") -> Equilibrium:
    """:func:`equilibrium` of the named game of ``GAMES``, computed once per process.

    Exact and immutable (frozen dataclasses of fractions), so the checks of Corollaries 2
    and 3 and their perturbed runs share the alphas their grids have in common.
    """
    return equilibrium(GAMES[game], alpha, convention)


@functools.lru_cache(maxsize=None, typed=True)
def _certified_at(game: str, alpha: Any, convention: str = "strict") -> bool:
    """Whether the profile of :func:`_equilibrium_at` passes :func:`certify` (once per process)."""
    profile = _equilibrium_at(game, alpha, convention).profile
    return certify(GAMES[game], alpha, profile).is_equilibrium


def _cor2(buyer_b: str, convention: str, needs_equilibrium: bool) -> Verdict:
    """Corollary 2's orderings at alpha in {0, alpha*, 1} and the maximum over a grid.

    ``buyer_b`` is the relation between u_B(1) and u_B(0) in part (b); ``convention`` picks the
    profile whose utilities are compared; with ``needs_equilibrium`` every profile used is first
    certified as an equilibrium.
    """
    relation = _RELATIONS[buyer_b]

    def holds(game: str) -> bool:
        g = GAMES[game]
        star = g.alpha_star
        grid = sorted({F(i, _GRID) for i in range(_GRID + 1)} | {star})
        eqs = {x: _equilibrium_at(game, x, convention) for x in grid}
        if needs_equilibrium and not all(_certified_at(game, x, convention) for x in eqs):
            raise AssertionError(f"{game}: a profile used is not an equilibrium")
        s0, ss, s1 = (eqs[x].seller for x in (F(0), star, F(1)))
        seller = ss > s0 > s1 and max(e.seller for e in eqs.values()) == ss
        h0, hs, h1 = (eqs[x].high_buyer for x in (F(0), star, F(1)))
        if g.regime == "A":
            buyer = h0 > h1 == hs
        else:
            buyer = relation(h1, h0) and h0 == hs
        low_zero = all(e.low_buyer == 0 for e in eqs.values())
        return bool(seller and buyer and low_zero)

    return on_points(
        holds,
        [{"game": name} for name in GAMES],
        "u_S(alpha*) > u_S(0) > u_S(1), u_S maximal at alpha* on a grid of 21 alphas, the high "
        "buyer's ordering of (a)/(b), low buyers 0",
        drawn=GAMES_DRAWN,
        hypothesis=lambda game: assumption1(game) and GAMES[game].c_s > 0,
    )


_WHICH = (
    "(at alpha = alpha* the truthful equilibrium q = 0 that Theorem 6 prints; on theta_L = mu "
    "theta_H the blind price theta_L of Theorem 6(d); the ranges over all equilibria there are "
    "in the evidence)"
)


def _cor2_ties() -> str:
    """Corollary 2's utilities over every equilibrium where Theorem 6's is not unique.

    At alpha = alpha* each evasion rate q in [0, q*] is an equilibrium, on theta_L = mu theta_H
    each blind price mix (``thesis.ch4.thm6.unique.corrected``). Each profile is certified;
    the ranges of u_S(alpha*), u_B(alpha*) and, on the boundary, u_B(0) and u_S(0) are
    reported with the games where an ordering of Corollary 2 fails at the other end.
    """
    named: list[str] = []
    fails_star: list[str] = []
    boundary: list[str] = []
    for name, g in GAMES.items():
        if not (assumption1(name) and g.c_s > 0):
            continue
        star, blind = g.alpha_star, equilibrium(g, 0).profile.blind_high
        eq0, eq1 = equilibrium(g, F(0)), equilibrium(g, F(1))
        u_s, u_b = [], []
        for i in range(11):
            q = g.q_star * F(i, 10)
            prof = Profile(q, 0, 1, 0, blind)
            if not certify(g, star, prof).is_equilibrium:
                raise AssertionError(f"{name}: q = {q} at alpha* is not an equilibrium")
            a, b = prof.marginals(star)
            u_s.append(seller_utility(g, q, a, b, 0))
            u_b.append(high_buyer_utility(g, q, a, b))
        if not min(u_s) > eq0.seller > eq1.seller:
            fails_star.append(name)
        if name in PARAMETER_SETS:
            named.append(
                f"{name}: u_S(alpha*) in [{min(u_s)}, {max(u_s)}] (u_S(0) = {eq0.seller}, "
                f"u_S(1) = {eq1.seller}), u_B(alpha*) in [{min(u_b)}, {max(u_b)}]"
            )
        if g.theta_low == g.mu * g.theta_high:
            u_b, u_s0 = [], []
            for x in (F(0), F(1, 2), F(1)):
                prof = Profile(0, 0, 1, 0, x)
                if not certify(g, F(0), prof).is_equilibrium:
                    raise AssertionError(
                        f"{name}: blind mix {x} at alpha = 0 is not an equilibrium"
                    )
                a, b = prof.marginals(F(0))
                u_b.append(high_buyer_utility(g, 0, a, b))
                u_s0.append(seller_utility(g, 0, a, b, 0))
            boundary.append(
                f"{name}: u_B(0) in [{min(u_b)}, {max(u_b)}] and u_S(0) in [{min(u_s0)}, "
                f"{max(u_s0)}] over the blind mixes P(theta_H) in {{0, 1/2, 1}} (u_B(0) > "
                f"u_B(1) = {eq1.high_buyer} {'fails' if min(u_b) <= eq1.high_buyer else 'holds'} "
                "at P(theta_H) = 1)"
            )
    return (
        f"which equilibrium: {_WHICH[1:-1]}. Over all equilibria at alpha = alpha* (q = q* i/10, "
        f"i = 0..10, each certified): {'; '.join(named)}; the high buyer is indifferent, so "
        f"u_B(alpha*) is one value per game; at q = q* the ordering u_S(alpha*) > u_S(0) > "
        f"u_S(1) fails in {len(fails_star)} of the games "
        f"({', '.join(fails_star[:4])}{', ...' if len(fails_star) > 4 else ''}), so the "
        "seller's maximum at alpha* is that of the truthful equilibrium only. On the boundary: "
        + ("; ".join(boundary) if boundary else "no boundary game")
    )


@proposition(
    "thesis.ch4.cor2",
    source=f"{S42}, Corollary 2",
    statement="at the equilibrium: u_S is maximised at alpha*, u_S(alpha*) > u_S(0) > u_S(1); "
    "(a) theta_L >= mu theta_H: u_B(0) > u_B(1) = u_B(alpha*); (b) theta_L < mu theta_H: "
    f"u_B(1) > u_B(0) = u_B(alpha*); low-type buyers earn 0 {_WHICH}",
    holds=False,
    perturb={"buyer_b": "="},
)
def _cor2_check(buyer_b: str = ">") -> Verdict:
    verdict = _cor2(buyer_b, "strict", needs_equilibrium=True)
    if verdict.holds or verdict.counterexample is None:
        return verdict
    g = GAMES[verdict.counterexample["game"]]
    values = {f"u_B({x})": str(equilibrium(g, F(x)).high_buyer) for x in ("0", "1")}
    return refuted(
        "(b) fails at the equilibrium (certified at every alpha used): for alpha > alpha* the "
        "high buyer evades w.p. q* and is indifferent, so u_B(1) = 0 = u_B(0); the printed "
        "u_B(1) = q*(Delta - c_B) > 0 is the payoff of Theorem 6's profile, which is not an "
        "equilibrium there (docs/errata.md, thesis.ch4.thm6). Assumption 1 and c_S > 0 hold",
        {
            **verdict.counterexample,
            "mu": str(g.mu),
            "theta_L": str(g.theta_low),
            "theta_H": str(g.theta_high),
            "c_B": str(g.c_b),
            "c_S": str(g.c_s),
            **values,
        },
    )


@proposition(
    "thesis.ch4.cor2.corrected",
    source=f"{S42}, Corollary 2(b), u_B(1) > u_B(0) = u_B(alpha*); {S47}, proof of Corollary 2, "
    "u_B | seller is signal aware for theta_L < mu theta_H; docs/errata.md, thesis.ch4.cor2",
    statement="at the equilibrium, with c_S > 0: the seller's orderings and (a) as printed; "
    f"(b) theta_L < mu theta_H: u_B(1) = u_B(0) = u_B(alpha*) = 0 {_WHICH}",
    perturb={"buyer_b": ">"},
)
def _cor2_corrected(buyer_b: str = "=") -> Verdict:
    verdict = _cor2(buyer_b, "strict", needs_equilibrium=True)
    if not verdict.holds:
        return verdict
    return replace(verdict, evidence=f"{verdict.evidence}; {_cor2_ties()}")


@proposition(
    "thesis.ch4.cor2.thesis_profile",
    source=f"{S42}, Corollary 2 and Figure 4.1, evaluated at Theorem 6's profile as the proof "
    f"of Corollary 2 ({S47}) does",
    statement="the printed orderings of Corollary 2, (b) included, hold for the utilities of "
    "Theorem 6's profile (not an equilibrium for alpha > alpha* when theta_L < mu theta_H); "
    "with c_S > 0",
    kind=Kind.DERIVED,
    perturb={"buyer_b": "="},
)
def _cor2_thesis_profile(buyer_b: str = ">") -> Verdict:
    return _cor2(buyer_b, "thesis", needs_equilibrium=False)


_S = sp.Symbol("S")  # the indicator 1(alpha > c_B/Delta): 1 strategic, 0 truthful


def _printed_seller_forms(blind_b_evader_pays: Any = THETA_H) -> dict[tuple[str, str], Any]:
    """u_S | seller type, as printed in the proof of Corollary 2 (eq. 4.6).

    With S = 1(alpha > alpha*).
    """
    q = (1 - MU) * THETA_L / (MU * (THETA_H - THETA_L))
    return {
        ("A", "blind"): (1 - MU) * THETA_L + MU * ((THETA_L - C_S) * _S + THETA_L * (1 - _S)),
        ("A", "aware"): (1 - MU) * THETA_L + MU * ((THETA_L - C_S) * _S + THETA_H * (1 - _S)),
        ("B", "blind"): (1 - MU) * 0
        + MU * ((blind_b_evader_pays - C_S) * q * _S + THETA_H * (1 - q) * _S + THETA_H * (1 - _S)),
        ("B", "aware"): (1 - MU) * THETA_L
        + MU * ((THETA_L - C_S) * q * _S + THETA_H * (1 - q) * _S + THETA_H * (1 - _S)),
    }


def _printed_buyer_forms(aware_indicator: str = "<=") -> dict[tuple[str, str], Any]:
    """u_B | seller type, as printed in the proof of Corollary 2 (eq. 4.5)."""
    q = (1 - MU) * THETA_L / (MU * (THETA_H - THETA_L))
    delta = THETA_H - THETA_L
    aware = (1 - _S) if aware_indicator == "<=" else _S  # printed: 1(alpha <= c_B/Delta)
    return {
        ("A", "blind"): (delta - C_B) * _S + delta * (1 - _S),
        ("A", "aware"): (delta - C_B) * aware,
        ("B", "blind"): -C_B * q * _S,
        ("B", "aware"): (delta - C_B) * q * aware,
    }


def _forms_against_profile(
    forms: dict[tuple[str, str], Any], utility: Callable[..., Any], what: str
) -> Verdict:
    """Compare each printed conditional utility with the one Theorem 6's profile gives."""
    q_bar = SYMBOLS.q_bar
    examples = {"A": "P2", "B": "P0"}
    for (regime, seller), printed in forms.items():
        for s in (0, 1):
            q = (1 if regime == "A" else q_bar) * s
            blind_high = 1 if regime == "B" else 0
            a, b = (1, 0) if seller == "aware" else (blind_high, blind_high)
            actual = utility(SYMBOLS, q, a, b)
            diff = sp.cancel(sp.together(printed.subs(_S, s) - actual))
            if diff == 0:
                continue
            g = PARAMETER_SETS[examples[regime]]
            subs = {MU: g.mu, THETA_L: g.theta_low, THETA_H: g.theta_high, C_B: g.c_b, C_S: g.c_s}
            return refuted(
                f"{what}: the {seller} seller's branch with alpha {'>' if s else '<='} alpha* "
                f"differs in regime {regime}",
                {
                    "game": examples[regime],
                    "regime": regime,
                    "seller": seller,
                    "alpha > alpha*": bool(s),
                    "printed": str(printed.subs(_S, s).subs(subs)),
                    "Theorem 6's profile gives": str(sp.nsimplify(actual.subs(subs))),
                },
            )
    return proved(
        f"{what}: all 8 branches (2 regimes x 2 seller types x alpha vs alpha*) "
        "equal the utilities of Theorem 6's profile"
    )


@proposition(
    "thesis.ch4.cor2.closed_forms",
    source=f"{S47}, proof of Corollary 2, eq. (4.6) and the seller's conditional utilities",
    statement="u_S | blind and u_S | aware as printed in both regimes, on both sides of alpha*, "
    "and u_S(alpha) = (1-alpha) u_S|blind + alpha u_S|aware",
    perturb={"blind_b_evader_pays": THETA_L},
)
def _cor2_closed_forms(blind_b_evader_pays: Any = THETA_H) -> Verdict:
    verdict = _forms_against_profile(
        _printed_seller_forms(blind_b_evader_pays),
        lambda g, q, a, b: seller_utility(g, q, a, b),
        "seller's conditional utilities (4.6)",
    )
    if not verdict.holds:
        return verdict
    alpha, q, blind = sp.symbols("alpha q blind", nonnegative=True)
    mixed = seller_utility(SYMBOLS, q, alpha + (1 - alpha) * blind, (1 - alpha) * blind)
    split = (1 - alpha) * seller_utility(SYMBOLS, q, blind, blind) + alpha * seller_utility(
        SYMBOLS, q, 1, 0
    )
    if sp.expand(mixed - split) != 0:
        return refuted("u_S(alpha) is not the mixture (4.6)", {"residual": str(mixed - split)})
    return proved(f"{verdict.evidence}; and u_S(alpha) = (1-alpha) u_S|blind + alpha u_S|aware")


@proposition(
    "thesis.ch4.cor2.buyer_forms",
    source=f"{S47}, proof of Corollary 2, eq. (4.5) and the high buyer's conditional utilities",
    statement="u_B | aware = (Delta - c_B) 1(alpha <= c_B/Delta) if theta_L >= mu theta_H and "
    "(Delta - c_B) q_bar 1(alpha <= c_B/Delta) otherwise (with u_B | blind as printed)",
    holds=False,
    perturb={"aware_indicator": ">"},
)
def _cor2_buyer_forms(aware_indicator: str = "<=") -> Verdict:
    return _forms_against_profile(
        _printed_buyer_forms(aware_indicator),
        high_buyer_utility,
        "high buyer's conditional utilities (4.5)",
    )


@proposition(
    "thesis.ch4.cor2.buyer_forms.corrected",
    source=f"{S47}, proof of Corollary 2, eq. (4.5); docs/errata.md, thesis.ch4.cor2.buyer_forms",
    statement="u_B | aware = (Delta - c_B) 1(alpha > c_B/Delta) if theta_L >= mu theta_H and "
    "(Delta - c_B) q_bar 1(alpha > c_B/Delta) otherwise: a truthful high buyer facing an aware "
    "seller pays theta_H and earns 0",
    perturb={"aware_indicator": "<="},
)
def _cor2_buyer_forms_corrected(aware_indicator: str = ">") -> Verdict:
    return _forms_against_profile(
        _printed_buyer_forms(aware_indicator),
        high_buyer_utility,
        "high buyer's conditional utilities (4.5)",
    )


@proposition(
    "thesis.ch4.cor3",
    source=f"{S42}, Corollary 3 and Remark 3",
    statement="with commitment the seller price-discriminates w.p. alpha* = c_B/Delta (plays "
    "the blind price w.p. 1 - alpha*), all buyers signal truthfully, and this is an "
    "equilibrium: no other commitment alpha gives the seller more (U1* = u_S(alpha*)) "
    f"{_WHICH}",
    perturb={"alpha_commit": lambda game: game.c_b / (2 * game.delta)},
)
def _cor3(alpha_commit: Callable[[PDGame], Any] = attrgetter("alpha_star")) -> Verdict:
    def holds(game: str) -> bool:
        g = GAMES[game]
        chosen = alpha_commit(g)
        eq = _equilibrium_at(game, chosen)
        truthful = eq.profile.q_high == 0 and _certified_at(game, chosen)
        grid = {F(i, _GRID) for i in range(_GRID + 1)} | {
            g.alpha_star + d for d in (F(-1, 1000), F(1, 1000))
        }
        best = max(_equilibrium_at(game, x).seller for x in grid if 0 <= x <= 1)
        return bool(truthful and eq.seller >= best and eq.seller == g.U1_star)

    verdict = on_points(
        holds,
        [{"game": name} for name in GAMES],
        "buyers truthful and the profile an equilibrium at the committed alpha; the seller's "
        "equilibrium utility there is at least that at every alpha of a grid of 21 and at "
        "alpha* +- 1/1000, and equals U1*",
        drawn=GAMES_DRAWN,
        hypothesis=assumption1,
    )
    if not verdict.holds:
        return verdict
    return replace(verdict, evidence=f"{verdict.evidence}; {_cor2_ties()}")
