r"""Proposition 3 on measured accuracies: the noisy rule's guarantee, checked by simulation.

The rule and its proof are in :mod:`games.defection_free.noisy`; the check plays it on true
accuracies with binomial measurements (:func:`~games.defection_free.noisy.simulate`) and
compares the share of runs in which a true revenue fell with :math:`\alpha`.
"""

from __future__ import annotations

import math

import numpy as np

from econ.propositions import Verdict, on_points, proposition
from games.defection_free.noisy import NoisyRule, simulate

_SRC = "Werner (2024), ch. 3"

#: Starts (q_l0, q_h0), target sizes n, failure probabilities alpha of the check.
_STARTS = ((0.3, 0.5), (0.1, 0.6), (0.45, 0.55))
_SIZES = (2000, 20000)
_ALPHAS = (0.05, 0.3)
_RUNS = 500
_ROUNDS = 20
#: A frequency counts as above alpha beyond this many binomial standard errors.
_SIGMAS = 3.0


@proposition(
    "thesis.ch3.prop3.noisy",
    source=f"{_SRC}, §3.4 (p. 64), Proposition 3 for exact qualities; ch. 5 (Conclusion), "
    "Future Directions of part II ('we only consider the non-stochastic setting'); the rule "
    "on measured accuracies is collabecon's (games/defection_free/noisy.py)",
    statement="with every accuracy measured on n target examples and bounded by a "
    "Clopper-Pearson interval at level 1 - alpha/(2R+2), a change counting only when the "
    "intervals separate and the low firm's upper end capped at min(lower a + d_- M(rho), "
    "rho lower b', q_l*) (rho = min(rho*, 4/7)), neither firm's true revenue falls in any of "
    "R rounds with probability >= 1 - alpha",
    kind="derived",
    perturb={"bound": "point"},
)
def _prop3_noisy(bound: str = "clopper-pearson") -> Verdict:
    points = []
    rng = np.random.default_rng(2026)
    for q_l0, q_h0 in _STARTS:
        for n in _SIZES:
            for alpha in _ALPHAS:
                rule = NoisyRule.from_start(q_l0, q_h0, 1.0, n, alpha, _ROUNDS, bound)
                sim = simulate(rule, q_l0, q_h0, runs=_RUNS, rng=rng)
                points.append(
                    {
                        "q_l0": q_l0,
                        "q_h0": q_h0,
                        "n": n,
                        "alpha": alpha,
                        "true_drop_frequency": sim.true_frequency,
                        "moves_low": sim.moves_low,
                    }
                )
    if not any(p["moves_low"] for p in points):
        raise ValueError("the low firm never moved: the check would be vacuous")
    return on_points(
        lambda alpha, true_drop_frequency, **_: (
            true_drop_frequency <= alpha + _SIGMAS * math.sqrt(alpha * (1 - alpha) / _RUNS)
        ),
        points,
        f"the share of {_RUNS} simulated runs of {_ROUNDS} rounds with a true revenue drop is "
        f"at most alpha + {_SIGMAS:g} binomial standard errors",
        drawn=f"starts {_STARTS} x n in {_SIZES} x alpha in {_ALPHAS}; per point {_RUNS} runs, "
        "the high firm's true step U(-0.02, 0.08), the low firm aiming at u (k_max/n - a) with "
        "u ~ U(0.5, 1.1), hit counts binomial (seed 2026)",
    )
