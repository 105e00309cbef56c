r"""CoBo's Theorem 1 and Corollary 2 (Hashemi, He and Jaggi, NeurIPS 2024), checked on quadratics.

Every bound of the two statements called Theorem 1 (a deterministic and a stochastic one, see
:mod:`learning.theory.cobo`) and of Corollary 2, as printed (here) and as corrected (in
:mod:`learning.theory.cobo`, whose notes derive the corrections), is checked against the exact expected trajectory of CoBo on a
cluster of quadratic losses :math:`f_i(x) = \tfrac12 (x - \mu)^\top A_i (x - \mu)`
(:mod:`learning.theory.quadratic`): one cluster whose members share their minimiser (A5),
with Gaussian noise of variance :math:`\sigma^2` on the model gradients (A2) and exact
midpoint gradients in the weight step. Under A4 with :math:`M_{ij} < 1` every midpoint inner
product is then non-negative (Case 1 of the proof, ``cobo.thm1.proof.case1``), so the weights
stay at :math:`w_{ij} = 1 = w^\star_{ij}`, the round is linear and every expectation is exact.
One cluster is also the only setting in which quadratics satisfy the stochastic theorem's
hypothesis :math:`\zeta_{ik}^2 \ge \|\nabla f_i(x) + \nabla f_k(x)\|^2` for all :math:`x`
(vacuous without a second cluster; quadratics of two clusters violate it far from the optima).

Sums :math:`\sum_{i,j \in \mathcal C}` run over all :math:`c^2` ordered pairs, :math:`i = j`
included, as the normalisation :math:`1/c^2` of the theorem counts them;
:math:`S = \sum_{i,j \in \mathcal C} (\tilde f_{ij}(z^0_{ij}) - \tilde f^\star_{ij})` with
:math:`\tilde f_{ij} = \frac12 (f_i + f_j)` and :math:`M^2 = \max_{i \ne j \in \mathcal C} M_{ij}^2`.

Lemmas 3 and 4 are registered in :mod:`learning.theory.cobo_lemmas_propositions`, the weight
step, the model step and Example 2 in :mod:`learning.theory.cobo_steps_propositions`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from econ.propositions import Verdict, proposition
from learning.theory.cobo import (
    PAPER,
    corrected_consensus,
    corrected_cor2,
    corrected_gradient,
    corrected_hypothesis,
)
from learning.theory.cobo_points import (
    SQRT3,
    Formula,
    Hypothesis,
    compare,
    drawn,
    printed_step_cap,
    theorem_runs,
)
from learning.theory.quadratic import ClusterRun

DETERMINISTIC = (
    f"{PAPER}, Section 3 (Theoretical results), the first Theorem 1 (exact gradients, "
    "Assumptions A1-A4 of that block, rho >= L)"
)
STOCHASTIC = (
    f"{PAPER}, Section 3 (Theoretical results), the second Theorem 1 (Assumptions A1-A5, "
    "mini-batch b), proved in Appendix A (Theory)"
)


def _consensus(run: ClusterRun) -> float:
    return run.moments.consensus


def _midpoint_gradient(run: ClusterRun) -> float:
    return run.moments.midpoint_gradient


def _client_gradient(run: ClusterRun) -> float:
    return run.moments.client_gradient


# --------------------------------------------------------------------------- the printed bounds


def det_consensus(*, m2: float, rho: float, c: float, T: float, S: float, **_: float) -> float:
    r"""First Theorem 1: :math:`\frac{2 M^2}{\rho^2 c^2 T} S`."""
    return 2 * m2 * S / (rho**2 * c**2 * T)


def det_gradient(*, L: float, c: float, T: float, S: float, **_: float) -> float:
    r"""First Theorem 1: :math:`\frac{3L}{c^2 T} S`."""
    return 3 * L * S / (c**2 * T)


def det_hypothesis(*, m2: float, L: float, rho: float, **_: float) -> bool:
    r"""First Theorem 1: A3 with :math:`M_{ij} \in (0, 1)` and :math:`\rho \ge L`; no step size."""
    return 0 < m2 < 1 and rho >= L


def _root(*, L: float, sigma: float, c: float, T: float, S: float) -> float:
    return math.sqrt(L * sigma**2 * S / (c**2 * T))


def sto_consensus(
    *, m2: float, L: float, rho: float, c: float, sigma: float, T: float, S: float, **_: float
) -> float:
    r"""Second Theorem 1: :math:`\frac{6 M^2}{\rho^2 c^2}\sqrt{\frac{L\sigma^2}{c^2 T} S}`."""
    return 6 * m2 / (rho**2 * c**2) * _root(L=L, sigma=sigma, c=c, T=T, S=S)


def sto_gradient(*, L: float, c: float, sigma: float, T: float, S: float, **_: float) -> float:
    r"""Second Theorem 1: :math:`3\sqrt{\frac{L\sigma^2}{c^2 T} S}`."""
    return 3 * _root(L=L, sigma=sigma, c=c, T=T, S=S)


def cor2_gradient(*, L: float, c: float, sigma: float, T: float, S: float, **_: float) -> float:
    r"""Corollary 2: :math:`4\sqrt{\frac{L\sigma^2}{c^2 T} S}`."""
    return 4 * _root(L=L, sigma=sigma, c=c, T=T, S=S)


def sto_hypothesis(
    *,
    m2: float,
    L: float,
    rho: float,
    c: float,
    eta: float,
    sigma: float,
    T: float,
    S: float,
    **_: float,
) -> bool:
    r"""The hypotheses of the second Theorem 1.

    :math:`M^2 \in (0, \frac15)`, :math:`\rho \ge \sqrt3 L/c`, :math:`\sigma > 0`,
    :math:`\eta \le \min\{\frac{2}{\sigma\sqrt{LT}}\sqrt{S/c^2}, \frac{1}{2\sqrt3 L}\}` (the batch
    condition holds: the midpoint gradients are exact, a noise of 0 within A2's bound).
    """
    cap = min(printed_step_cap(S, int(c), L, sigma, int(T)), 1 / (2 * SQRT3 * L))
    return 0 < m2 < 0.2 and rho * c >= SQRT3 * L and sigma > 0 and eta <= cap * (1 + 1e-12)


# perturbations of the corrected bounds (each must make its check fail)


def _consensus_m4(**q: float) -> float:
    """The corrected consensus bound with :math:`M^2` replaced by :math:`M^4`."""
    return corrected_consensus(**{**q, "m2": q["m2"] ** 2})


def _consensus_without_noise(**q: float) -> float:
    """The corrected consensus bound without its model-noise term."""
    return corrected_consensus(**q) - 8 * q["eta"] * q["sigma"] ** 2 * (q["c"] - 1) / (
        q["rho"] * q["c"] ** 2
    )


def _gradient_t2(**q: float) -> float:
    """The corrected gradient bound with the rate :math:`1/T` replaced by :math:`1/T^2`."""
    return corrected_gradient(**{**q, "S": q["S"] / q["T"]})


def _cor2_t2(**q: float) -> float:
    """The corrected Corollary 2 bound with the rate :math:`1/T` replaced by :math:`1/T^2`."""
    return corrected_cor2(**{**q, "S": q["S"] / q["T"]})


# --------------------------------------------------------------------------- first Theorem 1


DET_CONSENSUS = (
    "(1/(c^2 T)) sum_t sum_{i,j in C} E||x_i^{t+1} - x_j^{t+1}||^2 <= "
    "2 M_ij^2/(rho^2 c^2 T) sum_{i,j in C} (f~_ij(z_ij^0) - f~_ij^*)"
)
DET_GRADIENT = (
    "(1/(c^2 T)) sum_t sum_{i,j in C} E||grad f~_ij(z_ij^t)||^2 <= "
    "3L/(c^2 T) sum_{i,j in C} (f~_ij(z_ij^0) - f~_ij^*)"
)
CORRECTED_DET = (
    "if moreover M^2 <= 1/104, rho c >= sqrt(3) L, eta <= 1/(2 rho c) and the weights equal "
    "W* in every round: "
)


def _theorem(
    noisy: bool,
    measure: Callable[[ClusterRun], float],
    bound: Formula,
    hypothesis: Hypothesis,
    what: str,
) -> Verdict:
    return compare(theorem_runs(noisy), measure, bound, hypothesis, what, drawn(noisy))


@proposition(
    "cobo.thm1.consensus",
    source=DETERMINISTIC + ", first display (consensus error)",
    statement="Under A1-A4 and rho >= L, for every step size: " + DET_CONSENSUS,
    holds=False,
    perturb={"bound": corrected_consensus, "hypothesis": corrected_hypothesis},
)
def check_det_consensus(
    bound: Formula = det_consensus, hypothesis: Hypothesis = det_hypothesis
) -> Verdict:
    """The deterministic consensus bound on exact trajectories.

    It is not invariant under
    (f, rho, eta) -> (kappa f, kappa rho, eta/kappa), which keeps the trajectory and the
    hypotheses: it scales as 1/kappa.
    """
    return _theorem(
        False,
        _consensus,
        bound,
        hypothesis,
        "the consensus bound "
        + DET_CONSENSUS
        + " (losses, rho and eta scaled by kappa, kappa and 1/kappa leave the trajectory and "
        "the hypotheses unchanged; the bound scales as 1/kappa)",
    )


@proposition(
    "cobo.thm1.consensus.corrected",
    source=DETERMINISTIC
    + "; corrects "
    + "Appendix A, proof of Theorem 1, the display after 'Then with lower bound assumption of f_i and f_j' (6 M^2 S/(eta rho^2 c^2 T) + (3 M^2/rho^2)(L eta sigma^2/2), before 'Minimize the upper bound through choosing eta') at sigma = 0, "
    "with the constants of Lemmas 3 and 4 repaired (see learning/theory/cobo.py)",
    statement=CORRECTED_DET
    + "(1/(c^2 T)) sum_t sum_{i,j} ||x_i^{t+1} - x_j^{t+1}||^2 <= 96 M^2 S/(eta rho^2 c^4 T)",
    kind="derived",
    perturb={"bound": _consensus_m4},
)
def check_det_consensus_corrected(
    bound: Formula = corrected_consensus, hypothesis: Hypothesis = corrected_hypothesis
) -> Verdict:
    """The corrected consensus bound on the exact trajectories without noise."""
    return _theorem(
        False, _consensus, bound, hypothesis, "the corrected consensus bound (sigma = 0)"
    )


@proposition(
    "cobo.thm1.gradient",
    source=DETERMINISTIC + ", second display (gradient norm)",
    statement="Under A1-A4 and rho >= L, for every step size: " + DET_GRADIENT,
    holds=False,
    perturb={"bound": corrected_gradient, "hypothesis": corrected_hypothesis},
)
def check_det_gradient(
    bound: Formula = det_gradient, hypothesis: Hypothesis = det_hypothesis
) -> Verdict:
    """The deterministic gradient bound on exact trajectories.

    Independent of the step size, it fails for small ones (the iterates barely move while the bound decays as 1/T).
    """
    return _theorem(
        False,
        _midpoint_gradient,
        bound,
        hypothesis,
        "the gradient bound "
        + DET_GRADIENT
        + " (no step-size condition: at a small eta the iterates barely move while the bound "
        "decays as 1/T)",
    )


@proposition(
    "cobo.thm1.gradient.corrected",
    source=DETERMINISTIC
    + "; corrects "
    + "Appendix A, proof of Theorem 1, the first line of the display after 'By the result of Lemma 3' ((2/eta)(1/T) S + 4 c^2 rho^2 (consensus) + c^2 L eta sigma^2/2) at sigma = 0, "
    "with the constants of Lemmas 3 and 4 repaired (see learning/theory/cobo.py)",
    statement=CORRECTED_DET
    + "(1/(c^2 T)) sum_t sum_{i,j} ||grad f~_ij(z_ij^t)||^2 <= 4 S/(eta c^2 T)",
    kind="derived",
    perturb={"bound": _gradient_t2},
)
def check_det_gradient_corrected(
    bound: Formula = corrected_gradient, hypothesis: Hypothesis = corrected_hypothesis
) -> Verdict:
    """The corrected gradient bound on the exact trajectories without noise."""
    return _theorem(
        False, _midpoint_gradient, bound, hypothesis, "the corrected gradient bound (sigma = 0)"
    )


# --------------------------------------------------------------------------- second Theorem 1


STO_CONSENSUS = (
    "(1/(c^2 T)) sum_t sum_{i,j in C} E||x_i^{t+1} - x_j^{t+1}||^2 <= "
    "6 M_ij^2/(rho^2 c^2) sqrt(L sigma^2/(c^2 T) S)"
)
STO_GRADIENT = (
    "(1/(c^2 T)) sum_t sum_{i,j in C} E||grad f~_ij(z_ij^t)||^2 <= 3 sqrt(L sigma^2/(c^2 T) S)"
)
STO_HYPOTHESES = (
    "Under A1-A5, M_ij^2 in (0, 1/5), b >= (2/c^2) 2 L eta (c-2) sigma^2, "
    "zeta_ik^2 >= ||grad f_i(x) + grad f_k(x)||^2, rho >= sqrt(3) L/c and "
    "eta <= min{2/(sigma sqrt(L T)) sqrt(S/c^2), 1/(2 sqrt(3) L)}, with "
    "S = sum_{i,j in C} (f~_ij(z_ij^0) - f~_ij^*): "
)
CORRECTED_STO = (
    "Under A1-A5, M^2 <= 1/104, rho c >= sqrt(3) L, any eta <= 1/(2 rho c), and weights "
    "equal to W* in every round: "
)


@proposition(
    "cobo.thm1.stochastic.consensus",
    source=STOCHASTIC + ", first display; Appendix A, eq. (xi_xj)",
    statement=STO_HYPOTHESES + STO_CONSENSUS,
    holds=False,
    perturb={"bound": corrected_consensus, "hypothesis": corrected_hypothesis},
)
def check_sto_consensus(
    bound: Formula = sto_consensus, hypothesis: Hypothesis = sto_hypothesis
) -> Verdict:
    """The stochastic consensus bound on exact expected trajectories.

    It is proportional to sigma while the step size stays
    capped at 1/(2 sqrt(3) L), and proportional to M^2 although the gradient noise alone
    keeps clients apart.
    """
    return _theorem(
        True,
        _consensus,
        bound,
        hypothesis,
        "the consensus bound "
        + STO_CONSENSUS
        + " (the bound is proportional to sigma M^2, the first step alone gives "
        "eta^2 (||grad f_i(x0) - grad f_j(x0)||^2 + 2 sigma^2) per pair)",
    )


@proposition(
    "cobo.thm1.stochastic.consensus.corrected",
    source=STOCHASTIC
    + "; corrects "
    + "Appendix A, proof of Theorem 1, the display after 'Then with lower bound assumption of f_i and f_j' (6 M^2 S/(eta rho^2 c^2 T) + (3 M^2/rho^2)(L eta sigma^2/2), before 'Minimize the upper bound through choosing eta'), "
    "with the model-gradient noise and the constants of Lemmas 3 and 4 repaired (see "
    "learning/theory/cobo.py)",
    statement=CORRECTED_STO
    + "(1/(c^2 T)) sum_t sum_{i,j} E||x_i^{t+1} - x_j^{t+1}||^2 <= 96 M^2 S/(eta rho^2 c^4 T) "
    "+ 24 M^2 L eta sigma^2 (c+1)/(rho^2 c^3) + 8 eta sigma^2 (c-1)/(rho c^2)",
    kind="derived",
    perturb={"bound": _consensus_without_noise},
)
def check_sto_consensus_corrected(
    bound: Formula = corrected_consensus, hypothesis: Hypothesis = corrected_hypothesis
) -> Verdict:
    """The corrected consensus bound on the exact expected trajectories with noise."""
    return _theorem(True, _consensus, bound, hypothesis, "the corrected consensus bound")


@proposition(
    "cobo.thm1.stochastic.gradient",
    source=STOCHASTIC + ", second display; Appendix A, end of the proof of Theorem 1",
    statement=STO_HYPOTHESES + STO_GRADIENT,
    holds=False,
    perturb={"bound": corrected_gradient, "hypothesis": corrected_hypothesis},
)
def check_sto_gradient(
    bound: Formula = sto_gradient, hypothesis: Hypothesis = sto_hypothesis
) -> Verdict:
    """The stochastic gradient bound on exact expected trajectories.

    It tends to 0 with sigma while the step size stays
    capped at 1/(2 sqrt(3) L), and it does not depend on eta although eta may be as small as
    one likes ("eta <= ..."); the t = 0 term alone exceeds it.
    """
    return _theorem(
        True,
        _midpoint_gradient,
        bound,
        hypothesis,
        "the gradient bound "
        + STO_GRADIENT
        + " (the bound is proportional to sigma while eta stays capped at 1/(2 sqrt(3) L); "
        "the t = 0 term alone, (1/(c^2 T)) sum ||grad f~_ij(x0)||^2, does not depend on sigma)",
    )


@proposition(
    "cobo.thm1.stochastic.gradient.corrected",
    source=STOCHASTIC
    + "; corrects "
    + "Appendix A, proof of Theorem 1, the first line of the display after 'By the result of Lemma 3' ((2/eta)(1/T) S + 4 c^2 rho^2 (consensus) + c^2 L eta sigma^2/2), "
    "with the constants of Lemmas 3 and 4 repaired (see learning/theory/cobo.py)",
    statement=CORRECTED_STO
    + "(1/(c^2 T)) sum_t sum_{i,j} E||grad f~_ij(z_ij^t)||^2 <= 4 S/(eta c^2 T) "
    "+ L eta sigma^2 (c+1)/c + (52/3) rho eta sigma^2 (c-1)",
    kind="derived",
    perturb={"bound": _gradient_t2},
)
def check_sto_gradient_corrected(
    bound: Formula = corrected_gradient, hypothesis: Hypothesis = corrected_hypothesis
) -> Verdict:
    """The corrected gradient bound on the exact expected trajectories with noise."""
    return _theorem(True, _midpoint_gradient, bound, hypothesis, "the corrected gradient bound")


@proposition(
    "cobo.cor2",
    source=f"{PAPER}, Section 3, Corollary 2; Appendix A, proof of Corollary 2",
    statement="Under the conditions of the (second) Theorem 1: (1/(c^2 T)) sum_t sum_{i,j in C} "
    "||grad f_i(x_i^t)||^2 <= 4 sqrt(L sigma^2/(c^2 T) S)",
    holds=False,
    perturb={"bound": corrected_cor2, "hypothesis": corrected_hypothesis},
)
def check_cor2(bound: Formula = cor2_gradient, hypothesis: Hypothesis = sto_hypothesis) -> Verdict:
    """Corollary 2 on exact expectations.

    Like the theorem's gradient bound, it tends to 0
    with sigma at a capped step size.
    """
    return _theorem(
        True,
        _client_gradient,
        bound,
        hypothesis,
        "Corollary 2, (1/(c^2 T)) sum_t sum_{i,j} E||grad f_i(x_i^t)||^2 <= 4 sqrt(L sigma^2 S/(c^2 T))"
        " (proportional to sigma while eta stays capped; the t = 0 term does not depend on sigma)",
    )


@proposition(
    "cobo.cor2.corrected",
    source=f"{PAPER}, Section 3, Corollary 2; corrects Appendix A, proof of Corollary 2, the "
    "display after 'By Cauchy-Schwarz inequality and L-Lipschitz smoothness' (||grad f_i(x_i)||^2 "
    "<= ||grad f_i(z_ij)||^2 + ||grad f_i(z_ij) - grad f_i(x_i)||^2, which drops the factor 2 of "
    "||a + b||^2 <= 2||a||^2 + 2||b||^2), with the corrected Theorem 1 bounds",
    statement=CORRECTED_STO
    + "(1/(c^2 T)) sum_t sum_{i,j} E||grad f_i(x_i^t)||^2 <= 2(1 + M^2) G + (L^2/2) C, with G "
    "and C the bounds of cobo.thm1.stochastic.gradient.corrected and "
    "cobo.thm1.stochastic.consensus.corrected",
    kind="derived",
    perturb={"bound": _cor2_t2},
)
def check_cor2_corrected(
    bound: Formula = corrected_cor2, hypothesis: Hypothesis = corrected_hypothesis
) -> Verdict:
    """The corrected Corollary 2 on the exact expected trajectories with noise."""
    return _theorem(True, _client_gradient, bound, hypothesis, "the corrected Corollary 2")
