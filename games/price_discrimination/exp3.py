r"""Exp3-IX sellers of the repeated PD game: the signal-blind Exp3 and the contextual CExp3.

Werner (2024), section 4.4, sellers 1 and 2, vectorised over independent runs (the policy
protocol is :class:`~games.price_discrimination.sellers.Policy`). Each learner is a
two-armed Exp3-IX bandit over the prices :math:`\underline\theta` and :math:`\bar\theta`;
learning rates and reward normalisation are those of the authors' experiment code linked
from section 4.4 (the ``paper_code`` preset), with the presets of Neu (2015) and Lattimore &
Szepesvári (2020) beside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit

from econ.validation import choice, non_negative, positive
from games.price_discrimination.buyers import Block, RoundTypes
from games.price_discrimination.game import PDGame, alpha_of
from games.price_discrimination.rounds import EXP3, Pricing

if TYPE_CHECKING:  # sellers.py imports this module for its SELLERS: the protocol only types
    from games.price_discrimination.sellers import Bools, Floats, Policy


PRESETS: tuple[str, ...] = ("paper_code", "book_ix", "neu_ix")


def exp3_parameters(preset: str, horizon: int, k: int = 2) -> tuple[float, float]:
    r"""Learning rate :math:`\eta` and implicit exploration :math:`\gamma` of an Exp3-IX preset.

    ``paper_code``: :math:`\eta = \sqrt{\ln k/(Tk)}`, :math:`\gamma = 0` (plain Exp3; the
    authors' final experiments). ``book_ix``: :math:`\eta = \sqrt{2\ln(k+1)/(Tk)}`,
    :math:`\gamma = \eta/2` (Lattimore & Szepesvári, *Bandit Algorithms*, Theorem 12.1).
    ``neu_ix``: :math:`\eta = \sqrt{2\ln k/(Tk)}`, :math:`\gamma = \eta/2`.

    References
    ----------
    Auer, Cesa-Bianchi, Freund & Schapire (2002), The Nonstochastic Multiarmed Bandit Problem,
    SIAM J. Comput. 32(1) (algorithm Exp3).
    Neu (2015), Explore no more: Improved high-probability regret bounds for non-stochastic bandits,
    NeurIPS, Algorithm 1 (Exp3-IX).
    Lattimore & Szepesvári (2020), Bandit Algorithms, ch. 12 (Exp3-IX), Theorem 12.1.

    Examples
    --------
    >>> eta, gamma = exp3_parameters("neu_ix", 10_000)
    >>> round(eta, 6), round(gamma, 6)
    (0.008326, 0.004163)
    """
    choice("preset", preset, PRESETS)
    if preset == "paper_code":
        return math.sqrt(math.log(k) / (horizon * k)), 0.0
    eta = math.sqrt(2 * math.log(k + 1 if preset == "book_ix" else k) / (horizon * k))
    return eta, eta / 2


class Exp3Bank:
    r"""Independent two-armed Exp3-IX learners, in loss form.

    Arm 0 = price :math:`\underline\theta`, arm 1 = :math:`\bar\theta` (Lattimore & Szepesvári,
    *Bandit Algorithms*, ch. 12).

    With two arms only the difference of the loss estimates matters; the bank keeps the logit
    :math:`G = -\eta(\hat L_1 - \hat L_0)`, so :math:`P_1 = 1/(1 + e^{-G})`. After playing arm
    :math:`A` with loss :math:`Y \in [0, 1]`, :math:`\hat L_A \mathrel{+}= Y/(P_A + \gamma)`.
    The bank holds the learners' state and parameters; a round of one learner is
    :func:`~games.price_discrimination.rounds.exp3_round`, played inside the compiled loop of
    :func:`~games.price_discrimination.rounds.play`.

    References
    ----------
    Neu (2015), Explore no more: Improved high-probability regret bounds for non-stochastic bandits,
    NeurIPS, Algorithm 1 (Exp3-IX).
    Lattimore & Szepesvári (2020), Bandit Algorithms, ch. 12 (Exp3-IX).
    Auer, Cesa-Bianchi, Freund & Schapire (2002), The Nonstochastic Multiarmed Bandit Problem,
    SIAM J. Comput. 32(1) (algorithm Exp3; plain Exp3 is gamma = 0).
    """

    def __init__(self, shape: tuple[int, ...], eta: float, gamma: float) -> None:
        self.logit = np.zeros(shape)
        self.eta = eta
        self.gamma = gamma

    def prob_high(self) -> Floats:
        """P(arm 1 = the high price) of every learner.

        References
        ----------
        Neu (2015), Explore no more: Improved high-probability regret bounds for non-stochastic
        bandits, NeurIPS, Algorithm 1 (Exp3-IX).
        """
        return expit(self.logit)

    def signed(self, loss: Floats) -> Floats:
        r"""Turn losses ``(..., arm, *shape)`` into the steps of the logit for :func:`exp3_round`.

        Arm 0, then arm 1; ``shape`` is that of the bank. The steps are :math:`+\eta Y_0` and
        :math:`-\eta Y_1`.

        References
        ----------
        Neu (2015), Explore no more: Improved high-probability regret bounds for non-stochastic
        bandits, NeurIPS, Algorithm 1 (Exp3-IX; the loss estimates).
        """
        return loss * np.array([self.eta, -self.eta]).reshape(2, *(1,) * self.logit.ndim)


def normalised_loss(game: PDGame, reward: Floats) -> Floats:
    r"""Normalised loss of a per-buyer reward :math:`r \in [-c_S, \bar\theta]`.

    :math:`Y = (\bar\theta - r)/(\bar\theta + c_S)`.

    References
    ----------
    Werner (2024), ch. 4, §4.4, Algorithms (the sellers learn from their utility), with the
    normalisation of the authors' experiment code linked from §4.4.
    """
    th = float(game.theta_high)
    return (th - reward) / (th + float(game.c_s))


@dataclass(frozen=True, slots=True)
class Exp3:
    r"""A signal-blind seller: one Exp3-IX learner over the two prices, charged to everyone.

    Werner (2024), section 4.4, seller 1. It learns from the average seller utility over all
    :math:`n` buyers. ``eta``/``gamma`` override the preset (the thesis gives neither).

    References
    ----------
    Werner (2024), ch. 4, §4.4, Algorithms, seller 1.
    Neu (2015), Explore no more: Improved high-probability regret bounds for non-stochastic bandits,
    NeurIPS, Algorithm 1 (Exp3-IX).
    Auer, Cesa-Bianchi, Freund & Schapire (2002), The Nonstochastic Multiarmed Bandit Problem,
    SIAM J. Comput. 32(1) (algorithm Exp3).
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
        """A policy for ``runs`` runs of ``rounds`` rounds.

        References
        ----------
        Werner (2024), ch. 4, §4.4, Algorithms, seller 1.
        """
        bank = self._bank((1, runs), rounds)
        return _BlindExp3Policy(bank, bank.signed(_blind_loss(game)), rounds)


@lru_cache(maxsize=16)
def _blind_loss(game: PDGame) -> Floats:
    """``(arm, 1, mode * pairs)``: the loss when everyone pays the low or the high price."""
    loss = normalised_loss(game, RoundTypes.of(game).everyone_reward())  # (mode, arm, pairs)
    return _read_only(loss.transpose(1, 0, 2).reshape(2, 1, -1))


@lru_cache(maxsize=16)
def _contextual_loss(game: PDGame) -> Floats:
    """``(arm, learner, mode * pairs)``: each signal class's loss, 0 where the class is empty.

    The high-signal learner's reward is the price (truthful high types always buy), the
    low-signal learner's the low class's reward.
    """
    types = RoundTypes.of(game)
    th, tl = float(game.theta_high), float(game.theta_low)
    high_class = (
        normalised_loss(game, np.array([tl, th]))[None, :, None] * types.has_high()[:, None]
    )
    low_class = normalised_loss(game, types.low_reward()) * types.has_low()[:, None]
    loss = np.stack([high_class, low_class], axis=2)  # (mode, arm, learner, pairs)
    return _read_only(loss.transpose(1, 2, 0, 3).reshape(2, 2, -1))


def _read_only(table: Floats) -> Floats:
    table.setflags(write=False)
    return table


class _Exp3Policy:
    """Exp3-IX learners ``(learner, runs)`` with their per-column steps ``(arm, learner, column)``."""

    def __init__(self, bank: Exp3Bank, table: Floats, rounds: int) -> None:
        self.bank = bank
        self.table = table
        learners, runs = bank.logit.shape
        self.p_log = np.empty((learners, rounds, runs))
        self.high_log = np.empty(self.p_log.shape, dtype=bool)

    def pricing(self, block: Block) -> Pricing:
        return Pricing(
            EXP3,
            table=self.table,
            gamma=self.bank.gamma,
            logit=self.bank.logit,
            p_log=self.p_log,
            high_log=self.high_log,
        )


class _BlindExp3Policy(_Exp3Policy):
    """One learner prices everyone: the two classes never pay different prices."""

    def prices(self) -> tuple[Bools, Bools]:
        return self.high_log[0], self.high_log[0]

    def marginals(self) -> tuple[Floats, Floats, Floats]:
        p = self.p_log[0]
        return p, p, np.zeros(p.shape)


@dataclass(frozen=True, slots=True)
class ContextualExp3(Exp3):
    r"""Contextual Exp3 ("CExp3"): one Exp3-IX learner per signal.

    Werner (2024), section 4.4, seller 2. Each learner prices its signal class and learns from
    the average seller utility over that class only; a learner whose class is empty does not
    learn. :math:`\alpha_t = a_t(1-b_t) + (1-a_t)b_t` from the round's distributions.

    References
    ----------
    Werner (2024), ch. 4, §4.4, Algorithms, seller 2.
    Neu (2015), Explore no more: Improved high-probability regret bounds for non-stochastic bandits,
    NeurIPS, Algorithm 1 (Exp3-IX).
    Auer, Cesa-Bianchi, Freund & Schapire (2002), The Nonstochastic Multiarmed Bandit Problem,
    SIAM J. Comput. 32(1) (algorithm Exp3).
    """

    name: str = "cexp3"

    def start(self, game: PDGame, runs: int, rounds: int) -> Policy:
        """A policy for ``runs`` runs of ``rounds`` rounds.

        References
        ----------
        Werner (2024), ch. 4, §4.4, Algorithms, seller 2.
        """
        bank = self._bank((2, runs), rounds)
        return _ContextualExp3Policy(bank, bank.signed(_contextual_loss(game)), rounds)


class _ContextualExp3Policy(_Exp3Policy):
    """Learner 0 prices the high-signal class, learner 1 the low-signal class."""

    def prices(self) -> tuple[Bools, Bools]:
        return self.high_log[1], self.high_log[0]

    def marginals(self) -> tuple[Floats, Floats, Floats]:
        a, b = self.p_log[0], self.p_log[1]
        return a, b, alpha_of(a, b)
