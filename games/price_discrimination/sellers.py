r"""Seller algorithms of the repeated PD game, vectorised over independent runs.

A seller is a frozen configuration; ``start(game, runs, rounds)`` returns a policy that holds
the state of every run. For each block of buyer draws
(:class:`~games.price_discrimination.buyers.Block`) the simulator asks the policy for its
:class:`~games.price_discrimination.rounds.Pricing`, the seller's part of the compiled loop
(:func:`~games.price_discrimination.rounds.play`): per round it draws whether the low-signal
and the high-signal class pay the high price :math:`\bar\theta`, logs them, learns from
rewards tabulated per (mode, pair) column
(:class:`~games.price_discrimination.buyers.RoundTypes`), and says whether the two prices
differ (:math:`X_t`, what the buyers' estimator counts). A seller whose prices do not depend
on play draws a block's prices up front. At the end ``prices()`` gives the logged prices and
``marginals()``, per round, ``a`` = P(:math:`\bar\theta` | high signal), ``b`` =
P(:math:`\bar\theta` | low signal) and :math:`\alpha_t` = P(the two prices differ) under the
seller's joint distribution.

Werner (2024), section 4.4: the policy protocol, the committed sellers (the Stackelberg
seller and fixed or belief-tracking rates) and :data:`SELLERS` (which installed
distributions extend through the entry-point group ``collabecon.sellers``); the learning sellers Exp3 and
contextual Exp3 are in :mod:`games.price_discrimination.exp3`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.plugins import PluginRegistry
from econ.validation import in_interval, unit_interval
from games.price_discrimination.buyers import Block
from games.price_discrimination.exp3 import ContextualExp3, Exp3
from games.price_discrimination.game import PDGame, alpha_of
from games.price_discrimination.rounds import FIXED, TRACKING, Pricing

Bools = NDArray[np.bool_]
Floats = NDArray[np.float64]


class Policy(Protocol):
    """A seller's play in a simulation: prices each round and logs its mixed strategy.

    References
    ----------
    Werner (2024), ch. 4, §4.6, Algorithm 6, line 7 (the seller's mixed strategy).
    """

    def pricing(self, block: Block) -> Pricing:
        """The seller's part of the block's rounds, for the compiled loop :func:`.rounds.play`.

        Called once per block, in order; a seller whose prices do not depend on play draws the
        block's prices here.

        References
        ----------
        Werner (2024), ch. 4, §4.6, Algorithm 6, line 7; §4.3, the rate alpha_t.
        """

    def prices(self) -> tuple[Bools, Bools]:
        """Whether the low-signal and the high-signal class paid the high price, per round.

        References
        ----------
        Werner (2024), ch. 4, §4.6, Algorithm 6, line 7.
        """

    def marginals(self) -> tuple[Floats, Floats, Floats]:
        """The seller's ``(a, b, alpha)`` of each round.

        References
        ----------
        Werner (2024), ch. 4, §4.3, the rate alpha_t (before Definition 6).
        """


class Seller(Protocol):
    """A seller configuration: a name and a factory of policies.

    References
    ----------
    Werner (2024), ch. 4, §4.4, Algorithms (Seller).
    """

    @property
    def name(self) -> str:
        """The seller's label.

        References
        ----------
        Werner (2024), ch. 4, §4.4, Algorithms (Seller).
        """

    def start(self, game: PDGame, runs: int, rounds: int) -> Policy:
        """A policy for ``runs`` runs of ``rounds`` rounds of ``game``.

        References
        ----------
        Werner (2024), ch. 4, §4.6, Algorithm 6.
        """


class _FixedPolicy:
    """Prices drawn from fixed per-run probabilities, a block at a time; nothing to learn."""

    def __init__(
        self,
        draw: Callable[[Floats], tuple[Bools, Bools]],
        marginals: tuple[Floats, Floats, Floats],
        runs: int,
        rounds: int,
    ) -> None:
        self.draw = draw
        self.rounds = rounds
        self._marginals = marginals
        self.low_log = np.empty((rounds, runs), dtype=bool)
        self.high_log = np.empty((rounds, runs), dtype=bool)
        self._start = 0

    def pricing(self, block: Block) -> Pricing:
        start, stop = self._start, self._start + block.uniforms.shape[0]
        low, high = self.draw(block.uniforms)
        self.low_log[start:stop], self.high_log[start:stop] = low, high
        self._start = stop
        return Pricing(FIXED, differ=low != high)

    def prices(self) -> tuple[Bools, Bools]:
        return self.low_log, self.high_log

    def marginals(self) -> tuple[Floats, Floats, Floats]:
        runs = self._marginals[0].shape[0]
        return tuple(np.broadcast_to(x, (self.rounds, runs)) for x in self._marginals)  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class AlphaPD:
    r"""The Stackelberg seller: each round, price-discriminate with probability ``alpha``.

    Werner (2024), section 4.4, seller 3 (and Proposition 9's :math:`\tilde\alpha`-PD). With
    probability :math:`\alpha_c` it plays PD (:math:`\underline s \mapsto \underline\theta`,
    :math:`\bar s \mapsto \bar\theta`), otherwise the blind price to all. ``alpha=None`` means
    :math:`\alpha^* - 0.01`, as in the reference experiments (the thesis says :math:`\alpha^*`;
    exactly at :math:`\alpha^*` the belief straddles the threshold). Marginals:
    :math:`(a, b) = (1, 1-\alpha_c)` in regime B, :math:`(\alpha_c, 0)` in regime A.

    References
    ----------
    Werner (2024), ch. 4, §4.4, Algorithms, seller 3; §4.2, Corollary 3; §4.3, proof sketch of
    Proposition 9.
    """

    alpha: float | None = None
    name: str = "alpha-pd"

    def commitment(self, game: PDGame) -> float:
        r"""The committed rate: ``alpha``, or :math:`\alpha^* - 0.01` when unset.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Corollary 3; §4.3, proof sketch of Proposition 9.
        """
        if self.alpha is None:
            return max(0.0, float(game.alpha_star) - 0.01)
        return float(unit_interval("alpha", self.alpha))

    def start(self, game: PDGame, runs: int, rounds: int) -> Policy:
        """A policy for ``runs`` runs of ``rounds`` rounds.

        References
        ----------
        Werner (2024), ch. 4, §4.4, Algorithms, seller 3.
        """
        alpha = self.commitment(game)
        blind = game.blind_price_high

        def draw(uniforms: Floats) -> tuple[Bools, Bools]:
            pd = uniforms[:, 0] < alpha
            return ~pd & blind, pd | blind

        full = np.full(runs, 1.0)
        marginals = (
            full * (alpha + (1 - alpha) * blind),
            full * ((1 - alpha) * blind),
            full * alpha,
        )
        return _FixedPolicy(draw, marginals, runs, rounds)


@dataclass(frozen=True, slots=True)
class FixedProduct:
    r"""A fixed mixed strategy of :math:`\mathbb A^{MS}` (Definition 9): independent prices.

    P(:math:`\bar\theta` | high signal) = ``a`` and P(:math:`\bar\theta` | low signal) = ``b``; each
    may be one value per run.

    References
    ----------
    Werner (2024), ch. 4, §4.3, Definition 9 and the class A^MS before Proposition 9.
    """

    a: ArrayLike
    b: ArrayLike
    name: str = "fixed"

    def start(self, game: PDGame, runs: int, rounds: int) -> Policy:
        """A policy for ``runs`` runs of ``rounds`` rounds.

        References
        ----------
        Werner (2024), ch. 4, §4.3, Definition 9.
        """
        a = np.broadcast_to(unit_interval("a", self.a), (runs,)).astype(float)
        b = np.broadcast_to(unit_interval("b", self.b), (runs,)).astype(float)

        def draw(uniforms: Floats) -> tuple[Bools, Bools]:
            return uniforms[:, 1] < b, uniforms[:, 0] < a

        return _FixedPolicy(draw, (a, b, alpha_of(a, b)), runs, rounds)


@dataclass(frozen=True, slots=True)
class BeliefTracking:
    r"""An adversary for Proposition 10 that price-discriminates while the buyers' belief is low.

    It price-discriminates iff the buyers' public belief is below :math:`\alpha^* - m` (:math:`m` =
    ``margin``), else charges the blind price (:attr:`PDGame.blind_price_high`, Theorem 6(d)).

    References
    ----------
    Werner (2024), ch. 4, §4.3, Proposition 10; §4.7, proof of Proposition 10.
    """

    margin: float = 0.01
    name: str = "belief-tracking"

    def start(self, game: PDGame, runs: int, rounds: int) -> Policy:
        """A policy for ``runs`` runs of ``rounds`` rounds.

        References
        ----------
        Werner (2024), ch. 4, §4.3, Proposition 10.
        """
        threshold = float(game.alpha_star) - float(in_interval("margin", self.margin, -1, 1))
        return _BeliefTrackingPolicy(game.blind_price_high, threshold, runs, rounds)


class _BeliefTrackingPolicy:
    """Discriminates iff the buyers' belief is below ``threshold`` (logged per round)."""

    def __init__(self, blind: bool, threshold: float, runs: int, rounds: int) -> None:
        self.blind, self.threshold = blind, threshold
        self.pd_log = np.empty((1, rounds, runs), dtype=bool)

    def pricing(self, block: Block) -> Pricing:
        return Pricing(TRACKING, high_log=self.pd_log, threshold=self.threshold)

    def prices(self) -> tuple[Bools, Bools]:
        pd = self.pd_log[0]
        return ~pd & self.blind, pd | self.blind

    def marginals(self) -> tuple[Floats, Floats, Floats]:
        pd = self.pd_log[0]
        blind = float(self.blind)
        return np.where(pd, 1.0, blind), np.where(pd, 0.0, blind), pd.astype(float)


def _plugin_seller(name: str, loaded: object) -> Callable[[], Seller]:
    """The seller factory of the entry point ``name`` of ``collabecon.sellers``.

    ``loaded`` is called once without arguments; what it returns must be a :class:`Seller`
    named ``name``.

    Raises
    ------
    TypeError
        If ``loaded`` is not callable or builds no seller.
    ValueError
        If the seller it builds is not named ``name``.
    """
    if not callable(loaded):
        raise TypeError(f"{loaded!r} is not callable")
    seller = loaded()
    if not callable(getattr(seller, "start", None)):
        raise TypeError(f"{loaded!r}() gives {seller!r}, which has no start(game, runs, rounds)")
    own = getattr(seller, "name", None)
    if own != name:
        raise ValueError(f"{loaded!r}() gives a seller named {own!r}, not the entry point's name")
    return cast("Callable[[], Seller]", loaded)


#: The sellers of the command line, by name: the built-ins, then the seller factories that
#: installed distributions declare in the entry-point group ``collabecon.sellers``, read when
#: the registry is first consulted (:class:`econ.plugins.PluginRegistry`).
SELLERS: PluginRegistry[Callable[[], Seller]] = PluginRegistry(
    "collabecon.sellers",
    "seller",
    _plugin_seller,
    entries={
        "exp3": lambda: Exp3(preset="paper_code"),
        "exp3-ix": lambda: Exp3(preset="book_ix", name="exp3-ix"),
        "cexp3": lambda: ContextualExp3(preset="paper_code"),
        "alpha-pd": lambda: AlphaPD(),
        "always-pd": lambda: AlphaPD(1.0, name="always-pd"),
        "never-pd": lambda: AlphaPD(0.0, name="never-pd"),
    },
)
