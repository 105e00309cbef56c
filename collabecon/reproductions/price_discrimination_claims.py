r"""The claims of Werner (2024), ch. 4, about what its Figures 4.1-4.5 show, as a table.

The table is :data:`CLAIMS`, judged on the numbers of
:func:`collabecon.reproductions.price_discrimination.measure`.

Section 4.4 simulates Algorithm 6 with :math:`\mu = 0.5`, :math:`\underline\theta = 5`,
:math:`\bar\theta = 15`, :math:`c_B = c_S = 5`, n = 10 buyers, T = 20,000 rounds, against
three sellers (Exp3, CExp3, :math:`\alpha^*`-PD). Its text claims, about

* Figure 4.1 and Corollary 2 (one-shot equilibrium utilities against :math:`\alpha`): the
  seller's utility rises up to :math:`\alpha^* = c_B/\Delta\theta`, is maximal there and
  drops beyond it; the orderings of Corollary 2 (a) and (b); the low buyer earns 0;
* Figure 4.2 (cumulative average utilities): Exp3 converges to the (:math:`\alpha=0`)-PD
  utilities, CExp3's seller to the (:math:`\alpha=1`)-PD utility with the buyer at most there,
  :math:`\alpha^*`-PD to the (:math:`\alpha=\alpha^*`)-PD utilities; the caption: the
  buyer's (:math:`\alpha=0`) and (:math:`\alpha=\alpha^*`) utilities coincide;
* Figure 4.3: the belief :math:`\hat\alpha_t` converges to 0 (Exp3), 0.5
  (:math:`\alpha^*`-PD), above 0.5 (CExp3), and aligns with :math:`\bar\alpha_t` (Lemma 26);
* Figure 4.4: Exp3 never plays PD or reversePD and charges everyone the high price; CExp3
  mostly price-discriminates; :math:`\alpha^*`-PD plays PD and the high price half the time
  each;
* Figure 4.5 (biased beliefs): overestimation hurts every seller, underestimation does not
  help Exp3 or :math:`\alpha^*`-PD, and CExp3 gains beyond what consistent beliefs allow.

"Converges to" is judged on the mean of the last half of the rounds (the limit the cumulative
average approaches), averaged over seeds, within :data:`UTILITY_TOLERANCE` per buyer for
utilities and :data:`BELIEF_TOLERANCE` for beliefs and frequencies: the thesis states no
tolerance. Utilities are per buyer; the buyer's utility in Figure 4.2 is the average over all
buyers (:math:`\mu u_H`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from econ.claims import Claim, ClaimSpec, evaluate
from games.price_discrimination.equilibrium import equilibrium
from games.price_discrimination.figures import FIGURE_SELLERS
from games.price_discrimination.game import THESIS_GAME

__all__ = [
    "BELIEF_TOLERANCE",
    "CLAIMS",
    "PAPER",
    "UTILITY_TOLERANCE",
    "claims",
    "plus_minus",
]

PAPER = "Werner 2024, ch. 4"
#: Tolerance per buyer for "the utility converges to" (the thesis states none).
UTILITY_TOLERANCE = 0.1
#: Tolerance for "the belief / frequency converges to" (the thesis states none).
BELIEF_TOLERANCE = 0.05


def plus_minus(stats: tuple[float, float]) -> str:
    """A mean and its standard error over seeds, as text."""
    mean, se = stats
    return f"{mean:.4g} ± {se:.2g}"


_FIG41 = f"{PAPER}, section 4.2, Fig. 4.1 and Corollary 2"
_FIG42 = f"{PAPER}, section 4.4 (Convergence of Utilities), Fig. 4.2"
_FIG43 = f"{PAPER}, section 4.4 (Consistency of alpha_hat), Fig. 4.3"
_FIG44 = f"{PAPER}, section 4.4 (Convergence of Seller Actions), Fig. 4.4"
_FIG45 = f"{PAPER}, section 4.4 (Biased alpha_hat), Fig. 4.5"
#: The thesis game's one-shot equilibria at alpha = 0, alpha* = 0.5 and 1, and Theorem 6's
#: profile at alpha = 1 (what the thesis prints for it).
_EQ = {alpha: equilibrium(THESIS_GAME, alpha) for alpha in (0.0, 0.5, 1.0)}
_THESIS_1 = equilibrium(THESIS_GAME, 1.0, "thesis")


def _one_shot(regime: str) -> tuple[ClaimSpec, ...]:
    """Figure 4.1 and Corollary 2 about the seller in regime ``regime`` (A or B)."""
    label = "theta_L >= mu theta_H" if regime == "A" else "theta_L < mu theta_H"

    def o(m: dict[str, Any]) -> dict[str, Any]:
        return dict(m["one_shot"][regime])

    return (
        ClaimSpec(
            id=f"fig4.1.{regime}.seller_rises_to_alpha_star",
            statement=f"({label}) the seller's utility increases for alpha below alpha*",
            where=_FIG41,
            measured=lambda m: (
                f"u_S {o(m)['seller_0']:.4g} -> {o(m)['seller_star']:.4g} on [0, alpha*]"
            ),
            holds=lambda m: (
                o(m)["seller_nondecreasing_below"] and o(m)["seller_star"] > o(m)["seller_0"]
            ),
        ),
        ClaimSpec(
            id=f"fig4.1.{regime}.seller_drops_beyond_alpha_star",
            statement=f"({label}) beyond alpha* the high buyers turn strategic and the seller's "
            "utility drops",
            where=_FIG41,
            measured=lambda m: f"u_S {o(m)['seller_star']:.4g} -> {o(m)['seller_just_above']:.4g}",
            holds=lambda m: o(m)["seller_just_above"] < o(m)["seller_star"],
        ),
        ClaimSpec(
            id=f"cor2.{regime}.seller_max_at_alpha_star",
            statement=f"({label}) u_S is maximised at alpha* = c_B / Delta theta",
            where=_FIG41,
            published=lambda m: o(m)["alpha_star"],
            measured=lambda m: o(m)["argmax"],
            holds=lambda m: abs(o(m)["argmax"] - o(m)["alpha_star"]) <= o(m)["grid_step"],
            note=lambda m: f"argmax on a grid of step {o(m)['grid_step']:.2g}",
        ),
        ClaimSpec(
            id=f"cor2.{regime}.seller_order",
            statement=f"({label}) u_S(alpha*) > u_S(0) > u_S(1)",
            where=_FIG41,
            measured=lambda m: {
                "u_S(alpha*)": o(m)["seller_star"],
                "u_S(0)": o(m)["seller_0"],
                "u_S(1)": o(m)["seller_1"],
            },
            holds=lambda m: o(m)["seller_star"] > o(m)["seller_0"] > o(m)["seller_1"],
        ),
    )


def _high_buyer(m: dict[str, Any], regime: str, key: str = "high_buyer") -> dict[str, float]:
    """The high buyer's utility at alpha = 0, 1 and alpha* in ``regime``, keyed u_B(.)."""
    o = m["one_shot"][regime]
    u = o[key]
    return {"u_B(0)": u[0.0], "u_B(1)": u[1.0], "u_B(alpha*)": u[o["alpha_star"]]}


def _low_buyer(m: dict[str, Any]) -> float:
    return float(max(m["one_shot"][r]["low_buyer_max"] for r in ("A", "B")))


def _limit(
    claim_id: str,
    statement: str,
    target: float,
    seller: str,
    stat: str,
    *,
    where: str = _FIG42,
    tolerance: float = UTILITY_TOLERANCE,
    what: str = "last-half mean",
    note: str = "",
) -> ClaimSpec:
    """The mean over seeds of ``stat`` against ``seller`` converges to ``target``."""

    def text(m: dict[str, Any]) -> str:
        spread = plus_minus(m["sellers"][seller][stat])
        base = f"{what} ± s.e. over seeds {spread}; tolerance {tolerance:g}"
        return f"{base}; {note}" if note else base

    return ClaimSpec(
        id=claim_id,
        statement=statement,
        where=where,
        published=target,
        measured=lambda m: m["sellers"][seller][stat][0],
        holds=lambda m: abs(m["sellers"][seller][stat][0] - target) <= tolerance,
        note=text,
    )


def _freq(m: dict[str, Any], seller: str) -> dict[str, float]:
    """Relative frequency of each action class against ``seller``, mean over seeds."""
    return {k: v[0] for k, v in m["sellers"][seller]["action_freq"].items()}


def _most_frequent(seller: str, action: str, statement: str) -> ClaimSpec:
    return ClaimSpec(
        id=f"fig4.4.{seller}.{action.lower()}",
        statement=f"{statement} (the most frequent action class)",
        where=_FIG44,
        published=action,
        measured=lambda m: {k: round(v, 4) for k, v in _freq(m, seller).items()},
        holds=lambda m: max(_freq(m, seller), key=_freq(m, seller).__getitem__) == action,
        note="relative frequencies over all rounds, mean over seeds",
    )


def _gaps(m: dict[str, Any]) -> dict[str, float]:
    return {name: m["sellers"][name]["belief_gap_final"][0] for name in FIGURE_SELLERS}


def _top(m: dict[str, Any]) -> dict[str, float]:
    """The final seller utility at the largest bias level, per seller."""
    return {name: float(m["sweep"][name][-1]) for name in FIGURE_SELLERS}


def _unbiased(m: dict[str, Any]) -> dict[str, float]:
    return {name: m["sellers"][name]["seller_average"][0] for name in FIGURE_SELLERS}


def _best_underestimated(m: dict[str, Any], seller: str) -> float:
    """The largest final seller utility over the negative bias levels."""
    return float(m["sweep"][seller][np.asarray(m["bias_levels"]) < 0].max())


_U1 = float(THESIS_GAME.U1_star)
#: Consistent-belief equilibrium utilities of the Exp3 (u_S(0)) and alpha*-PD (U1*) sellers.
_CONSISTENT = {"exp3": float(_EQ[0.0].seller), "alpha-pd": _U1}

#: Every claim of section 4.4 (and Corollary 2, which Figure 4.1 draws) on the numbers
#: :func:`collabecon.reproductions.price_discrimination.measure` returns.
CLAIMS: tuple[ClaimSpec, ...] = (
    *_one_shot("A"),
    *_one_shot("B"),
    ClaimSpec(
        id="cor2.A.buyer_order",
        statement="(theta_L >= mu theta_H) u_B(0) > u_B(1) = u_B(alpha*) for the high buyer",
        where=_FIG41,
        measured=lambda m: _high_buyer(m, "A"),
        holds=lambda m: (
            _high_buyer(m, "A")["u_B(0)"]
            > _high_buyer(m, "A")["u_B(1)"]
            == _high_buyer(m, "A")["u_B(alpha*)"]
        ),
    ),
    ClaimSpec(
        id="cor2.B.buyer_order",
        statement="(theta_L < mu theta_H) u_B(1) > u_B(0) = u_B(alpha*) for the high buyer",
        where=_FIG41,
        published=lambda m: {
            k: _high_buyer(m, "B", "high_buyer_thesis")[k]
            for k in ("u_B(1)", "u_B(0)", "u_B(alpha*)")
        },
        measured=lambda m: {k: _high_buyer(m, "B")[k] for k in ("u_B(1)", "u_B(0)", "u_B(alpha*)")},
        holds=lambda m: (
            _high_buyer(m, "B")["u_B(1)"]
            > _high_buyer(m, "B")["u_B(0)"]
            == _high_buyer(m, "B")["u_B(alpha*)"]
        ),
        note="at the equilibrium u_B(1) = 0: the printed value is Theorem 6's profile, "
        "not an equilibrium for alpha > alpha* (docs/errata.md, thesis.ch4.cor2)",
    ),
    ClaimSpec(
        id="cor2.low_buyer_zero",
        statement="theta_L-buyers always receive a utility of zero, regardless of alpha",
        where=_FIG41,
        published=0.0,
        measured=_low_buyer,
        holds=lambda m: _low_buyer(m) == 0.0,
        note="largest |u_L| over alpha in {0, 0.01, ..., 1}, both regimes",
    ),
    ClaimSpec(
        id="fig4.2.buyer_alpha0_equals_alpha_star",
        statement="theta_L < mu theta_H here, so the buyer's (alpha=0)-PD and (alpha=alpha*)-PD "
        "utilities are the same",
        where=f"{PAPER}, section 4.4, Fig. 4.2 caption",
        measured=lambda m: {
            "alpha=0": m["one_shot"]["B"]["buyer_avg"][0.0],
            "alpha=alpha*": m["one_shot"]["B"]["buyer_avg"][m["one_shot"]["B"]["alpha_star"]],
        },
        holds=lambda m: (
            m["one_shot"]["B"]["buyer_avg"][0.0]
            == m["one_shot"]["B"]["buyer_avg"][m["one_shot"]["B"]["alpha_star"]]
        ),
    ),
    _limit(
        "fig4.2.exp3.seller",
        "against Exp3 the seller's utility converges to the (alpha=0)-PD equilibrium utility",
        float(_EQ[0.0].seller),
        "exp3",
        "seller_last_half",
    ),
    _limit(
        "fig4.2.exp3.buyer",
        "against Exp3 the buyer's utility converges to the (alpha=0)-PD equilibrium utility",
        float(_EQ[0.0].buyer_avg),
        "exp3",
        "buyer_last_half",
    ),
    _limit(
        "fig4.2.cexp3.seller",
        "against CExp3 the seller's utility converges to the (alpha=1)-PD equilibrium utility",
        float(_EQ[1.0].seller),
        "cexp3",
        "seller_last_half",
    ),
    ClaimSpec(
        id="fig4.2.cexp3.buyer",
        statement="against CExp3 the buyer's utility may converge to something less than the "
        "(alpha=1)-PD utility",
        where=_FIG42,
        published=float(_THESIS_1.buyer_avg),
        measured=lambda m: m["sellers"]["cexp3"]["buyer_last_half"][0],
        holds=lambda m: m["sellers"]["cexp3"]["buyer_last_half"][0] <= float(_THESIS_1.buyer_avg),
        note=lambda m: (
            "last-half mean ± s.e. {:.4g} ± {:.2g}".format(
                *m["sellers"]["cexp3"]["buyer_last_half"]
            )
            + f"; the (alpha=1)-PD buyer utility {float(_THESIS_1.buyer_avg):g} is Theorem 6's "
            f"profile (the equilibrium's is {float(_EQ[1.0].buyer_avg):g})"
        ),
    ),
    _limit(
        "fig4.2.alpha_pd.seller",
        "against the alpha*-PD seller the seller's utility converges to the "
        "(alpha=alpha*)-PD equilibrium utility",
        float(_EQ[0.5].seller),
        "alpha-pd",
        "seller_last_half",
        note="the seller commits to alpha* - 0.01, whose one-shot utility is 8.725",
    ),
    _limit(
        "fig4.2.alpha_pd.buyer",
        "against the alpha*-PD seller the buyer's utility converges to the "
        "(alpha=alpha*)-PD equilibrium utility",
        float(_EQ[0.5].buyer_avg),
        "alpha-pd",
        "buyer_last_half",
    ),
    _limit(
        "fig4.3.exp3.belief",
        "alpha_hat_t converges to 0 against a seller playing Exp3",
        0.0,
        "exp3",
        "alpha_hat_final",
        where=_FIG43,
        tolerance=BELIEF_TOLERANCE,
        what="alpha_hat at T",
    ),
    _limit(
        "fig4.3.alpha_pd.belief",
        "alpha_hat_t converges to 0.5 (= alpha*) against a seller playing alpha*-PD",
        0.5,
        "alpha-pd",
        "alpha_hat_final",
        where=_FIG43,
        tolerance=BELIEF_TOLERANCE,
        what="alpha_hat at T",
        note="the seller commits to alpha* - 0.01",
    ),
    ClaimSpec(
        id="fig4.3.cexp3.belief",
        statement="alpha_hat_t converges to higher than 0.5 against a seller playing CExp3",
        where=_FIG43,
        published="> 0.5",
        measured=lambda m: m["sellers"]["cexp3"]["alpha_hat_final"][0],
        holds=lambda m: m["sellers"]["cexp3"]["alpha_hat_final"][0] > 0.5,
        note=lambda m: "alpha_hat at T, mean ± s.e. over seeds {:.4g} ± {:.2g}".format(
            *m["sellers"]["cexp3"]["alpha_hat_final"]
        ),
    ),
    ClaimSpec(
        id="fig4.3.consistent",
        statement="alpha_hat_t aligns with the seller's true average probability of price "
        "discrimination alpha_bar_t (Lemma 26), for every seller",
        where=_FIG43,
        measured=_gaps,
        holds=lambda m: max(_gaps(m).values()) <= BELIEF_TOLERANCE,
        note=f"|alpha_hat_T - alpha_bar_T|, mean over seeds; tolerance {BELIEF_TOLERANCE:g}",
    ),
    ClaimSpec(
        id="fig4.4.exp3.no_pd",
        statement="the numbers of PD and reversePD actions of the Exp3 seller are both 0",
        where=f"{PAPER}, section 4.4, Fig. 4.4 caption",
        published={"PD": 0.0, "reversePD": 0.0},
        measured=lambda m: {k: _freq(m, "exp3")[k] for k in ("PD", "reversePD")},
        holds=lambda m: _freq(m, "exp3")["PD"] == 0.0 and _freq(m, "exp3")["reversePD"] == 0.0,
    ),
    _most_frequent("exp3", "high", "a signal-blind seller sets a high price for all n buyers"),
    _most_frequent(
        "cexp3",
        "PD",
        "a signal-aware seller sets a high price for high-signal buyers and a low price for "
        "low-signal buyers",
    ),
    ClaimSpec(
        id="fig4.4.alpha_pd.split",
        statement="an alpha*-PD seller price-discriminates with probability 0.5 and sets a high "
        "price for all n buyers with probability 0.5",
        where=_FIG44,
        published={"PD": 0.5, "high": 0.5},
        measured=lambda m: {k: _freq(m, "alpha-pd")[k] for k in ("PD", "high")},
        holds=lambda m: (
            abs(_freq(m, "alpha-pd")["PD"] - 0.5) <= BELIEF_TOLERANCE
            and abs(_freq(m, "alpha-pd")["high"] - 0.5) <= BELIEF_TOLERANCE
        ),
        note=f"relative frequencies over all rounds; tolerance {BELIEF_TOLERANCE:g}; "
        "the seller commits to alpha* - 0.01",
    ),
    ClaimSpec(
        id="fig4.5.overestimate_hurts",
        statement="in all cases the seller is hurt by a buyer who overestimates the probability "
        "of price discrimination",
        where=_FIG45,
        measured=lambda m: {
            n: f"{_top(m)[n]:.4g} vs {_unbiased(m)[n]:.4g}" for n in FIGURE_SELLERS
        },
        holds=lambda m: all(_top(m)[n] < _unbiased(m)[n] for n in FIGURE_SELLERS),
        note=lambda m: (
            "final seller utility at bias [{:.1f}, {:.1f}] vs the unbiased run "
            "(Fig. 4.2), means over seeds".format(m["bias_levels"][-1], m["bias_levels"][-1] + 0.1)
        ),
    ),
    ClaimSpec(
        id="fig4.5.underestimate_no_gain",
        statement="against a buyer who underestimates the probability of price discrimination, "
        "neither the Exp3 nor the alpha*-PD seller gains utility",
        where=_FIG45,
        published=_CONSISTENT,
        measured=lambda m: {n: _best_underestimated(m, n) for n in _CONSISTENT},
        holds=lambda m: all(
            _best_underestimated(m, n) <= _CONSISTENT[n] + UTILITY_TOLERANCE for n in _CONSISTENT
        ),
        note="largest final seller utility over negative biases vs the consistent-belief "
        f"equilibrium utility (u_S(0), U1*); tolerance {UTILITY_TOLERANCE:g}",
    ),
    ClaimSpec(
        id="fig4.5.cexp3_gains",
        statement="the CExp3 seller benefits from a buyer who underestimates the probability of "
        "price discrimination, an advantage impossible against consistent estimates",
        where=_FIG45,
        published=f"> U1* = {_U1:g}",
        measured=lambda m: _best_underestimated(m, "cexp3"),
        holds=lambda m: _best_underestimated(m, "cexp3") > _U1,
        note="largest final seller utility over negative biases vs U1* (Proposition 10)",
    ),
)


def claims(m: dict[str, Any]) -> list[Claim]:
    """Every claim of section 4.4 and Corollary 2 (:data:`CLAIMS`), each held or not.

    Judged on :func:`collabecon.reproductions.price_discrimination.measure`'s numbers.
    """
    return evaluate(CLAIMS, m)
