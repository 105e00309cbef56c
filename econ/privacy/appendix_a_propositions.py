r"""Theorem A.2 of Tsoy et al. (2024), Appendix A: amplification by shuffling, checked exactly.

The theorem (Feldman, McMillan and Talwar's Theorem 3.8) bounds the privacy of ``m`` local
randomizers run on a shuffled dataset. It is checked against the exact privacy curve of a
protocol it covers: binary randomized response with budget :math:`\varepsilon_0` (an
:math:`(\varepsilon_0, 0)`-DP local randomizer), whose shuffled output is the count of reported
ones. For two datasets that differ in one client's bit, the count has the distributions

.. math::

    P_b(k) = B(k)\,\Pr[\text{report } 0 \mid b] + B(k-1)\,\Pr[\text{report } 1 \mid b],

with :math:`B` the distribution of the other clients' count, and the exact :math:`\delta` at
:math:`\varepsilon` is the hockey-stick divergence
:math:`\max_{b \ne b'} \sum_k (P_b(k) - e^{\varepsilon} P_{b'}(k))_+`.

The theorem as printed conditions on ``n``, the dataset size in Appendix B.5; Feldman et al.'s
condition is on the number ``m`` of shuffled randomizers (``tsoy.thmA.2.corrected``). Theorem
4.4 inherits the printed condition, so for small ``m`` its proof applies Theorem A.2 outside
its range; its conclusion holds there all the same, each record entering one round only
(``tsoy.thm4.4.one_pass`` in :mod:`econ.privacy.one_pass_propositions`).

References
----------
N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
Privacy-Sensitive Domains*, AISTATS 2024, Appendix A, Theorem A.2; V. Feldman, A. McMillan,
K. Talwar, *Hiding Among the Clones*, FOCS 2021, Theorem 3.8.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from scipy.stats import binom

from econ.privacy.mechanisms import shuffle_epsilon
from econ.propositions import Verdict, on_points, proposition

__all__ = ["shuffled_response_delta"]


def shuffled_response_delta(eps0: float, m: int, epsilon: float, *, ones: int = 0) -> float:
    r"""The exact :math:`\delta` at :math:`\varepsilon` of shuffled binary randomized response.

    Each of ``m`` clients reports its bit with probability
    :math:`e^{\varepsilon_0}/(1 + e^{\varepsilon_0})` and its complement otherwise; the
    shuffler releases the count of ones. The neighbouring datasets differ in the first
    client's bit; ``ones`` of the other :math:`m - 1` clients hold a one.

    .. math::

        \delta(\varepsilon) = \max_{b \ne b'} \sum_k \big(P_b(k) - e^{\varepsilon} P_{b'}(k)\big)_+

    References
    ----------
    Tsoy et al. (AISTATS 2024), Appendix A, Theorem A.2 (the bound this curve is checked
    against).
    """
    p = 1.0 / (1.0 + np.exp(-eps0))  # report the true bit
    others = binom.pmf(np.arange(ones + 1), ones, p)
    others = np.convolve(others, binom.pmf(np.arange(m - ones), m - 1 - ones, 1 - p))
    shifted = np.concatenate(([0.0], others))
    others = np.concatenate((others, [0.0]))
    zero = others * p + shifted * (1 - p)  # the first client holds 0
    one = others * (1 - p) + shifted * p
    factor = np.exp(epsilon)
    return float(
        max(np.maximum(zero - factor * one, 0).sum(), np.maximum(one - factor * zero, 0).sum())
    )


def _points(ratios: tuple[int, ...]) -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(382022)
    for _ in range(90):
        m = int(np.exp(rng.uniform(np.log(2), np.log(20000))))
        delta = float(10 ** rng.uniform(-9, np.log10(0.5)))
        n = m * int(rng.choice(ratios))
        top = np.log(n / (16 * np.log(2 / delta)))
        eps0 = float(rng.uniform(0, max(top, 0.05)))
        ones = 0 if m > 4000 or rng.random() < 0.5 else (m - 1) // 2
        yield {"eps0": eps0, "m": m, "n": n, "delta": delta, "ones": ones}
    for m, delta in ((1000, 1e-6), (20000, 1e-9), (300, 0.5)):
        top = float(np.log(m / (16 * np.log(2 / delta))))
        yield {"eps0": top, "m": m, "n": m, "delta": delta, "ones": 0}


def _thm_a2_check(
    epsilon: Callable[[float, float, float], float], ratios: tuple[int, ...]
) -> Verdict:
    """The exact delta of shuffled randomized response at ``epsilon`` is at most delta."""

    def holds(eps0: float, m: int, n: int, delta: float, ones: int) -> bool:
        exact = shuffled_response_delta(eps0, m, epsilon(eps0, m, delta), ones=ones)
        return exact <= delta * (1 + 1e-9) + 1e-15  # delta_0 = 0: the delta_0 term vanishes

    def hypothesis(eps0: float, m: int, n: int, delta: float, ones: int) -> bool:
        return 0 < eps0 <= np.log(n / (16 * np.log(2 / delta))) * (1 + 1e-12)

    return on_points(
        holds,
        _points(ratios),
        "the exact delta of shuffled binary randomized response (an (eps_0, 0)-DP local "
        "randomizer) at the printed eps is at most delta",
        drawn="seeded sample (seed 382022) of 90: m log-uniform in [2, 20000], delta "
        f"log-uniform in [1e-9, 0.5], n/m drawn from {list(ratios)}, eps_0 uniform up to "
        "ln(n/(16 ln(2/delta))), the other clients all 0 or (for m <= 4000, half of the "
        "draws) half of them 1; plus eps_0 at the bound with n = m for (m, delta) = (1000, "
        "1e-6), (20000, 1e-9), (300, 0.5)",
        hypothesis=hypothesis,
    )


_PRINTED_RATIOS = (1, 10, 1000)
_A2 = "Tsoy et al. (2024), Appendix A, Theorem A.2 (Feldman et al. 2022, Theorem 3.8)"


@proposition(
    "tsoy.thmA.2",
    source=f"{_A2}; n is not defined in the theorem: read as the size of the client's dataset, "
    "as Appendix B.5 applies it (m = n/b batches, delta = 1/n^2, so n >= m)",
    statement="if R^1..R^m are (eps_0, delta_0)-DP local randomizers run on a uniformly "
    "shuffled dataset and eps_0 <= ln(n/(16 ln(2/delta))), delta in [0, 1], the shuffled "
    "protocol is (eps, delta + (e^eps + 1)(1 + e^(-eps_0/2)) m delta_0)-DP with eps = "
    "ln(1 + (e^eps_0 - 1)/(e^eps_0 + 1) (8 sqrt(e^eps_0 ln(4/delta))/sqrt(m) + 8 e^eps_0/m))",
    holds=False,
    perturb={"ratios": (1,)},
)
def _thm_a2(
    epsilon: Callable[[float, float, float], float] = shuffle_epsilon,
    ratios: tuple[int, ...] = _PRINTED_RATIOS,
) -> Verdict:
    return _thm_a2_check(epsilon, ratios)


@proposition(
    "tsoy.thmA.2.corrected",
    source=f"{_A2}, with the condition on the number m of shuffled randomizers (Feldman et "
    "al.'s n), not on the dataset size",
    statement="the same bound under eps_0 <= ln(m/(16 ln(2/delta)))",
    perturb={"epsilon": lambda eps0, m, delta: shuffle_epsilon(eps0, m, delta) / 8},
)
def _thm_a2_corrected(
    epsilon: Callable[[float, float, float], float] = shuffle_epsilon,
    ratios: tuple[int, ...] = (1,),
) -> Verdict:
    return _thm_a2_check(epsilon, ratios)
