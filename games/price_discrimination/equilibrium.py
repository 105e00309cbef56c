r"""The equilibrium of the one-shot price-discrimination game and its per-buyer utilities.

Werner (2024), PhD thesis, Chapter 4 (Theorem 6, Corollary 2); the game, its parameters and
the per-buyer utility functions are in :mod:`games.price_discrimination.game`. Theorem 6's
profile is not an equilibrium in regime B above :math:`\alpha^*` (docs/errata.md,
``thesis.ch4.thm6``): :func:`equilibrium_profile` gives both, the equilibrium by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from econ.outputs import plain
from econ.validation import choice, unit_interval
from games.price_discrimination.game import (
    CONVENTIONS,
    Number,
    PDGame,
    high_buyer_utility,
    low_buyer_utility,
    seller_utility,
)


@dataclass(frozen=True, slots=True)
class Profile:
    """A strategy profile of the one-shot game, by its marginals.

    Attributes
    ----------
    q_high, q_low
        Evasion probabilities of the high and the low type.
    aware_a, aware_b
        The signal-aware seller's P(price high | high signal) and P(price high | low signal).
    blind_high
        The signal-blind seller's P(price high).

    References
    ----------
    Werner (2024), ch. 4, §4.2, Mixed strategies and Theorem 6.
    """

    q_high: Number
    q_low: Number
    aware_a: Number
    aware_b: Number
    blind_high: Number

    def marginals(self, alpha: Number) -> tuple[Number, Number]:
        """The buyers' view ``(a, b)`` of a seller who is aware with probability ``alpha``.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Definition 4, step 1 and Eq. (4.3) (the seller aware with
        probability alpha).
        """
        return (
            alpha * self.aware_a + (1 - alpha) * self.blind_high,
            alpha * self.aware_b + (1 - alpha) * self.blind_high,
        )


@dataclass(frozen=True, slots=True)
class Equilibrium:
    """The equilibrium of the game for one ``alpha`` and its per-buyer utilities.

    Attributes
    ----------
    convention
        ``"strict"``: the equilibrium; ``"thesis"``: the profile Theorem 6 states, which is not
        an equilibrium where :func:`profiles_differ`.
    seller, high_buyer, low_buyer
        Expected utility per buyer of the seller, of a high-value and of a low-value buyer.
    buyer_avg
        Average over all buyers, ``mu * high_buyer + (1 - mu) * low_buyer`` (Figure 4.2).

    References
    ----------
    Werner (2024), ch. 4, §4.2, Theorem 6 and Corollary 2; §4.7, Eqs. (4.5)-(4.6).
    """

    game: PDGame
    alpha: Number
    convention: str
    profile: Profile
    seller: Number
    high_buyer: Number
    low_buyer: Number
    buyer_avg: Number

    @property
    def seller_total(self) -> Number:
        """The seller's utility summed over the ``n`` buyers, eq. (4.2).

        References
        ----------
        Werner (2024), ch. 4, §4.2, Eq. (4.2).
        """
        return self.game.n * self.seller

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (exact fractions as floats).

        Alpha, the convention, the profile's marginals and the utilities per buyer, and the seller's
        total.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Theorem 6 and Corollary 2 (the reported profile and utilities).
        """
        p = self.profile
        return plain(
            {
                "alpha": self.alpha,
                "convention": self.convention,
                "profile": {
                    "q_high": p.q_high,
                    "q_low": p.q_low,
                    "aware_a": p.aware_a,
                    "aware_b": p.aware_b,
                    "blind_high": p.blind_high,
                },
                "seller": self.seller,
                "high_buyer": self.high_buyer,
                "low_buyer": self.low_buyer,
                "buyer_avg": self.buyer_avg,
                "seller_total": self.seller_total,
            }
        )


def equilibrium_profile(game: PDGame, alpha: Number, convention: str = "strict") -> Profile:
    r"""The strategies of Theorem 6: the equilibrium (``"strict"``) or the thesis's profile.

    Thesis (Werner 2024, Theorem 6, section 4.2): low types are truthful; high types evade with
    probability :math:`q^*\,\mathbb 1\{\alpha > \alpha^*\}` (truthful at the tie); the aware
    seller prices :math:`\underline s \mapsto \underline\theta`,
    :math:`\bar s \mapsto \bar\theta`; the blind seller charges :math:`\underline\theta` iff
    :math:`\underline\theta \ge \mu\bar\theta`.

    In regime B with :math:`\alpha > \alpha^*` the thesis's profile is not an equilibrium:
    against it the high buyer gains :math:`(1-q^*)(\alpha\Delta\theta - c_B)` by always evading
    (docs/errata.md, ``thesis.ch4.thm6``). The equilibrium (``"strict"``, the default) keeps
    :math:`q^*` and lets the aware seller, indifferent after a low signal, charge
    :math:`\underline\theta` with probability :math:`r^* = \alpha^*/\alpha`, which makes the high
    buyer indifferent; seller utilities are the same and the high buyer's is 0. Everywhere
    else the two profiles coincide.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Theorem 6; docs/errata.md, ``thesis.ch4.thm6``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from games.price_discrimination.game import THESIS_GAME
    >>> p = equilibrium_profile(THESIS_GAME, Fraction(3, 4))
    >>> p.q_high, p.aware_b  # evade with q* = 1/2; r* = alpha*/alpha = 2/3
    (Fraction(1, 2), Fraction(1, 3))
    """
    choice("convention", convention, CONVENTIONS)
    unit_interval("alpha", alpha)
    strategic = alpha > game.alpha_star
    q = game.q_star if strategic else 0
    b: Number = 0
    if convention == "strict" and strategic and game.regime == "B":
        b = 1 - game.alpha_star / alpha
    return Profile(q_high=q, q_low=0, aware_a=1, aware_b=b, blind_high=int(game.blind_price_high))


def profiles_differ(game: PDGame, alpha: Number) -> bool:
    """Whether the thesis's profile differs from the equilibrium (regime B, alpha > alpha*).

    References
    ----------
    Werner (2024), ch. 4, §4.2, Theorem 6; registered as ``thesis.ch4.thm6`` (docs/errata.md).
    """
    return game.regime == "B" and alpha > game.alpha_star


def equilibrium(game: PDGame, alpha: Number, convention: str = "strict") -> Equilibrium:
    r"""The equilibrium of the PD game with awareness probability ``alpha`` and its utilities.

    ``convention="thesis"`` evaluates the thesis's profile instead (not an equilibrium where
    :func:`profiles_differ`). Utilities mix the blind and the aware seller (proof of
    Corollary 2, eqs. (4.5)-(4.6), section 4.7):

    .. math:: u_X(\alpha) = (1-\alpha)\,U_X(q; \text{blind}) + \alpha\,U_X(q; \text{aware})

    e.g. in regime B :math:`u_S = \mu\bar\theta + \alpha(1-\mu)\underline\theta` for
    :math:`\alpha\le\alpha^*` and :math:`\mu(\bar\theta - c_S q^*)` above, in both conventions.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Theorem 6 and Corollary 2, eqs. (4.5)-(4.6).

    Examples
    --------
    >>> from fractions import Fraction
    >>> from games.price_discrimination.game import THESIS_GAME
    >>> low, high = (equilibrium(THESIS_GAME, Fraction(a, 4)) for a in (1, 3))
    >>> low.seller, high.seller  # 15/2 + 5/8, then (15 - 5/2)/2
    (Fraction(65, 8), Fraction(25, 4))
    >>> high.high_buyer, equilibrium(THESIS_GAME, Fraction(3, 4), "thesis").high_buyer
    (Fraction(0, 1), Fraction(5, 4))
    """
    profile = equilibrium_profile(game, alpha, convention)
    a, b = profile.marginals(alpha)
    seller = seller_utility(game, profile.q_high, a, b, profile.q_low)
    high = high_buyer_utility(game, profile.q_high, a, b)
    low = low_buyer_utility(game, profile.q_low)
    return Equilibrium(
        game=game,
        alpha=alpha,
        convention=convention,
        profile=profile,
        seller=seller,
        high_buyer=high,
        low_buyer=low,
        buyer_avg=game.mu * high + (1 - game.mu) * low,
    )


def high_buyer_deviation_gain(game: PDGame, alpha: Number, convention: str = "strict") -> Number:
    """What the high buyer gains by her best pure signal over the profile's mix (0 in equilibrium).

    References
    ----------
    Werner (2024), ch. 4, Theorem 6; docs/errata.md, ``thesis.ch4.thm6``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from games.price_discrimination.game import THESIS_GAME
    >>> alpha = Fraction(3, 4)
    >>> high_buyer_deviation_gain(THESIS_GAME, alpha, "thesis")  # (1 - q*)(alpha dtheta - c_B)
    Fraction(5, 4)
    >>> high_buyer_deviation_gain(THESIS_GAME, alpha)
    Fraction(0, 1)
    """
    profile = equilibrium_profile(game, alpha, convention)
    a, b = profile.marginals(alpha)
    best = max(high_buyer_utility(game, 0, a, b), high_buyer_utility(game, 1, a, b))
    return best - high_buyer_utility(game, profile.q_high, a, b)


def utility_curves(
    game: PDGame, alphas: np.ndarray, convention: str = "strict"
) -> dict[str, np.ndarray]:
    """Equilibrium utilities per buyer on a grid of ``alpha`` (Figure 4.1), in floats.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Figure 4.1 (the plotted quantity) and Corollary 2.
    """
    numeric = game.numeric()
    eqs = [equilibrium(numeric, float(x), convention) for x in np.asarray(alphas, dtype=float)]
    return {
        "alpha": np.asarray(alphas, dtype=float),
        "seller": np.array([float(e.seller) for e in eqs]),
        "high_buyer": np.array([float(e.high_buyer) for e in eqs]),
        "buyer_avg": np.array([float(e.buyer_avg) for e in eqs]),
    }
