"""CBER buyers of the repeated PD game, drawn a block of rounds at a time.

Werner (2024), Definition 5: in round ``t`` every buyer plays Theorem 6 for the shared belief
:math:`\\hat\\alpha_t`: low types signal low; high types signal low with probability
:math:`q_t = q^*\\,\\mathbb 1\\{\\hat\\alpha_t > \\alpha^*\\}` (truthful at the tie). Buyers buy iff
the price is at most their value (Theorem 6(e), read as :math:`b = \\mathbb 1\\{p \\le \\theta\\}`).

The buyers of a round never depend on the past except through :math:`q_t \\in \\{0, q^*\\}`, so
they are drawn for a whole block of rounds and runs at once, in both modes (truthful,
strategic), as what prices and payoffs depend on: how many high types there are and how many
of them evade in strategic mode. A :class:`Block` also holds,
for both modes and every price pair, the seller's average reward per buyer that the learning
sellers need, so that a round of play only selects among precomputed values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from games.price_discrimination.game import PDGame

Floats = NDArray[np.float64]
Ints = NDArray[np.int32]
Bools = NDArray[np.bool_]


def realised_seller_utility(
    game: PDGame, high_types: Any, evaders: Any, low_price_high: Any, high_price_high: Any
) -> Floats:
    r"""The seller's realised utility per buyer in a round, eq. (4.2) divided by ``n``.

    High types who signal high buy at either price; low types buy only at
    :math:`\underline\theta`; evaders pay the low-signal price and cost the seller :math:`c_S`
    whether or not they buy (they always do: both prices are at most :math:`\bar\theta`).
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
    """
    th, tl, cb = float(game.theta_high), float(game.theta_low), float(game.c_b)
    p_low = np.where(low_price_high, th, tl)
    p_high = np.where(high_price_high, th, tl)
    total = (high_types - evaders) * (th - p_high) + evaders * (th - p_low - cb)
    return np.asarray(total / game.n, dtype=np.float64)


def _counts_table(n: int, mu: float, q: float) -> tuple[Floats, Ints, Ints]:
    """The joint law of (high types, evaders among them) in one round, as an inverse-CDF table.

    Returns the cumulative probabilities over all pairs ``(k, e)``, ``0 <= e <= k <= n``, with
    ``P(k, e) = Binomial(n, mu)(k) * Binomial(k, q)(e)``, and the ``k`` and ``e`` of each pair.
    """
    pairs = [(k, e) for k in range(n + 1) for e in range(k + 1)]
    prob = [
        math.comb(n, k) * mu**k * (1 - mu) ** (n - k) * math.comb(k, e) * q**e * (1 - q) ** (k - e)
        for k, e in pairs
    ]
    cdf = np.cumsum(prob)
    cdf[-1] = 1.0
    ks, es = np.array(pairs, dtype=np.int32).T
    return cdf, ks, es


@dataclass(frozen=True, slots=True)
class Block:
    """Buyers of ``rounds`` rounds in ``runs`` runs and the seller's randomness of those rounds.

    Mode axes are 0 for truthful, 1 for strategic buyers.

    Attributes
    ----------
    high_types, would_evade
        ``(rounds, runs)``: high types, and how many of them evade in strategic mode.
    uniforms
        ``(rounds, 2, runs)`` uniforms for the seller: row 0 prices the high-signal class (or
        everyone), row 1 the low-signal class.
    noise
        ``(rounds, runs)`` uniforms for the belief's bias.
    has_low, has_high, informative
        ``(rounds, mode, runs)``: someone signals low / high / both.
    """

    game: PDGame
    high_types: Ints
    would_evade: Ints
    uniforms: Floats
    noise: Floats
    has_low: Bools
    has_high: Bools
    informative: Bools

    def evaders(self) -> Ints:
        """``(rounds, mode, runs)``: evaders in each mode (none when truthful)."""
        return np.stack([np.zeros_like(self.would_evade), self.would_evade], axis=1)

    def low_reward(self) -> Floats:
        """``(rounds, mode, price, runs)``: average seller utility per low-signal buyer when the
        low class pays the low (price 0) or the high (price 1) price; 0 if nobody signals low."""
        g = self.game
        th, tl, cs = float(g.theta_high), float(g.theta_low), float(g.c_s)
        evaders = self.evaders()
        senders = np.maximum(g.n - self.high_types[:, None, :] + evaders, 1)
        low_types = g.n - self.high_types[:, None, :]
        at_low = (low_types * tl + evaders * (tl - cs)) / senders
        at_high = evaders * (th - cs) / senders
        return np.stack([at_low, at_high], axis=2) * self.has_low[:, :, None, :]

    def everyone_reward(self) -> Floats:
        """``(rounds, mode, price, runs)``: average seller utility per buyer when everyone pays
        the low (price 0) or the high (price 1) price."""
        evaders, high_types = self.evaders(), self.high_types[:, None, :]
        return np.stack(
            [realised_seller_utility(self.game, high_types, evaders, p, p) for p in (False, True)],
            axis=2,
        )


def draw_block(game: PDGame, rng: np.random.Generator, rounds: int, runs: int) -> Block:
    """Draw the buyers of a block of rounds, and the seller's uniforms.

    The ``n`` buyers of a round are i.i.d. and exchangeable, and a round depends on them only
    through how many are high types (Binomial(n, mu)) and how many of those evade when
    strategic (Binomial(high types, q*)). The pair is drawn from its joint law by inverse CDF
    (one uniform per round and run), the same distribution as drawing every buyer's type and
    coin.
    """
    n = game.n
    u = rng.random((rounds, 4, runs))
    cdf, ks, es = _counts_table(n, float(game.mu), float(game.q_star))
    pair = np.minimum(np.searchsorted(cdf, u[:, 0], side="right"), cdf.size - 1)
    high_types, would_evade = ks[pair], es[pair]
    senders_high = high_types[:, None, :] - np.stack([np.zeros_like(would_evade), would_evade], 1)
    has_high, has_low = senders_high > 0, senders_high < n
    return Block(
        game=game,
        high_types=high_types,
        would_evade=would_evade,
        uniforms=u[:, 1:3],
        noise=u[:, 3],
        has_low=has_low,
        has_high=has_high,
        informative=has_low & has_high,
    )
