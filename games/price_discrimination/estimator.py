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

    .. math:: \hat\alpha_t = \frac1t \sum_{\tau=1}^{t-1} \frac{X_\tau I_\tau}{\rho_\tau}

    where :math:`I_\tau` says both signals were sent in round :math:`\tau`, :math:`X_\tau` that
    the two signal classes paid different prices, and :math:`\rho_\tau` is
    :func:`informative_probability` at the evasion rate buyers actually played. A round with
    :math:`\rho_\tau = 0` contributes 0 (no division happens, since then :math:`I_\tau = 0`).

    Optional bias (Figure 4.5): after round ``t`` the belief is
    :math:`\mathrm{clip}(S_t/(t+1) + \varepsilon_t, 0, 1)` with a fresh
    :math:`\varepsilon_t \sim U[\mathrm{lo}, \mathrm{hi}]` and :math:`S_t` the unbiased sum; the
    bias does not compound.
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
        self.total = np.zeros(runs)
        self.belief = np.full(runs, float(alpha_hat_init))
        self.bias = bias

    def strategic(self) -> NDArray[np.bool_]:
        r"""Whether CBER buyers evade this round: :math:`\hat\alpha_t > \alpha^*` (tie: truthful)."""
        return self.belief > self.alpha_star

    def update(
        self,
        t: int,
        observed_discrimination: NDArray[np.bool_],
        strategic: NDArray[np.bool_],
        noise: NDArray[np.float64] | None = None,
    ) -> None:
        r"""Fold in round ``t`` (1-based): ``observed_discrimination`` is :math:`X_t I_t`.

        ``noise`` holds uniforms on [0, 1) that become the bias :math:`\varepsilon_t`.
        """
        inv_truthful, inv_strategic = self.inv_rho
        self.total += observed_discrimination * np.where(strategic, inv_strategic, inv_truthful)
        belief = self.total * (1.0 / (t + 1))
        if self.bias is not None and noise is not None:
            lo, hi = self.bias
            belief = np.clip(belief + lo + (hi - lo) * noise, 0.0, 1.0)
        self.belief = belief
