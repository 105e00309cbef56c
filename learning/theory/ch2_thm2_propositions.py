r"""Theorem 2 of Werner (2024), ch. 2 (= Werner et al., TMLR 2023, §3.1.2), checked.

Theorem 2 bounds from below the error of every algorithm, up to the constant hidden in
:math:`\Omega`. The checks compute the minimax errors of the proof's two constructions
exactly (sympy for the mixtures, a binomial sum for a single cluster's two-point prior)
and compare them with the printed rate times a declared constant ``constant``.

Theorem 2 (the lower bound): the mixtures :math:`\mathcal M` and :math:`\tilde{\mathcal
M}` give samples one law, so the minimax error over them is :math:`d^2p^2/4`
(``thesis.ch2.thm2.indistinguishable``); a single cluster's two-point prior has Bayes risk
at least :math:`\sigma^2/(4n)` (``thesis.ch2.thm2.single``); the larger of the two is
:math:`\Omega(\sigma^4/\Delta^2 + \sigma^2/n_i)` where the proof places
:math:`\Delta^2 \ge 2\sigma^2` (``thesis.ch2.thm2``). For :math:`\Delta \ll \sigma`
the construction's error stays below :math:`\sigma^2/4` and does not reach
:math:`\sigma^4/\Delta^2`.

The construction and the single cluster's Bayes risk are
:func:`learning.theory.clustering.two_point_construction` and
:func:`learning.theory.clustering.single_cluster_risk`; this module holds the statements.

References
----------
M. Werner, *Collaborative Learning: Aligning Goals and Outcomes*, PhD thesis, UC Berkeley
(2024), ch. 2, §2.3 (Theorems 1-4, Algorithms 2-4) and §2.6 (proofs). M. Werner, L. He,
M. Jordan, M. Jaggi, S. P. Karimireddy, "Provably Personalized and Robust Federated
Learning", TMLR (2023), §3 and App. A.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import sympy as sp

from econ.propositions import Verdict, all_zero, on_points, proposition, proved, refuted
from learning.theory.clustering import (
    PAPER,
    THESIS,
    single_cluster_risk,
    two_point_construction,
    two_point_symbols,
)

HALF = sp.Rational(1, 2)  # the weight of each component of M~, as printed


def _single_points() -> Iterator[dict[str, Any]]:
    for sigma in (0.5, 1.0, 3.0):
        for n in (1, 2, 3, 5, 10, 30, 100, 1000, 10000):
            yield {"sigma": sigma, "n": n}


_SINGLE_DRAWN = "a grid: sigma in {0.5, 1, 3}, n in {1, 2, 3, 5, 10, 30, 100, 1000, 10000}"


@proposition(
    "thesis.ch2.thm2.single",
    source=f"{THESIS}, §2.6 'Proof of Theorem 2', last display; = {PAPER}, App. A.2",
    statement="with a single cluster (K = 1) and n stochastic samples of variance sigma^2, every "
    "estimator has E||mu_hat_1 - mu_1||^2 >= sigma^2/(4n) on some law (checked with the "
    "two-point prior on D_1, D_2 of the construction with means 2 sigma/sqrt(n) apart, the "
    "Bayes risk summed exactly over the binomial count)",
    perturb={"constant": 0.5},
)
def _thm2_single(constant: float = 0.25, separation: float = 2.0) -> Verdict:
    def holds(sigma: float, n: int) -> bool:
        risk = single_cluster_risk(sigma, n, separation * sigma / math.sqrt(n))
        return risk >= constant * sigma**2 / n

    return on_points(
        holds,
        _single_points(),
        f"the Bayes risk of the two-point prior, means {separation} sigma/sqrt(n) apart, is at "
        f"least {constant} sigma^2/n",
        drawn=_SINGLE_DRAWN,
    )


@proposition(
    "thesis.ch2.thm2.indistinguishable",
    source=f"{THESIS}, §2.6 'Proof of Theorem 2', the mixtures M and M~; = {PAPER}, App. A.2",
    statement="M = D_1/2 + D_2/2 and M~ = D~_1/2 + D~_2/2 (D~_1 = 0, D~_2 = d) give every sample "
    "the same law, so from any number of samples the best estimate of mu_1 (d p under M, 0 "
    "under M~) is d p/2 with error d^2 p^2/4; M~ meets the hypotheses (variances 0 <= sigma^2, "
    "means d >= Delta apart)",
    perturb={"tilde_weight": sp.Rational(1, 3)},
)
def _thm2_indistinguishable(tilde_weight: Any = HALF) -> Verdict:
    p, d, error, _, gap = two_point_symbols()
    c = sp.Symbol("c", real=True)
    law_m = p / 2 + (1 - p) / 2  # P(sample = d) under M
    law_tilde = 1 - sp.nsimplify(tilde_weight)  # P(sample = d) under M~: D~_2 = d
    risk = ((c - d * p) ** 2 + c**2) / 2  # uniform prior on {M, M~}, the same data law
    (best,) = sp.solve(sp.diff(risk, c), c)
    identities = all_zero(
        [
            (law_m - law_tilde, "P_M(d) - P_M~(d)"),
            (best - d * p / 2, "the Bayes estimate - d p/2"),
            (risk.subs(c, best) - error, "its risk - d^2 p^2/4"),
        ],
        "Theorem 2, M and M~",
    )
    if not identities.holds:
        return identities
    squares = sp.simplify(d**2 - gap**2)  # d, Delta > 0: d >= Delta iff d^2 - Delta^2 >= 0
    if not (sp.simplify(d).is_positive and squares.is_nonnegative):
        return refuted("the atoms of M~ lie closer than Delta", {"d^2 - Delta^2": str(squares)})
    return proved(
        "P_M(d) = P_M~(d) = 1/2, so n samples have one law under both; the Bayes estimate "
        "under the uniform prior is d p/2 with risk d^2 p^2/4, and the constant d p/2 has that "
        "risk under each, so the minimax error over {M, M~} is d^2 p^2/4; d^2 - Delta^2 = "
        f"{squares} >= 0"
    )


def _thm2_points() -> Iterator[dict[str, Any]]:
    for sigma in (0.5, 1.0, 3.0):
        for ratio in (0.1, 0.5, math.sqrt(2), 2.0, 5.0, 20.0, 100.0):
            for n in (1, 2, 5, 20, 100, 1000):
                gap = ratio * sigma
                yield {
                    "sigma": sigma,
                    "gap": gap,
                    "n": n,
                    "mixture": two_point_construction(sigma, gap).error,
                    "single": single_cluster_risk(sigma, n, 2 * sigma / math.sqrt(n)),
                }


_THM2_DRAWN = (
    "a grid: sigma in {0.5, 1, 3}, Delta/sigma in {0.1, 0.5, sqrt 2, 2, 5, 20, 100}, n_i in "
    "{1, 2, 5, 20, 100, 1000}; the mixture pair's error d^2 p^2/4 and the single-cluster "
    "pair's exact Bayes risk (means 2 sigma/sqrt(n_i) apart)"
)


@proposition(
    "thesis.ch2.thm2",
    source=f"{THESIS}, §2.3 Theorem 2; = {PAPER}, §3.1.2, Theorem 2",
    statement="for any algorithm there are D_1 = (mu_1, sigma^2), D_2 = (mu_2, sigma^2) with "
    "||mu_1 - mu_2|| >= Delta on which E||mu_hat_1 - mu_1||^2 >= Omega(sigma^4/Delta^2 + "
    "sigma^2/n_i) (checked with the hidden constant 1/16 over the proof's two constructions, "
    "the larger of their minimax errors, for Delta^2 >= 2 sigma^2 as the proof chooses)",
    perturb={"threshold": 0.0},
)
def _thm2(constant: float = 1 / 16, threshold: float = 2.0) -> Verdict:
    def holds(sigma: float, gap: float, n: int, mixture: float, single: float) -> bool:
        return max(mixture, single) >= constant * (sigma**4 / gap**2 + sigma**2 / n)

    def hypothesis(sigma: float, gap: float, **_: Any) -> bool:
        return gap**2 >= threshold * sigma**2 * (1 - 1e-12)

    return on_points(
        holds,
        _thm2_points(),
        f"max(d^2 p^2/4, single-cluster Bayes risk) >= {constant} (sigma^4/Delta^2 + "
        f"sigma^2/n_i) for Delta^2 >= {threshold} sigma^2",
        drawn=_THM2_DRAWN,
        hypothesis=hypothesis,
    )
