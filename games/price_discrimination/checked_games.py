r"""The games, awareness levels and repeated-play runs chapter 4's statements are checked on.

Werner (2024), ch. 4: the parameter sets P0-P3 of
:data:`~games.price_discrimination.game.PARAMETER_SETS` with 40 seeded random games
(:data:`GAMES`), awareness levels around :math:`\alpha^*`
(:func:`alpha_grid`), and cached runs of the repeated game (:func:`repeated_run`) against the
sellers on which the buyers' estimator (4.7) is tracked (:data:`TRACKED`) or uninformative
(:data:`UNINFORMATIVE`). The statements are registered in
:mod:`games.price_discrimination.propositions` and its siblings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np

from games.price_discrimination.estimator import informative_probability
from games.price_discrimination.exp3 import ContextualExp3
from games.price_discrimination.game import PARAMETER_SETS, PDGame
from games.price_discrimination.repeated import RepeatedRun, simulate
from games.price_discrimination.sellers import AlphaPD, BeliefTracking, FixedProduct


def random_games(count: int, seed: int = 0) -> Iterator[PDGame]:
    """Random valid games with exact rational parameters, Assumption 1 and ``c_S > 0``.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Definition 4 and Assumption 1.
    """
    rng = np.random.default_rng(seed)
    for _ in range(count):
        mu = Fraction(int(rng.integers(1, 20)), 20)
        low = Fraction(int(rng.integers(1, 40)), 4)
        high = low + Fraction(int(rng.integers(1, 40)), 4)
        c_b = (high - low) * Fraction(int(rng.integers(1, 20)), 20)
        c_s = Fraction(int(rng.integers(1, 40)), 4)
        yield PDGame(mu, low, high, c_b, c_s)


GAMES: dict[str, PDGame] = {
    **PARAMETER_SETS,
    **{f"random{i}": g for i, g in enumerate(random_games(40))},
}


GAMES_DRAWN = (
    "the parameter sets P0-P3 (P1 on the regime boundary theta_L = mu theta_H) and 40 games "
    "with seeded random rational parameters (seed 0), both regimes"
)


def alpha_grid(game: PDGame) -> tuple[Fraction, ...]:
    """Awareness levels 0, alpha*/2, alpha*, alpha* + 1/100, (1 + alpha*)/2, 1.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Theorem 6 and Corollary 2 (the threshold alpha* = c_B/Delta).
    """
    star = game.alpha_star
    return (Fraction(0), star / 2, star, star + Fraction(1, 100), (1 + star) / 2, Fraction(1))


ALPHAS_DRAWN = "alpha in {0, alpha*/2, alpha*, alpha* + 1/100, (1 + alpha*)/2, 1}"


def assumption1(game: str, **_: Any) -> bool:
    """Whether the game named ``game`` of :data:`GAMES` meets Assumption 1, c_B < Delta theta.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Assumption 1.
    """
    g = GAMES[game]
    return bool(g.c_b < g.delta)


@cache
def repeated_run(
    name: str, seller: Any, rounds: int, runs: int, seed: int, n: int = 10
) -> RepeatedRun:
    """``runs`` runs of the repeated game on ``GAMES[name]`` with ``n`` buyers a round, cached.

    References
    ----------
    Werner (2024), ch. 4, §4.6, Algorithm 6 (the repeated game), simulated by
    :func:`games.price_discrimination.repeated.simulate`.
    """
    game = dataclasses.replace(GAMES[name], n=n) if n != GAMES[name].n else GAMES[name]
    return simulate(game, seller, rounds, runs, seed)


def rho_min(game: PDGame) -> float:
    """The smaller chance that a round shows both signals, of truthful and of strategic buyers.

    Where it is 0 (regime A, strategic buyers all sending the low signal) the estimator (4.7)
    learns nothing in such rounds.

    References
    ----------
    Werner (2024), ch. 4, §4.7, proof of Proposition 6, eq. (4.7).
    """
    numeric = game.numeric()
    return min(
        float(informative_probability(numeric, 0.0)),
        float(informative_probability(numeric, float(game.q_star))),
    )


#: Sellers against which the estimator (4.7) is run: fixed, alternating and adaptive ones.
TRACKED: tuple[tuple[str, Any], ...] = (
    ("P0", AlphaPD(0.3)),
    ("P0", AlphaPD(1.0)),
    ("P0", FixedProduct(0.8, 0.3)),
    ("P0", BeliefTracking(0.01)),
    ("P0", ContextualExp3()),
    ("P3", AlphaPD(0.2)),
    ("P3", AlphaPD(1.0)),
    ("P3", BeliefTracking(0.0)),
)


#: Regime A, where strategic high types all send s_L: (4.7) never sees both signals.
UNINFORMATIVE: tuple[tuple[str, Any], ...] = (("P2", AlphaPD(1.0)),)
