r"""CoBo's convergence bounds as corrected here (Hashemi, He and Jaggi, NeurIPS 2024).

The paper prints two statements called Theorem 1 in Section 3 ("Theoretical results"): a
first, deterministic one (exact gradients, Assumptions A1-A4 of that block, :math:`\rho \ge L`,
an :math:`\mathcal O(1/T)` rate), and a second, stochastic one (Assumptions A1-A5, mini-batch
:math:`b`, an :math:`\mathcal O(1/\sqrt T)` rate), the one that Appendix A ("Theory") proves
through Lemma 3 (descent on pair averages) and Lemma 4 (consensus recursion); Corollary 2
follows it.

Sums :math:`\sum_{i,j \in \mathcal C}` run over all :math:`c^2` ordered pairs, :math:`i = j`
included, as the normalisation :math:`1/c^2` of the theorem counts them;
:math:`S = \sum_{i,j \in \mathcal C} (\tilde f_{ij}(z^0_{ij}) - \tilde f^\star_{ij})` with
:math:`\tilde f_{ij} = \frac12 (f_i + f_j)` and :math:`M^2 = \max_{i \ne j \in \mathcal C} M_{ij}^2`.

Two scalings decide which printed bounds can hold. Multiplying every loss by :math:`\kappa`
together with :math:`\rho \to \kappa\rho`, :math:`\eta \to \eta/\kappa` and
:math:`\sigma \to \kappa\sigma` leaves the trajectory unchanged and keeps every hypothesis
(:math:`M`, :math:`\rho c / L`, :math:`\eta L` are invariant), so a bound on distances must be
invariant too; the deterministic consensus bound :math:`2M^2 S/(\rho^2 c^2 T)` scales as
:math:`1/\kappa`. And a bound that does not depend on :math:`\eta` cannot hold for every
admissible step size: as :math:`\eta \to 0` the iterates stay at :math:`x^0`.

The corrected statements (``.corrected``) are bounds with the step size explicit, derived
along the appendix's own steps with their constants repaired:

* consensus recursion, with :math:`a = \eta\rho c \le \frac12` and :math:`L^2 \le (\rho c)^2/3`:
  :math:`D_{t+1} \le (1 - a/2) D_t + \frac{12\eta M^2}{\rho c} G_t + 2\eta^2\sigma^2 c(c-1)`, where
  :math:`D_t = \sum \|x_i^t - x_j^t\|^2`, :math:`G_t = \sum \|\nabla \tilde f_{ij}(z^t_{ij})\|^2`
  (:math:`\|\nabla f_i + \nabla f_j\|^2 = 4 \|\nabla \tilde f_{ij}\|^2`, which the proof of
  Lemma 4 drops, and the model-gradient noise, which it omits);
* descent (Lemma 3 with :math:`W = W^\star`): :math:`G_t \le \frac2\eta (F_t - \mathbb E F_{t+1})
  + \frac{13}{6} c^2\rho^2 D_t + N`, :math:`N = L\eta\sigma^2 c(c+1)/2` (the :math:`c` diagonal
  pairs carry twice the noise of the others);
* summing both over :math:`t` and closing the loop needs :math:`52 M^2 \le \frac12`, i.e.
  :math:`M^2 \le 1/104` (at the printed :math:`M \le 1/5` the appendix's chain does not close
  once the factor 4 is restored).

This module holds the corrected bounds and their hypothesis (:func:`corrected_consensus`,
:func:`corrected_gradient`, :func:`corrected_cor2`, :func:`corrected_hypothesis`). The printed
bounds, Theorem 1 and Corollary 2 are registered in :mod:`learning.theory.cobo_propositions`,
at the runs of :func:`learning.theory.cobo_points.theorem_runs`; Lemmas 3 and 4 in
:mod:`learning.theory.cobo_lemmas_propositions`. The weight step has its own entries
(:mod:`learning.theory.cobo_steps_propositions`): Cases 1 and 2 of the proof of Theorem 1 (the
in-cluster weights stay at 1; the cross-cluster ones reach 0 only if :math:`\gamma |s| \ge w`),
the vertex solution of the inner problem, and (:mod:`learning.theory.cobo_lemmas_propositions`)
the variance of a weight after eq. (w), which the proof of Lemma 3 bounds by
:math:`4\sigma^2/b`, a squared gradient, although the weight is dimensionless (the batch
condition :math:`b \ge \frac{2}{c^2} 2L\eta(c-2)\sigma^2` of the second Theorem 1 inherits
those units).
"""

from __future__ import annotations

from learning.theory.cobo_points import SQRT3

#: The paper, as the registered statements cite it.
PAPER = (
    'Hashemi, He and Jaggi, "CoBo: Collaborative Learning via Bilevel Optimization" (NeurIPS 2024)'
)

# --------------------------------------------------------------------------- the corrected bounds


def corrected_hypothesis(
    *, m2: float, L: float, rho: float, c: float, eta: float, **_: float
) -> bool:
    r"""The hypotheses of the corrected bounds.

    :math:`M^2 \le 1/104`, :math:`\rho c \ge \sqrt3 L`, :math:`\eta \le \frac{1}{2\rho c}`
    (Lemma 4's condition, which the theorem omits), weights at :math:`W^\star` in every round.
    """
    return (
        m2 <= 1 / 104 and rho * c >= SQRT3 * L * (1 - 1e-12) and eta <= (1 + 1e-12) / (2 * rho * c)
    )


def corrected_consensus(
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
) -> float:
    r"""The corrected consensus bound of Theorem 1.

    :math:`\frac{96 M^2 S}{\eta\rho^2 c^4 T} + \frac{24 M^2 L\eta\sigma^2 (c+1)}{\rho^2 c^3}
    + \frac{8\eta\sigma^2 (c-1)}{\rho c^2}`.
    """
    return (
        96 * m2 * S / (eta * rho**2 * c**4 * T)
        + 24 * m2 * L * eta * sigma**2 * (c + 1) / (rho**2 * c**3)
        + 8 * eta * sigma**2 * (c - 1) / (rho * c**2)
    )


def corrected_gradient(
    *, L: float, rho: float, c: float, eta: float, sigma: float, T: float, S: float, **_: float
) -> float:
    r""":math:`\frac{4 S}{\eta c^2 T} + \frac{L\eta\sigma^2 (c+1)}{c} + \frac{52}{3}\rho\eta\sigma^2 (c-1)`."""
    return (
        4 * S / (eta * c**2 * T)
        + L * eta * sigma**2 * (c + 1) / c
        + 52 / 3 * rho * eta * sigma**2 * (c - 1)
    )


def corrected_cor2(**q: float) -> float:
    r"""The corrected bound of Corollary 2.

    :math:`2(1 + M^2)\,G + \frac{L^2}{2}\,C` with :math:`G`, :math:`C` the corrected gradient
    and consensus bounds (:math:`\|a + b\|^2 \le 2\|a\|^2 + 2\|b\|^2`, where the proof of
    Corollary 2 drops the factor 2).
    """
    return 2 * (1 + q["m2"]) * corrected_gradient(**q) + q["L"] ** 2 / 2 * corrected_consensus(**q)
