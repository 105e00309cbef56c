r"""The registered statements about the privacy constants of :mod:`econ.privacy.mechanisms`.

Theorem 4.4 of Tsoy et al. (2024): the shuffled DP-SGD protocol's ε is at most
:math:`\kappa/\alpha`, checked against the exact amplification bound of Theorem A.2
(:func:`~econ.privacy.mechanisms.shuffle_epsilon`) before its loosening in Appendix B.5.

The displays of κ disagree on where the support width B stands. Section 4.1's κ and the last
display of Appendix B.5 have :math:`\sqrt{\cdot}\,B`; the display of Theorem 4.4 and section
4.2's :math:`\kappa \coloneqq 16\sqrt{2e\ln(1.25Tn^2)\ln(4n^2)TB}/n` (the same after
:math:`b = n/T`) put B under the root. ε scales linearly in B (the sensitivity of a batch mean
is B/b), so the root form fails for wide supports (``tsoy.thm4.4.kappa_display``); the
toolkit's κ (:func:`~econ.privacy.mechanisms.kappa_sgd`) is Appendix B.5's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from econ.privacy.mechanisms import kappa_sgd, round_epsilon, shuffle_epsilon
from econ.propositions import Verdict, on_points, proposition

_THM44 = "Tsoy et al. (2024), section 4.2, Theorem 4.4 (proof in Appendix B.5)"
_BOUNDS = (0.5, 2.0, 50.0)


def kappa_display(n: float, m: float, bound: float) -> float:
    r"""Theorem 4.4's κ as displayed, B under the root: :math:`16\sqrt{2e\ln(1.25mn^2)\ln(4n^2)B}/(\sqrt m\,b)`, b = n/m."""
    return float(
        16
        * np.sqrt(2 * np.e * np.log(1.25 * m * n**2) * np.log(4 * n**2) * bound)
        * m
        / (np.sqrt(m) * n)
    )


def _thm44_check(
    kappa: Callable[[float, float, float], float], const: float, bounds: tuple[float, ...]
) -> Verdict:
    """Theorem A.2's epsilon (before its loosening in Appendix B.5) against const/16 kappa/alpha."""
    rng = np.random.default_rng(44)
    points = []
    for n in (1e3, 1e4, 1e6):
        for m in (2, 10, 38, 200):
            for bound in bounds:
                alpha_one = float(round_epsilon(n, m, bound, 1.0))
                for e0 in (*rng.uniform(0.01, 1.0, 4), 0.999):
                    points.append({"n": n, "m": m, "bound": bound, "alpha": alpha_one / e0})

    def ok(n: float, m: float, bound: float, alpha: float) -> bool:
        exact = shuffle_epsilon(round_epsilon(n, m, bound, alpha), m, 1 / n**2)
        return bool(exact <= kappa(n, m, bound) * const / 16 / alpha)

    def hypothesis(n: float, m: float, bound: float, alpha: float) -> bool:
        e0 = float(round_epsilon(n, m, bound, alpha))
        return m >= 2 and 0 < e0 < min(1.0, np.log(n / (16 * np.log(2 * n**2))))

    return on_points(
        ok,
        points,
        "exact Theorem A.2 epsilon <= kappa/alpha (delta = 1/n^2)",
        drawn=(
            f"grid n in {{1e3, 1e4, 1e6}} x m in {{2, 10, 38, 200}} x B in {set(bounds)}, each "
            "with 4 per-round budgets eps_0 drawn uniform in [0.01, 1] (seed 44) and eps_0 = 0.999"
        ),
        hypothesis=hypothesis,
    )


@proposition(
    "tsoy.thm4.4",
    source=f"{_THM44}; B read outside the root, as in the last display of Appendix B.5 "
    "(the theorem's display puts it inside: tsoy.thm4.4.kappa_display)",
    statement=(
        "with m >= 2 rounds, eps_0 in (0, min(1, ln(n/(16 ln(2/delta))))) and delta = 1/n^2, the "
        "shuffled protocol's eps is at most 16 sqrt(2e ln(1.25 m n^2) ln(4n^2)) B/(sqrt(m) b alpha)"
    ),
    kind="reading",
    perturb={"const": 2.0},
)
def _thm44(const: float = 16.0, bounds: tuple[float, ...] = _BOUNDS) -> Verdict:
    return _thm44_check(kappa_sgd, const, bounds)


@proposition(
    "tsoy.thm4.4.kappa_display",
    source=f"{_THM44}, its display 'eps_i <= 16 sqrt(2e ln(1.25mn^2) ln(4n^2) B)/(sqrt(m) b "
    "alpha_i) =: kappa/alpha_i'; section 4.2's kappa := 16 sqrt(2e ln(1.25Tn^2) ln(4n^2) T B)/n "
    "is the same display at m = T, b = n/T",
    statement=(
        "under Theorem 4.4's hypotheses the shuffled protocol's eps is at most "
        "16 sqrt(2e ln(1.25 m n^2) ln(4n^2) B)/(sqrt(m) b alpha), B under the root"
    ),
    holds=False,
    perturb={"bounds": (0.5, 2.0)},
)
def _thm44_display(
    kappa: Callable[[float, float, float], float] = kappa_display,
    bounds: tuple[float, ...] = _BOUNDS,
) -> Verdict:
    """As displayed: fails once B is wide, the root growing like sqrt(B) where eps grows like B."""
    return _thm44_check(kappa, 16.0, bounds)


@proposition(
    "tsoy.thm4.4.kappa_display.corrected",
    source=f"{_THM44}: corrects its display (and section 4.2's kappa) by taking B out of the "
    "root, as the last display of Appendix B.5 derives it (sqrt(2 ln(1.25mn^2)) B/(b alpha_i) "
    "x 16 sqrt(e ln(4n^2))/sqrt(m)) and section 4.1's kappa has it",
    statement=(
        "the display with B outside the root: eps <= 16 sqrt(2e ln(1.25 m n^2) ln(4n^2)) B/"
        "(sqrt(m) b alpha); section 4.2's kappa = 16 sqrt(2e ln(1.25Tn^2) ln(4n^2) T) B/n"
    ),
    kind="derived",
    perturb={"kappa": kappa_display},
)
def _thm44_display_corrected(
    kappa: Callable[[float, float, float], float] = kappa_sgd,
    bounds: tuple[float, ...] = _BOUNDS,
) -> Verdict:
    return _thm44_check(kappa, 16.0, bounds)
