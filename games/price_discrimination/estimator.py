"""CBER buyers and their consistent estimator of the seller's price-discrimination rate.

Werner (2024), Definition 5 (consistent-belief-based equilibrium-responding buyers) and
eq. (4.7) (proof of Proposition 6). In round ``t`` every buyer uses the same belief
:math:`\\hat\\alpha_t` and plays Theorem 6 for :math:`\\alpha = \\hat\\alpha_t`: high types evade
with probability :math:`q_t = q^*\\,\\mathbb 1\\{\\hat\\alpha_t > \\alpha^*\\}`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from games.price_discrimination.game import PDGame


def informative_probability(game: PDGame, q_high: Any, q_low: Any = 0) -> Any:
    r"""Probability :math:`\rho = E[I_\tau | H_\tau]` that a round shows both signals.

    Proof of Proposition 6 (Werner 2024), spec ch4 section 2.5: with
    :math:`\pi_L = (1-\mu)(1-q_L) + \mu q_H` the chance one buyer sends the low signal,

    .. math:: \rho = 1 - \pi_L^n - (1-\pi_L)^n

    It is 0 when ``n = 1`` or, in regime A, whenever buyers are strategic (:math:`q^* = 1`):
    the estimator (4.7) then learns nothing in that round.
    """
    pi_low = (1 - game.mu) * (1 - q_low) + game.mu * q_high
    return 1 - pi_low**game.n - (1 - pi_low) ** game.n


class ConsistentEstimator:
    r"""The estimator (4.7), for a batch of independent runs (leading axis).

    .. math:: \hat\alpha_t = \frac1t S_{t-1}, \qquad
              S_{t} = \sum_{\tau=1}^{t} \frac{X_\tau I_\tau}{\rho_\tau}

    where :math:`I_\tau` says both signals were sent in round :math:`\tau`, :math:`X_\tau` that
    the two signal classes paid different prices, and :math:`\rho_\tau` is
    :func:`informative_probability` at the evasion rate buyers actually played. A round with
    :math:`\rho_\tau = 0` contributes 0 (no division happens, since then :math:`I_\tau = 0`).
    Round 1 uses ``alpha_hat_init`` (0 by (4.7)).

    Optional bias (Figure 4.5): after round ``t`` the belief is
    :math:`\mathrm{clip}(S_t/(t+1) + \varepsilon_t, 0, 1)` with a fresh
    :math:`\varepsilon_t \sim U[\mathrm{lo}, \mathrm{hi}]`; the bias does not compound.

    The simulator keeps the sum :math:`S` in :attr:`total` and, per block of rounds, asks for
    the thresholds that decide the buyers' mode (:meth:`begin`); beliefs are recovered from
    the logged sums afterwards (:meth:`beliefs`).
    """

    def __init__(
        self,
        game: PDGame,
        runs: int,
        alpha_hat_init: float = 0.0,
        bias: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    ) -> None:
        self.alpha_star = float(game.alpha_star)
        rho = np.array([float(informative_probability(game, q)) for q in (0.0, float(game.q_star))])
        #: 1/rho for truthful and strategic rounds (0 where rho = 0: nothing to divide).
        self.inv_rho = np.divide(1.0, rho, out=np.zeros(2), where=rho > 0)
        self.rho = rho
        self.init = float(alpha_hat_init)
        self.bias = bias
        self.total = np.zeros(runs)
        self._eps_last = np.zeros(runs)  # the bias drawn after the previous round
        self._eps_prev = np.zeros((0, runs))
        self._start = 0

    def begin(
        self, start: int, informative: NDArray[np.bool_], noise: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        r"""Prepare rounds ``start + 1 ..`` (1-based) of a block.

        Returns ``thresholds`` ``(rounds, runs)``, with round ``t`` strategic iff
        :math:`S_{t-1} >` threshold (:math:`\hat\alpha_t > \alpha^*`, the tie truthful), and
        ``increments`` ``(rounds, mode, runs)``: :math:`I_t/\rho_t` in each buyer mode, to be
        multiplied by :math:`X_t`, and the bias drawn after each previous round (0 without
        bias). ``noise`` holds the block's uniforms for the bias.
        """
        eps = self._bias(noise)
        eps_prev = np.concatenate([self._eps_last[None], eps[:-1]])
        self._eps_last, self._eps_prev, self._start = eps[-1], eps_prev, start
        t = np.arange(start + 1, start + 1 + eps.shape[0])[:, None]
        if self.alpha_star >= 1:
            thresholds = np.full(eps.shape, np.inf)
        else:
            thresholds = t * (self.alpha_star - eps_prev)  # clip(x) > alpha* iff x > alpha*
        if start == 0:
            thresholds[0] = -np.inf if self.init > self.alpha_star else np.inf
        return thresholds, informative * self.inv_rho[None, :, None], eps_prev

    def belief(self, t: int) -> NDArray[np.float64]:
        """The current belief :math:`\\hat\\alpha_{t+1}` before round ``t + 1`` (``t`` 0-based)."""
        if t == 0:
            return np.full(self.total.shape, self.init)
        return self._belief(self.total, t + 1, self._eps_prev[t - self._start])

    def beliefs(
        self, totals_before: NDArray[np.float64], eps_prev: NDArray[np.float64] | None
    ) -> NDArray[np.float64]:
        r"""Beliefs :math:`\hat\alpha_t` of rounds ``1..T`` from the sums before each round
        ``(T, runs)`` and the bias drawn after the previous round."""
        t = np.arange(1, totals_before.shape[0] + 1)[:, None]
        out = self._belief(totals_before, t, eps_prev)
        out[0] = self.init
        return out

    def final_belief(self, rounds: int) -> NDArray[np.float64]:
        """The belief after the last round."""
        return self._belief(self.total, rounds + 1, self._eps_last)

    def _bias(self, noise: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.bias is None:
            return np.zeros_like(noise)
        lo, hi = self.bias
        return lo + (hi - lo) * noise

    def _belief(self, total: NDArray[np.float64], t: Any, eps: Any) -> NDArray[np.float64]:
        belief = total / t
        if self.bias is None:
            return np.asarray(belief, dtype=np.float64)
        return np.clip(belief + eps, 0.0, 1.0)
