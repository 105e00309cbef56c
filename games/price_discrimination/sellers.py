"""Seller algorithms of the repeated PD game, vectorised over independent runs.

A seller is a frozen configuration with ``start(game, runs, rounds)``, which returns a policy
holding the state of every run. Each round the policy gets the buyers' public belief and two
uniforms per run and returns its prices as ``Pricing``: whether the low-signal and the
high-signal price is :math:`\\bar\\theta`, the marginals ``a`` = P(:math:`\\bar\\theta` | high
signal) and ``b`` = P(:math:`\\bar\\theta` | low signal), and :math:`\\alpha_t` = P(the two prices
differ) under the seller's joint distribution. Learning policies then get the rewards.

Werner (2024), section 4.4 (Exp3, contextual Exp3, the Stackelberg seller) and spec ch4
section 3 (the reference code's settings).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from econ.validation import choice, in_interval, non_negative, positive, unit_interval
from games.price_discrimination.game import PDGame, alpha_of

Bools = NDArray[np.bool_]
Floats = NDArray[np.float64]


class Pricing(NamedTuple):
    """One round of a seller's prices in every run."""

    low_high: Bools
    high_high: Bools
    a: Floats
    b: Floats
    alpha: Floats


class Rewards(NamedTuple):
    """Average per-buyer seller utility over the low-signal group, the high-signal group and all
    buyers, and which groups were non-empty."""

    low: Floats
    high: Floats
    everyone: Floats
    has_low: Bools
    has_high: Bools


class Policy(Protocol):
    learns: bool

    def act(self, belief: Floats, uniforms: Floats) -> Pricing: ...

    def learn(self, pricing: Pricing, rewards: Rewards) -> None: ...


class Seller(Protocol):
    @property
    def name(self) -> str: ...

    def start(self, game: PDGame, runs: int, rounds: int) -> Policy: ...


# ---------------------------------------------------------------------------------- Exp3(-IX)

PRESETS: tuple[str, ...] = ("paper_code", "book_ix", "neu_ix")


def exp3_parameters(preset: str, horizon: int, k: int = 2) -> tuple[float, float]:
    r"""Learning rate :math:`\eta` and implicit exploration :math:`\gamma` of an Exp3-IX preset.

    ``paper_code``: :math:`\eta = \sqrt{\ln k/(Tk)}`, :math:`\gamma = 0` (plain Exp3; the
    authors' final experiments). ``book_ix``: :math:`\eta = \sqrt{2\ln(k+1)/(Tk)}`,
    :math:`\gamma = \eta/2` (Lattimore & Szepesvári, *Bandit Algorithms*, Theorem 12.1).
    ``neu_ix``: :math:`\eta = \sqrt{2\ln k/(Tk)}`, :math:`\gamma = \eta/2`.
    """
    choice("preset", preset, PRESETS)
    if preset == "paper_code":
        return math.sqrt(math.log(k) / (horizon * k)), 0.0
    eta = math.sqrt(2 * math.log(k + 1 if preset == "book_ix" else k) / (horizon * k))
    return eta, eta / 2


class Exp3Bank:
    r"""Independent two-armed Exp3-IX learners (arm 0 = price :math:`\underline\theta`, arm 1 =
    :math:`\bar\theta`), in loss form (Lattimore & Szepesvári, ch. 12).

    With two arms only the difference :math:`D = \hat L_1 - \hat L_0` of the loss estimates
    matters: :math:`P_1 = 1/(1 + e^{\eta D})`. After playing arm :math:`A` with loss
    :math:`Y \in [0, 1]`, :math:`\hat L_A \mathrel{+}= Y/(P_A + \gamma)`.
    """

    def __init__(self, shape: tuple[int, ...], eta: float, gamma: float) -> None:
        self.diff = np.zeros(shape)
        self.eta = eta
        self.gamma = gamma

    def prob_high(self) -> Floats:
        """P(arm 1 = the high price) of every learner."""
        return expit(-self.eta * self.diff)

    def update(self, played_high: Bools, p_high: Floats, loss: Floats, mask: Bools) -> None:
        """Charge ``loss`` to the played arm of the learners selected by ``mask``."""
        p_played = np.where(played_high, p_high, 1.0 - p_high)
        sign = np.where(mask, np.where(played_high, 1.0, -1.0), 0.0)
        self.diff += sign * loss / (p_played + self.gamma)


def _loss(game: PDGame, reward: Floats) -> Floats:
    r"""Normalised loss of a per-buyer reward :math:`r \in [-c_S, \bar\theta]` (spec 3.1):
    :math:`Y = (\bar\theta - r)/(\bar\theta + c_S)`."""
    th = float(game.theta_high)
    return (th - reward) / (th + float(game.c_s))


@dataclass(frozen=True, slots=True)
class Exp3:
    r"""A signal-blind seller: one Exp3-IX learner over the two prices, charged to everyone.

    Werner (2024), section 4.4, seller 1. It learns from the average seller utility over all
    :math:`n` buyers. ``eta``/``gamma`` override the preset (the thesis gives neither).
    """

    preset: str = "paper_code"
    eta: float | None = None
    gamma: float | None = None
    name: str = "exp3"

    def _bank(self, shape: tuple[int, ...], rounds: int) -> Exp3Bank:
        eta, gamma = exp3_parameters(self.preset, rounds)
        eta = eta if self.eta is None else float(positive("eta", self.eta))
        gamma = gamma if self.gamma is None else float(non_negative("gamma", self.gamma))
        return Exp3Bank(shape, eta, gamma)

    def start(self, game: PDGame, runs: int, rounds: int) -> Policy:
        return _BlindExp3Policy(game, self._bank((runs,), rounds))


class _BlindExp3Policy:
    learns = True

    def __init__(self, game: PDGame, bank: Exp3Bank) -> None:
        self.game, self.bank = game, bank
        self.zero = np.zeros(bank.diff.shape)

    def act(self, belief: Floats, uniforms: Floats) -> Pricing:
        p = self.bank.prob_high()
        high = uniforms[:, 0] < p
        return Pricing(high, high, p, p, self.zero)

    def learn(self, pricing: Pricing, rewards: Rewards) -> None:
        loss = _loss(self.game, rewards.everyone)
        self.bank.update(pricing.high_high, pricing.a, loss, np.ones_like(pricing.high_high))


@dataclass(frozen=True, slots=True)
class ContextualExp3(Exp3):
    r"""Contextual Exp3 ("CExp3"): one Exp3-IX learner per signal.

    Werner (2024), section 4.4, seller 2. Each learner prices its signal class and learns from
    the average seller utility over that class only; an empty class is neither priced nor
    updated. :math:`\alpha_t = a_t(1-b_t) + (1-a_t)b_t` from the round's distributions.
    """

    name: str = "cexp3"

    def start(self, game: PDGame, runs: int, rounds: int) -> Policy:
        return _ContextualExp3Policy(game, self._bank((2, runs), rounds))


class _ContextualExp3Policy:
    learns = True

    def __init__(self, game: PDGame, bank: Exp3Bank) -> None:
        self.game, self.bank = game, bank

    def act(self, belief: Floats, uniforms: Floats) -> Pricing:
        b, a = self.bank.prob_high()  # row 0: low-signal learner, row 1: high-signal learner
        return Pricing(uniforms[:, 1] < b, uniforms[:, 0] < a, a, b, alpha_of(a, b))

    def learn(self, pricing: Pricing, rewards: Rewards) -> None:
        self.bank.update(
            np.stack([pricing.low_high, pricing.high_high]),
            np.stack([pricing.b, pricing.a]),
            _loss(self.game, np.stack([rewards.low, rewards.high])),
            np.stack([rewards.has_low, rewards.has_high]),
        )


# ----------------------------------------------------------------------- committed sellers


class _FixedPolicy:
    """Prices from fixed per-run probabilities; nothing to learn."""

    learns = False

    def __init__(
        self,
        draw: Callable[[Floats, Floats], tuple[Bools, Bools]],
        a: Floats,
        b: Floats,
        alpha: Floats,
    ) -> None:
        self.draw, self.a, self.b, self.alpha = draw, a, b, alpha

    def act(self, belief: Floats, uniforms: Floats) -> Pricing:
        low_high, high_high = self.draw(belief, uniforms)
        return Pricing(low_high, high_high, self.a, self.b, self.alpha)

    def learn(self, pricing: Pricing, rewards: Rewards) -> None:
        return None


@dataclass(frozen=True, slots=True)
class AlphaPD:
    r"""The Stackelberg seller: each round, price-discriminate with probability ``alpha``.

    Werner (2024), section 4.4, seller 3 (and Proposition 9's :math:`\tilde\alpha`-PD). With
    probability :math:`\alpha_c` it plays PD (:math:`\underline s \mapsto \underline\theta`,
    :math:`\bar s \mapsto \bar\theta`), otherwise the blind price to all. ``alpha=None`` means
    :math:`\alpha^* - 0.01`, as in the reference experiments (the thesis says :math:`\alpha^*`;
    exactly at :math:`\alpha^*` the belief straddles the threshold). Marginals:
    :math:`(a, b) = (1, 1-\alpha_c)` in regime B, :math:`(\alpha_c, 0)` in regime A.
    """

    alpha: float | None = None
    name: str = "alpha-pd"

    def commitment(self, game: PDGame) -> float:
        if self.alpha is None:
            return max(0.0, float(game.alpha_star) - 0.01)
        return float(unit_interval("alpha", self.alpha))

    def start(self, game: PDGame, runs: int, rounds: int) -> Policy:
        alpha = self.commitment(game)
        blind = game.blind_price_high

        def draw(belief: Floats, uniforms: Floats) -> tuple[Bools, Bools]:
            pd = uniforms[:, 0] < alpha
            return (~pd & blind, pd | blind)

        full = np.full(runs, 1.0)
        return _FixedPolicy(
            draw,
            full * (alpha + (1 - alpha) * blind),
            full * ((1 - alpha) * blind),
            full * alpha,
        )


@dataclass(frozen=True, slots=True)
class FixedProduct:
    r"""A fixed mixed strategy of :math:`\mathbb A^{MS}` (Definition 9): independent prices with
    P(:math:`\bar\theta` | high signal) = ``a`` and P(:math:`\bar\theta` | low signal) = ``b``;
    each may be one value per run."""

    a: ArrayLike
    b: ArrayLike
    name: str = "fixed"

    def start(self, game: PDGame, runs: int, rounds: int) -> Policy:
        a = np.broadcast_to(unit_interval("a", self.a), (runs,)).astype(float)
        b = np.broadcast_to(unit_interval("b", self.b), (runs,)).astype(float)

        def draw(belief: Floats, uniforms: Floats) -> tuple[Bools, Bools]:
            return uniforms[:, 1] < b, uniforms[:, 0] < a

        return _FixedPolicy(draw, a, b, alpha_of(a, b))


@dataclass(frozen=True, slots=True)
class BeliefTracking:
    r"""An adversary for Proposition 10: price-discriminate iff the buyers' public belief is
    below :math:`\alpha^* - m`, else charge the blind price (spec ch4 section 3.5)."""

    margin: float = 0.01
    name: str = "belief-tracking"

    def start(self, game: PDGame, runs: int, rounds: int) -> Policy:
        threshold = float(game.alpha_star) - float(in_interval("margin", self.margin, -1, 1))
        return _BeliefTrackingPolicy(game.blind_price_high, threshold)


class _BeliefTrackingPolicy:
    learns = False

    def __init__(self, blind: bool, threshold: float) -> None:
        self.blind, self.threshold = blind, threshold

    def act(self, belief: Floats, uniforms: Floats) -> Pricing:
        pd = belief < self.threshold
        alpha = pd.astype(float)
        a = np.where(pd, 1.0, float(self.blind))
        return Pricing(
            ~pd & self.blind, pd | self.blind, a, np.where(pd, 0.0, float(self.blind)), alpha
        )

    def learn(self, pricing: Pricing, rewards: Rewards) -> None:
        return None


#: The sellers of the command line, by name.
SELLERS: dict[str, Callable[[], Seller]] = {
    "exp3": lambda: Exp3(preset="paper_code"),
    "exp3-ix": lambda: Exp3(preset="book_ix", name="exp3-ix"),
    "cexp3": lambda: ContextualExp3(preset="paper_code"),
    "alpha-pd": lambda: AlphaPD(),
    "always-pd": lambda: AlphaPD(1.0, name="always-pd"),
    "never-pd": lambda: AlphaPD(0.0, name="never-pd"),
}
