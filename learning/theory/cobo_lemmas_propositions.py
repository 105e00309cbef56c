r"""CoBo's Lemmas 3 and 4 (Hashemi, He and Jaggi, NeurIPS 2024, Appendix A), checked on quadratics.

Lemma 3 (descent on the pair averages) and Lemma 4 (the consensus recursion) bound one round
of CoBo. Each is checked at the states of :func:`learning.theory.cobo_points.lemma_states`,
single rounds from arbitrary models and weights on clusters of quadratic losses, with the
expectation over the model-gradient noise computed exactly
(:class:`learning.theory.quadratic.QuadraticRound`). Lemma 3's printed noise term counts the
:math:`c` diagonal pairs :math:`z_{ii} = x_i` at the noise of a midpoint, and Lemma 4's proof
omits the model-gradient noise; the corrected statements (``.corrected``) restore both, and
enter the corrected Theorem 1 of :mod:`learning.theory.cobo`. The proof of Lemma 3 also
bounds the variance of a weight after eq. (w) by :math:`4\sigma^2/b`, a squared gradient,
although the weight is dimensionless; the variance is computed here exactly, in rationals.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from econ.propositions import Verdict, checked, proposition, refuted
from learning.theory.cobo import PAPER
from learning.theory.cobo_points import SQRT3, Formula, Hypothesis, compare_states
from learning.theory.quadratic import QuadraticRound

# --------------------------------------------------------------------------- Lemmas 3 and 4


def lemma3_noise(*, c: float, L: float, eta: float, sigma: float, **_: float) -> float:
    r"""Lemma 3's noise term :math:`c^2 L\eta\sigma^2/2`."""
    return c**2 * L * eta * sigma**2 / 2


def lemma3_noise_corrected(*, c: float, L: float, eta: float, sigma: float, **_: float) -> float:
    r""":math:`c(c+1) L\eta\sigma^2/2`: the :math:`c` diagonal pairs carry twice the noise."""
    return c * (c + 1) * L * eta * sigma**2 / 2


def lemma3_consensus(
    *, L: float, c: float, rho: float, eta: float, sigma: float, b: float, **_: float
) -> float:
    r""":math:`\frac{3L^2}{4} + 3c^2\rho^2 + \frac{2 L\eta\rho^2 (c-2)\sigma^2}{b}`."""
    return 3 * L**2 / 4 + 3 * c**2 * rho**2 + 2 * L * eta * rho**2 * (c - 2) * sigma**2 / b


def lemma3_hypothesis(*, L: float, eta: float, **_: float) -> bool:
    r""":math:`\eta \le \frac{1}{2L}`."""
    return eta <= 1 / (2 * L) * (1 + 1e-12)


LEMMA3 = (
    "If eta <= 1/(2L): sum_{i,j in C} ||grad f~_ij(z_ij^t)||^2 <= (2/eta) sum_{i,j in C} "
    "(f~_ij(z_ij^t) - E f~_ij(z_ij^{t+1})) + (3L^2/4 + 3c^2 rho^2 + 2 L eta rho^2 (c-2) "
    "sigma^2/b) sum_{i,j in C} ||x_i^t - x_j^t||^2 + 3 n c rho^2 sum_{i in C} sum_k "
    "|w_ik^{t+1} - w_ik^*|^2 ||x_i^t - x_k^t||^2 + c^2 L eta sigma^2/2"
)


def _lemma3(
    descent: float,
    consensus: Formula,
    weights: float,
    noise: Formula,
    hypothesis: Hypothesis,
    what: str,
    diagonal: bool = True,
) -> Verdict:
    """Lemma 3's inequality at every state, over all ordered pairs or over i != j.

    ``diagonal`` says whether the sums over the cluster include the pairs i = j (the consensus sum has no diagonal terms either way).
    """
    suffix = "" if diagonal else "_off"

    def rhs(s: QuadraticRound) -> float:
        q, m = s.quantities(), s.sums
        return (
            descent / s.eta * m["drop" + suffix]
            + consensus(**q) * m["D"]
            + weights * s.n * s.c * s.rho**2 * m["wdev_next"]
            + noise(**q)
        )

    return compare_states(lambda s: s.sums["G" + suffix], rhs, hypothesis, what)


@proposition(
    "cobo.lemma3",
    source=f"{PAPER}, Appendix A (Theory), Lemma 3 and its proof",
    statement=LEMMA3 + " (read with the sums over all c^2 ordered pairs, i = j included, as "
    "the c^2 of the noise term and the 1/c^2 of Theorem 1 count them; the proof's per-pair "
    "steps, independent h_i, h_j and the c - 2 clients k != i, j, assume i != j, and over the "
    "pairs i != j the printed lemma holds)",
    kind="reading",
    holds=False,
    perturb={"noise": lemma3_noise_corrected},
)
def check_lemma3(
    descent: float = 2.0,
    consensus: Formula = lemma3_consensus,
    weights: float = 3.0,
    noise: Formula = lemma3_noise,
    hypothesis: Hypothesis = lemma3_hypothesis,
    diagonal: bool = True,
) -> Verdict:
    """Lemma 3 at arbitrary states, the expectation over the model-gradient noise exact.

    W^{t+1} is given. Its proof bounds the noise of every pair by that of a pair i != j
    (variance eta^2 sigma^2/2 of z_ij^{t+1}); a diagonal pair z_ii = x_i has twice that. A
    failure with the diagonal pairs is reported with the same check over the pairs i != j.
    """
    verdict = _lemma3(descent, consensus, weights, noise, hypothesis, "Lemma 3", diagonal)
    if verdict.holds or not diagonal:
        return verdict
    off = _lemma3(
        descent, consensus, weights, noise, hypothesis, "Lemma 3 over i != j", diagonal=False
    )
    if not off.holds:
        return off
    return refuted(
        f"{verdict.evidence}. The failure comes only from the c terms i = j of the sums over "
        "all c^2 ordered pairs (z_ii = x_i carries the noise eta^2 sigma^2 of one client, twice "
        f"that of a midpoint z_ij, i != j): over the pairs i != j the printed inequality holds "
        f"at all {off.n_points} states of the same draw",
        verdict.counterexample or {},
    )


@proposition(
    "cobo.lemma3.corrected",
    source=f"{PAPER}, Appendix A (Theory), Lemma 3; corrects the last term c^2 L eta sigma^2/2 "
    "of the lemma's display and of the proof's display after 'Sum over all of the i,j in the same "
    "cluster C yields' (and the final display of the proof), which sum over all c^2 ordered pairs "
    "the per-pair L eta^2 sigma^2/4 of the last line of the display after 'Here' (the bound of "
    "(L eta^2/8) E||g_i + g_j - (grad f_i(x_i) + grad f_j(x_j))||^2, right for independent g_i, "
    "g_j, i != j; for i = j it is L eta^2 sigma^2/2); the consensus coefficient 2 L eta rho^2 "
    "(c-2) sigma^2/b is kept as printed and checked at the states, its derivation through the "
    "weight variance 4 sigma^2/b being refuted apart (cobo.lemma3.proof.weight_variance)",
    statement=LEMMA3.replace("c^2 L eta sigma^2/2", "c(c+1) L eta sigma^2/2")
    + " (all c^2 ordered pairs; over the pairs i != j the printed c^2 L eta sigma^2/2 suffices)",
    kind="derived",
    perturb={"noise": lemma3_noise},
)
def check_lemma3_corrected(
    descent: float = 2.0,
    consensus: Formula = lemma3_consensus,
    weights: float = 3.0,
    noise: Formula = lemma3_noise_corrected,
    hypothesis: Hypothesis = lemma3_hypothesis,
) -> Verdict:
    """Lemma 3 with the noise term c(c+1) L eta sigma^2/2, at the states of the printed check."""
    return _lemma3(
        descent,
        consensus,
        weights,
        noise,
        hypothesis,
        "Lemma 3 with the noise term c(c+1) L eta sigma^2/2",
    )


def lemma4_noise(
    *, m2: float, L: float, rho: float, c: float, eta: float, sigma: float, **_: float
) -> float:
    r"""Lemma 4's last term :math:`\frac{3\eta M^2}{\rho c}\frac{c^2 L\eta\sigma^2}{2}`."""
    return 3 * eta * m2 / (rho * c) * c**2 * L * eta * sigma**2 / 2


def lemma4_noise_corrected(
    *, m2: float, L: float, rho: float, c: float, eta: float, sigma: float, **_: float
) -> float:
    r"""Lemma 4's last term with the model-gradient noise.

    :math:`\frac{3\eta M^2}{\rho c}\frac{c(c+1) L\eta\sigma^2}{2} + 2\eta^2\sigma^2 c(c-1)`:
    the model-gradient noise that moves :math:`x_i - x_j` (omitted by the proof, which expands
    eq. (x) with exact gradients), and Lemma 3's corrected noise term.
    """
    return 3 * eta * m2 / (rho * c) * c * (
        c + 1
    ) * L * eta * sigma**2 / 2 + 2 * eta**2 * sigma**2 * c * (c - 1)


def lemma4_hypothesis(*, m2: float, L: float, rho: float, c: float, eta: float, **_: float) -> bool:
    r""":math:`M_{ij} \le \frac15`, :math:`\rho \ge \sqrt3 L/c`, :math:`\eta \le \frac{1}{2\rho c}`."""
    return (
        m2 <= 1 / 25 and rho * c >= SQRT3 * L * (1 - 1e-12) and eta <= (1 + 1e-12) / (2 * rho * c)
    )


LEMMA4 = (
    "If M_ij <= 1/5, rho >= sqrt(3) L/c and eta <= 1/(2 rho c) <= 1/(2 sqrt(3) L): "
    "sum_{i,j in C} E||x_i^{t+1} - x_j^{t+1}||^2 <= (1 - eta rho c) sum_{i,j in C} "
    "||x_i^t - x_j^t||^2 + 5 n eta rho sum_{i in C} sum_k |w_ik^t - w_ik^*|^2 ||x_i^t - x_k^t||^2 "
    "+ 6 M_ij^2/(rho c) sum_{i,j in C} (f~_ij(z_ij^t) - E f~_ij(z_ij^{t+1})) "
    "+ (3 eta M_ij^2/(rho c)) c^2 L eta sigma^2/2"
)


def _lemma4(
    contraction: float,
    weights: float,
    descent: float,
    noise: Formula,
    hypothesis: Hypothesis,
    what: str,
) -> Verdict:
    def rhs(s: QuadraticRound) -> float:
        q, m = s.quantities(), s.sums
        return (
            (1 - contraction * s.eta * s.rho * s.c) * m["D"]
            + weights * s.n * s.eta * s.rho * m["wdev"]
            + descent * s.m2 / (s.rho * s.c) * m["drop"]
            + noise(**q)
        )

    return compare_states(lambda s: s.sums["D_next"], rhs, hypothesis, what)


@proposition(
    "cobo.lemma4",
    source=f"{PAPER}, Appendix A (Theory), Lemma 4 and its proof",
    statement=LEMMA4,
    holds=False,
    perturb={"noise": lemma4_noise_corrected},
)
def check_lemma4(
    contraction: float = 1.0,
    weights: float = 5.0,
    descent: float = 6.0,
    noise: Formula = lemma4_noise,
    hypothesis: Hypothesis = lemma4_hypothesis,
) -> Verdict:
    """Lemma 4 at arbitrary states, the expectations exact.

    W^{t+1} comes from eq. (w) with exact midpoint gradients. The gradient noise of the model step moves x_i - x_j by
    2 eta^2 sigma^2 per pair in expectation, which no term of the bound covers.
    """
    return _lemma4(contraction, weights, descent, noise, hypothesis, "Lemma 4")


@proposition(
    "cobo.lemma4.corrected",
    source=f"{PAPER}, Appendix A (Theory), Lemma 4; corrects the last term (3 eta M_ij^2/(rho "
    "c)) c^2 L eta sigma^2/2 of the lemma's display and of the proof's display after 'Rearrange "
    "the terms': the proof's first display ('Expand x_i^{t+1} - x_j^{t+1} with eq. (x)') "
    "carries the exact gradients grad f_i(x_i^t), grad f_j(x_j^t) where the algorithm steps "
    "with stochastic ones, so the model-gradient noise 2 eta^2 sigma^2 per pair enters no "
    "later display; the term c^2 L eta sigma^2/2 is Lemma 3's, corrected in cobo.lemma3.corrected",
    statement=LEMMA4.replace(
        "(3 eta M_ij^2/(rho c)) c^2 L eta sigma^2/2",
        "(3 eta M_ij^2/(rho c)) c(c+1) L eta sigma^2/2 + 2 eta^2 sigma^2 c(c-1)",
    ),
    kind="derived",
    perturb={"noise": lemma4_noise},
)
def check_lemma4_corrected(
    contraction: float = 1.0,
    weights: float = 5.0,
    descent: float = 6.0,
    noise: Formula = lemma4_noise_corrected,
    hypothesis: Hypothesis = lemma4_hypothesis,
) -> Verdict:
    """Lemma 4 with the model-gradient noise at arbitrary states, the expectations exact.

    With exact gradients the expected quantities are the deterministic ones plus
    2 eta^2 sigma^2 c(c-1) (consensus) and at most L eta^2 sigma^2 c(c+1)/4 (the drop of the
    pair averages); the deterministic inequality itself is checked, not proved (the proof's
    expansion has (1 - 2 eta rho c) for (1 - eta rho c) and 3M^2 for 12M^2).
    """
    return _lemma4(
        contraction, weights, descent, noise, hypothesis, "Lemma 4 with the model-gradient noise"
    )


# --------------------------------------------------------------------------- the weight's variance


def _weight_variance_printed(*, sigma: Fraction, b: int, **_: Fraction) -> Fraction:
    r"""As printed: :math:`4\sigma^2/b`."""
    return 4 * sigma**2 / b


def _weight_variance_corrected(
    *, sigma: Fraction, b: int, gamma: Fraction, gi: Fraction, gj: Fraction, **_: Fraction
) -> Fraction:
    r"""The variance of a weight after eq. (w), as corrected.

    :math:`\gamma^2 \big(\frac{\sigma^2}{b} (\|\nabla f_i(z)\|^2 + \|\nabla f_j(z)\|^2)
    + \frac{\sigma^4}{b^2}\big)`: the variance of :math:`\gamma \langle h_i, h_j \rangle` for
    independent unbiased :math:`h_i, h_j` of variance :math:`\sigma^2/b`, which the projection
    (1-Lipschitz) can only shrink.
    """
    return gamma**2 * (sigma**2 / b * (gi**2 + gj**2) + sigma**4 / b**2)


def _weight_variance_no_product(**q: Any) -> Fraction:
    """The corrected bound without the noise-times-noise term sigma^4/b^2."""
    return _weight_variance_corrected(**q) - q["gamma"] ** 2 * q["sigma"] ** 4 / q["b"] ** 2


def _mean_of_signs(b: int) -> list[tuple[Fraction, Fraction]]:
    """The law of the mean of ``b`` independent signs (+-1 with probability 1/2 each)."""
    return [(Fraction(2 * k - b, b), Fraction(math.comb(b, k), 2**b)) for k in range(b + 1)]


WEIGHT_DRAWN = (
    "exact rationals, d = 1: midpoint gradients (g_i, g_j) in {(0, 0), (1/2, -1/3), (2, 3)}, "
    "per-sample noise +-sigma with probability 1/2 (variance sigma^2, A2 with equality), "
    "mini-batch b in {1, 4} (the mean's law enumerated exactly), sigma in {1/10, 1, 3}, "
    "gamma in {1/100, 1, 50}, w^t in {1/2, 1}; the weight's variance computed exactly"
)


@proposition(
    "cobo.lemma3.proof.weight_variance",
    source=f"{PAPER}, Appendix A (Theory), proof of Lemma 3, the bound on "
    "E_h|w_ij^{t+1} - E_h[w_ij^{t+1}]|^2",
    statement="With independent unbiased midpoint gradients h_i, h_j of variance sigma^2/b "
    "(mini-batch b, A2), the weight after eq. (w) has E_h|w_ij^{t+1} - E_h[w_ij^{t+1}]|^2 <= "
    "4 sigma^2/b",
    holds=False,
    perturb={"bound": _weight_variance_corrected},
)
def check_weight_variance(bound: Callable[..., Fraction] = _weight_variance_printed) -> Verdict:
    """The variance of a weight after eq. (w) against a bound, in exact rationals.

    w_ij^{t+1} = Proj_[0,1](w_ij^t + gamma <h_i, h_j>) is dimensionless while sigma^2/b has
    the units of a squared gradient: multiplying the losses by kappa and gamma by 1/kappa^2
    leaves the weight's law unchanged and scales 4 sigma^2/b by kappa^2. At the minimiser
    (both gradients 0) with b = 1 the weight moves by +-gamma sigma^2, variance
    gamma^2 sigma^4, which exceeds 4 sigma^2 as soon as gamma sigma > 2.
    """
    n = 0
    for gi, gj in (
        (Fraction(0), Fraction(0)),
        (Fraction(1, 2), Fraction(-1, 3)),
        (Fraction(2), Fraction(3)),
    ):
        for b in (1, 4):
            law = _mean_of_signs(b)
            for sigma in (Fraction(1, 10), Fraction(1), Fraction(3)):
                for gamma in (Fraction(50), Fraction(1, 100), Fraction(1)):
                    for w in (Fraction(1, 2), Fraction(1)):
                        n += 1
                        values = [
                            (
                                min(
                                    max(
                                        w + gamma * (gi + sigma * u) * (gj + sigma * v), Fraction(0)
                                    ),
                                    Fraction(1),
                                ),
                                pu * pv,
                            )
                            for u, pu in law
                            for v, pv in law
                        ]
                        mean = sum(x * p for x, p in values)
                        variance = sum((x - mean) ** 2 * p for x, p in values)
                        q = {"sigma": sigma, "b": b, "gamma": gamma, "gi": gi, "gj": gj}
                        limit = bound(**q)
                        if variance > limit:
                            return refuted(
                                f"fails: the weight's variance is {variance} > the bound {limit} "
                                f"(gradients ({gi}, {gj}) at the midpoint, b = {b}, sigma = {sigma}, "
                                f"gamma = {gamma}, w^t = {w}, per-sample noise +-sigma)",
                                {
                                    k: str(x)
                                    for k, x in {
                                        **q,
                                        "w_t": w,
                                        "variance": variance,
                                        "bound": limit,
                                    }.items()
                                },
                            )
    return checked(
        "the variance of Proj_[0,1](w + gamma <h_i, h_j>) is at most "
        "gamma^2 (sigma^2/b (||g_i||^2 + ||g_j||^2) + sigma^4/b^2)",
        n,
        drawn=WEIGHT_DRAWN,
    )


@proposition(
    "cobo.lemma3.proof.weight_variance.corrected",
    source=f"{PAPER}, Appendix A (Theory), proof of Lemma 3; corrects the last line of the "
    "display after 'Average over i, j yields' (... <= eta^2 rho^2 (c-2)/(2c^2) (4 sigma^2/b) "
    "sum_ij ||x_i^t - x_j^t||^2), which bounds E_h|w_ij^{t+1} - E_h[w_ij^{t+1}]|^2 by 4 sigma^2/b, "
    "with the units of eq. (w)",
    statement="E_h|w_ij^{t+1} - E_h[w_ij^{t+1}]|^2 <= gamma^2 (sigma^2/b (||grad f_i(z_ij^t)||^2 + "
    "||grad f_j(z_ij^t)||^2) + sigma^4/b^2): the projection is 1-Lipschitz, and the cross terms "
    "of <g_i + n_i, g_j + n_j> vanish for independent zero-mean noise",
    kind="derived",
    perturb={"bound": _weight_variance_no_product},
)
def check_weight_variance_corrected(
    bound: Callable[..., Fraction] = _weight_variance_corrected,
) -> Verdict:
    """The weight's variance against the corrected bound, at the points of the printed check."""
    return check_weight_variance(bound)
