r"""CBER buyers of the repeated PD game, drawn a block of rounds at a time.

Werner (2024), Definition 5: in round ``t`` every buyer plays Theorem 6 for the shared belief
:math:`\hat\alpha_t`: low types signal low; high types signal low with probability
:math:`q_t = q^*\,\mathbb 1\{\hat\alpha_t > \alpha^*\}` (truthful at the tie). Buyers buy iff
the price is at most their value (Theorem 6(e), read as :math:`b = \mathbb 1\{p \le \theta\}`).

The buyers of a round never depend on the past except through :math:`q_t \in \{0, q^*\}`, and
they are exchangeable, so a round's buyers are summed up by one of the few pairs (how many are
high types, how many of those evade in strategic mode): :class:`RoundTypes` tabulates, per
pair and buyer mode, everything prices and payoffs depend on, and a :class:`Block` of rounds
and runs holds one uniform per round and run that draws its pair exactly from the pairs' law
(:func:`pair_of`). Sellers and the estimator gather what they need from the tables, so a round
of play only selects among precomputed values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray
from scipy.stats import binom

from econ.validation import fits_in_memory
from games.price_discrimination.game import PDGame

Floats = NDArray[np.float64]
Ints = NDArray[np.int32]
Bools = NDArray[np.bool_]

#: bytes per pair of the tables built on :class:`RoundTypes` (the pairs and their law, the
#: sellers' and the estimator's per-pair rewards and increments in both buyer modes)
PAIR_BYTES = 256


def realised_seller_utility(
    game: PDGame, high_types: Any, evaders: Any, low_price_high: Any, high_price_high: Any
) -> Floats:
    r"""The seller's realised utility per buyer in a round, eq. (4.2) divided by ``n``.

    High types who signal high buy at either price; low types buy only at
    :math:`\underline\theta`; evaders pay the low-signal price and cost the seller :math:`c_S`
    whether or not they buy (they always do: both prices are at most :math:`\bar\theta`).

    References
    ----------
    Werner (2024), ch. 4, §4.2, Eq. (4.2) (per buyer); §4.4 (the simulated utilities).
    """
    th, tl, cs = float(game.theta_high), float(game.theta_low), float(game.c_s)
    p_low = np.where(low_price_high, th, tl)
    p_high = np.where(high_price_high, th, tl)
    truthful_high = high_types - evaders
    low_types = game.n - high_types
    total = (
        truthful_high * p_high
        + low_types * tl * ~np.asarray(low_price_high)
        + evaders * (p_low - cs)
    )
    return np.asarray(total / game.n, dtype=np.float64)


def realised_buyer_utility(
    game: PDGame, high_types: Any, evaders: Any, low_price_high: Any, high_price_high: Any
) -> Floats:
    r"""Buyers' realised utility averaged over all ``n`` buyers of a round, eq. (4.1).

    Low types earn 0 (they buy only at their value); truthful high types earn
    :math:`\bar\theta - p(\bar s)`, evaders :math:`\bar\theta - p(\underline s) - c_B`.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Eq. (4.1); §4.4, Figure 4.2 (the buyers' utility).
    """
    th, tl, cb = float(game.theta_high), float(game.theta_low), float(game.c_b)
    p_low = np.where(low_price_high, th, tl)
    p_high = np.where(high_price_high, th, tl)
    total = (high_types - evaders) * (th - p_high) + evaders * (th - p_low - cb)
    return np.asarray(total / game.n, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class RoundTypes:
    r"""The pairs ``(k, e)``, ``0 <= e <= k <= n``, that sum up a round's buyers, and their law.

    ``k`` high types among the ``n`` buyers (Binomial(n, mu)), ``e`` of them evading when
    strategic (Binomial(k, q*)). Per-pair arrays have the pairs on their last axis; mode axes
    are 0 for truthful, 1 for strategic buyers (who then evade: ``e`` in mode 1, none in 0).
    A table over (mode, pair) flattened mode-major is read at *columns*
    ``pair + size * strategic`` (as :func:`~games.price_discrimination.rounds.play` does).

    Attributes
    ----------
    high_types, would_evade
        ``k`` and ``e`` of each pair.
    cdf
        Cumulative probabilities of the pairs in order,
        :math:`P(k, e) = \binom nk\mu^k(1-\mu)^{n-k}\binom ke q^e(1-q)^{k-e}`.
    guide
        Chen and Asau's (1974) guide table for the inverse CDF: entry ``i`` is the first pair
        whose cumulative probability exceeds ``i / len(guide)``.

    References
    ----------
    Werner (2024), ch. 4, §4.6, Algorithm 6, line 5 (types drawn with probability mu); §4.3,
    Definition 5 and Theorem 6(b) (high types evade with probability q*). Chen and Asau (1974) (the
    guide table).
    """

    game: PDGame
    high_types: Ints
    would_evade: Ints
    cdf: Floats
    guide: NDArray[np.intp]

    @classmethod
    def of(cls, game: PDGame, guide_size: int = 1 << 12) -> RoundTypes:
        """The table of pairs and their law for ``game``.

        References
        ----------
        Werner (2024), ch. 4, §4.6, Algorithm 6, line 5; §4.2, Theorem 6(b) (the evasion probability
        q*).
        """
        return _round_types(game, guide_size)

    @property
    def size(self) -> int:
        """The number of pairs.

        References
        ----------
        Werner (2024), ch. 4, §4.6, Algorithm 6, lines 4-5 (the round's buyers).
        """
        return int(self.cdf.size)

    def draw(self, uniforms: Floats) -> NDArray[np.intp]:
        """Pair indices by inverse CDF, started from the guide table.

        Each index is the first pair whose cumulative probability exceeds the uniform, as
        ``np.searchsorted(cdf, u, side="right")``.

        References
        ----------
        Werner (2024), ch. 4, §4.6, Algorithm 6, line 5 (Nature's draw of the types); Chen and Asau
        (1974) (guide-table inverse CDF).
        """
        u = np.asarray(uniforms, dtype=np.float64)
        index = np.empty(u.shape, dtype=np.intp)
        rows = (math.prod(u.shape[:-1]), u.shape[-1]) if u.ndim > 1 else (1, u.size)
        _inverse_cdf(self.cdf, self.guide, u.reshape(rows), index.reshape(rows))
        return index

    def evaders(self) -> Ints:
        """``(mode, pairs)``: evaders in each mode.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Theorem 6(b) and Eq. (4.1) (evasion).
        """
        return np.stack([np.zeros_like(self.would_evade), self.would_evade])

    def senders_high(self) -> Ints:
        """``(mode, pairs)``: buyers sending the high signal.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Theorem 6(a)-(b) (the signals sent).
        """
        return self.high_types - self.evaders()

    def has_high(self) -> Bools:
        """``(mode, pairs)``: some buyer sends the high signal.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Theorem 6(a)-(b) (the signals sent).
        """
        return self.senders_high() > 0

    def has_low(self) -> Bools:
        """``(mode, pairs)``: some buyer sends the low signal.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Theorem 6(a)-(b) (the signals sent).
        """
        return self.senders_high() < self.game.n

    def informative(self) -> Bools:
        r"""``(mode, pairs)``: both signals are sent (:math:`I_\tau`).

        References
        ----------
        Werner (2024), ch. 4, §4.7, proof of Proposition 6, Eq. (4.7) (:math:`I_\tau`).
        """
        return self.has_high() & self.has_low()

    def low_reward(self) -> Floats:
        """``(mode, price, pairs)``: average seller utility per low-signal buyer.

        When the low class pays the low (price 0) or the high (price 1) price; 0 if nobody signals
        low.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Eq. (4.2); §4.4, Algorithms, seller 2 (CExp3 learns per signal
        class).
        """
        g = self.game
        th, tl, cs = float(g.theta_high), float(g.theta_low), float(g.c_s)
        evaders = self.evaders()
        senders = np.maximum(g.n - self.high_types + evaders, 1)
        low_types = g.n - self.high_types
        at_low = (low_types * tl + evaders * (tl - cs)) / senders
        at_high = evaders * (th - cs) / senders
        return np.stack([at_low, at_high], axis=1) * self.has_low()[:, None, :]

    def everyone_reward(self) -> Floats:
        """``(mode, price, pairs)``: average seller utility per buyer when everyone pays one price.

        The low (price 0) or the high (price 1) price.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Eq. (4.2); §4.4, Algorithms, seller 1 (Exp3 learns from the
        average utility).
        """
        evaders = self.evaders()
        return np.stack(
            [
                realised_seller_utility(self.game, self.high_types, evaders, p, p)
                for p in (False, True)
            ],
            axis=1,
        )


@lru_cache(maxsize=16)
def _round_types(game: PDGame, guide_size: int) -> RoundTypes:
    """:meth:`RoundTypes.of`, kept for the games last asked for (its arrays are read-only)."""
    n, mu, q = game.n, float(game.mu), float(game.q_star)
    size = (n + 1) * (n + 2) // 2
    fits_in_memory(f"a round of n={n} buyers ({size} pairs)", PAIR_BYTES * size)
    ks = np.repeat(np.arange(n + 1, dtype=np.int32), np.arange(1, n + 2))
    first = np.cumsum(np.arange(n + 1))  # the index of pair (k, 0): k (k + 1) / 2
    es = (np.arange(size) - first[ks]).astype(np.int32)
    cdf = np.cumsum(binom.pmf(ks, n, mu) * binom.pmf(es, ks, q))
    cdf[-1] = 1.0
    guide = np.searchsorted(cdf, np.arange(guide_size) / guide_size, side="right")
    for table in (ks, es, cdf, guide):
        table.setflags(write=False)
    return RoundTypes(game, ks, es, cdf, guide)


@njit(cache=True)
def pair_of(cdf: Floats, guide: NDArray[np.intp], uniform: float) -> int:
    """The first pair whose cumulative probability ``cdf`` exceeds ``uniform``.

    Read from the guide table's cell of ``uniform``, then forward: the inverse CDF of
    :meth:`RoundTypes.draw` for one uniform, compiled (the rounds of
    :func:`~games.price_discrimination.rounds.play` draw with it too).

    References
    ----------
    Werner (2024), ch. 4, §4.6, Algorithm 6, line 5 (Nature's draw of the types); Chen and Asau
    (1974) (guide-table inverse CDF).
    """
    index = guide[int(uniform * guide.size)]
    while cdf[index] <= uniform:  # a guide cell holds at most a few pair boundaries
        index += 1
    return index


@njit(cache=True)
def _inverse_cdf(
    cdf: Floats, guide: NDArray[np.intp], uniforms: Floats, out: NDArray[np.intp]
) -> None:
    for i in range(uniforms.shape[0]):
        for j in range(uniforms.shape[1]):
            out[i, j] = pair_of(cdf, guide, uniforms[i, j])


@dataclass(frozen=True, slots=True)
class Block:
    """Buyers of ``rounds`` rounds in ``runs`` runs and the seller's randomness of those rounds.

    Attributes
    ----------
    types
        The table of pairs.
    buyers
        ``(rounds, runs)``: the uniform that draws each round's pair (:meth:`RoundTypes.draw`).
    uniforms
        ``(rounds, 2, runs)`` uniforms for the seller: row 0 prices the high-signal class (or
        everyone), row 1 the low-signal class.
    noise
        ``(rounds, runs)`` uniforms for the belief's bias, or ``None`` without bias.

    References
    ----------
    Werner (2024), ch. 4, §4.6, Algorithm 6, lines 3-7 (rounds of buyers and the seller's mixed
    strategy).
    """

    types: RoundTypes
    buyers: Floats
    uniforms: Floats
    noise: Floats | None


def draw_block(
    types: RoundTypes,
    rng: np.random.Generator,
    rounds: int,
    runs: int,
    noise: bool = False,
) -> Block:
    """Draw the buyers of a block of rounds, and the seller's (and the bias's) uniforms.

    The ``n`` buyers of a round are i.i.d. and exchangeable, and a round depends on them only
    through its pair (:class:`RoundTypes`), drawn from its joint law by inverse CDF from one
    uniform per round and run (:meth:`RoundTypes.draw`, :func:`pair_of`): the same
    distribution as drawing every buyer's type and coin. The uniforms are drawn as one
    ``(rounds, 3 [+ 1], runs)`` array, so blocks drawn in turn give the same numbers as one
    block of all their rounds.

    References
    ----------
    Werner (2024), ch. 4, §4.6, Algorithm 6, lines 4-7; §4.4, Figure 4.5 (the buyers' bias).
    """
    u = rng.random((rounds, 3 + noise, runs))
    return Block(
        types=types,
        buyers=u[:, 0],
        uniforms=u[:, 1:3],
        noise=u[:, -1] if noise else None,
    )
