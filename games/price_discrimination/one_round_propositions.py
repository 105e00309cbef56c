"""Proposition 7 and Lemmas 27, 28 and 30 of Werner (2024), ch. 4.

The one-round facts behind Propositions 7-10.

Werner (2024), PhD thesis, ch. 4, section 4.3 (pp. 88-94) and the proofs of section 4.7 (pp.
98-109): the seller's best response and utility gaps of one round, proved symbolically in both
regimes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp

from econ.propositions import (
    Verdict,
    on_points,
    proposition,
    proved,
    refuted,
)
from games.price_discrimination.checked_games import GAMES, repeated_run, rho_min
from games.price_discrimination.equilibrium import equilibrium
from games.price_discrimination.game import C_S, A, B, PDGame, alpha_of, seller_utility
from games.price_discrimination.propositions import S43, S47, F
from games.price_discrimination.sellers import (
    AlphaPD,
)
from games.price_discrimination.symbolic_regimes import (
    commitment_utility,
    nonnegative,
    regime_game,
    sign_facts,
    vanishes,
)


def _vertices(regime: str, label: str, expr: Any) -> list[tuple[str, str, Any]]:
    """``expr >= 0`` on [0, 1]^2 as four facts, one per vertex.

    ``expr`` is multilinear in (a, b), so its minimum over the square is at a vertex.
    """
    poly = sp.Poly(sp.expand(expr), A, B)
    if max(poly.degree(A), poly.degree(B)) > 1 or any(i + j > 2 for i, j in poly.monoms()):
        raise ValueError(f"{label} is not multilinear in (a, b)")
    return [
        (regime, f"{label} at (a, b) = ({va}, {vb})", expr.subs({A: va, B: vb}))
        for va in (0, 1)
        for vb in (0, 1)
    ]


def _pd_best_response() -> list[tuple[str, str, Any]]:
    """U_S(q; PD) - U_S(q; a, b) >= 0 for every (a, b) and q in {0, q*}, both regimes."""
    facts = []
    for regime in ("A", "B"):
        game, q_star = regime_game(regime)
        for q in (0, q_star):
            gap = seller_utility(game, q, 1, 0) - seller_utility(game, q, A, B)
            facts += _vertices(regime, f"U_S(q; PD) - U_S(q; a, b) at q = {q}", gap)
    return facts


def kappa_printed(game: PDGame) -> Any:
    r"""Lemma 28's constant as printed, :math:`\min\{\mu\Delta\theta, (1-\mu)\underline\theta\}`.

    References
    ----------
    Werner (2024), ch. 4, §4.7 (pp. 98-109), proof of Lemma 28.
    """
    return sp.Min(game.mu * game.delta, (1 - game.mu) * game.theta_low)


def kappa_larger(game: PDGame) -> Any:
    r"""The larger term, :math:`\max\{\mu\Delta\theta, (1-\mu)\underline\theta\}`, in place of κ.

    A misprint of Lemma 28's constant: the perturbation under which the registered checks that use κ
    must fail.

    References
    ----------
    Werner (2024), ch. 4, §4.7 (pp. 98-109), proof of Lemma 28 (the printed κ is the minimum).
    """
    return sp.Max(game.mu * game.delta, (1 - game.mu) * game.theta_low)


def _kappa_of(regime: str, game: PDGame, kappa: Callable[[PDGame], Any]) -> Any:
    """Kappa of a symbolic regime game (a min or max of the two terms is decided by the regime)."""
    value = kappa(game)
    if isinstance(value, sp.Min | sp.Max):
        first, second = game.mu * game.delta, (1 - game.mu) * game.theta_low
        small, large = (first, second) if regime == "A" else (second, first)
        return small if isinstance(value, sp.Min) else large
    return value


def _regime_facts(
    kappa: Callable[[PDGame], Any], label: str, margin: Callable[[str, PDGame, Any, Any], Any]
) -> list[tuple[str, str, Any]]:
    """``margin(regime, game, q_star, kappa)`` at the vertices of both symbolic regimes."""
    facts = []
    for regime in ("A", "B"):
        game, q_star = regime_game(regime)
        k = _kappa_of(regime, game, kappa)
        facts += _vertices(regime, label, margin(regime, game, q_star, k))
    return facts


def _lemma28_facts(kappa: Callable[[PDGame], Any]) -> list[tuple[str, str, Any]]:
    """Truthful round: U_S(0; PD) - U_S(0; a, b) >= kappa (1 - a + b)."""
    return _regime_facts(
        kappa,
        "U_S(0; PD) - U_S(0; a, b) - kappa (1 - a + b)",
        lambda regime, game, q_star, k: (
            seller_utility(game, 0, 1, 0) - seller_utility(game, 0, A, B) - k * (1 - A + B)
        ),
    )


def truthful_slack_facts(kappa: Callable[[PDGame], Any]) -> list[tuple[str, str, Any]]:
    """Truthful round: U_S(0; a, b) - U1* <= kappa (alpha(a, b) - alpha*) for every (a, b)."""
    return _regime_facts(
        kappa,
        "kappa (alpha(a, b) - alpha*) - (U_S(0; a, b) - U1*)",
        lambda regime, game, q_star, k: (
            k * (alpha_of(A, B) - game.c_b / game.delta)
            - (seller_utility(game, 0, A, B) - commitment_utility(game, regime))
        ),
    )


def strategic_slack_facts(kappa: Callable[[PDGame], Any]) -> list[tuple[str, str, Any]]:
    """Strategic round: U_S(q*; a, b) - U1* <= -kappa alpha* for every (a, b)."""
    return _regime_facts(
        kappa,
        "U1* - U_S(q*; a, b) - kappa alpha*",
        lambda regime, game, q_star, k: (
            commitment_utility(game, regime)
            - seller_utility(game, q_star, A, B)
            - k * (game.c_b / game.delta)
        ),
    )


def _pd_runs(consistent_only: bool) -> list[dict[str, Any]]:
    points = []
    settings = [("P0", 700), ("P3", 701), ("random0", 703), ("random2", 704), ("P2", 702)]
    for name, seed in settings:
        run = repeated_run(name, AlphaPD(1.0), 4000, 5, seed)
        late = run.expected_seller_utility()[:, 2000:].mean(axis=1)
        gap = np.abs(run.final_belief - run.alpha_bar()[:, -1])
        for i in range(run.runs):
            points.append(
                {
                    "game": name,
                    "run": i,
                    "late_average": float(late[i]),
                    "u_S(1)": float(equilibrium(GAMES[name], 1).seller),
                    "belief_gap": float(gap[i]),
                    "rho_min": rho_min(GAMES[name]),
                }
            )
    return points


@proposition(
    "thesis.ch4.prop7",
    source=f"{S43}, Proposition 7; {S47}, proof of Proposition 7",
    statement="given CBER buyers (consistent beliefs), always price-discriminating is no-regret "
    "and the seller's average utility converges to at most u_S(1)",
    perturb={"consistent_only": False},
)
def _prop7(consistent_only: bool = True) -> Verdict:
    regret = sign_facts(
        _pd_best_response(), "zero regret of PD against truthful and strategic buyers"
    )
    if not regret.holds:
        return regret
    return on_points(
        lambda game, run, late_average, belief_gap, **u: late_average <= u["u_S(1)"] + 0.02,
        _pd_runs(consistent_only),
        "always-PD: mean expected utility over rounds 2001-4000 at most u_S(1) + 0.02. Proved by "
        "sympy: PD is a best response to truthful and to strategic buyers in both regimes (zero "
        "regret every round)",
        drawn="always-PD against CBER buyers with estimator (4.7), 5 independent runs of 4000 "
        "rounds on each of P0, P3 and two seeded random games (regime B) and P2 (regime A; "
        "seeds 700-704); a run counts only where (4.7) is consistent (rho_min > 0): in "
        "regime A it sees no informative round once buyers evade",
        hypothesis=(lambda rho_min, **_: rho_min > 0) if consistent_only else None,
    )


def _lemma27_gaps(c_s_positive: bool) -> list[tuple[str, Any]]:
    """U1* - [alpha* U_S(0; PD) + (1 - alpha*) u_S(1)] in each regime.

    It is (1 - alpha*) (u_S(0) - u_S(1)).
    """
    gaps = []
    for regime in ("A", "B"):
        game, q_star = regime_game(regime, C_S if c_s_positive else 0)
        star = game.c_b / game.delta
        bound = star * seller_utility(game, 0, 1, 0) + (1 - star) * seller_utility(
            game, q_star, 1, 0
        )
        gaps.append((regime, sp.cancel(sp.together(commitment_utility(game, regime) - bound))))
    return gaps


@proposition(
    "thesis.ch4.lemma27",
    source=f"{S43}, Lemma 27; {S47}, proof of Lemma 27 (Definition 4: c_S is any evasion "
    "cost, footnote 1: costs in R)",
    statement="lim |T|/T <= alpha* implies lim (1/T) sum_t U_S(pi_t) < U1*, with T the rounds "
    "where buyers are truthful",
    holds=False,
    perturb={"c_s_positive": True},
)
def _lemma27(c_s_positive: bool = False) -> Verdict:
    verdict = lemma27_proof(c_s_positive)
    if verdict.holds:
        return verdict
    game = PDGame(F(1, 2), F(5), F(15), F(5), F(0))
    full, u_1 = game.full_extraction, equilibrium(game, 1).seller
    average = game.alpha_star * full + (1 - game.alpha_star) * u_1
    if average != game.U1_star:
        return verdict
    return refuted(
        "with c_S = 0 the bound is attained: truthful rounds with price discrimination in a share "
        "alpha* of rounds and strategic rounds with price discrimination in the rest give the "
        "average alpha* U_S(0; PD) + (1 - alpha*) u_S(1) = U1* exactly, not < U1* (exact, P0 "
        "with c_S = 0; Assumption 1 holds)",
        {
            "game": "P0 with c_S = 0",
            "share_truthful": f"{game.alpha_star} = alpha*",
            "average": f"alpha* {full} + (1 - alpha*) {u_1} = {average}",
            "U1*": str(game.U1_star),
        },
    )


def lemma27_proof(c_s_positive: bool) -> Verdict:
    r"""Lemma 27's chain of inequalities, checked by sympy in both regimes.

    Price discrimination is a best response every round, so the average seller utility is at most
    :math:`f_T U_S(0; \mathrm{PD}) + (1 - f_T) u_S(1)`, which increases in the share :math:`f_T` of
    truthful rounds; at :math:`f_T = \alpha^*` it falls short of :math:`\mathbb U_1^*` by
    :math:`(1-\alpha^*)(u_S(0) - u_S(1))`, positive for :math:`c_S > 0`.

    Parameters
    ----------
    c_s_positive
        Check with a positive symbolic :math:`c_S`; with False, at :math:`c_S = 0`.

    Returns
    -------
    Verdict
        ``proved`` with the chain, or ``refuted`` at the first fact that fails.

    References
    ----------
    Werner (2024), ch. 4, §4.3 (pp. 88-94), Lemma 27; §4.7 (pp. 98-109), proof of Lemma 27 (the
    orderings of Corollary 2).
    """
    per_round = sign_facts(_pd_best_response(), "PD is a best response every round")
    if not per_round.holds:
        return per_round
    for regime, gap in _lemma27_gaps(c_s_positive):
        # a non-zero rational function with non-negative coefficients in positive symbols is > 0
        if gap == 0 or not nonnegative(gap):
            return refuted(
                "U1* minus Lemma 27's bound is not positive",
                {"regime": regime, "c_S": "c_S" if c_s_positive else "0", "gap": str(gap)},
            )
    return proved(
        "for every T and every sequence: avg_T U_S <= f_T U_S(0; PD) + (1 - f_T) u_S(1) (PD is "
        "a best response each round), increasing in f_T, and at f_T = alpha* it is U1* - "
        "(1 - alpha*)(u_S(0) - u_S(1)) with u_S(0) - u_S(1) = mu c_S (A) or c_S (1-mu) "
        "theta_L/Delta (B), > 0 for c_S > 0; all by sympy in both regimes"
    )


@proposition(
    "thesis.ch4.lemma27.corrected",
    source=f"{S43}, Lemma 27; docs/errata.md, thesis.ch4.lemma27",
    statement="for c_S > 0 (and Assumption 1): lim |T|/T <= alpha* implies lim (1/T) sum_t "
    "U_S(pi_t) <= alpha* U_S(truthful, PD) + (1 - alpha*) u_S(1) < U1*",
    perturb={"c_s_positive": False},
)
def _lemma27_corrected(c_s_positive: bool = True) -> Verdict:
    return lemma27_proof(c_s_positive)


@proposition(
    "thesis.ch4.lemma28",
    source=f"{S43}, Lemma 28; {S47}, proof of Lemma 28",
    statement="for a no-regret seller against CBER buyers, lim |T|/T <= lim (1/T) sum_{t in T} "
    "alpha_t; via R_T >= (kappa/T) sum_{t in T} (1 - a_t + b_t), kappa = min(mu Delta, "
    "(1-mu) theta_L)",
    perturb={"kappa": kappa_larger},
)
def _lemma28(kappa: Callable[[PDGame], Any] = kappa_printed) -> Verdict:
    verdict = sign_facts(
        _pd_best_response() + _lemma28_facts(kappa) + lemma30_facts(),
        "per round, the regret against PD is >= 0 and, in a truthful round, >= kappa (1 - a_t + "
        "b_t); with alpha_t >= a_t - b_t (Lemma 30): f_T - R_T/kappa <= beta_T for every T and "
        "every sequence, so lim f_T <= lim beta_T when R_T -> 0",
    )
    return verdict


def lemma30_facts() -> list[tuple[str, str, Any]]:
    r"""Lemma 30's identity :math:`\alpha(a, b) = a - b + 2b(1-a)` as a fact for :func:`sign_facts`.

    The fact :math:`-(\alpha(a, b) - (a - b + 2b(1-a)))^2 \ge 0` holds iff the identity does; with
    :math:`b(1-a) \ge 0` the identity gives :math:`\alpha_t \ge a_t - b_t`.

    References
    ----------
    Werner (2024), ch. 4, §4.7 (pp. 98-109), Lemma 30 (in the proof of Lemma 28).
    """
    identity = sp.expand(alpha_of(A, B) - (A - B + 2 * B * (1 - A)))
    return [("A", "alpha(a, b) - (a - b + 2b(1-a))", -(identity**2))]


@proposition(
    "thesis.ch4.lemma30",
    source=f"{S47}, Lemma 30 (in the proof of Lemma 28)",
    statement="for prices on {theta_L, theta_H}: alpha_t >= a_t - b_t, since alpha = a - b + "
    "2b(1-a)",
    perturb={"factor": 1},
)
def _lemma30(factor: int = 2) -> Verdict:
    identity = sp.expand(alpha_of(A, B) - (A - B + factor * B * (1 - A)))
    verdict = vanishes(
        identity, f"alpha(a, b) - (a - b + {factor} b (1-a))", extra={A: F(1, 3), B: F(1, 2)}
    )
    if not verdict.holds:
        return verdict
    return proved(f"{verdict.evidence}; b(1-a) >= 0 on [0,1]^2, so alpha_t >= a_t - b_t")


_GRID = (F(0), F(1, 2), F(1))


def _lemma27_display_points() -> list[dict[str, Any]]:
    return [{"game": name} for name, g in GAMES.items() if g.c_s > 0 and g.c_b < g.delta]


def _lemma27_displays(strict_last: bool, truthful_bound: str, final_truthful: str) -> Verdict:
    """The displays of the proof of Lemma 27 on one game, in exact rationals.

    ``strict_last``: the ordering's last inequality strict (as printed) or weak;
    ``truthful_bound``: the pricing ("noPD" as printed, or "PD") bounding a truthful round in the
    first display; ``final_truthful``: the pricing ("PD" as printed, or "noPD") of the truthful
    term in the display said to equal U1*.
    """

    def failures(game: str) -> list[str]:
        g = GAMES[game]
        star, blind = g.alpha_star, g.blind_price_high
        price = {"PD": (1, 0), "noPD": (blind, blind)}
        pd, nopd = price["PD"], price["noPD"]

        def t(ab: tuple[Any, Any]) -> Any:
            return seller_utility(g, 0, *ab)

        def s(ab: tuple[Any, Any]) -> Any:
            return seller_utility(g, g.q_star, *ab)

        found = []
        others = [(a, b) for a in _GRID for b in _GRID if (a, b) not in (pd, nopd)]
        ties = [
            f"({a}, {b})"
            for a, b in others
            if not (s(pd) > s((a, b)) if strict_last else s(pd) >= s((a, b)))
        ]
        if not t(pd) > t(nopd) > s(pd) or ties:
            found.append(
                f"ordering: U_S(strategic, PD) = {s(pd)} is not > U_S(strategic, pi^p) at "
                f"(P(theta_H | s_H), P(theta_H | s_L)) = {', '.join(ties)}"
            )
        # a share alpha* of truthful rounds and the rest strategic, all priced PD
        average = star * t(pd) + (1 - star) * s(pd)
        bound = star * t(price[truthful_bound]) + (1 - star) * s(pd)
        if average > bound:
            found.append(
                f"first bound: truthful rounds bounded by U_S(truthful, {truthful_bound}); PD in "
                f"a share alpha* = {star} of truthful rounds averages {average} > {bound}"
            )
        final = star * t(pd) + (1 - star) * t(price[final_truthful])
        if not average < final == g.U1_star:
            found.append(
                f"last display: alpha* U_S(truthful, PD) + (1 - alpha*) U_S(truthful, "
                f"{final_truthful}) = {final}, not U1* = {g.U1_star}"
            )
        return found

    verdict = on_points(
        lambda game: not failures(game),
        _lemma27_display_points(),
        "the ordering of U_S(buyers, pricing) (pi^p over {0, 1/2, 1}^2), the first upper bound "
        "at a share alpha* of truthful rounds, and the final bound's value U1* (exact rationals)",
        drawn="the games of GAMES with c_S > 0 and Assumption 1 (P0-P3 and 40 seeded random "
        "games, both regimes)",
    )
    if verdict.holds or verdict.counterexample is None:
        return verdict
    game = verdict.counterexample["game"]
    return refuted(
        "; ".join(failures(game)) + "; Assumption 1 and c_S > 0 hold",
        {
            **verdict.counterexample,
            "regime": GAMES[game].regime,
            "alpha*": str(GAMES[game].alpha_star),
        },
    )


@proposition(
    "thesis.ch4.lemma27.proof",
    source=f"{S47}, proof of Lemma 27: the ordering U_S(truthful, PD) > U_S(truthful, noPD) > "
    "U_S(strategic, PD) > U_S(strategic, pi^p), the bound (1/T) sum_t U_S(pi_t) <= (1/T) "
    "sum_{t in T} U_S(truthful, noPD) + sum_{t not in T} U_S(strategic, PD), and alpha* "
    "U_S(truthful, PD) + (1 - alpha*) U_S(truthful, PD) = U1*",
    statement="the three displays of the proof of Lemma 27 (the ordering with every other pi^p "
    "strictly worse against strategic buyers, the upper bound with U_S(truthful, noPD) in "
    "truthful rounds, the last bound equal to U1*)",
    holds=False,
    perturb={"strict_last": False, "truthful_bound": "PD", "final_truthful": "noPD"},
)
def _lemma27_proof_displays(
    strict_last: bool = True, truthful_bound: str = "noPD", final_truthful: str = "PD"
) -> Verdict:
    return _lemma27_displays(strict_last, truthful_bound, final_truthful)


@proposition(
    "thesis.ch4.lemma27.proof.corrected",
    source=f"{S47}, proof of Lemma 27 (the ordering, the first upper bound and the display "
    "'= U1*'); docs/errata.md, thesis.ch4.lemma27.proof",
    statement="for c_S > 0: U_S(truthful, PD) > U_S(truthful, noPD) > U_S(strategic, PD) >= "
    "U_S(strategic, pi^p) (ties: against strategic buyers every pi^p that charges theta_L after "
    "s_L in regime A, or theta_H after s_H in regime B, earns u_S(1)); (1/T) sum_t U_S(pi_t) <= "
    "f_T U_S(truthful, PD) + (1 - f_T) U_S(strategic, PD); at f_T = alpha* this is < alpha* "
    "U_S(truthful, PD) + (1 - alpha*) U_S(truthful, noPD) = U1*",
    perturb={"truthful_bound": "noPD"},
)
def _lemma27_proof_displays_corrected(
    strict_last: bool = False, truthful_bound: str = "PD", final_truthful: str = "noPD"
) -> Verdict:
    return _lemma27_displays(strict_last, truthful_bound, final_truthful)
