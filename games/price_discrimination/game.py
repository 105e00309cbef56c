"""The one-shot price-discrimination game: its parameters and per-buyer utilities.

Werner (2024), PhD thesis, Chapter 4 (Definition 4, Theorem 6, Corollaries 2-3); based on
Ananthakrishnan, Ding, Werner, Karimireddy and Jordan, "Privacy Can Arise Endogenously in an
Economic System with Learning Agents" (FORC 2024).

Every utility in this module is **per buyer**: the thesis's eq. (4.2) sums the seller's
utility over the ``n`` buyers of a round, while its corollaries and figures are per buyer.
:attr:`~games.price_discrimination.equilibrium.Equilibrium.seller_total` gives the sum; the
equilibrium itself is in :mod:`games.price_discrimination.equilibrium`.

The per-buyer utility functions (:func:`seller_utility`, :func:`high_buyer_utility`,
:func:`low_buyer_utility`) are written once, with plain arithmetic operators, so the same code
evaluates floats, numpy arrays, :class:`fractions.Fraction` and sympy symbols; the sympy
expressions of :data:`SYMBOLS` are obtained by calling them on symbols.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, Literal

import sympy as sp

from econ.validation import in_interval, non_negative, positive_int

Number = Any  # float, Fraction, numpy array or sympy expression: the formulas accept all four
Convention = Literal["thesis", "strict"]
CONVENTIONS: tuple[str, ...] = ("strict", "thesis")


class AssumptionWarning(UserWarning):
    """A result is used outside the assumption it was proved under (thesis Assumption 1).

    References
    ----------
    Werner (2024), ch. 4, §4.2, Assumption 1.
    """


@dataclass(frozen=True, slots=True)
class PDGame:
    r"""The PD game of Werner (2024), Definition 4, without ``alpha``.

    The :math:`(n, \alpha, \mu, \bar\theta, \underline\theta, c_B, c_S)`-PD game without
    ``alpha``. A buyer has the high value ``theta_high`` with probability ``mu`` (else
    ``theta_low``), sends a signal, and evading (sending the other type's signal) costs the buyer
    ``c_b`` and the seller ``c_s``. Numbers may be floats or
    :class:`fractions.Fraction` (then every derived quantity is exact).

    Parameters
    ----------
    mu
        Probability of the high type, in (0, 1).
    theta_low, theta_high
        Valuations, ``0 <= theta_low < theta_high``.
    c_b, c_s
        Evasion costs of the buyer and the seller, ``>= 0``.
    n
        Buyers per round (the repeated game's estimator needs ``n >= 2``).

    Warns
    -----
    AssumptionWarning
        When ``c_b >= theta_high - theta_low`` (thesis Assumption 1 fails: buyers are then
        always truthful and the orderings of Corollary 2 do not apply).

    References
    ----------
    M. Werner, *Collaborative Learning: Aligning Goals and Outcomes*, PhD thesis, UC
    Berkeley (2024), ch. 4, Definition 4 and Theorem 6; Ananthakrishnan et al., FORC 2024.

    Examples
    --------
    The parameters of the thesis's experiments (§4.4): regime B, :math:`\alpha^* = q^* = 1/2`.

    >>> from fractions import Fraction
    >>> F = Fraction
    >>> game = PDGame(mu=F(1, 2), theta_low=F(5), theta_high=F(15), c_b=F(5), c_s=F(5))
    >>> game.regime, game.alpha_star, game.q_star, game.delta
    ('B', Fraction(1, 2), Fraction(1, 2), Fraction(10, 1))
    """

    mu: Number
    theta_low: Number
    theta_high: Number
    c_b: Number
    c_s: Number
    n: int = 10

    def __post_init__(self) -> None:
        """Check the parameters; warn with :class:`AssumptionWarning` if Assumption 1 fails."""
        in_interval("mu", self.mu, 0.0, 1.0, low_open=True, high_open=True)
        non_negative("theta_low", self.theta_low)
        in_interval("theta_high", self.theta_high, float(self.theta_low), low_open=True)
        non_negative("c_b", self.c_b)
        non_negative("c_s", self.c_s)
        positive_int("n", self.n)
        if self.c_b >= self.delta:
            warnings.warn(
                f"c_b = {self.c_b} >= theta_high - theta_low = {self.delta}: thesis Assumption 1 "
                "fails, buyers are always truthful",
                AssumptionWarning,
                stacklevel=3,
            )

    @property
    def delta(self) -> Number:
        r""":math:`\Delta\theta = \bar\theta - \underline\theta`.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Theorem 6.

        Examples
        --------
        >>> THESIS_GAME.delta
        Fraction(10, 1)
        """
        return self.theta_high - self.theta_low

    @property
    def alpha_star(self) -> Number:
        r""":math:`\alpha^* = c_B/\Delta\theta` (Corollary 2).

        References
        ----------
        Werner (2024), ch. 4, §4.2, Corollary 2.

        Examples
        --------
        >>> THESIS_GAME.alpha_star
        Fraction(1, 2)
        """
        return self.c_b / self.delta

    @property
    def q_bar(self) -> Number:
        r"""The evasion rate :math:`\bar q = (1-\mu)\underline\theta/(\mu\Delta\theta)`.

        At this rate a signal-aware seller is indifferent after a low signal.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Theorem 6(b); §4.7, proof of Theorem 6.

        Examples
        --------
        >>> THESIS_GAME.q_bar
        Fraction(1, 2)
        """
        mu, low, delta = self.mu, self.theta_low, self.delta
        den = mu * delta
        if isinstance(den, float) and den == 0.0:  # mu, delta > 0: the product underflowed
            if low == 0:
                return 0.0
            log_q = math.log(1 - mu) + math.log(low) - math.log(mu) - math.log(delta)
            return math.inf if log_q > 709.0 else math.exp(log_q)
        return (1 - mu) * low / den

    @property
    def q_star(self) -> Number:
        r""":math:`q^* = \min\{1, \bar q\}` (Theorem 6(b)).

        References
        ----------
        Werner (2024), ch. 4, §4.2, Theorem 6(b).

        Examples
        --------
        >>> THESIS_GAME.q_star
        Fraction(1, 2)
        """
        return min(1, self.q_bar)

    @property
    def regime(self) -> str:
        r"""``"A"`` when :math:`\underline\theta \ge \mu\bar\theta` (:math:`q^* = 1`), else ``"B"``.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Theorem 6(d) and Corollary 2(a)-(b).
        """
        terms = (self.theta_low, self.mu, self.theta_high)
        if all(isinstance(t, (int, float, Fraction)) for t in terms):
            # compared exactly: a product of floats can underflow to 0 (mu = 5e-324)
            low, mu, high = (Fraction(t) for t in terms)
            return "A" if low >= mu * high else "B"
        return "A" if self.theta_low >= self.mu * self.theta_high else "B"

    @property
    def blind_price_high(self) -> bool:
        r"""Whether the signal-blind price is :math:`\bar\theta` (Theorem 6(d)).

        A tie goes to :math:`\underline\theta`.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Theorem 6(d).
        """
        return self.regime == "B"

    @property
    def p_blind(self) -> Number:
        """The signal-blind equilibrium price, Theorem 6(d).

        References
        ----------
        Werner (2024), ch. 4, §4.2, Theorem 6(d).

        Examples
        --------
        >>> THESIS_GAME.p_blind
        Fraction(15, 1)
        """
        return self.theta_high if self.blind_price_high else self.theta_low

    @property
    def kappa(self) -> Number:
        r"""The constant :math:`\kappa = \min\{\mu\Delta\theta, (1-\mu)\underline\theta\}`.

        The constant of the finite-horizon forms of Lemma 28 and Proposition 10 (Werner 2024,
        section 4.7 (p. 98ff.), proof of Lemma 28).

        References
        ----------
        Werner (2024), ch. 4, §4.7 (p. 98ff.), proof of Lemma 28; §4.3, Proposition 10.

        Examples
        --------
        >>> THESIS_GAME.kappa
        Fraction(5, 2)
        """
        return min(self.mu * self.delta, (1 - self.mu) * self.theta_low)

    @property
    def full_extraction(self) -> Number:
        r"""Utility :math:`U_S(0; \mathrm{PD})` of price discrimination against truthful buyers.

        :math:`U_S(0; \mathrm{PD}) = \mu\bar\theta + (1-\mu)\underline\theta`.

        References
        ----------
        Werner (2024), ch. 4, §4.2, Eq. (4.2); §4.3, the strategy pi_PD.

        Examples
        --------
        >>> THESIS_GAME.full_extraction
        Fraction(10, 1)
        """
        return self.mu * self.theta_high + (1 - self.mu) * self.theta_low

    @property
    def U1_star(self) -> Number:
        r"""The seller's utility per buyer under commitment, :math:`\mathbb{U}_1^* = u_S(\alpha^*)`.

        Corollary 3, Remark 3.

        .. math:: \mathbb{U}_1^* = \alpha^* U_S(0;\mathrm{PD}) + (1-\alpha^*) u_S(0)

        References
        ----------
        Werner (2024), ch. 4, §4.2, Corollary 3 and Remark 3.

        Examples
        --------
        >>> THESIS_GAME.U1_star
        Fraction(35, 4)
        """
        from games.price_discrimination.equilibrium import equilibrium

        return equilibrium(self, min(1, self.alpha_star)).seller

    def numeric(self) -> PDGame:
        """The same game with float parameters (fast with numpy arrays).

        References
        ----------
        Werner (2024), ch. 4, §4.2, Definition 4 (the same game).
        """
        return _numeric(self)

    def _numbers(self) -> tuple[Number, ...]:
        return (self.mu, self.theta_low, self.theta_high, self.c_b, self.c_s)


@lru_cache(maxsize=64)
def _numeric(game: PDGame) -> PDGame:
    """:meth:`PDGame.numeric`, kept for the games last asked for (a game is immutable)."""
    mu, tl, th, cb, cs = (float(x) for x in game._numbers())
    return PDGame(mu, tl, th, cb, cs, n=game.n)


_F = Fraction
#: The experiments' parameters (thesis section 4.4, p. 94): regime B, alpha* = q* = 1/2.
THESIS_GAME = PDGame(_F(1, 2), _F(5), _F(15), _F(5), _F(5), n=10)
#: Exact parameter sets: P0 (the experiments of section 4.4, regime B), P1 (Figure 4.1 left as the
#: authors' code draws it, boundary theta_L = mu theta_H, regime A), P2 (strict regime A), P3
#: (regime B, c_B != c_S).
PARAMETER_SETS: dict[str, PDGame] = {
    "P0": THESIS_GAME,
    "P1": PDGame(_F(1, 2), _F(5), _F(10), _F(5, 2), _F(5, 2)),
    "P2": PDGame(_F(2, 5), _F(5), _F(10), _F(2), _F(2)),
    "P3": PDGame(_F(3, 5), _F(4), _F(12), _F(3), _F(1)),
}


def seller_utility(game: PDGame, q_high: Number, a: Number, b: Number, q_low: Number = 0) -> Number:
    r"""The seller's expected utility per buyer for arbitrary mixed strategies.

    Werner (2024), eq. (4.2)-(4.3), with prices on :math:`\{\underline\theta, \bar\theta\}`;
    ``a`` = P(price :math:`\bar\theta` | high signal), ``b`` = P(price :math:`\bar\theta` |
    low signal), ``q_high`` = P(high type sends the low signal), ``q_low`` = P(low type sends
    the high signal). It depends on the seller's strategy only through these marginals, so it
    also holds for correlated strategies.

    .. math::
        U_S = \mu[(1-q_H)(a\bar\theta + (1-a)\underline\theta)
              + q_H(b\bar\theta + (1-b)\underline\theta - c_S)]
            + (1-\mu)[(1-q_L)(1-b)\underline\theta + q_L((1-a)\underline\theta - c_S)]

    References
    ----------
    Werner (2024), ch. 4, §4.2, eqs. (4.2)-(4.3).

    Examples
    --------
    Truthful buyers and a seller who prices each signal at its type's value take everything:
    :math:`\mu\bar\theta + (1-\mu)\underline\theta = 10`.

    >>> seller_utility(THESIS_GAME, 0, 1, 0)
    Fraction(10, 1)
    """
    mu, tl, th, cs = game.mu, game.theta_low, game.theta_high, game.c_s
    high = (1 - q_high) * (a * th + (1 - a) * tl) + q_high * (b * th + (1 - b) * tl - cs)
    low = (1 - q_low) * (1 - b) * tl + q_low * ((1 - a) * tl - cs)
    return mu * high + (1 - mu) * low


def high_buyer_utility(game: PDGame, q_high: Number, a: Number, b: Number) -> Number:
    r"""Expected utility of a high-value buyer, eq. (4.1).

    .. math:: U_H = (1-q_H)(1-a)\Delta\theta + q_H((1-b)\Delta\theta - c_B)

    References
    ----------
    Werner (2024), ch. 4, §4.2, eq. (4.1).

    Examples
    --------
    >>> high_buyer_utility(THESIS_GAME, 1, 1, 0)  # always evade: Delta theta - c_B
    Fraction(5, 1)
    """
    d = game.delta
    return (1 - q_high) * (1 - a) * d + q_high * ((1 - b) * d - game.c_b)


def low_buyer_utility(game: PDGame, q_low: Number) -> Number:
    r"""Expected utility of a low-value buyer, eq. (4.1): :math:`U_L = -q_L c_B`.

    A low-value buyer buys only at :math:`\underline\theta`, so her surplus is 0 whatever
    the price; only evasion costs her.

    References
    ----------
    Werner (2024), ch. 4, §4.2, eq. (4.1).

    Examples
    --------
    >>> low_buyer_utility(THESIS_GAME, 0.5)
    -2.5
    """
    return -q_low * game.c_b


def alpha_of(a: Number, b: Number) -> Number:
    r"""The extent of price discrimination of independent per-signal prices.

    Werner (2024), section 4.3: :math:`\alpha_t = P[\bar P \ne \underline P]` with independent
    draws :math:`\bar P \sim \pi(\cdot|\bar s)`, :math:`\underline P \sim \pi(\cdot|\underline s)`.

    .. math:: \alpha = a(1-b) + (1-a)b

    References
    ----------
    Werner (2024), ch. 4, §4.3.

    Examples
    --------
    >>> alpha_of(1, 0), alpha_of(0.5, 0.5)
    (1, 0.5)
    """
    return a * (1 - b) + (1 - a) * b


def posterior_after_low(game: PDGame, q_high: Number, q_low: Number = 0) -> Number:
    r"""The seller's belief that a low-signal buyer has the high value (proof of Theorem 6).

    .. math:: \hat\mu = \frac{\mu q_H}{\mu q_H + (1-\mu)(1-q_L)}

    References
    ----------
    Werner (2024), ch. 4, proof of Theorem 6.

    Examples
    --------
    >>> from fractions import Fraction
    >>> posterior_after_low(THESIS_GAME, Fraction(1, 2))
    Fraction(1, 3)
    """
    return game.mu * q_high / (game.mu * q_high + (1 - game.mu) * (1 - q_low))


#: Symbols of the game and of a mixed profile, for the symbolic checks.
MU, THETA_L, THETA_H, C_B, C_S = sp.symbols("mu theta_L theta_H c_B c_S", positive=True)
Q_H, Q_L, A, B, ALPHA = sp.symbols("q_H q_L a b alpha", nonnegative=True)


def symbolic_game() -> PDGame:
    """A :class:`PDGame` whose parameters are sympy symbols (no validation).

    References
    ----------
    Werner (2024), ch. 4, §4.2, Definition 4.
    """
    game = object.__new__(PDGame)
    for name, value in zip(
        ("mu", "theta_low", "theta_high", "c_b", "c_s", "n"),
        (MU, THETA_L, THETA_H, C_B, C_S, sp.Symbol("n", positive=True, integer=True)),
        strict=True,
    ):
        object.__setattr__(game, name, value)
    return game


SYMBOLS = symbolic_game()
#: The per-buyer utilities of eqs. (4.1)-(4.3) as sympy expressions.
U_S_EXPR: sp.Expr = sp.expand(seller_utility(SYMBOLS, Q_H, A, B, Q_L))
U_H_EXPR: sp.Expr = sp.expand(high_buyer_utility(SYMBOLS, Q_H, A, B))
