"""Chapter 4's theorem, corollaries, propositions and lemmas as registered, checkable objects.

Werner (2024), PhD thesis, Chapter 4. Statements the toolkit refutes (spec ch4 section 6:
Theorem 6 in regime B, Lemma 26's epsilon, Propositions 6 and 7 in regime A) are registered
with ``holds=False`` and a counterexample, next to a ``.corrected`` twin that holds. The
asymptotic statements of Propositions 8-10 and Lemmas 27-30 are registered in the finite-T
forms of spec section 2.8 (deterministic inequalities on the logged expected utilities).
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np
import sympy as sp

from econ.propositions import Verdict, checked, is_zero, on_points, proposition, proved, refuted
from games.price_discrimination.certificate import certify
from games.price_discrimination.game import (
    ALPHA,
    C_B,
    C_S,
    MU,
    PARAMETER_SETS,
    THESIS_GAME,
    THETA_H,
    THETA_L,
    PDGame,
    alpha_of,
    equilibrium,
    equilibrium_profile,
    posterior_after_low,
    seller_utility,
)
from games.price_discrimination.repeated import RepeatedRun, simulate
from games.price_discrimination.sellers import AlphaPD, BeliefTracking, FixedProduct

F = Fraction
SRC = "Werner (2024), thesis ch. 4"


def random_games(count: int, seed: int = 0) -> Iterator[PDGame]:
    """Random valid games with exact rational parameters, Assumption 1 and ``c_S > 0``."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        mu = F(int(rng.integers(1, 20)), 20)
        low = F(int(rng.integers(1, 40)), 4)
        high = low + F(int(rng.integers(1, 40)), 4)
        c_b = (high - low) * F(int(rng.integers(1, 20)), 20)
        c_s = F(int(rng.integers(1, 40)), 4)
        yield PDGame(mu, low, high, c_b, c_s)


def alpha_grid(game: PDGame) -> tuple[Any, ...]:
    """The awareness levels of spec C-EQ-4: 0, alpha*/2, alpha*, alpha* + 1/100, (1+alpha*)/2, 1."""
    star = game.alpha_star
    return (F(0), star / 2, star, star + F(1, 100), (1 + star) / 2, F(1))


def _games() -> list[tuple[str, PDGame]]:
    named = list(PARAMETER_SETS.items())
    return named + [(f"random{i}", g) for i, g in enumerate(random_games(40))]


# ------------------------------------------------------------------------------- Theorem 6


@proposition(
    "thesis.ch4.thm6",
    source=f"{SRC}, Theorem 6",
    statement="the profile (a)-(e) (high types evade w.p. q* iff alpha > alpha*, aware seller "
    "prices s_L -> theta_L, s_H -> theta_H, blind price by theta_L >= mu theta_H) is a PBNE",
    holds=False,
)
def _thm6() -> Verdict:
    for name, game in _games():
        for alpha in alpha_grid(game):
            cert = certify(game, alpha, equilibrium_profile(game, alpha, "thesis"))
            if not cert.is_equilibrium:
                dev = cert.violations[0]
                return refuted(
                    f"{dev.player} gains {float(dev.gain):g} by deviating (regime {game.regime}, "
                    "alpha > alpha*): the buyer, not anticipating the seller's reaction, evades always",
                    {
                        "game": name,
                        "alpha": str(alpha),
                        **{k: str(v) for k, v in dev.payoffs.items()},
                    },
                )
    return checked("no deviation gains", len(_games()))


@proposition(
    "thesis.ch4.thm6.corrected",
    source=f"{SRC}, Theorem 6; spec ch4 section 6 item 8",
    statement="the thesis profile is a PBNE iff regime A or alpha <= alpha*; the strict profile "
    "(aware seller charges theta_L after s_L w.p. alpha*/alpha in regime B) is a PBNE for every alpha",
)
def _thm6_corrected() -> Verdict:
    def holds(game: PDGame, alpha: Any) -> bool:
        thesis = certify(game, alpha, equilibrium_profile(game, alpha, "thesis")).is_equilibrium
        strict = certify(game, alpha, equilibrium_profile(game, alpha, "strict")).is_equilibrium
        expected = game.regime == "A" or alpha <= game.alpha_star
        return strict and thesis == expected

    points = [{"game": g, "alpha": a} for _, g in _games() for a in alpha_grid(g)]
    return on_points(holds, points, "brute-force best responses at every information set")


@proposition(
    "thesis.ch4.thm6.indifference",
    source=f"{SRC}, proof of Theorem 6",
    statement="at q = q_bar the aware seller is indifferent after s_L (theta_L = mu_hat theta_H), "
    "and with r* = alpha*/alpha the high buyer is indifferent between s_L and s_H",
)
def _thm6_indifference() -> Verdict:
    from games.price_discrimination.game import SYMBOLS, high_buyer_utility

    q_bar = SYMBOLS.q_bar
    seller_gap = THETA_L - posterior_after_low(SYMBOLS, q_bar) * THETA_H
    b = 1 - SYMBOLS.alpha_star / ALPHA  # strict: aware seller's P(theta_H | s_L)
    a_eff, b_eff = ALPHA + (1 - ALPHA), ALPHA * b + (1 - ALPHA)  # regime B: blind price theta_H
    buyer_gap = high_buyer_utility(SYMBOLS, 1, a_eff, b_eff) - high_buyer_utility(
        SYMBOLS, 0, a_eff, b_eff
    )
    return is_zero(
        seller_gap**2 + buyer_gap**2, "theta_L - mu_hat(q_bar) theta_H and U_H(s_L) - U_H(s_H)"
    )


@proposition(
    "thesis.ch4.thm6.buying",
    source=f"{SRC}, Theorem 6(e)",
    statement="buyer i buys iff b_i = 1{theta_i <= p_i} (as printed)",
    holds=False,
)
def _thm6_buying() -> Verdict:
    game = THESIS_GAME
    for value in (game.theta_low, game.theta_high):
        for price in (game.theta_low, game.theta_high):
            printed_buys = value <= price
            if printed_buys and value - price < 0:
                return refuted(
                    "the printed rule buys at a loss (read b_i = 1{p_i <= theta_i})",
                    {
                        "game": "P0",
                        "value": str(value),
                        "price": str(price),
                        "surplus": str(value - price),
                    },
                )
    return checked("printed buying rule is a best response", 4)


@proposition(
    "thesis.ch4.thm6.buying.corrected",
    source=f"{SRC}, Theorem 6(e); spec ch4 section 6 item 3",
    statement="b_i = 1{p_i <= theta_i} (buy iff the price is at most the value; ties buy) is a "
    "best response for both types at both prices",
)
def _thm6_buying_corrected() -> Verdict:
    points = [{"game": g, "alpha": a} for _, g in _games() for a in (F(0), F(1))]
    return on_points(
        lambda game, alpha: all(
            s.gain <= 0
            for s in certify(game, alpha, equilibrium_profile(game, alpha)).sets
            if "_at_" in s.player
        ),
        points,
        "no gain from deviating in the purchase decision",
    )


# ---------------------------------------------------------------------- Corollaries 2 and 3


def _closed_forms(regime: str, strategic: bool) -> tuple[sp.Expr, sp.Expr]:
    """(u_S, u_H) of spec ch4 section 1.6, as printed there (thesis convention)."""
    delta = THETA_H - THETA_L
    q_bar = (1 - MU) * THETA_L / (MU * delta)
    if regime == "A":
        if strategic:
            return THETA_L - MU * C_S, delta - C_B
        return THETA_L + ALPHA * MU * delta, (1 - ALPHA) * delta
    if strategic:
        return MU * (THETA_H - C_S * q_bar), q_bar * (ALPHA * delta - C_B)
    return MU * THETA_H + ALPHA * (1 - MU) * THETA_L, sp.Integer(0)


@proposition(
    "thesis.ch4.cor2.closed_forms",
    source=f"{SRC}, proof of Corollary 2 (eqs. 4.5-4.6)",
    statement="u_X(alpha) = (1-alpha) U_X(blind) + alpha U_X(aware) equals the closed forms in both "
    "regimes, below and above alpha*",
)
def _cor2_closed_forms() -> Verdict:
    from games.price_discrimination.game import SYMBOLS, high_buyer_utility

    total = sp.Integer(0)
    q_bar = SYMBOLS.q_bar
    for regime, blind in (("A", 0), ("B", 1)):
        for strategic in (False, True):
            q = (1 if regime == "A" else q_bar) if strategic else 0
            a, b = ALPHA + (1 - ALPHA) * blind, (1 - ALPHA) * blind
            u_s, u_h = _closed_forms(regime, strategic)
            total += (seller_utility(SYMBOLS, q, a, b) - u_s) ** 2
            total += (high_buyer_utility(SYMBOLS, q, a, b) - u_h) ** 2
    return is_zero(total, "mixture of the workhorse utilities minus the closed forms, 4 branches")


@proposition(
    "thesis.ch4.cor2",
    source=f"{SRC}, Corollary 2",
    statement="u_S is maximised at alpha*; u_S(alpha*) > u_S(0) > u_S(1); high buyer: "
    "u_B(0) > u_B(1) = u_B(alpha*) if theta_L >= mu theta_H, u_B(1) > u_B(0) = u_B(alpha*) otherwise "
    "(thesis convention; needs c_S > 0, c_B < Delta)",
)
def _cor2() -> Verdict:
    def holds(game: PDGame) -> bool:
        star = game.alpha_star
        s = {x: equilibrium(game, x) for x in (F(0), star, F(1))}
        grid = [equilibrium(game, F(i, 50)).seller for i in range(51)]
        seller = s[star].seller > s[F(0)].seller > s[F(1)].seller and max(grid) <= s[star].seller
        h0, hs, h1 = (s[x].high_buyer for x in (F(0), star, F(1)))
        buyer = (h0 > h1 == hs) if game.regime == "A" else (h1 > h0 == hs)
        return seller and buyer

    return on_points(holds, [{"game": g} for _, g in _games()], "orderings of Corollary 2")


@proposition(
    "thesis.ch4.cor2.strict",
    source=f"{SRC}, Corollary 2(b) at the PBNE of the strict convention (spec ch4 section 1.7)",
    statement="at the genuine PBNE (strict convention) the seller's orderings are unchanged and, "
    "in regime B, the high buyer earns 0 for every alpha: u_B(1) = u_B(0) = u_B(alpha*) = 0",
)
def _cor2_strict() -> Verdict:
    def holds(game: PDGame) -> bool:
        star = game.alpha_star
        strict = [equilibrium(game, x, "strict") for x in (F(0), star, (1 + star) / 2, F(1))]
        thesis = [equilibrium(game, x) for x in (F(0), star, (1 + star) / 2, F(1))]
        same_seller = all(s.seller == t.seller for s, t in zip(strict, thesis, strict=True))
        buyer_zero = game.regime == "A" or all(s.high_buyer == 0 for s in strict)
        return same_seller and buyer_zero

    return on_points(holds, [{"game": g} for _, g in _games()], "strict-convention utilities")


@proposition(
    "thesis.ch4.cor3",
    source=f"{SRC}, Corollary 3 and Remark 3",
    statement="committing to price-discriminate w.p. alpha* (buyers truthful at the tie) gives "
    "U1* = u_S(alpha*) = alpha* (mu theta_H + (1-mu) theta_L) + (1-alpha*) u_S(0)",
)
def _cor3() -> Verdict:
    total = sp.Integer(0)
    delta = THETA_H - THETA_L
    star = C_B / delta
    for regime in ("A", "B"):
        u_s, _ = _closed_forms(regime, strategic=False)
        full = MU * THETA_H + (1 - MU) * THETA_L
        total += (u_s.subs(ALPHA, star) - (star * full + (1 - star) * u_s.subs(ALPHA, 0))) ** 2
    return is_zero(total, "u_S(alpha*) - [alpha* U_S(0;PD) + (1-alpha*) u_S(0)] in both regimes")


# ------------------------------------------------------------------ estimator: Lemma 26, Prop 6


@cache
def _run(name: str, seller: Any, rounds: int, runs: int, seed: int) -> RepeatedRun:
    return simulate(PARAMETER_SETS[name], seller, rounds, runs, seed)


def _lemma26_gaps() -> np.ndarray:
    run = _run("P0", AlphaPD(0.3), 3000, 200, 26)
    return np.abs(run.final_belief - run.alpha_bar()[:, -1])


@proposition(
    "thesis.ch4.lemma26",
    source=f"{SRC}, Lemma 26",
    statement="for any epsilon < 0 and delta > 0 there is N with P[|alpha_hat_T - alpha_bar_T| >= "
    "epsilon] <= delta for all T > N",
    holds=False,
)
def _lemma26() -> Verdict:
    gaps = _lemma26_gaps()
    eps, delta = -0.1, 0.5
    share = float(np.mean(gaps >= eps))
    if share > delta:
        return refuted(
            "with epsilon < 0 the event |.| >= epsilon is certain (the printed sign is a typo; "
            "the proof's Markov step also needs E|alpha_hat - alpha_bar|, not |E alpha_hat - alpha_bar|)",
            {"epsilon": eps, "delta": delta, "probability": share, "T": 3000},
        )
    return checked("probability below delta", gaps.size)


@proposition(
    "thesis.ch4.lemma26.corrected",
    source=f"{SRC}, Lemma 26; spec ch4 section 2.4",
    statement="for epsilon > 0 and estimator (4.7) with rho_tau >= rho_min > 0: P[|alpha_hat_T - "
    "alpha_bar_T| >= eps] <= 2 exp(-2 T eps^2 / (1 + 1/rho_min)^2) + o(1) -> 0 (Azuma)",
)
def _lemma26_corrected() -> Verdict:
    gaps = _lemma26_gaps()
    eps, rounds = 0.05, 3000
    rho_min = float(_run("P0", AlphaPD(0.3), 3000, 200, 26).rho.min())
    bound = 2 * np.exp(-2 * (rounds - 1) * (eps - 1 / rounds) ** 2 / (1 + 1 / rho_min) ** 2)
    share = float(np.mean(gaps >= eps))
    if share <= bound:
        return checked(
            f"alpha-PD(0.3) on P0, T={rounds}: share {share:.3g} of runs off by >= {eps} vs "
            f"Azuma bound {bound:.3g}",
            gaps.size,
        )
    return refuted("share above the Azuma bound", {"share": share, "bound": float(bound)})


def _regime_a_always_pd() -> RepeatedRun:
    return _run("P2", AlphaPD(1.0), 4000, 4, 7)


@proposition(
    "thesis.ch4.prop6",
    source=f"{SRC}, Proposition 6 and eq. (4.7)",
    statement="if buyers equilibrium-respond to alpha_hat_t, estimator (4.7) is consistent for any "
    "sequence of seller actions",
    holds=False,
)
def _prop6() -> Verdict:
    run = _regime_a_always_pd()
    gap = float(np.abs(run.final_belief - run.alpha_bar()[:, -1]).mean())
    if gap > 0.1:
        return refuted(
            "regime A: strategic buyers all send s_L (q* = 1), rho = 0 and the belief stays "
            "pinned at alpha* while the seller always price-discriminates",
            {
                "game": "P2",
                "seller": "always-PD",
                "T": run.rounds,
                "alpha_hat_T": float(run.final_belief.mean()),
                "alpha_bar_T": 1.0,
                "identifiable": bool(run.identifiable().any()),
            },
        )
    return checked("estimator tracks alpha_bar", run.runs)


@proposition(
    "thesis.ch4.prop6.corrected",
    source=f"{SRC}, Proposition 6; spec ch4 section 2.5",
    statement="if rho_tau > 0 for all tau (n >= 2, regime B or truthful buyers), "
    "E[alpha_hat_t] = (1/t) sum_{tau<t} E[alpha_tau]",
)
def _prop6_corrected() -> Verdict:
    rounds, reps = 50, 6000
    run = _run("P0", FixedProduct(0.8, 0.3), rounds, reps, 6)
    theory = rounds / (rounds + 1) * float(alpha_of(0.8, 0.3))
    mean = float(run.final_belief.mean())
    se = float(run.final_belief.std(ddof=1) / np.sqrt(reps))
    point = {
        "mean": mean,
        "theory": theory,
        "se": se,
        "identifiable": bool(run.identifiable().all()),
    }
    return on_points(
        lambda mean, theory, se, identifiable: identifiable and abs(mean - theory) < 4 * se,
        [point],
        f"fixed (a, b) = (0.8, 0.3) on P0, {reps} runs: mean alpha_hat_51 within 4 SE of 50/51 * 0.62",
    )


# -------------------------------------------------------------------------- Propositions 7-10


def _best_vertex_is_pd(game: PDGame) -> bool:
    for q in (0, game.q_star):
        values = [seller_utility(game, q, a, b) for a, b in ((1, 1), (0, 0), (1, 0), (0, 1))]
        if seller_utility(game, q, 1, 0) < max(values):
            return False
    return True


@proposition(
    "thesis.ch4.prop7",
    source=f"{SRC}, Proposition 7",
    statement="against CBER buyers always-PD is no-regret and its average utility converges to at "
    "most u_S(1)",
    holds=False,
)
def _prop7() -> Verdict:
    run = _regime_a_always_pd()
    game = PARAMETER_SETS["P2"]
    avg = float(run.expected_seller_utility().mean())
    u1 = float(equilibrium(game, 1).seller)
    if avg > u1 + 0.1:
        return refuted(
            "regime A with estimator (4.7): the belief cannot rise above alpha*, buyers stay "
            "truthful in a share of rounds and always-PD earns more than u_S(1)",
            {"game": "P2", "T": run.rounds, "average_utility": avg, "u_S(1)": u1},
        )
    return checked("average utility at most u_S(1)", run.runs)


@proposition(
    "thesis.ch4.prop7.corrected",
    source=f"{SRC}, Proposition 7; spec ch4 section 2.8",
    statement="always-PD has zero per-round regret against truthful and strategic buyers (both "
    "regimes); in regime B with estimator (4.7) its average utility converges to u_S(1)",
)
def _prop7_corrected() -> Verdict:
    if not all(_best_vertex_is_pd(g) for _, g in _games()):
        return refuted("PD is not a best response", {})
    run = _run("P0", AlphaPD(1.0), 4000, 4, 7)
    avg = float(run.expected_seller_utility()[:, 200:].mean())
    target = float(equilibrium(THESIS_GAME, 1).seller)
    return on_points(
        lambda avg, target: abs(avg - target) < 0.02,
        [{"avg": avg, "target": target}],
        f"PD best vertex on {len(_games())} games; P0 average after round 200 near u_S(1)",
    )


@proposition(
    "thesis.ch4.prop8",
    source=f"{SRC}, Proposition 8 via Lemmas 27-29",
    statement="any no-regret seller against CBER buyers averages at most alpha* U_S(0;PD) + "
    "(1-alpha*) u_S(1), which is strictly below U1* (c_S > 0, alpha* < 1)",
)
def _prop8() -> Verdict:
    delta = THETA_H - THETA_L
    star = C_B / delta
    full = MU * THETA_H + (1 - MU) * THETA_L
    total = sp.Integer(0)
    for regime, drop in (("A", MU * C_S), ("B", C_S * (1 - MU) * THETA_L / delta)):
        below, _ = _closed_forms(regime, strategic=False)
        above, _ = _closed_forms(regime, strategic=True)
        u1_star = below.subs(ALPHA, star)
        bound = star * full + (1 - star) * above
        total += (u1_star - bound - (1 - star) * drop) ** 2
    verdict = is_zero(
        total,
        "U1* - bound = (1 - alpha*) (u_S(0) - u_S(1)), with u_S(0) - u_S(1) = "
        "mu c_S (A) or c_S (1-mu) theta_L / Delta (B), both > 0",
    )
    return verdict


def _sequences(
    game: PDGame, rng: np.random.Generator, count: int = 15, rounds: int = 50
) -> dict[str, Any]:
    """Random per-round (q_t, a_t, b_t) of CBER play against an arbitrary seller."""
    g = game.numeric()
    strategic = rng.random((count, rounds)) < rng.random((count, 1))
    a, b = rng.random((2, count, rounds))
    corner = rng.random((count, rounds)) < 0.3
    a, b = np.where(corner, np.round(a), a), np.where(corner, np.round(b), b)
    q = strategic * g.q_star
    utility = seller_utility(g, q, a, b)
    vertices = [
        seller_utility(g, q, va, vb).mean(axis=1) for va, vb in ((1, 1), (0, 0), (1, 0), (0, 1))
    ]
    truthful = ~strategic
    return {
        "g": g,
        "avg": utility.mean(axis=1),
        "regret": np.max(vertices, axis=0) - utility.mean(axis=1),
        "f": truthful.mean(axis=1),
        "beta": np.where(truthful, alpha_of(a, b), 0).mean(axis=1),
        "pd_gap": np.where(truthful, 1 - a + b, 0).mean(axis=1),
    }


def _finite_t(check: str) -> Verdict:
    rng = np.random.default_rng(2024)
    n = 0
    for name, game in _games():
        s = _sequences(game, rng)
        g = s["g"]
        pd_truthful = seller_utility(g, 0, 1, 0)
        pd_strategic = seller_utility(g, g.q_star, 1, 0)
        if check == "lemma27":
            ok = s["avg"] <= s["f"] * pd_truthful + (1 - s["f"]) * pd_strategic + 1e-9
        elif check == "lemma28":
            ok = s["regret"] >= g.kappa * s["pd_gap"] - 1e-9
        else:
            ok = s["avg"] - float(game.U1_star) <= g.kappa * (s["beta"] - g.alpha_star) + 1e-9
        if not ok.all():
            i = int(np.argmin(ok))
            return refuted(f"{check} fails", {"game": name, "instance": i})
        n += ok.size
    return checked(f"{check} finite-T inequality on random (q_t, a_t, b_t) sequences", n)


@proposition(
    "thesis.ch4.lemma27",
    source=f"{SRC}, Lemma 27 (finite-T form, spec ch4 section 2.8)",
    statement="avg_T U_S <= f_T U_S(0;PD) + (1-f_T) U_S(q*;PD), f_T the share of truthful rounds; "
    "the right side is < U1* when f_T <= alpha* < 1 and c_S > 0",
)
def _lemma27() -> Verdict:
    return _finite_t("lemma27")


@proposition(
    "thesis.ch4.lemma28",
    source=f"{SRC}, Lemma 28 (finite-T form, spec ch4 section 2.8)",
    statement="R_T >= (kappa/T) sum_{t truthful} (1 - a_t + b_t), kappa = min(mu Delta, (1-mu) theta_L); "
    "hence (1/T) sum_{t truthful}(a_t - b_t) >= f_T - R_T/kappa",
)
def _lemma28() -> Verdict:
    return _finite_t("lemma28")


@proposition(
    "thesis.ch4.prop10",
    source=f"{SRC}, Proposition 10 (finite-T form, both regimes; spec ch4 section 2.8)",
    statement="for any seller: avg_T U_S(q_t; a_t, b_t) - U1* <= kappa (beta_T - alpha*), so with "
    "consistent beliefs limsup avg U_S <= U1*",
)
def _prop10() -> Verdict:
    return _finite_t("prop10")


@proposition(
    "thesis.ch4.lemma29",
    source=f"{SRC}, Lemma 29",
    statement="with consistent beliefs, limsup beta_T = limsup (1/T) sum_{t: alpha_hat_t <= alpha*} "
    "alpha_t <= alpha* (checked: beta_T <= alpha* + 0.02 on simulated sellers, P0, T = 4000)",
)
def _lemma29() -> Verdict:
    sellers = {
        "belief-tracking(0.01)": BeliefTracking(0.01),
        "always-PD": AlphaPD(1.0),
        "alpha-PD(0.7)": AlphaPD(0.7),
    }
    points = [
        {"seller": k, "beta": float(_run("P0", s, 4000, 4, 29).beta().max())}
        for k, s in sellers.items()
    ]
    star = float(THESIS_GAME.alpha_star)
    return on_points(lambda seller, beta: beta <= star + 0.02, points, "beta_T <= alpha* + 0.02")


@proposition(
    "thesis.ch4.lemma30",
    source=f"{SRC}, Lemma 30",
    statement="for prices on {theta_L, theta_H}: alpha_t >= a_t - b_t, since alpha = a - b + 2b(1-a)",
)
def _lemma30() -> Verdict:
    a, b = sp.symbols("a b", nonnegative=True)
    verdict = is_zero(alpha_of(a, b) - (a - b + 2 * b * (1 - a)), "alpha(a,b) - (a - b + 2b(1-a))")
    return proved(f"{verdict.evidence}; 2b(1-a) >= 0 on [0,1]^2") if verdict.holds else verdict


@proposition(
    "thesis.ch4.prop9",
    source=f"{SRC}, Proposition 9 (proof: play alpha~-PD with alpha~ < alpha*)",
    statement="sup over fixed mixed strategies with alpha(a,b) < alpha* of U_S(truthful; a, b) is U1*: "
    "the product alpha~-PD strategy earns u_S(alpha~) -> U1* as alpha~ -> alpha*",
)
def _prop9() -> Verdict:
    from games.price_discrimination.game import SYMBOLS

    total = sp.Integer(0)
    for regime, blind in (("A", 0), ("B", 1)):
        u_s, _ = _closed_forms(regime, strategic=False)
        a, b = ALPHA + (1 - ALPHA) * blind, (1 - ALPHA) * blind
        total += (seller_utility(SYMBOLS, 0, a, b) - u_s) ** 2
        total += (alpha_of(a, b) - ALPHA) ** 2
    return is_zero(total, "U_S(0; alpha~-PD) - u_S(alpha~) and alpha(a,b) - alpha~, both regimes")
