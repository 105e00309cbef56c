"""The registered statement about the Gaussian calibration of :mod:`econ.privacy.conversions`.

Theorem A.1 of Tsoy et al. (2024) (Dwork and Roth's calibration) against the exact δ of
:func:`~econ.privacy.conversions.analytic_gaussian_delta` (the analytic Gaussian mechanism,
Balle and Wang 2018).
"""

from __future__ import annotations

import numpy as np

from econ.privacy.conversions import analytic_gaussian_delta
from econ.propositions import Verdict, on_points, proposition


@proposition(
    "tsoy.thmA.1",
    source="Tsoy et al. (2024), Appendix A, Theorem A.1 (Dwork and Roth 2014, Theorem A.1)",
    statement=(
        "for eps in (0, 1) and c^2 > 2 ln(1.25/delta), Gaussian noise sigma >= c Delta/eps is "
        "(eps, delta)-DP (checked at the infimum c^2 = 2 ln(1.25/delta), sigma = c Delta/eps: "
        "the exact delta falls as sigma grows, so the infimum is the hardest case)"
    ),
    perturb={"eps_max": 30.0},
)
def _thm_a1(const: float = 1.25, eps_max: float = 1.0) -> Verdict:
    """The exact delta of the calibration (analytic Gaussian mechanism, Balle and Wang 2018)."""
    rng = np.random.default_rng(20240301)
    points = [
        {"eps": e, "delta": d, "sens": s}
        for e, d, s in zip(
            eps_max * rng.uniform(0.01, 1.0, 300),
            10 ** rng.uniform(-12, -0.1, 300),
            rng.uniform(0.1, 5, 300),
            strict=True,
        )
    ]
    points += [
        {"eps": eps_max * f, "delta": d, "sens": 1.0}
        for f in (0.999, 0.5, 0.001)
        for d in (0.79, 0.1, 1e-12)
    ]

    def holds(eps: float, delta: float, sens: float) -> bool:
        sigma = float(np.sqrt(2 * np.log(const / delta)) * sens / eps)
        return analytic_gaussian_delta(eps, sigma, sens) <= delta

    return on_points(
        holds,
        points,
        "the exact delta of sigma = sqrt(2 ln(1.25/delta)) Delta/eps is <= delta",
        drawn=(
            "seeded sample (seed 20240301) of 300: eps uniform in (0, 1), delta log-uniform in "
            "[1e-12, 0.79], Delta in [0.1, 5]; plus eps in {0.999, 0.5, 0.001} x delta in "
            "{0.79, 0.1, 1e-12}"
        ),
        hypothesis=lambda eps, delta, sens: 0 < eps < eps_max and 0 < delta < 1,
    )
