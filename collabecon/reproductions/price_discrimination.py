"""Werner (2024), ch. 4, Figures 4.1-4.5 (``collabecon pricing figures``): every claim the thesis
makes about what its figures show, measured next to published.

Section 4.4 simulates Algorithm 6 with :math:`\\mu = 0.5`, :math:`\\underline\\theta = 5`,
:math:`\\bar\\theta = 15`, :math:`c_B = c_S = 5`, n = 10 buyers, T = 20,000 rounds, against
three sellers (Exp3, CExp3, :math:`\\alpha^*`-PD). Its text claims, about

* Figure 4.1 and Corollary 2 (one-shot equilibrium utilities against :math:`\\alpha`): the
  seller's utility rises up to :math:`\\alpha^* = c_B/\\Delta\\theta`, is maximal there and
  drops beyond it; the orderings of Corollary 2 (a) and (b); the low buyer earns 0;
* Figure 4.2 (cumulative average utilities): Exp3 converges to the (:math:`\\alpha=0`)-PD
  utilities, CExp3's seller to the (:math:`\\alpha=1`)-PD utility with the buyer at most there,
  :math:`\\alpha^*`-PD to the (:math:`\\alpha=\\alpha^*`)-PD utilities; the caption: the
  buyer's (:math:`\\alpha=0`) and (:math:`\\alpha=\\alpha^*`) utilities coincide;
* Figure 4.3: the belief :math:`\\hat\\alpha_t` converges to 0 (Exp3), 0.5
  (:math:`\\alpha^*`-PD), above 0.5 (CExp3), and aligns with :math:`\\bar\\alpha_t` (Lemma 26);
* Figure 4.4: Exp3 never plays PD or reversePD and charges everyone the high price; CExp3
  mostly price-discriminates; :math:`\\alpha^*`-PD plays PD and the high price half the time
  each;
* Figure 4.5 (biased beliefs): overestimation hurts every seller, underestimation does not
  help Exp3 or :math:`\\alpha^*`-PD, and CExp3 gains beyond what consistent beliefs allow.

"Converges to" is judged on the mean of the last half of the rounds (the limit the cumulative
average approaches), averaged over seeds, within :data:`UTILITY_TOLERANCE` per buyer for
utilities and :data:`BELIEF_TOLERANCE` for beliefs and frequencies: the thesis states no
tolerance. Utilities are per buyer; the buyer's utility in Figure 4.2 is the average over all
buyers (:math:`\\mu u_H`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from econ.claims import Claim, Reproduction
from games.price_discrimination.figures import (
    BIAS_LEVELS,
    FIGURE_SELLERS,
    FigureData,
    figure_data,
    plot_figures,
)
from games.price_discrimination.game import PARAMETER_SETS, THESIS_GAME, equilibrium
from games.price_discrimination.repeated import ACTIONS

__all__ = ["BELIEF_TOLERANCE", "SETTINGS", "UTILITY_TOLERANCE", "claims", "figures", "reproduce"]

PAPER = "Werner 2024, ch. 4"
#: Tolerance per buyer for "the utility converges to" (the thesis states none).
UTILITY_TOLERANCE = 0.1
#: Tolerance for "the belief / frequency converges to" (the thesis states none).
BELIEF_TOLERANCE = 0.05
#: scale -> (rounds, seeds). The thesis: T = 20,000, one run per seller.
SETTINGS = {"small": (5_000, 3), "paper": (20_000, 3)}


def _seed_stats(x: np.ndarray) -> tuple[float, float]:
    """Mean over seeds and its standard error (0 for one seed)."""
    x = np.asarray(x, dtype=float)
    se = float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else 0.0
    return float(x.mean()), se


def _last_half(x: np.ndarray) -> np.ndarray:
    """Per run, the mean of the last half of the rounds."""
    return x[:, x.shape[1] // 2 :].mean(axis=1)


def measure(data: FigureData) -> dict[str, Any]:
    """The numbers the claims rest on, from the simulated figures."""
    one_shot: dict[str, Any] = {}
    for regime, key in (("A", "P1"), ("B", "P0")):
        game = PARAMETER_SETS[key]
        star = float(game.alpha_star)
        c = data.curves[regime]
        alphas, seller = c["alpha"], c["seller"]
        below = alphas <= star
        eq = {a: equilibrium(game, a) for a in (0.0, star, 1.0)}
        thesis = {a: equilibrium(game, a, "thesis") for a in (0.0, star, 1.0)}
        grid = np.linspace(0.0, 1.0, 101)
        one_shot[regime] = {
            "alpha_star": star,
            "seller_nondecreasing_below": bool(np.all(np.diff(seller[below]) >= -1e-12)),
            "seller_0": float(eq[0.0].seller),
            "seller_star": float(eq[star].seller),
            "seller_1": float(eq[1.0].seller),
            "seller_just_above": float(seller[alphas > star][0]),
            "argmax": float(alphas[int(np.argmax(seller))]),
            "grid_step": float(alphas[1] - alphas[0]),
            "high_buyer": {a: float(e.high_buyer) for a, e in eq.items()},
            "high_buyer_thesis": {a: float(e.high_buyer) for a, e in thesis.items()},
            "buyer_avg": {a: float(e.buyer_avg) for a, e in eq.items()},
            "low_buyer_max": max(abs(float(equilibrium(game, a).low_buyer)) for a in grid),
        }
    sellers: dict[str, Any] = {}
    for name, run in data.runs.items():
        seller_u, buyer_u = run.seller_utility(), run.buyer_utility()
        actions = run.actions()
        freq = {a: (actions == k).mean(axis=1) for k, a in enumerate(ACTIONS)}
        sellers[name] = {
            "seller_last_half": _seed_stats(_last_half(seller_u)),
            "buyer_last_half": _seed_stats(_last_half(buyer_u)),
            "seller_average": _seed_stats(seller_u.mean(axis=1)),
            "buyer_average": _seed_stats(buyer_u.mean(axis=1)),
            "alpha_hat_final": _seed_stats(run.alpha_hat[:, -1]),
            "alpha_bar_final": _seed_stats(run.alpha_bar()[:, -1]),
            "belief_gap_final": _seed_stats(np.abs(run.alpha_hat[:, -1] - run.alpha_bar()[:, -1])),
            "action_freq": {a: _seed_stats(f) for a, f in freq.items()},
        }
    sweep = {name: final.mean(axis=1) for name, final in data.sweep.items()}
    return {
        "rounds": data.rounds,
        "seeds": data.seeds,
        "seed": data.seed,
        "one_shot": one_shot,
        "sellers": sellers,
        "bias_levels": BIAS_LEVELS,
        "sweep": sweep,
        "sweep_seed_se": {
            name: (
                final.std(axis=1, ddof=1) / np.sqrt(final.shape[1])
                if final.shape[1] > 1
                else np.zeros(final.shape[0])
            )
            for name, final in data.sweep.items()
        },
    }


def _pm(stats: tuple[float, float]) -> str:
    mean, se = stats
    return f"{mean:.4g} ± {se:.2g}"


def claims(m: dict[str, Any]) -> list[Claim]:
    """Every claim of section 4.4 (and Corollary 2, which Figure 4.1 draws) on the numbers
    :func:`measure` returns, each held or not."""
    out: list[Claim] = []
    a, b = m["one_shot"]["A"], m["one_shot"]["B"]
    where = f"{PAPER}, Fig. 4.1 and Corollary 2"
    for regime, o in (("A", a), ("B", b)):
        label = "theta_L >= mu theta_H" if regime == "A" else "theta_L < mu theta_H"
        out.append(
            Claim(
                where,
                f"fig4.1.{regime}.seller_rises_to_alpha_star",
                f"({label}) the seller's utility increases for alpha below alpha*",
                None,
                f"u_S {o['seller_0']:.4g} -> {o['seller_star']:.4g} on [0, alpha*]",
                o["seller_nondecreasing_below"] and o["seller_star"] > o["seller_0"],
            )
        )
        out.append(
            Claim(
                where,
                f"fig4.1.{regime}.seller_drops_beyond_alpha_star",
                f"({label}) beyond alpha* the high buyers turn strategic and the seller's "
                "utility drops",
                None,
                f"u_S {o['seller_star']:.4g} -> {o['seller_just_above']:.4g}",
                o["seller_just_above"] < o["seller_star"],
            )
        )
        out.append(
            Claim(
                where,
                f"cor2.{regime}.seller_max_at_alpha_star",
                f"({label}) u_S is maximised at alpha* = c_B / Delta theta",
                o["alpha_star"],
                o["argmax"],
                abs(o["argmax"] - o["alpha_star"]) <= o["grid_step"],
                note=f"argmax on a grid of step {o['grid_step']:.2g}",
            )
        )
        out.append(
            Claim(
                where,
                f"cor2.{regime}.seller_order",
                f"({label}) u_S(alpha*) > u_S(0) > u_S(1)",
                None,
                {"u_S(alpha*)": o["seller_star"], "u_S(0)": o["seller_0"], "u_S(1)": o["seller_1"]},
                o["seller_star"] > o["seller_0"] > o["seller_1"],
            )
        )
    hb, star = a["high_buyer"], a["alpha_star"]
    out.append(
        Claim(
            where,
            "cor2.A.buyer_order",
            "(theta_L >= mu theta_H) u_B(0) > u_B(1) = u_B(alpha*) for the high buyer",
            None,
            {"u_B(0)": hb[0.0], "u_B(1)": hb[1.0], "u_B(alpha*)": hb[star]},
            hb[0.0] > hb[1.0] == hb[star],
        )
    )
    hb, star, th = b["high_buyer"], b["alpha_star"], b["high_buyer_thesis"]
    out.append(
        Claim(
            where,
            "cor2.B.buyer_order",
            "(theta_L < mu theta_H) u_B(1) > u_B(0) = u_B(alpha*) for the high buyer",
            {"u_B(1)": th[1.0], "u_B(0)": th[0.0], "u_B(alpha*)": th[star]},
            {"u_B(1)": hb[1.0], "u_B(0)": hb[0.0], "u_B(alpha*)": hb[star]},
            hb[1.0] > hb[0.0] == hb[star],
            note="at the equilibrium u_B(1) = 0: the printed value is Theorem 6's profile, "
            "not an equilibrium for alpha > alpha* (docs/errata.md, thesis.ch4.cor2)",
        )
    )
    low = max(a["low_buyer_max"], b["low_buyer_max"])
    out.append(
        Claim(
            where,
            "cor2.low_buyer_zero",
            "theta_L-buyers always receive a utility of zero, regardless of alpha",
            0.0,
            low,
            low == 0.0,
            note="largest |u_L| over alpha in {0, 0.01, ..., 1}, both regimes",
        )
    )
    ba = b["buyer_avg"]
    out.append(
        Claim(
            f"{PAPER}, Fig. 4.2 caption",
            "fig4.2.buyer_alpha0_equals_alpha_star",
            "theta_L < mu theta_H here, so the buyer's (alpha=0)-PD and (alpha=alpha*)-PD "
            "utilities are the same",
            None,
            {"alpha=0": ba[0.0], "alpha=alpha*": ba[b["alpha_star"]]},
            ba[0.0] == ba[b["alpha_star"]],
        )
    )
    out += _repeated_claims(m)
    out += _bias_claims(m)
    return out


def _limit(
    claim_id: str,
    statement: str,
    target: float,
    stats: tuple[float, float],
    *,
    where: str = f"{PAPER}, section 4.4, Fig. 4.2",
    tolerance: float = UTILITY_TOLERANCE,
    what: str = "last-half mean",
    note: str = "",
) -> Claim:
    mean = stats[0]
    base = f"{what} ± s.e. over seeds {_pm(stats)}; tolerance {tolerance:g}"
    return Claim(
        where,
        claim_id,
        statement,
        target,
        mean,
        abs(mean - target) <= tolerance,
        note=f"{base}; {note}" if note else base,
    )


def _repeated_claims(m: dict[str, Any]) -> list[Claim]:
    s = m["sellers"]
    eq0, eq1, eqs = (equilibrium(THESIS_GAME, x) for x in (0.0, 1.0, 0.5))
    thesis1 = equilibrium(THESIS_GAME, 1.0, "thesis")
    out = [
        _limit(
            "fig4.2.exp3.seller",
            "against Exp3 the seller's utility converges to the (alpha=0)-PD equilibrium utility",
            float(eq0.seller),
            s["exp3"]["seller_last_half"],
        ),
        _limit(
            "fig4.2.exp3.buyer",
            "against Exp3 the buyer's utility converges to the (alpha=0)-PD equilibrium utility",
            float(eq0.buyer_avg),
            s["exp3"]["buyer_last_half"],
        ),
        _limit(
            "fig4.2.cexp3.seller",
            "against CExp3 the seller's utility converges to the (alpha=1)-PD equilibrium utility",
            float(eq1.seller),
            s["cexp3"]["seller_last_half"],
        ),
    ]
    mean, se = s["cexp3"]["buyer_last_half"]
    bound = float(thesis1.buyer_avg)
    out.append(
        Claim(
            f"{PAPER}, section 4.4, Fig. 4.2",
            "fig4.2.cexp3.buyer",
            "against CExp3 the buyer's utility may converge to something less than the "
            "(alpha=1)-PD utility",
            bound,
            mean,
            mean <= bound,
            note=f"last-half mean ± s.e. {mean:.4g} ± {se:.2g}; the (alpha=1)-PD buyer utility "
            f"{bound:g} is Theorem 6's profile (the equilibrium's is {float(eq1.buyer_avg):g})",
        )
    )
    out += [
        _limit(
            "fig4.2.alpha_pd.seller",
            "against the alpha*-PD seller the seller's utility converges to the "
            "(alpha=alpha*)-PD equilibrium utility",
            float(eqs.seller),
            s["alpha-pd"]["seller_last_half"],
            note="the seller commits to alpha* - 0.01, whose one-shot utility is 8.725",
        ),
        _limit(
            "fig4.2.alpha_pd.buyer",
            "against the alpha*-PD seller the buyer's utility converges to the "
            "(alpha=alpha*)-PD equilibrium utility",
            float(eqs.buyer_avg),
            s["alpha-pd"]["buyer_last_half"],
        ),
    ]
    fig3 = f"{PAPER}, section 4.4, Fig. 4.3"
    out += [
        _limit(
            "fig4.3.exp3.belief",
            "alpha_hat_t converges to 0 against a seller playing Exp3",
            0.0,
            s["exp3"]["alpha_hat_final"],
            where=fig3,
            tolerance=BELIEF_TOLERANCE,
            what="alpha_hat at T",
        ),
        _limit(
            "fig4.3.alpha_pd.belief",
            "alpha_hat_t converges to 0.5 (= alpha*) against a seller playing alpha*-PD",
            0.5,
            s["alpha-pd"]["alpha_hat_final"],
            where=fig3,
            tolerance=BELIEF_TOLERANCE,
            what="alpha_hat at T",
            note="the seller commits to alpha* - 0.01",
        ),
    ]
    mean, se = s["cexp3"]["alpha_hat_final"]
    out.append(
        Claim(
            fig3,
            "fig4.3.cexp3.belief",
            "alpha_hat_t converges to higher than 0.5 against a seller playing CExp3",
            "> 0.5",
            mean,
            mean > 0.5,
            note=f"alpha_hat at T, mean ± s.e. over seeds {mean:.4g} ± {se:.2g}",
        )
    )
    gaps = {name: s[name]["belief_gap_final"][0] for name in FIGURE_SELLERS}
    out.append(
        Claim(
            fig3,
            "fig4.3.consistent",
            "alpha_hat_t aligns with the seller's true average probability of price "
            "discrimination alpha_bar_t (Lemma 26), for every seller",
            None,
            gaps,
            max(gaps.values()) <= BELIEF_TOLERANCE,
            note=f"|alpha_hat_T - alpha_bar_T|, mean over seeds; tolerance {BELIEF_TOLERANCE:g}",
        )
    )
    fig4 = f"{PAPER}, section 4.4, Fig. 4.4"
    f = {name: {k: v[0] for k, v in s[name]["action_freq"].items()} for name in FIGURE_SELLERS}
    out.append(
        Claim(
            fig4,
            "fig4.4.exp3.no_pd",
            "the numbers of PD and reversePD actions of the Exp3 seller are both 0",
            {"PD": 0.0, "reversePD": 0.0},
            {"PD": f["exp3"]["PD"], "reversePD": f["exp3"]["reversePD"]},
            f["exp3"]["PD"] == 0.0 and f["exp3"]["reversePD"] == 0.0,
        )
    )
    for name, action, statement in (
        ("exp3", "high", "a signal-blind seller sets a high price for all n buyers"),
        (
            "cexp3",
            "PD",
            "a signal-aware seller sets a high price for high-signal buyers and a low price for "
            "low-signal buyers",
        ),
    ):
        top = max(f[name], key=f[name].__getitem__)
        out.append(
            Claim(
                fig4,
                f"fig4.4.{name}.{action.lower()}",
                f"{statement} (the most frequent action class)",
                action,
                {k: round(v, 4) for k, v in f[name].items()},
                top == action,
                note="relative frequencies over all rounds, mean over seeds",
            )
        )
    pd_, high = f["alpha-pd"]["PD"], f["alpha-pd"]["high"]
    out.append(
        Claim(
            fig4,
            "fig4.4.alpha_pd.split",
            "an alpha*-PD seller price-discriminates with probability 0.5 and sets a high "
            "price for all n buyers with probability 0.5",
            {"PD": 0.5, "high": 0.5},
            {"PD": pd_, "high": high},
            abs(pd_ - 0.5) <= BELIEF_TOLERANCE and abs(high - 0.5) <= BELIEF_TOLERANCE,
            note=f"relative frequencies over all rounds; tolerance {BELIEF_TOLERANCE:g}; "
            "the seller commits to alpha* - 0.01",
        )
    )
    return out


def _bias_claims(m: dict[str, Any]) -> list[Claim]:
    where = f"{PAPER}, section 4.4, Fig. 4.5"
    sweep, s = m["sweep"], m["sellers"]
    bias = np.asarray(m["bias_levels"])
    unbiased = {name: s[name]["seller_average"][0] for name in FIGURE_SELLERS}
    top = {name: float(sweep[name][-1]) for name in FIGURE_SELLERS}
    out = [
        Claim(
            where,
            "fig4.5.overestimate_hurts",
            "in all cases the seller is hurt by a buyer who overestimates the probability of "
            "price discrimination",
            None,
            {n: f"{top[n]:.4g} vs {unbiased[n]:.4g}" for n in FIGURE_SELLERS},
            all(top[n] < unbiased[n] for n in FIGURE_SELLERS),
            note=f"final seller utility at bias [{bias[-1]:.1f}, {bias[-1] + 0.1:.1f}] vs the "
            "unbiased run (Fig. 4.2), means over seeds",
        )
    ]
    neg = bias < 0
    lines = {"exp3": float(equilibrium(THESIS_GAME, 0.0).seller), "alpha-pd": 8.75}
    best = {n: float(sweep[n][neg].max()) for n in lines}
    out.append(
        Claim(
            where,
            "fig4.5.underestimate_no_gain",
            "against a buyer who underestimates the probability of price discrimination, "
            "neither the Exp3 nor the alpha*-PD seller gains utility",
            lines,
            best,
            all(best[n] <= lines[n] + UTILITY_TOLERANCE for n in lines),
            note="largest final seller utility over negative biases vs the consistent-belief "
            f"equilibrium utility (u_S(0), U1*); tolerance {UTILITY_TOLERANCE:g}",
        )
    )
    u1 = float(THESIS_GAME.U1_star)
    gain = float(sweep["cexp3"][neg].max())
    out.append(
        Claim(
            where,
            "fig4.5.cexp3_gains",
            "the CExp3 seller benefits from a buyer who underestimates the probability of price "
            "discrimination, an advantage impossible against consistent estimates",
            f"> U1* = {u1:g}",
            gain,
            gain > u1,
            note="largest final seller utility over negative biases vs U1* (Proposition 10)",
        )
    )
    return out


def _body(m: dict[str, Any]) -> str:
    s = m["sellers"]
    lines = [
        f"Algorithm 6 with mu = 0.5, theta_L = 5, theta_H = 15, c_B = c_S = 5, n = 10; "
        f"T = {m['rounds']} rounds (the thesis: 20,000), {m['seeds']} seeds (the thesis: one "
        f"run), seed {m['seed']}. Utilities per buyer; mean ± standard error over seeds.",
        "",
        "| seller | seller, average | seller, last half | buyer, last half | alpha_hat_T "
        "| alpha_bar_T | PD | high |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in FIGURE_SELLERS:
        r = s[name]
        lines.append(
            f"| {name} | {_pm(r['seller_average'])} | {_pm(r['seller_last_half'])} "
            f"| {_pm(r['buyer_last_half'])} | {_pm(r['alpha_hat_final'])} "
            f"| {_pm(r['alpha_bar_final'])} | {r['action_freq']['PD'][0]:.3f} "
            f"| {r['action_freq']['high'][0]:.3f} |"
        )
    lines += [
        "",
        "Figure 4.5, final seller utility per bias level b (bias ~ U[b, b + 0.1]):",
        "",
        "| b | " + " | ".join(FIGURE_SELLERS) + " |",
        "|---" * (len(FIGURE_SELLERS) + 1) + "|",
    ]
    for k, level in enumerate(m["bias_levels"]):
        cells = [f"{m['sweep'][n][k]:.3f}" for n in FIGURE_SELLERS]
        lines.append(f"| {level + 0.0:.1f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figures(
    out: str | Path,
    rounds: int = 20_000,
    seeds: int = 1,
    seed: int = 1,
    progress: Callable[[int], None] | None = None,
    *,
    name: str = "pricing",
) -> Reproduction:
    """Simulate and plot Figures 4.1-4.5 into ``out``; the thesis's claims on them."""
    data = figure_data(rounds, seeds, seed, progress)
    written = plot_figures(out, data)
    m = measure(data)
    pngs = tuple(p.name for p in written if p.suffix == ".png")
    return Reproduction(
        name,
        "Werner (2024), ch. 4: the price-discrimination game, Figures 4.1-4.5",
        tuple(claims(m)),
        _body(m),
        pngs,
        {**m, "files": [str(p) for p in written]},
    )


def reproduce(scale: str, out: Path, seeds: int | None = None) -> Reproduction:
    """Figures 4.1-4.5 at ``scale`` (small: T = 5,000; paper: T = 20,000), 3 seeds unless
    ``seeds`` says otherwise, seed 1 (the thesis's)."""
    if scale not in SETTINGS:
        raise ValueError(f"scale must be one of {', '.join(SETTINGS)}, got {scale!r}")
    rounds, default_seeds = SETTINGS[scale]
    return figures(out, rounds, seeds or default_seeds, seed=1)
