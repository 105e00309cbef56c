r"""CBER buyers and their consistent estimator of the seller's price-discrimination rate.

Werner (2024), Definition 5 (consistent-belief-based equilibrium-responding buyers) and
eq. (4.7) (proof of Proposition 6). In round ``t`` every buyer uses the same belief
:math:`\hat\alpha_t` and plays Theorem 6 for :math:`\alpha = \hat\alpha_t`: high types evade
with probability :math:`q_t = q^*\,\mathbb 1\{\hat\alpha_t > \alpha^*\}`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.extending import register_jitable
from numpy.typing import NDArray

from games.price_discrimination.game import PDGame


def informative_probability(game: PDGame, q_high: Any, q_low: Any = 0) -> Any:
    r"""Probability :math:`\rho = E[I_\tau | H_\tau]` that a round shows both signals.

    Proof of Proposition 6 (Werner 2024, section 4.7, eq. (4.7)): with
    :math:`\pi_L = (1-\mu)(1-q_L) + \mu q_H` the chance one buyer sends the low signal,

    .. math:: \rho = 1 - \pi_L^n - (1-\pi_L)^n

    It is 0 when ``n = 1`` or, in regime A, whenever buyers are strategic (:math:`q^* = 1`):
    the estimator (4.7) then learns nothing in that round.

    References
    ----------
    M. Werner, *Collaborative Learning: Aligning Goals and Outcomes*, PhD thesis, UC Berkeley
    (2024), ch. 4, §4.7, proof of Proposition 6, eq. (4.7).

    Examples
    --------
    Ten truthful buyers with :math:`\mu = 1/2` show both signals unless all ten agree:

    >>> from games.price_discrimination.game import THESIS_GAME
    >>> informative_probability(THESIS_GAME, 0)  # 1 - 2 / 2**10
    Fraction(511, 512)
    """
    pi_low = (1 - game.mu) * (1 - q_low) + game.mu * q_high
    return 1 - pi_low**game.n - (1 - pi_low) ** game.n


@register_jitable
def is_strategic(total: float, t: int, alpha_star: float, eps: float, init: float) -> bool:
    r"""Whether CBER buyers play strategically in round ``t + 1`` (``t`` 0-based), given :math:`S_t`.

    Strategic iff the belief exceeds :math:`\alpha^*` (the tie truthful): in round 1 iff
    ``init`` :math:`> \alpha^*`; later, for :math:`\alpha^* < 1`,

    .. math:: \mathrm{clip}\Big(\frac{S_t}{t+1} + \varepsilon_t, 0, 1\Big) > \alpha^*
              \iff S_t > (t + 1)(\alpha^* - \varepsilon_t)

    (:math:`\varepsilon_t = 0` without bias), and never when :math:`\alpha^* \ge 1`. Scalars,
    inside the compiled rounds (:func:`~games.price_discrimination.rounds.play`) or not.

    References
    ----------
    Werner (2024), ch. 4, §4.3, Definition 5 (CBER buyers play strategic iff the belief exceeds
    alpha*); §4.7, Eq. (4.7); §4.4, Figure 4.5 (the bias).
    """
    if t == 0:
        return init > alpha_star
    if alpha_star >= 1.0:
        return False
    return total > (t + 1) * (alpha_star - eps)


@register_jitable
def belief_of(total: Any, t: Any, eps: Any, biased: bool) -> Any:
    r"""The belief after ``t - 1`` rounds with partial sum :math:`S_{t-1}` = ``total``.

    .. math:: \hat\alpha_t = \frac{S_{t-1}}{t}, \qquad \text{biased: }
              \hat\alpha_t = \mathrm{clip}\Big(\frac{S_{t-1}}{t} + \varepsilon_{t-1}, 0, 1\Big)

    Evaluates numpy arrays, and scalars inside the compiled rounds
    (:func:`~games.price_discrimination.rounds.play`).

    References
    ----------
    Werner (2024), ch. 4, §4.7, proof of Proposition 6, Eq. (4.7); §4.4, Figure 4.5 (the bias).
    """
    belief = total / t
    if biased:
        return np.minimum(np.maximum(belief + eps, 0.0), 1.0)
    return belief


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

    The estimator holds each run's current sum :attr:`total` (:math:`S_0 = 0`), which the
    compiled rounds (:func:`~games.price_discrimination.rounds.play`) carry forward round by
    round, logging each round's belief :func:`belief_of` and deciding the buyers' mode with
    :func:`is_strategic`; per block of rounds it draws the bias (:meth:`begin`).

    References
    ----------
    Werner (2024), ch. 4, §4.3, Definition 6 and Proposition 6; §4.7, proof of Proposition 6,
    Eq. (4.7).
    """

    def __init__(
        self,
        game: PDGame,
        runs: int,
        rounds: int,
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
        self.rounds = rounds
        #: ``(runs,)``: :math:`S_t` of every run after the rounds played so far.
        self.total = np.zeros(runs)
        #: ``(rounds + 1, runs)``: the bias :math:`\varepsilon_t` drawn after round ``t`` in row ``t``
        #: (0 without bias).
        self.eps = np.zeros((rounds + 1, runs))

    def increments(self, informative: NDArray[np.bool_]) -> NDArray[np.float64]:
        r""":math:`I_t/\rho_t` in each buyer mode, to be multiplied by :math:`X_t`.

        Computed from ``informative``, whether each round is informative, of shape ``(mode, ...)``.

        References
        ----------
        Werner (2024), ch. 4, §4.7, proof of Proposition 6, Eq. (4.7).
        """
        return informative * self.inv_rho.reshape(2, *(1,) * (informative.ndim - 1))

    def begin(self, start: int, rounds: int, noise: NDArray[np.float64] | None) -> None:
        r"""Draw the bias after each of rounds ``start + 1 .. start + rounds`` (1-based) of a block.

        :math:`\varepsilon_t = \mathrm{lo} + (\mathrm{hi} - \mathrm{lo})\,u_t` into :attr:`eps`,
        from ``noise``, the block's uniforms ``(rounds, runs)``; nothing without bias (``noise``
        is then ``None``).

        References
        ----------
        Werner (2024), ch. 4, §4.4, Figure 4.5 (the bias).
        """
        if self.bias is not None:
            if noise is None:
                raise ValueError("an estimator with a bias needs the block's noise")
            lo, hi = self.bias
            self.eps[start + 1 : start + rounds + 1] = lo + (hi - lo) * noise

    def final_belief(self) -> NDArray[np.float64]:
        """The belief after the last round, from :attr:`total` once every round is played.

        References
        ----------
        Werner (2024), ch. 4, §4.7, Eq. (4.7).
        """
        return np.asarray(
            belief_of(self.total, self.rounds + 1, self.eps[-1], self.bias is not None),
            dtype=np.float64,
        )
