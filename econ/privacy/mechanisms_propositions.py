r"""The registered statement about the privacy constants of :mod:`econ.privacy.mechanisms`.

Theorem 4.4 of Tsoy et al. (2024): the shuffled DP-SGD protocol's ε is at most
:math:`\kappa/\alpha`, checked against the exact amplification bound of Theorem A.2
(:func:`~econ.privacy.mechanisms.shuffle_epsilon`) before its loosening in Appendix B.5.
"""

from __future__ import annotations

import numpy as np

from econ.privacy.mechanisms import kappa_sgd, round_epsilon, shuffle_epsilon
from econ.propositions import Verdict, on_points, proposition


@proposition(
    "tsoy.thm4.4",
    source="Tsoy et al. (2024), section 4.2, Theorem 4.4 (proof in Appendix B.5)",
    statement=(
        "with m >= 2 rounds, eps_0 in (0, min(1, ln(n/(16 ln(2/delta))))) and delta = 1/n^2, the "
        "shuffled protocol's eps is at most 16 sqrt(2e ln(1.25 m n^2) ln(4n^2)) B/(sqrt(m) b alpha)"
    ),
    perturb={"const": 2.0},
)
def _thm44(const: float = 16.0) -> Verdict:
    """Theorem A.2's epsilon (before its loosening in Appendix B.5) against kappa/alpha."""
    rng = np.random.default_rng(44)
    points = []
    for n in (1e3, 1e4, 1e6):
        for m in (2, 10, 38, 200):
            for bound in (0.5, 2.0):
                alpha_one = float(round_epsilon(n, m, bound, 1.0))
                for e0 in (*rng.uniform(0.01, 1.0, 4), 0.999):
                    points.append({"n": n, "m": m, "bound": bound, "alpha": alpha_one / e0})

    def ok(n: float, m: float, bound: float, alpha: float) -> bool:
        exact = shuffle_epsilon(round_epsilon(n, m, bound, alpha), m, 1 / n**2)
        return bool(exact <= kappa_sgd(n, m, bound) * const / 16 / alpha)

    def hypothesis(n: float, m: float, bound: float, alpha: float) -> bool:
        e0 = float(round_epsilon(n, m, bound, alpha))
        return m >= 2 and 0 < e0 < min(1.0, np.log(n / (16 * np.log(2 * n**2))))

    return on_points(
        ok,
        points,
        "exact Theorem A.2 epsilon <= kappa/alpha (delta = 1/n^2)",
        drawn=(
            "grid n in {1e3, 1e4, 1e6} x m in {2, 10, 38, 200} x B in {0.5, 2}, each with 4 "
            "per-round budgets eps_0 drawn uniform in [0.01, 1] (seed 44) and eps_0 = 0.999"
        ),
        hypothesis=hypothesis,
    )
