r"""The rounds of the repeated PD game (Algorithm 6), compiled: one loop over rounds and runs.

Werner (2024), section 4.6, Algorithm 6, read with Definition 5 (CBER buyers) and eq. (4.7)
(the buyers' estimator). A round of one run is a handful of scalar operations once the buyers
are summed up by their pair (:class:`~games.price_discrimination.buyers.RoundTypes`) and every
reward is tabulated per (mode, pair) column:

1. the buyers: their pair, drawn from its uniform, and their mode, strategic iff their belief
   exceeds :math:`\alpha^*` (:func:`~games.price_discrimination.estimator.is_strategic`),
   which select the column ``pair + size * strategic``;
2. the seller prices the two signal classes and learns (:class:`Pricing`), which gives
   :math:`X_t`, whether the two classes paid different prices;
3. the estimator adds :math:`X_t I_t/\rho_t`: :math:`S_t = S_{t-1} + X_t\,` ``increments[column]``,
   and the round's belief is logged.

:func:`play` runs these three steps for a block of rounds of every run, compiled with numba
(the compiled code is cached on disk beside the module). Nothing else of a simulation is in the
loop: drawing the uniforms and the bias, and everything that does not feed back into play, are
whole-array operations of :mod:`games.price_discrimination.repeated`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit
from numpy.typing import NDArray

from games.price_discrimination.buyers import Block, RoundTypes, pair_of
from games.price_discrimination.estimator import ConsistentEstimator, belief_of, is_strategic

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]
Ints = NDArray[np.int32]

#: :attr:`Pricing.kind` of a seller whose prices of the block are drawn before it is played.
FIXED = 0
#: :attr:`Pricing.kind` of a seller that discriminates iff the buyers' belief is below a threshold.
TRACKING = 1
#: :attr:`Pricing.kind` of Exp3-IX learners: one for both classes, or one per signal class.
EXP3 = 2

# empty stand-ins for the arrays a kind of seller does not use (never written)
_NO_BOOLS_2D = np.zeros((0, 0), dtype=bool)
_NO_BOOLS_3D = np.zeros((0, 0, 0), dtype=bool)
_NO_FLOATS_2D = np.zeros((0, 0))
_NO_FLOATS_3D = np.zeros((0, 0, 0))


class Pricing(NamedTuple):
    r"""A seller's part of a block of rounds, as :func:`play` takes it.

    Attributes
    ----------
    kind
        :data:`FIXED`, :data:`TRACKING` or :data:`EXP3`.
    differ
        ``(block, runs)``: whether the two classes pay different prices (:data:`FIXED` only).
    table
        ``(arm, learner, column)``: the signed loss steps of :meth:`.exp3.Exp3Bank.signed`
        per (mode, pair) column (:data:`EXP3` only).
    gamma
        The implicit exploration :math:`\gamma` (:data:`EXP3`).
    logit
        ``(learner, runs)``: the learners' state, updated in place (:data:`EXP3`).
    p_log, high_log
        ``(learner, rounds, runs)``: the logs written round by round, :math:`P_1` and whether
        arm 1 (the high price) was played (:data:`EXP3`); for :data:`TRACKING`, ``high_log``
        ``(1, rounds, runs)`` logs whether the seller discriminated.
    threshold
        The belief below which the seller discriminates (:data:`TRACKING`).

    References
    ----------
    Werner (2024), ch. 4, §4.6, Algorithm 6, line 7 (the seller's mixed strategy); §4.4,
    Algorithms (the sellers).
    """

    kind: int
    differ: Bools = _NO_BOOLS_2D
    table: Floats = _NO_FLOATS_3D
    gamma: float = 0.0
    logit: Floats = _NO_FLOATS_2D
    p_log: Floats = _NO_FLOATS_3D
    high_log: Bools = _NO_BOOLS_3D
    threshold: float = 0.0


@njit(cache=True)
def exp3_round(
    logit: float, uniform: float, step_low: float, step_high: float, gamma: float
) -> tuple[float, bool, float]:
    r"""One round of a two-armed Exp3-IX learner: draw the arm, then charge it its loss.

    With :math:`P_1 = 1/(1 + e^{-G})`, arm 1 (the high price) is played iff ``uniform``
    :math:`< P_1`; then :math:`G \mathrel{+}=` ``step_high`` :math:`/(P_1 + \gamma)`, else
    :math:`G \mathrel{+}=` ``step_low`` :math:`/(1 - P_1 + \gamma)`, the steps being
    :math:`+\eta Y_0` and :math:`-\eta Y_1` (:meth:`.exp3.Exp3Bank.signed`). A step of 0 leaves
    the learner where it is, which is how an empty signal class is skipped; the played arm's
    probability is never 0 (arm 1 needs ``uniform`` :math:`< P_1`, arm 0
    :math:`P_1 \le` ``uniform`` :math:`< 1`). Returns :math:`P_1`, the arm and the new logit.

    References
    ----------
    Neu (2015), Explore no more: Improved high-probability regret bounds for non-stochastic
    bandits, NeurIPS, Algorithm 1 (Exp3-IX).
    Lattimore & Szepesvári (2020), Bandit Algorithms, ch. 12 (Exp3-IX).
    Auer, Cesa-Bianchi, Freund & Schapire (2002), The Nonstochastic Multiarmed Bandit Problem,
    SIAM J. Comput. 32(1) (algorithm Exp3; plain Exp3 is gamma = 0).
    """
    p = 1.0 / (1.0 + math.exp(-logit))
    high = uniform < p
    # selects, not branches: the arm is a coin flip, which no branch predictor foresees
    played = p + gamma if high else (1.0 + gamma) - p
    return p, high, logit + (step_high if high else step_low) / played


@njit(cache=True)
def _play(
    start: int,
    buyers: Floats,
    types: tuple[Ints, Ints, Floats, NDArray[np.intp]],
    increments: Floats,
    rho: Floats,
    total: Floats,
    logs: tuple[Bools, Ints, Ints, Floats, Floats],
    uniforms: Floats,
    eps: Floats,
    init: float,
    biased: bool,
    alpha_star: float,
    kind: int,
    differ: Bools,
    table: Floats,
    gamma: float,
    logit: Floats,
    p_log: Floats,
    high_log: Bools,
    threshold: float,
) -> None:
    learners = logit.shape[0]
    high_types, would_evade, cdf, guide = types
    size = high_types.size
    mode_log, high_log_types, evaders_log, rho_log, belief_log = logs
    for j in range(buyers.shape[0]):
        t = start + j
        for r in range(total.size):
            s = total[r]
            belief = init if t == 0 else belief_of(s, t + 1, eps[t, r], biased)
            belief_log[t, r] = belief
            strategic = is_strategic(s, t, alpha_star, eps[t, r], init)
            mode_log[t, r] = strategic
            index = pair_of(cdf, guide, buyers[j, r])
            high_log_types[t, r] = high_types[index]
            evaders_log[t, r] = would_evade[index] if strategic else 0
            rho_log[t, r] = rho[int(strategic)]
            column = index + size * strategic
            if kind == FIXED:
                x = differ[j, r]
            elif kind == TRACKING:
                x = belief < threshold
                high_log[0, t, r] = x
            else:
                for k in range(learners):
                    p, high, new = exp3_round(
                        logit[k, r],
                        uniforms[j, k, r],
                        table[0, k, column],
                        table[1, k, column],
                        gamma,
                    )
                    logit[k, r] = new
                    p_log[k, t, r] = p
                    high_log[k, t, r] = high
                x = learners == 2 and high_log[0, t, r] != high_log[1, t, r]
            total[r] = s + increments[column] * x


def play(
    start: int,
    block: Block,
    types: RoundTypes,
    estimator: ConsistentEstimator,
    increments: Floats,
    logs: tuple[Bools, Ints, Ints, Floats, Floats],
    pricing: Pricing,
) -> None:
    r"""Play the rounds of ``block`` (0-based ``start``, ``start + 1``, ...) of every run, in place.

    Per round ``t`` and run:

    - the buyers' belief from the estimator's sum :math:`S_t` (:func:`.estimator.belief_of`,
      ``alpha_hat_init`` in the first round), their pair from their uniform in ``block.buyers``
      (:func:`.buyers.pair_of` on the law of ``types``) and their mode
      (:func:`.estimator.is_strategic`), which give the column ``c = pair + size * strategic``;
    - the seller's :math:`X_t` from ``pricing`` and the block's seller uniforms (the
      :data:`TRACKING` seller reads the belief);
    - :math:`S_{t+1} = S_t + X_t` ``increments[c]`` into ``estimator.total``;
    - ``logs`` ``(mode, high types, evaders, rho, belief)`` get row ``t``: whether buyers were
      strategic, the pair's high types, its evaders if strategic (else 0),
      :math:`\rho_t` = ``estimator.rho[strategic]`` (the chance of an informative round in that
      mode), and the belief.

    References
    ----------
    Werner (2024), ch. 4, §4.6, Algorithm 6; §4.3, Definition 5 (CBER buyers); §4.7, proof of
    Proposition 6, Eq. (4.7) (the estimator).
    """
    _play(
        start,
        block.buyers,
        (types.high_types, types.would_evade, types.cdf, types.guide),
        increments,
        estimator.rho,
        estimator.total,
        logs,
        block.uniforms,
        estimator.eps,
        estimator.init,
        estimator.bias is not None,
        estimator.alpha_star,
        *pricing,
    )
