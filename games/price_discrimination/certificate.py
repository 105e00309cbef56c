"""A brute-force equilibrium certificate for the one-shot PD game.

Every player's payoff is linear in her own mixed action, so a best response is found by
enumerating her pure actions at each of her information sets, holding the others fixed. A
profile is a perfect Bayes Nash equilibrium when no pure deviation gains at any information
set (with the off-path belief "a high signal comes from a high type", Werner 2024, proof of
Theorem 6). This is independent of the closed forms of :mod:`.game`: it only uses the
workhorse utilities and Bayes' rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from econ.outputs import plain
from games.price_discrimination.equilibrium import Profile
from games.price_discrimination.game import (
    PDGame,
    high_buyer_utility,
    low_buyer_utility,
    posterior_after_low,
)


@dataclass(frozen=True, slots=True)
class InformationSet:
    """One player's choice: the payoff of each pure action, of the prescribed mix, and the gain.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Solution concept (sequential rationality of the PBNE).
    """

    player: str
    payoffs: dict[str, Any]
    prescribed: Any
    gain: Any

    def to_dict(self) -> dict[str, Any]:
        """The information set as a JSON-ready dict.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Solution concept (the checked best responses).
        """
        return plain(
            {
                "player": self.player,
                "payoffs": {k: float(v) for k, v in self.payoffs.items()},
                "prescribed": float(self.prescribed),
                "gain": float(self.gain),
            }
        )


@dataclass(frozen=True, slots=True)
class Certificate:
    """The best-response check of a profile: every information set and whether all gains vanish.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Solution concept and Theorem 6 (the PBNE checked).
    """

    sets: tuple[InformationSet, ...]
    tol: float

    @property
    def is_equilibrium(self) -> bool:
        """Whether no player gains by deviating (every gain within ``tol``).

        References
        ----------
        Werner (2024), ch. 4, §4.2, Solution concept (PBNE) and Theorem 6.
        """
        return all(s.gain <= self.tol for s in self.sets)

    @property
    def violations(self) -> tuple[InformationSet, ...]:
        """The information sets whose gain exceeds ``tol``.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Solution concept (sequential rationality).
        """
        return tuple(s for s in self.sets if s.gain > self.tol)

    def by_player(self, player: str) -> InformationSet:
        """The information set of ``player``.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Solution concept (sequential rationality).
        """
        return next(s for s in self.sets if s.player == player)


def _set(player: str, payoffs: dict[str, Any], prescribed: Any) -> InformationSet:
    return InformationSet(player, payoffs, prescribed, max(payoffs.values()) - prescribed)


def certify(game: PDGame, alpha: Any, profile: Profile, tol: float = 1e-12) -> Certificate:
    r"""Check by enumeration that ``profile`` is a PBNE of the game with awareness ``alpha``.

    Information sets and pure actions:

    * high-type buyer: signal :math:`\bar s` or :math:`\underline s`;
    * low-type buyer: signal :math:`\underline s` or :math:`\bar s`;
    * aware seller after :math:`\underline s` and after :math:`\bar s`: price
      :math:`\underline\theta` or :math:`\bar\theta`, or a price above :math:`\bar\theta`
      (no sale), judged by the expected revenue per buyer under the Bayes posterior; off
      path, :math:`\bar s` is believed to come from a high type;
    * blind seller: one price for everyone, the same three;
    * each type facing each price: buy or not.

    The seller prices on the positive reals (Definition 4, mixed strategies): against a
    belief :math:`\hat\mu` that the buyer has the high value, a price :math:`p` earns
    :math:`p` up to :math:`\underline\theta`, :math:`\hat\mu p` up to :math:`\bar\theta`
    and 0 above, so the three prices above include a best response. The evasion cost
    :math:`c_S` is incurred at the signalling stage, before the seller prices (eq. (4.2)): no
    price recovers it, not selling included, and the game gives the seller no option to stay
    out, so a profile can be an equilibrium with a negative seller utility.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Definition 4, Solution concept and Theorem 6; §4.7, proof of
    Theorem 6.
    """
    mu, tl, th = game.mu, game.theta_low, game.theta_high
    a, b = profile.marginals(alpha)
    q_h, q_l = profile.q_high, profile.q_low
    sets = [
        _set(
            "high_buyer",
            {
                "s_high": high_buyer_utility(game, 0, a, b),
                "s_low": high_buyer_utility(game, 1, a, b),
            },
            high_buyer_utility(game, q_h, a, b),
        ),
        _set(
            "low_buyer",
            {"s_low": low_buyer_utility(game, 0), "s_high": low_buyer_utility(game, 1)},
            low_buyer_utility(game, q_l),
        ),
    ]
    mass_high_signal = mu * (1 - q_h) + (1 - mu) * q_l
    belief_high = mu * (1 - q_h) / mass_high_signal if mass_high_signal > 0 else 1
    mass_low_signal = mu * q_h + (1 - mu) * (1 - q_l)
    belief_low = posterior_after_low(game, q_h, q_l) if mass_low_signal > 0 else 0
    for player, belief, share_high in (
        ("aware_seller_after_s_low", belief_low, profile.aware_b),
        ("aware_seller_after_s_high", belief_high, profile.aware_a),
        ("blind_seller", mu, profile.blind_high),
    ):
        revenue = {"theta_low": tl, "theta_high": belief * th, "no_sale": 0}
        mixed = share_high * revenue["theta_high"] + (1 - share_high) * revenue["theta_low"]
        sets.append(_set(player, revenue, mixed))
    for value_name, value in (("high", th), ("low", tl)):
        for price_name, price in (("theta_high", th), ("theta_low", tl)):
            buys = price <= value  # Theorem 6(e), read as b = 1{p <= theta}
            sets.append(
                _set(
                    f"{value_name}_buyer_at_{price_name}",
                    {"buy": value - price, "pass": 0},
                    (value - price) if buys else 0,
                )
            )
    return Certificate(tuple(sets), tol)
