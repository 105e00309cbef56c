r"""Theorem 4.4 of Tsoy et al. (2024) where its proof's appeal to Theorem A.2 fails.

Theorem 4.4 admits every :math:`m \ge 2` and every
:math:`\varepsilon_0 < \min(1, \ln(n / (16 \ln(2/\delta))))`, :math:`\delta = 1/n^2`. Its proof
(Appendix B.5) applies Theorem A.2 to the :math:`m` shuffled batches, whose condition is on the
number of shuffled randomizers, :math:`\varepsilon_0 \le \ln(m / (16 \ln(2/\delta)))`
(``tsoy.thmA.2.corrected``): for small :math:`m` (every :math:`m = 2`, for instance) the
right-hand side is negative and Theorem A.2 says nothing. The conclusion survives there. In
Algorithm 1 each record enters one batch and so one round, whose Gaussian noise makes it
:math:`(\varepsilon_0, \delta_0)`-DP (Theorem A.1); the protocol is therefore
:math:`(\varepsilon, \delta)`-DP wherever the analytic Gaussian profile of that one round is
below :math:`\delta` at :math:`\varepsilon`. The claimed budget is

.. math::

    \frac{\kappa}{\alpha_i} = \varepsilon_0\,\frac{16\sqrt{e\ln(4n^2)}}{\sqrt m}
    > 4\,\varepsilon_0 \quad\text{when}\quad m < 16\,e^{\varepsilon_0}\ln(2n^2),

since then :math:`m < 16 e \ln(2n^2) < 16 e \ln(4n^2)`.

References
----------
N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
Privacy-Sensitive Domains*, AISTATS 2024, §4.2 Theorem 4.4, Algorithm 1, Appendix A
(Theorems A.1 and A.2) and Appendix B.5; Balle & Wang, ICML 2018, Theorem 8 (the analytic
Gaussian profile).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from econ.privacy.conversions import analytic_gaussian_delta
from econ.privacy.mechanisms import kappa_sgd, round_epsilon
from econ.propositions import Kind, Verdict, on_points, proposition

__all__ = ["theorem_44_delta"]


def theorem_44_delta(n: float, epsilon: float, eps0: float) -> float:
    r"""The :math:`\delta` of Theorem 4.4's guarantee.

    .. math::

        \delta_i = \frac{1 + (e^{\varepsilon_i} + 1)(1 + e^{-\varepsilon_{0,i}/2})}{n^2}

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.2, Theorem 4.4 (Theorem A.2's
    :math:`\delta + (e^{\varepsilon} + 1)(1 + e^{-\varepsilon_0/2}) m \delta_0` with
    :math:`\delta = 1/n^2`, :math:`\delta_0 = 1/(mn^2)`).

    Examples
    --------
    >>> round(theorem_44_delta(10.0, 0.0, 0.0) * 100, 4)
    5.0
    """
    return float((1 + (np.exp(epsilon) + 1) * (1 + np.exp(-eps0 / 2))) / n**2)


def _points() -> Iterator[dict[str, Any]]:
    for n in (1e3, 1e4, 1e6, 1e9):
        for m in (2, 3, 5, 10, 38, 100, 300, 1000):
            for eps0 in (0.05, 0.3, 0.7, 0.999):
                yield {"n": n, "m": m, "eps0": eps0}


@proposition(
    "tsoy.thm4.4.one_pass",
    source="Tsoy et al. (2024), §4.2 Theorem 4.4 and Algorithm 1 (one pass: each record in "
    "one batch of b = n/m), in the part of its hypotheses where Theorem A.2 with its "
    "condition on the m shuffled batches (tsoy.thmA.2.corrected) does not apply, so that "
    "Appendix B.5's proof has a gap; Theorem A.1 for each round",
    statement="if m >= 2 and ln(m/(16 ln(2n^2))) < eps_0 < min(1, ln(n/(16 ln(2n^2)))) (e.g. "
    "m = 2), the one round that sees a record, Gaussian noise alpha with eps_0 = "
    "sqrt(2 ln(1.25 m n^2)) B/(b alpha), is (kappa/alpha, (1 + (e^eps + 1)(1 + e^(-eps_0/2)))"
    "/n^2)-DP by its exact (analytic Gaussian) profile, so Theorem 4.4's conclusion holds "
    "there; kappa/alpha > 4 eps_0",
    kind=Kind.DERIVED,
    perturb={"const": 1.0},
)
def _one_pass(const: float = 16.0) -> Verdict:
    """The analytic Gaussian delta of one round at Theorem 4.4's epsilon against its delta."""

    def holds(n: float, m: int, eps0: float) -> bool:
        alpha = round_epsilon(n, m, 1.0, 1.0) / eps0  # B = 1: the profile depends on B/alpha
        epsilon = kappa_sgd(n, m, 1.0) / alpha * const / 16
        exact = analytic_gaussian_delta(epsilon, alpha, m / n)  # sensitivity B/b = m/n
        return epsilon > 4 * eps0 and exact <= theorem_44_delta(n, epsilon, eps0)

    def hypothesis(n: float, m: int, eps0: float) -> bool:
        log_term = 16 * np.log(2 * n**2)
        return m <= n and np.log(m / log_term) < eps0 < min(1.0, np.log(n / log_term))

    return on_points(
        holds,
        _points(),
        "kappa/alpha > 4 eps_0, and the exact delta of the one round that sees a record, at "
        "eps = kappa/alpha, is at most Theorem 4.4's delta",
        drawn="grid n in {1e3, 1e4, 1e6, 1e9} x m in {2, 3, 5, 10, 38, 100, 300, 1000} x eps_0 "
        "in {0.05, 0.3, 0.7, 0.999}, kept where Theorem 4.4's hypotheses hold and Theorem "
        "A.2's condition on m fails",
        hypothesis=hypothesis,
    )
