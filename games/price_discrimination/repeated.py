r"""The repeated PD game (Algorithm 6), simulated for many independent runs at once.

Werner (2024), section 4.3 and Algorithm 6 (section 4.6), read with Definition 4 step 3 and
the experiments of section 4.4 ("samples once from each distribution"): each round nature
draws the ``n`` buyers' types, CBER buyers signal given their shared belief
:math:`\hat\alpha_t`, the seller draws **one price per signal class**, buyers buy iff the
price is at most their value, and the seller observes its realised utility.

Vectorisation: runs form an axis of every array. Buyers are drawn a block of rounds at a time
as the counts that prices and utilities depend on (how many high types, how many of them would
evade), together with everything the sellers and the estimator need in either buyer mode
(:mod:`.buyers`, :meth:`.estimator.ConsistentEstimator.begin`). The block's rounds are one
compiled loop (:func:`.rounds.play`), where a round only selects among precomputed values and
updates the learners and the estimator; everything that does not feed back into play
(utilities, action classes, regret) is computed after the loop on whole ``(runs, rounds)``
arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from econ.outputs import frame
from econ.validation import choice, fits_in_memory, in_interval, positive_int
from games.price_discrimination.buyers import (
    RoundTypes,
    draw_block,
    realised_buyer_utility,
    realised_seller_utility,
)
from games.price_discrimination.estimator import ConsistentEstimator
from games.price_discrimination.game import PDGame, seller_utility
from games.price_discrimination.rounds import play
from games.price_discrimination.sellers import FixedProduct, Seller

Floats = NDArray[np.float64]
ACTIONS: tuple[str, ...] = ("high", "low", "PD", "reversePD")
#: The four deterministic signal -> price maps as (a, b) = (P(high | s_high), P(high | s_low)).
VERTICES: dict[str, tuple[int, int]] = {
    "high": (1, 1),
    "low": (0, 0),
    "PD": (1, 0),
    "reversePD": (0, 1),
}

#: Bytes per round and run of a simulation: the logs of :class:`RepeatedRun` (two counts,
#: three flags, five floats) and the estimator's biases.
ROUND_RUN_BYTES = 64
#: Rounds times runs of a block: the buyers and the seller's uniforms drawn at once (about 50
#: bytes per run-round) before the compiled loop plays them.
BLOCK_RUN_ROUNDS = 1 << 16


@dataclass(frozen=True, slots=True)
class RepeatedRun:
    """Per-round logs of independent runs, each array shaped ``(runs, rounds)``.

    Attributes
    ----------
    high_types, evaders
        How many buyers had the high value, and how many of them sent the low signal.
    low_price_high, high_price_high
        Whether the low-signal / high-signal class was charged the high price.
    strategic
        Whether buyers played the strategic profile (belief above alpha*).
    a, b, alpha
        The seller's marginals P(high | s_high), P(high | s_low) and P(prices differ).
    alpha_hat
        The belief buyers used in the round.
    final_belief
        The belief after the last round, shaped ``(runs,)``.
    rho
        P(the round shows both signals) given the buyers' play.

    References
    ----------
    Werner (2024), ch. 4, §4.6, Algorithm 6; §4.4 (the logged quantities of Figures 4.2-4.4).
    """

    game: PDGame
    seller: str
    high_types: NDArray[np.int32]
    evaders: NDArray[np.int32]
    low_price_high: NDArray[np.bool_]
    high_price_high: NDArray[np.bool_]
    strategic: NDArray[np.bool_]
    a: Floats
    b: Floats
    alpha: Floats
    alpha_hat: Floats
    rho: Floats
    final_belief: Floats

    @property
    def runs(self) -> int:
        """The number of independent runs.

        References
        ----------
        Werner (2024), ch. 4, §4.6, Algorithm 6.
        """
        return int(self.a.shape[0])

    @property
    def rounds(self) -> int:
        """The horizon :math:`T`.

        References
        ----------
        Werner (2024), ch. 4, §4.6, Algorithm 6, line 3.
        """
        return int(self.a.shape[1])

    @property
    def q(self) -> Floats:
        r"""High-type evasion probability :math:`q_t = q^*\,\mathbb 1\{\hat\alpha_t > \alpha^*\}`.

        References
        ----------
        Werner (2024), ch. 4, §4.3, Definition 5 and Theorem 6(b).
        """
        return np.where(self.strategic, float(self.game.q_star), 0.0)

    def seller_utility(self) -> Floats:
        """Realised seller utility per buyer in each round, eq. (4.2) divided by ``n``.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Eq. (4.2); §4.4, Figure 4.2.
        """
        return realised_seller_utility(
            self.game, self.high_types, self.evaders, self.low_price_high, self.high_price_high
        )

    def buyer_utility(self) -> Floats:
        """Realised buyer utility averaged over all ``n`` buyers (Figure 4.2's "Buyer").

        References
        ----------
        Werner (2024), ch. 4, §4.2, Eq. (4.1); §4.4, Figure 4.2.
        """
        return realised_buyer_utility(
            self.game, self.high_types, self.evaders, self.low_price_high, self.high_price_high
        )

    def expected_seller_utility(self) -> Floats:
        """:math:`U_S(q_t; a_t, b_t)`, the expected per-buyer utility of each round.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Eqs. (4.2)-(4.3).
        """
        return seller_utility(self.game, self.q, self.a, self.b)

    def alpha_bar(self) -> Floats:
        r"""Running mean :math:`\bar\alpha_t = \frac1t\sum_{\tau\le t}\alpha_\tau`.

        References
        ----------
        Werner (2024), ch. 4, §4.3, Definition 6; §4.4, Figure 4.3.
        """
        return np.cumsum(self.alpha, axis=1) / np.arange(1, self.rounds + 1)

    def actions(self, convention: str = "realised") -> NDArray[np.int8]:
        """Class of each round, in the order of :data:`ACTIONS` (Figure 4.4, section 4.4).

        ``"realised"`` (the reference code's, used for Figure 4.4): high if every buyer paid
        the high price, else low if every buyer paid the low price, else PD (high signal ->
        high price, low signal -> low price) or reversePD; a round where only one signal was
        sent is high or low. ``"sampled"`` classifies the seller's drawn pair of prices.

        References
        ----------
        Werner (2024), ch. 4, §4.4, Convergence of Seller Actions and Figure 4.4.
        """
        choice("convention", convention, ("realised", "sampled"))
        low, high = self.low_price_high, self.high_price_high
        if convention == "sampled":
            has_high = has_low = np.ones_like(low)
        else:
            has_high = self.high_types > self.evaders
            has_low = (self.game.n - self.high_types + self.evaders) > 0
        all_high = (~has_low | low) & (~has_high | high)
        all_low = (~has_low | ~low) & (~has_high | ~high)
        out = np.where(high, 2, 3).astype(np.int8)
        out[all_low] = 1
        out[all_high] = 0
        return out

    def round_means(self) -> dict[str, Floats]:
        """Per round ``t = 1..T``, the means over the runs.

        Realised and expected seller utility, buyer utility, the buyers' belief, alpha and its
        running mean, the share of strategic rounds, and the share of each action class
        (``action_<class>``).

        References
        ----------
        Werner (2024), ch. 4, §4.4, Figures 4.2-4.4 (the plotted quantities).
        """
        actions = self.actions()
        return {
            "t": np.arange(1, self.rounds + 1),
            "seller_utility": self.seller_utility().mean(axis=0),
            "buyer_utility": self.buyer_utility().mean(axis=0),
            "expected_seller_utility": self.expected_seller_utility().mean(axis=0),
            "alpha_hat": self.alpha_hat.mean(axis=0),
            "alpha": self.alpha.mean(axis=0),
            "alpha_bar": self.alpha_bar().mean(axis=0),
            "strategic": self.strategic.mean(axis=0),
            **{f"action_{k}": (actions == i).mean(axis=0) for i, k in enumerate(ACTIONS)},
        }

    def to_frame(self) -> Any:
        """:meth:`round_means` as a pandas DataFrame indexed by round ``t`` (needs pandas).

        References
        ----------
        Werner (2024), ch. 4, §4.4, Figures 4.2-4.4 (the plotted quantities).
        """
        return frame(self.round_means(), "RepeatedRun").set_index("t")

    def action_frequencies(self, convention: str = "realised") -> dict[str, float]:
        """Share of rounds (over all runs) in each action class.

        References
        ----------
        Werner (2024), ch. 4, §4.4, Figure 4.4.
        """
        counts = np.bincount(self.actions(convention).ravel(), minlength=len(ACTIONS))
        return {k: float(c) / self.a.size for k, c in zip(ACTIONS, counts, strict=True)}

    def vertex_totals(self) -> dict[str, Floats]:
        r"""Per run, :math:`\frac1T\sum_t U_S(q_t; v)` for each pure price rule ``v``.

        References
        ----------
        Werner (2024), ch. 4, §4.3, Definition 7 (the comparators of the regret).
        """
        return {
            k: seller_utility(self.game, self.q, a, b).mean(axis=1)
            for k, (a, b) in VERTICES.items()
        }

    def regret(self, comparators: tuple[str, ...] = tuple(VERTICES)) -> Floats:
        r"""Expected average regret per run (Definition 7) against fixed pure price rules.

        .. math:: R_T = \frac1T\Big[\max_{v}\sum_t U_S(q_t; v) - \sum_t U_S(q_t; a_t, b_t)\Big]

        :math:`U_S` is affine in :math:`(a, b)`, so the maximum over all of :math:`\Pi` is
        attained at one of the four maps of :data:`VERTICES` (the default). Pass
        ``("high", "low")`` for the blind seller's own comparator class.

        References
        ----------
        Werner (2024), ch. 4, §4.3, Definition 7.
        """
        totals = self.vertex_totals()
        best = np.max([totals[k] for k in comparators], axis=0)
        return best - self.expected_seller_utility().mean(axis=1)

    def realised_regret(self) -> Floats:
        """Definition 7's regret on the realised buyer draws.

        The best fixed map's realised mean utility minus the seller's.

        References
        ----------
        Werner (2024), ch. 4, §4.3, Definition 7.
        """
        n_rounds = self.rounds
        best = np.max(
            [
                realised_seller_utility(
                    self.game, self.high_types, self.evaders, np.bool_(b), np.bool_(a)
                ).sum(axis=1)
                for a, b in VERTICES.values()
            ],
            axis=0,
        )
        return (best - self.seller_utility().sum(axis=1)) / n_rounds

    def truthful_share(self) -> Floats:
        r"""The share :math:`f_T = |\mathcal T|/T` of rounds with :math:`\hat\alpha_t \le \alpha^*`.

        References
        ----------
        Werner (2024), ch. 4, §4.3, proof sketch of Proposition 8 and Lemma 27 (:math:`|\mathcal
        T|/T`).
        """
        return 1.0 - self.strategic.mean(axis=1)

    def beta(self) -> Floats:
        r""":math:`\beta_T = \frac1T\sum_{t\in\mathcal T}\alpha_t` (Lemma 29).

        References
        ----------
        Werner (2024), ch. 4, §4.3, proof sketch of Proposition 8, Lemma 29.
        """
        return np.where(self.strategic, 0.0, self.alpha).mean(axis=1)

    def identifiable(self) -> NDArray[np.bool_]:
        r"""Whether every round could be informative (:math:`\rho_\tau > 0` for all :math:`\tau`).

        References
        ----------
        Werner (2024), ch. 4, §4.7, proof of Proposition 6, Eq. (4.7).
        """
        return self.rho.min(axis=1) > 0

    def summary(self) -> dict[str, Any]:
        """Means over all rounds and runs (standard errors across runs).

        One run gives no standard error: ``seller_utility_se`` is then ``None`` and
        ``seller_utility_se_why`` says so.

        References
        ----------
        Werner (2024), ch. 4, §4.4 (the reported averages).
        """
        seller = self.seller_utility().mean(axis=1)
        se: dict[str, Any] = (
            {"seller_utility_se": _se(seller)}
            if seller.size > 1
            else {"seller_utility_se": None, "seller_utility_se_why": "one run gives no spread"}
        )
        return {
            "seller_utility_mean": float(seller.mean()),
            **se,
            "buyer_utility_mean": float(self.buyer_utility().mean()),
            "alpha_hat_final": float(self.alpha_hat[:, -1].mean()),
            "alpha_bar_final": float(self.alpha_bar()[:, -1].mean()),
            "action_freq": self.action_frequencies(),
            "strategic_share": float(self.strategic.mean()),
            "identifiable": bool(self.identifiable().all()),
        }


def _se(x: Floats) -> float:
    return float(x.std(ddof=1) / np.sqrt(x.size))


def simulate(
    game: PDGame,
    seller: Seller,
    rounds: int,
    runs: int = 1,
    seed: int | np.random.Generator | None = None,
    *,
    bias: tuple[Any, Any] | None = None,
    alpha_hat_init: float = 0.0,
    progress: Callable[[int], None] | None = None,
) -> RepeatedRun:
    r"""Play the repeated PD game of Algorithm 6 between ``seller`` and CBER buyers.

    Parameters
    ----------
    game
        The stage game (``n`` buyers per round; the estimator needs ``n >= 2``).
    seller
        A seller configuration from :mod:`.sellers`.
    rounds, runs
        Horizon :math:`T` and number of independent runs (leading axis of every output).
    seed
        Seed or generator; drawn from once, so the same seed gives the same runs.
    bias
        ``(lo, hi)``: each round the buyers' next belief gets a fresh
        :math:`\varepsilon_t \sim U[\mathrm{lo}, \mathrm{hi}]` and is clipped to [0, 1]
        (Figure 4.5). ``lo``/``hi`` may be arrays with one value per run.
    alpha_hat_init
        The belief of round 1 (0 by eq. (4.7); the reference code starts at 0.5).
    progress
        Called with the number of rounds completed after each block of rounds (e.g. a tqdm
        ``update``).

    References
    ----------
    Werner (2024), ch. 4, §4.6, Algorithm 6; §4.3, Definition 5 (CBER buyers); §4.4, Algorithms.
    """
    rounds = positive_int("rounds", rounds)
    runs = positive_int("runs", runs)
    fits_in_memory(f"rounds={rounds}, runs={runs}", ROUND_RUN_BYTES * rounds * runs)
    in_interval("alpha_hat_init", alpha_hat_init, 0.0, 1.0)
    rng = np.random.default_rng(seed)
    game = game.numeric()
    spread = None
    if bias is not None:
        lo = np.broadcast_to(in_interval("bias low", bias[0], -1.0, 1.0), (runs,))
        hi = np.broadcast_to(in_interval("bias high", bias[1], -1.0, 1.0), (runs,))
        if np.any(hi < lo):
            raise ValueError(f"bias must satisfy low <= high, got {bias!r}")
        spread = (lo, hi)

    policy = seller.start(game, runs, rounds)
    estimator = ConsistentEstimator(game, runs, rounds, alpha_hat_init, spread)
    types = RoundTypes.of(game)
    increments = estimator.increments(_informative(game)).reshape(-1)  # by column
    # whether buyers were strategic, how many had the high value, how many evaded, rho, belief
    logs = (
        np.empty((rounds, runs), bool),
        np.empty((rounds, runs), np.int32),
        np.empty((rounds, runs), np.int32),
        np.empty((rounds, runs)),
        np.empty((rounds, runs)),
    )
    block_size = max(16, BLOCK_RUN_ROUNDS // runs)
    for start in range(0, rounds, block_size):
        stop = min(rounds, start + block_size)
        block = draw_block(types, rng, stop - start, runs, noise=spread is not None)
        estimator.begin(start, stop - start, block.noise)
        play(start, block, types, estimator, increments, logs, policy.pricing(block))
        if progress is not None:
            progress(stop - start)

    a, b, alpha = policy.marginals()
    low_price_high, high_price_high = policy.prices()
    strategic_runs, high_types, evaders, rho, alpha_hat = (log.T for log in logs)
    return RepeatedRun(
        game=game,
        seller=seller.name,
        high_types=high_types,
        evaders=evaders,
        low_price_high=low_price_high.T,
        high_price_high=high_price_high.T,
        strategic=strategic_runs,
        a=a.T,
        b=b.T,
        alpha=alpha.T,
        alpha_hat=alpha_hat,
        rho=rho,
        final_belief=estimator.final_belief(),
    )


@lru_cache(maxsize=16)
def _informative(game: PDGame) -> NDArray[np.bool_]:
    """:meth:`.buyers.RoundTypes.informative` of ``game``, kept for the games last asked for."""
    informative = RoundTypes.of(game).informative()
    informative.setflags(write=False)
    return informative


def default_comparators(game: PDGame) -> dict[str, tuple[float, float]]:
    r"""Fixed mixed strategies of :math:`\mathbb A^{MS}` for the policy regret.

    The four pure maps and the product :math:`\tilde\alpha`-PD strategies of Proposition 9's proof
    with :math:`\tilde\alpha \in \{\alpha^*/2, \alpha^* - 0.01\}`.

    References
    ----------
    Werner (2024), ch. 4, §4.3, the class A^MS before Proposition 9, and the proof sketch of
    Proposition 9.
    """
    out = {k: (float(a), float(b)) for k, (a, b) in VERTICES.items()}
    blind = float(game.blind_price_high)
    for alpha in (float(game.alpha_star) / 2, float(game.alpha_star) - 0.01):
        if 0 < alpha < 1:
            a = alpha + (1 - alpha) * blind
            out[f"alpha-pd({alpha:.3g})"] = (a, (1 - alpha) * blind)
    return out


def policy_regret(
    game: PDGame,
    run: RepeatedRun,
    comparators: dict[str, tuple[float, float]] | None = None,
    seed: int | np.random.Generator | None = None,
    *,
    runs: int | None = None,
    alpha_hat_init: float = 0.0,
) -> dict[str, Any]:
    r"""Average policy regret (Definition 9) against fixed mixed strategies.

    Each comparator is re-run against the same CBER buyers (who react to it), all comparators
    together in one batch; the regret is the best comparator's mean expected utility
    :math:`\frac1T\sum_t U_S` minus that of ``run``.

    References
    ----------
    Werner (2024), ch. 4, §4.3, Definitions 9-10.
    """
    comparators = default_comparators(game) if comparators is None else comparators
    per = runs if runs is not None else run.runs
    names = list(comparators)
    a = np.repeat([comparators[k][0] for k in names], per)
    b = np.repeat([comparators[k][1] for k in names], per)
    batch = simulate(
        game, FixedProduct(a, b), run.rounds, len(a), seed, alpha_hat_init=alpha_hat_init
    )
    values = batch.expected_seller_utility().mean(axis=1).reshape(len(names), per).mean(axis=1)
    best = int(np.argmax(values))
    own = float(run.expected_seller_utility().mean())
    return {
        "comparators": {k: float(v) for k, v in zip(names, values, strict=True)},
        "best": names[best],
        "policy_regret": float(values[best]) - own,
    }
