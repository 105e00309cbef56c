"""Lemma 29, Propositions 8 and 10 of Werner (2024), ch. 4: tracking beliefs, no-regret sellers.

Holds the registered statements that the buyers' beliefs track the seller's rate of price
discrimination (Lemma 29), that a no-regret seller's average utility converges (Proposition 8)
and that no seller beats U1* against CBER buyers (Proposition 10): finite-horizon inequalities
that sympy proves for every sequence of play, and simulations of learning sellers against
belief-based buyers for the step a limit needs. Proposition 9 and the commitment of
Proposition 10's proof are in :mod:`games.price_discrimination.commitment_propositions`.

References
----------
Werner (2024), PhD thesis, ch. 4, section 4.3 (pp. 88-94) and section 4.7 (pp. 98-109).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from econ.propositions import (
    Verdict,
    on_points,
    proposition,
    refuted,
)
from games.price_discrimination.checked_games import (
    GAMES,
    TRACKED,
    UNINFORMATIVE,
    repeated_run,
    rho_min,
)
from games.price_discrimination.equilibrium import equilibrium
from games.price_discrimination.exp3 import ContextualExp3
from games.price_discrimination.game import PDGame, alpha_of, seller_utility
from games.price_discrimination.one_round_propositions import (
    kappa_larger,
    kappa_printed,
    lemma27_proof,
    lemma30_facts,
    strategic_slack_facts,
    truthful_slack_facts,
)
from games.price_discrimination.propositions import S43, S47, F
from games.price_discrimination.repeated import simulate
from games.price_discrimination.sellers import AlphaPD, BeliefTracking
from games.price_discrimination.symbolic_regimes import (
    sign_facts,
)


def _coin_beta(rounds: int = 4000, runs: int = 10, seed: int = 29) -> dict[str, Any]:
    """Lemma 29 against Definition 6 alone: a seller who price-discriminates every other round.

    alpha_t alternates 1, 0 (oblivious), beliefs alpha_hat_t = 1{buyer 1 of round t-1 had the high
    value}, mu = 1/2, so E alpha_hat_t = 1/2 and |E alpha_hat_t - alpha_bar_t| <= 1/(2t).
    """
    game = PDGame(F(1, 2), F(5), F(15), F(1), F(5))  # alpha* = 1/10
    rng = np.random.default_rng(seed)
    t = np.arange(1, rounds + 1)
    alpha = (t % 2 == 0).astype(float)
    belief = (rng.random((runs, rounds)) < float(game.mu)).astype(float)
    truthful = belief <= float(game.alpha_star)
    beta = (truthful * alpha).mean(axis=1)
    bias = np.abs(float(game.mu) - np.cumsum(alpha) / t)
    return {"game": game, "beta": beta, "max_bias_late": float(bias[rounds // 2 :].max())}


def _lemma29(beliefs: str) -> Verdict:
    star_margin = 0.02
    if beliefs == "consistent":
        coin = _coin_beta()
        game = coin["game"]
        consistent = coin["max_bias_late"] <= 1 / 4000  # |E alpha_hat_t - alpha_bar_t| <= 1/(2t)
        if consistent and coin["beta"].min() > float(game.alpha_star) + star_margin:
            return refuted(
                "Definition 6 constrains only E alpha_hat_T: beliefs that are exactly unbiased "
                "(|E alpha_hat_t - alpha_bar_t| <= 1/(2t)) but independent of the seller's "
                "alternating price discrimination leave it on in half of the truthful rounds: "
                "E beta_T -> 1/4 > alpha* = 1/10 (exact); simulated beta_T at T = 4000 in "
                f"[{coin['beta'].min():.3f}, {coin['beta'].max():.3f}] over 10 seeds",
                {
                    "mu": "1/2",
                    "theta_L": "5",
                    "theta_H": "15",
                    "c_B": "1",
                    "c_S": "5",
                    "alpha*": "1/10",
                    "alpha_t": "1 on even rounds, 0 on odd rounds",
                    "beliefs": "alpha_hat_t = 1{theta_1^(t-1) = theta_H}",
                    "beta_T": float(coin["beta"].mean()),
                },
            )
    points = []
    for k, (name, seller) in enumerate(TRACKED + UNINFORMATIVE):
        run = repeated_run(name, seller, 4000, 4, 290 + k)
        for i, beta in enumerate(run.beta()):
            points.append(
                {
                    "game": name,
                    "seller": seller.name,
                    "run": i,
                    "beta": float(beta),
                    "alpha*": float(GAMES[name].alpha_star),
                    "rho_min": rho_min(GAMES[name]),
                }
            )
    return on_points(
        lambda beta, **p: beta <= p["alpha*"] + star_margin,
        points,
        f"beta_T <= alpha* + {star_margin} at T = 4000 with the beliefs of estimator (4.7)",
        drawn="8 settings (P0, P3: fixed, alternating, belief-tracking and learning sellers) "
        "with rho_min > 0, 4 independent runs of 4000 rounds each (seeds 290-297); the regime A "
        "setting P2 always-PD, where rho = 0 and (4.7) is not consistent, is outside",
        hypothesis=lambda rho_min, **_: rho_min > 0,
    )


@proposition(
    "thesis.ch4.lemma29",
    source=f"{S43}, Lemma 29 (with Definition 6); {S47}, proof of Lemma 29",
    statement="with consistent beliefs (Definition 6), lim (1/T) sum_{t: alpha_hat_t <= alpha*} "
    "alpha_t <= alpha*",
    holds=False,
    perturb={"beliefs": "estimator (4.7)"},
)
def _lemma29_check(beliefs: str = "consistent") -> Verdict:
    return _lemma29(beliefs)


@proposition(
    "thesis.ch4.lemma29.corrected",
    source=f"{S43}, Lemma 29; {S47}, eq. (4.7); docs/errata.md, thesis.ch4.lemma29",
    statement="with the beliefs of estimator (4.7) and rho_min > 0 (which converge to "
    "alpha_bar_t almost surely, for any seller), limsup (1/T) sum_{t: alpha_hat_t <= alpha*} "
    "alpha_t <= alpha*",
    perturb={"beliefs": "consistent"},
)
def _lemma29_corrected(beliefs: str = "estimator (4.7)") -> Verdict:
    return _lemma29(beliefs)


def _bound_runs(sellers: tuple[tuple[str, Any], ...], seed: int) -> list[dict[str, Any]]:
    points = []
    for k, (name, seller) in enumerate(sellers):
        run = repeated_run(name, seller, 4000, 4, seed + k)
        g = GAMES[name]
        average = run.expected_seller_utility().mean(axis=1)
        regret = run.regret()
        bound = float(
            g.alpha_star * g.full_extraction + (1 - g.alpha_star) * equilibrium(g, 1).seller
        )
        for i in range(run.runs):
            points.append(
                {
                    "game": name,
                    "seller": seller.name,
                    "run": i,
                    "average": float(average[i]),
                    "regret": float(regret[i]),
                    "U1*": float(g.U1_star),
                    "lemma27_bound": bound,
                    "rho_min": rho_min(g),
                }
            )
    return points


_NO_REGRET = (
    ("P0", ContextualExp3()),
    ("P0", AlphaPD(1.0)),
    ("P3", ContextualExp3()),
    ("P3", AlphaPD(1.0)),
)


def _prop8_zero_cost() -> Verdict | None:
    """P0 with c_S = 0: the belief-tracking seller has zero regret every round and averages U1*.

    It price-discriminates iff alpha_hat_t < alpha*, else charges the blind price theta_H.
    """
    game = PDGame(F(1, 2), F(5), F(15), F(5), F(0))
    run = simulate(game, BeliefTracking(0.0), 20_000, 6, 8)
    average = run.expected_seller_utility().mean(axis=1)
    g = game.numeric()
    identity = (run.truthful_share() - g.alpha_star) * (
        g.full_extraction - equilibrium(g, 1).seller
    )
    exact = np.allclose(average - g.U1_star, identity, atol=1e-9)
    if (
        exact
        and float(run.regret().max()) == 0
        and float(np.abs(average - g.U1_star).max()) < 0.005
    ):
        return refuted(
            "with c_S = 0 a no-regret seller reaches U1*: the belief-tracking seller price-"
            "discriminates iff alpha_hat_t < alpha* and charges theta_H to all otherwise, a best "
            "response to truthful and to strategic buyers (regret 0 in every round of every run); "
            "exactly avg_T - U1* = (f_T - alpha*)(U_S(0; PD) - u_S(1)) and the consistent beliefs "
            "drive f_T -> alpha*: |avg_T - U1*| <= "
            f"{float(np.abs(average - g.U1_star).max()):.4f} at T = 20000 over 6 runs (seed 8). "
            "CBER buyers with estimator (4.7), rho_min > 0; Assumption 1 holds",
            {
                "game": "P0 with c_S = 0",
                "seller": "belief-tracking(0)",
                "T": 20_000,
                "averages": [round(float(x), 5) for x in average],
                "U1*": float(g.U1_star),
                "truthful_shares": [round(float(x), 5) for x in run.truthful_share()],
                "max_regret": float(run.regret().max()),
            },
        )
    return None


def _coin_seller_counterexample() -> dict[str, Any] | None:
    """A zero-regret seller beating U1* against CBER buyers whose beliefs satisfy Definition 6.

    Game mu = 1/2, theta_L = 5, theta_H = 15, c_B = 1, c_S = 5 (regime B). Beliefs
    alpha_hat_1 = 1 and alpha_hat_t = 1{buyer 1 of round t-1 had the high value}; the seller
    price-discriminates when alpha_hat_t = 0 (the buyers are truthful) and charges the blind
    price theta_H otherwise. Every hypothesis is checked in exact rationals; ``None`` when one
    fails or the limit does not exceed U1*.
    """
    game = PDGame(F(1, 2), F(5), F(15), F(1), F(5))
    mu, star, q_star = game.mu, game.alpha_star, game.q_star
    vertices = [(a, b) for a in (0, 1) for b in (0, 1)]
    pd, blind = (1, 0), (1, 1)
    # CBER buyers: truthful at alpha_hat = 0 <= alpha*, evade w.p. q* at alpha_hat = 1 > alpha*
    if not (game.regime == "B" and 0 < star < 1 and game.c_b < game.delta and game.c_s > 0):
        return None
    truthful = seller_utility(game, 0, *pd)
    strategic = seller_utility(game, q_star, *blind)
    # utility is bilinear in (a, b): a vertex that attains the maximum is a best response
    best = truthful == max(seller_utility(game, 0, a, b) for a, b in vertices) and strategic == max(
        seller_utility(game, q_star, a, b) for a, b in vertices
    )
    rate = (alpha_of(*pd), alpha_of(*blind))  # alpha_t at alpha_hat_t = 0 and at 1
    t = sp.Symbol("T", positive=True, integer=True)
    mu_s = sp.Rational(mu.numerator, mu.denominator)
    # alpha_t = 1 - X_{t-1} for t >= 2 with X_tau ~ Bernoulli(mu) i.i.d., alpha_1 = 0
    mean_bar = (t - 1) * (1 - mu_s) / t
    var_bar = (t - 1) * mu_s * (1 - mu_s) / t**2
    mse = sp.simplify(var_bar + (mean_bar - mu_s) ** 2)  # E (alpha_bar_T - E alpha_hat_T)^2
    consistent = sp.limit(mse, t, sp.oo) == 0
    u_t = (1 - mu_s) * _q(truthful) + mu_s * _q(strategic)  # E U_S at round t >= 2
    average = sp.limit((_q(strategic) + (t - 1) * u_t) / t, t, sp.oo)
    u1_star = _q(game.U1_star)
    if not (best and rate == (1, 0) and consistent and average > u1_star):
        return None
    return {
        "game": "mu = 1/2, theta_L = 5, theta_H = 15, c_B = 1, c_S = 5 (regime B)",
        "alpha*": str(star),
        "q*": str(q_star),
        "beliefs": "alpha_hat_1 = 1, alpha_hat_t = 1{theta_1^(t-1) = theta_H}",
        "seller": "PD (alpha_t = 1) if alpha_hat_t = 0, else the blind price theta_H (alpha_t = 0)",
        "E(alpha_bar_T - E alpha_hat_T)^2": str(mse),
        "U_S truthful, PD": str(truthful),
        "U_S strategic, blind theta_H": str(strategic),
        "limit average": str(average),
        "U1*": str(u1_star),
        "regret": "<= 0 every round (a best response to each round's buyers)",
    }


def _q(x: Fraction) -> Any:
    return sp.Rational(x.numerator, x.denominator)


def _coin_seller_refutation(statement: str) -> Verdict | None:
    point = _coin_seller_counterexample()
    if point is None:
        return None
    return refuted(
        f"{statement} fails for CBER buyers whose beliefs satisfy Definition 6 but are not "
        "estimator (4.7): with alpha_hat_t = 1{buyer 1 of round t-1 had the high value} (mu = "
        "1/2), a seller that price-discriminates exactly when alpha_hat_t = 0 meets truthful "
        "buyers then and strategic ones (q*) otherwise; both actions are best responses, so "
        "its regret is <= 0 every round, alpha_t = 1{alpha_hat_t = 0} gives E(alpha_bar_T - E "
        f"alpha_hat_T)^2 = {point['E(alpha_bar_T - E alpha_hat_T)^2']} -> 0 (Definition 6), "
        "and the average utility tends to ("
        f"{point['U_S truthful, PD']} + {point['U_S strategic, blind theta_H']})/2 = "
        f"{point['limit average']} > U1* = {point['U1*']} with c_S > 0 (exact rationals; "
        "regime B, Assumption 1, c_S > 0, the CBER "
        "responses, the best responses and consistency checked in code)",
        point,
    )


@proposition(
    "thesis.ch4.prop8",
    source=f"{S43}, Proposition 8 (proof via Lemmas 27-29); {S47} (Definition 4: c_S is any "
    "evasion cost, footnote 1: costs in R; Definitions 5-6: CBER buyers, consistent beliefs)",
    statement="given CBER buyers, any no-regret seller's average utility converges to strictly "
    "less than U1*",
    holds=False,
    perturb={"c_s_positive": True, "beliefs": "estimator (4.7)"},
)
def _prop8(
    c_s_positive: bool = False, no_regret_only: bool = True, beliefs: str = "consistent"
) -> Verdict:
    if not c_s_positive:
        verdict = _prop8_zero_cost()
        if verdict is not None:
            return verdict
    if beliefs == "consistent":
        verdict = _coin_seller_refutation(
            "even for c_S > 0, 'any no-regret seller's average utility converges to strictly "
            "less than U1*'"
        )
        if verdict is not None:
            return verdict
    chain = lemma27_proof(True)
    if not chain.holds:
        return chain
    sellers = _NO_REGRET + (() if no_regret_only else (("P0", AlphaPD(0.49)),))
    return on_points(
        lambda average, lemma27_bound, **_: average <= lemma27_bound + 0.05,
        _bound_runs(sellers, 800),
        "average expected utility at most Lemma 27's bound alpha* U_S(0; PD) + (1 - alpha*) "
        "u_S(1) + 0.05 (< U1* for c_S > 0). Proved by sympy for every T and sequence: Lemma "
        "27's bound, the finite-T Lemma 28 and Lemma 30; sampled: the consistency step (Lemma 29)",
        drawn="no-regret sellers (contextual Exp3, always-PD) on P0 and P3 (c_S > 0) against "
        "CBER buyers with estimator (4.7), 4 independent runs of 4000 rounds each (seeds "
        "800-803)",
        hypothesis=lambda rho_min, **_: rho_min > 0,
    )


@proposition(
    "thesis.ch4.prop8.corrected",
    source=f"{S43}, Proposition 8; {S47}, eq. (4.7); docs/errata.md, thesis.ch4.prop8",
    statement="for c_S > 0 and CBER buyers with the beliefs of estimator (4.7), rho_min > 0: any "
    "no-regret seller's average utility converges to at most alpha* U_S(truthful, PD) + "
    "(1 - alpha*) u_S(1) < U1*",
    perturb={"beliefs": "consistent"},
)
def _prop8_corrected(no_regret_only: bool = True, beliefs: str = "estimator (4.7)") -> Verdict:
    return _prop8(c_s_positive=True, no_regret_only=no_regret_only, beliefs=beliefs)


@proposition(
    "thesis.ch4.prop10",
    source=f"{S43}, Proposition 10 (with Definitions 5-6); {S47}, proof of Proposition 10",
    statement="given CBER buyers, any seller's average utility converges to at most U1*",
    holds=False,
    perturb={"beliefs": "estimator (4.7)"},
)
def _prop10(kappa: Callable[[PDGame], Any] = kappa_printed, beliefs: str = "consistent") -> Verdict:
    if beliefs == "consistent":
        verdict = _coin_seller_refutation("'any seller's average utility converges to at most U1*'")
        if verdict is not None:
            return verdict
    finite = sign_facts(
        truthful_slack_facts(kappa) + strategic_slack_facts(kappa) + lemma30_facts(),
        "per round: truthful U_S(0; a, b) - U1* <= kappa (alpha(a, b) - alpha*), strategic "
        "U_S(q*; a, b) - U1* <= -kappa alpha*",
    )
    if not finite.holds:
        return finite
    sellers = (*TRACKED, ("P0", AlphaPD(0.49)))
    return on_points(
        lambda average, **p: average <= p["U1*"] + 0.02,
        _bound_runs(sellers, 1000),
        "average expected utility at most U1* + 0.02. Proved by sympy for every T and sequence: "
        "avg_T U_S - U1* <= kappa (beta_T - alpha*); sampled: beta_T -> <= alpha* (Lemma 29 "
        "with estimator (4.7))",
        drawn="9 sellers (fixed, alternating, belief-tracking, learning, alpha-PD(0.49)) on P0 "
        "and P3 against CBER buyers with estimator (4.7), 4 independent runs of 4000 rounds each "
        "(seeds 1000-1008)",
        hypothesis=lambda rho_min, **_: rho_min > 0,
    )


@proposition(
    "thesis.ch4.prop10.corrected",
    source=f"{S43}, Proposition 10; {S47}, eq. (4.7), proof of Proposition 10; docs/errata.md, "
    "thesis.ch4.prop10",
    statement="given CBER buyers with the beliefs of estimator (4.7), rho_min > 0, any seller's "
    "average utility converges to at most U1*; for every T and sequence avg_T U_S - U1* <= "
    "kappa (beta_T - alpha*), kappa = min(mu Delta, (1-mu) theta_L), both regimes",
    perturb={"kappa": kappa_larger},
)
def _prop10_corrected(kappa: Callable[[PDGame], Any] = kappa_printed) -> Verdict:
    return _prop10(kappa=kappa, beliefs="estimator (4.7)")
