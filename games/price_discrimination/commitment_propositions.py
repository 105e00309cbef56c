"""Proposition 9 and the commitment of Proposition 10's proof, Werner (2024), ch. 4.

Holds the registered statements about the commitment strategy: Proposition 9 (a seller with
sublinear policy regret reaches at least U1* against CBER buyers, the alpha~-PD strategies
earning u_S(alpha~)) and the displays of Proposition 10's proof that fix the commitment's
marginals and bound a truthful round (``thesis.ch4.prop10.proof`` and its ``.corrected``
twin). Lemma 29 and Propositions 8 and 10 are in
:mod:`games.price_discrimination.regret_propositions`.

References
----------
Werner (2024), PhD thesis, ch. 4, section 4.3 (pp. 88-94), Proposition 9, and section 4.7
(pp. 98-109), the proofs of Propositions 9 and 10; Corollary 3 in section 4.2.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

import sympy as sp

from econ.propositions import Verdict, on_points, proposition, refuted
from games.price_discrimination.checked_games import GAMES, repeated_run
from games.price_discrimination.equilibrium import equilibrium
from games.price_discrimination.game import PDGame, alpha_of, seller_utility
from games.price_discrimination.one_round_propositions import (
    kappa_printed,
    truthful_slack_facts,
)
from games.price_discrimination.propositions import S43, S47, F
from games.price_discrimination.sellers import AlphaPD
from games.price_discrimination.symbolic_regimes import (
    commitment_utility,
    regime_game,
    sign_facts,
    vanishes,
)


@proposition(
    "thesis.ch4.prop9",
    source=f"{S43}, Proposition 9; {S47}, proof of Proposition 9",
    statement="given CBER buyers, a seller with sublinear policy regret relative to fixed mixed "
    "strategies has average utility converging to at least U1*: sup over fixed (a, b) with "
    "alpha(a, b) < alpha* of the truthful-buyer utility is U1*, and the alpha~-PD strategies "
    "earn u_S(alpha~) against CBER buyers",
    perturb={"commit": lambda game: 2 * game.c_b / game.delta},
)
def _prop9(commit: Callable[[PDGame], Any] = attrgetter("alpha_star")) -> Verdict:
    alpha = sp.Symbol("alpha_tilde", positive=True)
    for regime in ("A", "B"):
        game, _ = regime_game(regime)
        blind = 1 if regime == "B" else 0
        a, b = alpha + (1 - alpha) * blind, (1 - alpha) * blind
        limit = seller_utility(game, 0, a, b).subs(alpha, commit(game))
        for expr, what in (
            (
                limit - commitment_utility(game, regime),
                "U_S(0; alpha~-PD) at alpha~ = alpha* minus U1*",
            ),
            (alpha_of(a, b) - alpha, "alpha(alpha~-PD) - alpha~"),
        ):
            reach = vanishes(expr, f"{what}, regime {regime}", regime, {alpha: F(1, 4)})
            if not reach.holds:
                return reach
    upper = sign_facts(
        truthful_slack_facts(kappa_printed),
        "no fixed (a, b) with alpha(a, b) <= alpha* beats U1* against truthful buyers",
    )
    if not upper.holds:
        return upper
    points = []
    for k, name in enumerate(("P0", "P3", "P2")):
        g = GAMES[name]
        for share in (F(1, 2), F(9, 10)):
            tilde = float(g.alpha_star * share)
            run = repeated_run(name, AlphaPD(tilde), 4000, 4, 900 + 2 * k + (share == F(9, 10)))
            late = run.expected_seller_utility()[:, 2000:].mean(axis=1)
            target = float(equilibrium(g, g.alpha_star * share).seller)
            points += [
                {"game": name, "alpha_tilde": tilde, "late": float(x), "u_S": target} for x in late
            ]
    return on_points(
        lambda late, u_S, **_: late >= u_S - 0.02,
        points,
        "alpha~-PD earns u_S(alpha~) against CBER buyers (mean expected utility over rounds "
        "2001-4000 >= u_S(alpha~) - 0.02). Proved by sympy in both regimes: alpha(alpha~-PD) = "
        "alpha~, its truthful utility tends to U1* as alpha~ -> alpha*, and no fixed (a, b) with "
        "alpha(a, b) <= alpha* earns more than U1* against truthful buyers",
        drawn="alpha~-PD with alpha~ in {alpha*/2, 0.9 alpha*} on P0, P3 (regime B) and P2 "
        "(regime A) against CBER buyers with estimator (4.7), 4 independent runs of 4000 rounds "
        "each (seeds 900-905)",
    )


_GRID = (F(0), F(1, 2), F(1))


def _printed_commitment(game: PDGame) -> tuple[Any, Any]:
    """The proof of Proposition 10's commitment (P(theta_H | s_H), P(theta_H | s_L)).

    For theta_L <= mu theta_H it prints pi*(theta_L | s_L) = 1, pi*(theta_H | s_H) = alpha*; the
    other case 'follows similarly' (Corollary 3's).
    """
    if game.theta_low <= game.mu * game.theta_high:
        return game.alpha_star, F(0)
    return _corollary3_commitment(game)


def _corollary3_commitment(game: PDGame) -> tuple[Any, Any]:
    """Corollary 3's commitment (P(theta_H | s_H), P(theta_H | s_L)): PD w.p. alpha*, else blind."""
    blind = game.blind_price_high
    return game.alpha_star + (1 - game.alpha_star) * blind, (1 - game.alpha_star) * blind


def _prop10_displays(
    commitment: Callable[[PDGame], tuple[Any, Any]], low_term: str, strict: bool
) -> Verdict:
    """Two displays of the proof of Proposition 10, in exact rationals on every game of GAMES.

    The commitment strategy's marginals, with U_S(truthful, pi*) = U1*; and the step that bounds
    a truthful round's mu Delta (a - alpha*) - (1 - mu) theta_L (1 - pi(theta_L | s_L)) by mu
    Delta (a - x - alpha*), x = pi(theta_L | s_L) as printed (``low_term`` "theta_L|s_L") or
    pi(theta_H | s_L) = b, under the step's premise mu theta_H < theta_L.
    """
    points = [
        {"game": name, "a": str(a), "b": str(b)}
        for name, g in GAMES.items()
        if g.c_b < g.delta
        for a in _GRID
        for b in _GRID
    ]

    def holds(game: str, a: str, b: str) -> bool:
        g, aa, bb = GAMES[game], F(a), F(b)
        if seller_utility(g, 0, *commitment(g)) != g.U1_star:
            return False
        if not g.mu * g.theta_high < g.theta_low:
            return True
        md = g.mu * g.delta
        left = md * (aa - g.alpha_star) - (1 - g.mu) * g.theta_low * bb
        x = 1 - bb if low_term == "theta_L|s_L" else bb
        right = md * (aa - x - g.alpha_star)
        return bool(left < right if strict else left <= right)

    verdict = on_points(
        holds,
        points,
        "U_S(truthful, pi*) = U1* for the commitment's marginals, and in games with mu theta_H "
        "< theta_L the per-round step mu Delta (a - alpha*) - (1 - mu) theta_L b "
        f"{'<' if strict else '<='} mu Delta (a - pi({low_term}) - alpha*)",
        drawn="the games of GAMES with Assumption 1 (P0-P3 and 40 seeded random games, both "
        "regimes), (P(theta_H | s_H), P(theta_H | s_L)) in {0, 1/2, 1}^2",
    )
    if verdict.holds or verdict.counterexample is None:
        return verdict
    point = verdict.counterexample
    g = GAMES[point["game"]]
    value = seller_utility(g, 0, *commitment(g))
    if value != g.U1_star:
        why = (
            f"in regime {g.regime} U_S(truthful, pi*) = {value} for pi* = "
            f"{tuple(str(x) for x in commitment(g))} against U1* = {g.U1_star}: for theta_L <= "
            "mu theta_H Corollary 3's commitment is PD w.p. alpha* and the blind price theta_H "
            "otherwise, pi*(theta_H | s_H) = 1 and pi*(theta_L | s_L) = alpha* (the printed "
            "marginals are regime A's)"
        )
    else:
        why = (
            f"the step with pi({low_term}) fails in a truthful round at (a, b) = ({point['a']}, "
            f"{point['b']}) of a game with mu theta_H < theta_L (at a PD round, a = 1 and "
            "pi(theta_L | s_L) = 1, the left side mu Delta (1 - alpha*) exceeds the printed right "
            "side -mu Delta alpha*)"
        )
    return refuted(
        f"{why}; Assumption 1 holds", {**point, "regime": g.regime, "alpha*": str(g.alpha_star)}
    )


@proposition(
    "thesis.ch4.prop10.proof",
    source=f"{S47}, proof of Proposition 10: 'In the case of theta_L <= mu theta_H ... "
    "pi^p(theta_L|s_L) = 1 and pi^p(theta_H|s_H) = alpha*' and the step '< sum_{t in T} mu "
    "Delta theta (pi_t(theta_H|s_H) - pi_t(theta_L|s_L) - alpha*) - ...'",
    statement="for theta_L <= mu theta_H the commitment strategy has pi*(theta_L|s_L) = 1, "
    "pi*(theta_H|s_H) = alpha* and U_S(truthful, pi*) = U1*; and, as mu theta_H < theta_L, mu "
    "Delta (a - alpha*) - (1 - mu) theta_L (1 - pi(theta_L|s_L)) < mu Delta (a - "
    "pi(theta_L|s_L) - alpha*) in every truthful round",
    holds=False,
    perturb={"commitment": _corollary3_commitment, "low_term": "theta_H|s_L", "strict": False},
)
def _prop10_proof(
    commitment: Callable[[PDGame], tuple[Any, Any]] = _printed_commitment,
    low_term: str = "theta_L|s_L",
    strict: bool = True,
) -> Verdict:
    return _prop10_displays(commitment, low_term, strict)


@proposition(
    "thesis.ch4.prop10.proof.corrected",
    source=f"{S47}, proof of Proposition 10 (the commitment's marginals and the step before "
    "'By Lemma 30'); docs/errata.md, thesis.ch4.prop10.proof",
    statement="the commitment strategy of Corollary 3 has pi*(theta_H|s_H) = alpha*, "
    "pi*(theta_L|s_L) = 1 when theta_L >= mu theta_H and pi*(theta_H|s_H) = 1, "
    "pi*(theta_L|s_L) = alpha* otherwise, with U_S(truthful, pi*) = U1*; when mu theta_H < "
    "theta_L a truthful round satisfies mu Delta (a - alpha*) - (1 - mu) theta_L b <= mu Delta "
    "(a - b - alpha*), b = pi(theta_H|s_L), so Lemma 30 (a - b <= alpha_t) applies",
    perturb={"low_term": "theta_L|s_L"},
)
def _prop10_proof_corrected(
    commitment: Callable[[PDGame], tuple[Any, Any]] = _corollary3_commitment,
    low_term: str = "theta_H|s_L",
    strict: bool = False,
) -> Verdict:
    return _prop10_displays(commitment, low_term, strict)
