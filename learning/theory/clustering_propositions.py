r"""The registered statements of Federated-Clustering's theory, and where the others are.

Here: Theorem 2's construction and constant (on :mod:`learning.theory.clustering`) and what
Assumption 5 implies at the optima; Lemma 1's constants in
:mod:`learning.theory.clustering_lemma1_propositions`, the variance Lemmas 4, 7 and 14 in
:mod:`learning.theory.clustering_variance_propositions`, Theorems 1-4 in
:mod:`learning.theory.ch2_thm1_propositions` to :mod:`learning.theory.ch2_thm4_propositions`,
and Lemmas 2, 3, 5 and 6 (behind Theorem 1) in :mod:`learning.theory.ch2_lemma2_propositions`
and :mod:`learning.theory.ch2_threshold_propositions`.

Sources: M. Werner, *Collaborative Learning: Aligning Goals and Outcomes* (PhD thesis, UC
Berkeley, 2024), ch. 2 "Personalized Collaborative Learning", §2.3 and §2.6 (ids
``thesis.ch2.``), and Werner, He, Jordan, Jaggi, Karimireddy, "Provably Personalized and
Robust Federated Learning" (TMLR 2023), §3 and App. A (ids ``clustering.``). The chapter is
based on the paper: Theorems 1-4 carry the same numbers, the thesis inserts Lemma 1, so
thesis Lemma k+1 is paper Lemma k (thesis Lemmas 7 and 14 are paper Lemmas 6 and 13). A
result printed alike in both is registered once, under ``thesis.ch2.``, citing both; a
result printed differently is registered once per text.

Every statement is registered in :mod:`econ.propositions`. The printed statements that fail
carry ``holds=False``, with their fixes as ``.corrected``:

- Theorem 2's proof ends with :math:`d^2p^2/4 = (\sigma^2/4)(\sqrt{1+4\sigma^2/\Delta^2}-1)
  \ge \sigma^4/(4\Delta^2)` for :math:`\Delta^2 \ge 2\sigma^2`; the exact value is
  :math:`(\sqrt{4\sigma^2+\Delta^2}-\Delta)^2/16`, whose ratio to :math:`\sigma^4/\Delta^2`
  lies in :math:`[(2-\sqrt 3)/2, 1/4)` there (``thesis.ch2.thm2.constant``).
- Lemma 1 states A5 with :math:`\tfrac12(\max_{j\not\sim i}\lVert\nabla f_j(x_i^*)\rVert)^2`
  for every pair :math:`i \not\sim j`; its proof (eq. (2.17)) gives the pair's own
  :math:`\tfrac12\lVert\nabla f_j(x_i^*)\rVert^2`, so a uniform :math:`\Delta` takes the
  minimum over pairs, not the maximum (``thesis.ch2.lemma1.a5``).
- After Assumption 5 both texts say that it implies :math:`\lVert\nabla f_i(x_j^*)\rVert^2
  \ge \Delta` (the thesis writes :math:`x_i^*`); A5 at :math:`x = x_j^*` gives
  :math:`\lVert\nabla f_i(x_j^*)\rVert^2 \ge \Delta^2` (``clustering.a5.stationary``,
  ``thesis.ch2.a5.stationary``).
- Lemma 4's proof calls the thresholding contractive, :math:`\mathbb E\lVert y -
  \mathbb E y\rVert^2 \le \mathbb E\lVert z - \mathbb E z\rVert^2`; a point law whose
  mass splits at the ball's edge has a clipped variance far above :math:`\sigma^2`, and
  the variance grows also inside Theorem 1's regime :math:`c^2 \le \sigma^2 \le \tau^2`. The
  bound that holds is :math:`\sigma^2 + \lVert v - \mathbb E z\rVert^2`
  (``thesis.ch2.lemma4``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import sympy as sp

from econ.propositions import (
    Verdict,
    all_zero,
    on_points,
    proposition,
    proved,
    refuted,
    sign_on_interval,
)
from learning.theory.clustering import (
    PAPER,
    THESIS,
    FloatArray,
    a5_largest_gap,
    construction_p,
    two_point_symbols,
)

#: A formula of two symbols, e.g. ``(sigma, Delta)``, as a check's printed piece.
SymbolicPair = Callable[[sp.Expr, sp.Expr], sp.Expr]


# --------------------------------------------------------------------------- Theorem 2


@proposition(
    "thesis.ch2.thm2.construction",
    source=f"{THESIS}, §2.6 'Proof of Theorem 2', eq. (2.10)-(2.13); = {PAPER}, App. A.2, "
    "eq. (10)-(13)",
    statement="p = 1/2 - Delta/(2 sqrt(4 sigma^2 + Delta^2)) (2.12) lies in (0, 1/2) and solves "
    "(4 sigma^2 + Delta^2)(p^2 - p) + sigma^2 = 0; with d = Delta/(1-2p) (2.10) the printed "
    "laws D_1 = d w.p. p, 0 w.p. 1-p and D_2 = d w.p. 1-p, 0 w.p. p have means d p and "
    "d(1-p), Delta apart, and variance sigma^2 = d^2 p(1-p) (2.11) each, and "
    "d^2 p^2/4 = sigma^2 p/(4(1-p)) (2.13), for all sigma, Delta > 0 (d is the thesis's delta)",
    perturb={"p": lambda s, g: sp.Rational(1, 2) - g / (2 * sp.sqrt(2 * s**2 + g**2))},
)
def _thm2_construction(p: SymbolicPair = construction_p) -> Verdict:
    sigma, gap = sp.symbols("sigma Delta", positive=True)
    pp = p(sigma, gap)
    d = gap / (1 - 2 * pp)
    # the printed laws: D_1 = d w.p. p and 0 w.p. 1 - p; D_2 = d w.p. 1 - p and 0 w.p. p
    laws = ((pp, 1 - pp), (1 - pp, pp))
    means = [w * d for w, _ in laws]
    variances = [w * (d - m) ** 2 + rest * m**2 for (w, rest), m in zip(laws, means, strict=True)]
    for expr, label in (
        ((4 * sigma**2 + gap**2) * (pp**2 - pp) + sigma**2, "(4s^2+D^2)(p^2-p) + s^2"),
        (means[1] - means[0] - gap, "(2.10): mean of D_2 - mean of D_1 - Delta"),
        (d**2 * pp * (1 - pp) - sigma**2, "(2.11): d^2 p(1-p) - sigma^2"),
        (variances[0] - sigma**2, "variance of D_1 - sigma^2"),
        (variances[1] - sigma**2, "variance of D_2 - sigma^2"),
        (d**2 * pp**2 / 4 - sigma**2 * pp / (4 * (1 - pp)), "(2.13)"),
    ):
        residual = sp.simplify(expr)
        if residual != 0:
            return refuted(
                f"{label} is {residual}, not 0",
                {
                    "sigma": 1.0,
                    "Delta": 1.0,
                    "p": float(pp.subs({sigma: 1, gap: 1})),
                    "residual": float(residual.subs({sigma: 1, gap: 1})),
                },
            )
    if not sp.simplify(sp.Rational(1, 2) - pp).is_positive:
        return refuted("p does not lie below 1/2", {"p": str(pp)})
    # p > 0: multiplied by the positive 2 R (R + Delta), R = sqrt(4 sigma^2 + Delta^2), the
    # printed p is a rational expression whose sign sympy decides
    root = sp.sqrt(4 * sigma**2 + gap**2)
    scale = 2 * root * (root + gap)
    numerator = sp.simplify(sp.expand(pp * scale))
    if not (scale.is_positive and numerator.is_positive):
        for s_val, g_val in itertools.product((1, 2, 10), (sp.Rational(1, 10), 1, 10)):
            value = pp.subs({sigma: s_val, gap: g_val})
            if not value > 0:
                return refuted(
                    "p does not lie above 0",
                    {"sigma": str(s_val), "Delta": str(g_val), "p": str(value)},
                )
        raise ValueError(f"sympy cannot sign p: 2 R (R + Delta) p = {numerator}")
    return proved(
        "symbolic in sigma, Delta > 0: the quadratic, (2.10) and (2.11) on the printed laws "
        "D_1, D_2 (their means and variances), and (2.13) simplify to 0; "
        "1/2 - p = Delta/(2 sqrt(4 sigma^2+Delta^2)) > 0, and 2 R (R + Delta) p = "
        f"{numerator} > 0 with R = sqrt(4 sigma^2 + Delta^2) (sympy signs both), so p in (0, 1/2)"
    )


def _exact_error(sigma: sp.Expr, gap: sp.Expr) -> sp.Expr:
    r""":math:`d^2p^2/4 = (\sqrt{4\sigma^2+\Delta^2}-\Delta)^2/16`."""
    return (sp.sqrt(4 * sigma**2 + gap**2) - gap) ** 2 / 16


def _printed_error(sigma: sp.Expr, gap: sp.Expr) -> sp.Expr:
    r"""The proof's last display: :math:`(\sigma^2/4)(\sqrt{1+4\sigma^2/\Delta^2}-1)`."""
    return sigma**2 / 4 * (sp.sqrt(1 + 4 * sigma**2 / gap**2) - 1)


PRINTED_CONSTANT = sp.Rational(1, 4)  # Theorem 2's proof: sigma^4/(4 Delta^2)
CORRECTED_CONSTANT = (2 - sp.sqrt(3)) / 2  # the infimum of the ratio for Delta^2 >= 2 sigma^2


def _thm2_bound(value: SymbolicPair, constant: sp.Expr, threshold: sp.Expr) -> Verdict:
    """Theorem 2's bound: ``value`` is the error, at least ``constant`` sigma^4/Delta^2.

    Is ``value`` the construction's error, and is that error at least ``constant``
    sigma^4/Delta^2 whenever Delta^2 >= ``threshold`` sigma^2?

    With t = sqrt(1 + 4 sigma^2/Delta^2) the ratio error/(sigma^4/Delta^2) is 1/(1+t)^2,
    decreasing in t; Delta^2 >= threshold sigma^2 is t in (1, t_max], so the infimum of the
    ratio over the hypothesis is 1/(1+t_max)^2, attained at Delta^2 = threshold sigma^2.
    """
    _, _, error, sigma, gap = two_point_symbols()
    constant, threshold = sp.nsimplify(constant), sp.nsimplify(threshold)
    t = sp.Symbol("t", positive=True)
    ratio_t = 1 / (1 + t) ** 2
    t_max = sp.sqrt(1 + 4 / threshold)
    identities = all_zero(
        [
            (error - _exact_error(sigma, gap), "d^2 p^2/4 - (sqrt(4s^2+D^2) - D)^2/16"),
            (
                error / (sigma**4 / gap**2) - ratio_t.subs(t, sp.sqrt(1 + 4 * sigma**2 / gap**2)),
                "ratio as a function of t",
            ),
            (sp.limit(ratio_t, t, 1) - sp.Rational(1, 4), "limit Delta/sigma -> oo"),
        ],
        "Theorem 2 error",
    )
    if not identities.holds:  # pragma: no cover - the construction is proved above
        return identities
    if sign_on_interval(sp.diff(ratio_t, t), t, 1, sp.ceiling(t_max) + 1) != -1:
        raise ValueError("the ratio 1/(1+t)^2 must decrease in t")
    edge = {sigma: 1, gap: sp.sqrt(threshold)}
    numbers = {
        "sigma": 1.0,
        "Delta": float(sp.sqrt(threshold)),
        "error": float(error.subs(edge)),
        "printed_value": float(value(sigma, gap).subs(edge)),
        "bound": float((constant * sigma**4 / gap**2).subs(edge)),
    }
    problems = []
    if sp.simplify(value(sigma, gap) - error) != 0:
        problems.append("the printed value differs from d^2 p^2/4")
    infimum = ratio_t.subs(t, t_max)
    if sp.simplify(infimum - constant).is_negative:
        problems.append(
            f"the error falls below the bound: inf ratio = {sp.nsimplify(infimum)} "
            f"~ {float(infimum):.4f} < {constant}"
        )
    if problems:
        return refuted(f"at Delta^2 = {threshold} sigma^2: " + "; ".join(problems), numbers)
    return proved(
        f"error = (sqrt(4s^2+D^2)-D)^2/16 = (sigma^4/Delta^2)/(1+t)^2, "
        f"t = sqrt(1+4 sigma^2/Delta^2) in (1, {t_max}] for Delta^2 >= {threshold} sigma^2; "
        f"d/dt < 0 (Sturm), so the ratio is >= 1/(1+t_max)^2 = {sp.nsimplify(infimum)} "
        f">= {constant}; limit 1/4 as Delta/sigma -> oo"
    )


@proposition(
    "thesis.ch2.thm2.constant",
    source=f"{THESIS}, §2.6 'Proof of Theorem 2', the display after 'Plugging the expression "
    "for p from (2.12) into (2.13)' and the display after 'we can choose Delta^2 >= 2 sigma^2'; "
    f"= {PAPER}, App. A.2",
    statement="d^2 p^2/4 = (sigma^2/4)(sqrt(4 sigma^2 + Delta^2) - Delta)/Delta = "
    "(sigma^2/4)(sqrt(1 + 4 sigma^2/Delta^2) - 1), and choosing Delta^2 >= 2 sigma^2 gives "
    "E|mu_hat_1 - mu_1|^2 >= d^2 p^2/4 >= sigma^4/(4 Delta^2)",
    holds=False,
    perturb={"value": _exact_error, "constant": CORRECTED_CONSTANT},
)
def _thm2_constant(
    value: SymbolicPair = _printed_error,
    constant: Any = PRINTED_CONSTANT,
    threshold: Any = 2,
) -> Verdict:
    return _thm2_bound(value, constant, threshold)


@proposition(
    "thesis.ch2.thm2.constant.corrected",
    source=f"{THESIS}, §2.6 'Proof of Theorem 2': corrects the display after 'Plugging the "
    "expression for p from (2.12) into (2.13)' (its first equality) and the display after 'we "
    f"can choose Delta^2 >= 2 sigma^2' (its constant 1/4); = {PAPER}, App. A.2",
    statement="d^2 p^2/4 = (sqrt(4 sigma^2 + Delta^2) - Delta)^2/16 >= ((2 - sqrt 3)/2) "
    "sigma^4/Delta^2 (~ 0.134 sigma^4/Delta^2) for Delta^2 >= 2 sigma^2, with equality at "
    "Delta^2 = 2 sigma^2 and ratio -> 1/4 as Delta/sigma -> oo; Theorem 2's Omega(sigma^4/Delta^2) "
    "stands",
    perturb={"constant": PRINTED_CONSTANT},
)
def _thm2_constant_corrected(
    value: SymbolicPair = _exact_error,
    constant: Any = CORRECTED_CONSTANT,
    threshold: Any = 2,
) -> Verdict:
    return _thm2_bound(value, constant, threshold)


# --------------------------------------------------------------------------- A5 at the optima


def _stationary_points() -> Iterator[dict[str, Any]]:
    one = np.ones((1, 1))
    for gap, d in ((0.5, 0.0), (0.25, 0.0)):  # equal curvature: Delta = gap
        yield {"hessians": np.stack([one, one]), "optima": np.array([[0.0], [gap]]), "D": d}
    yield {  # curvatures 1 and 10, gap 1, D = 3: A5's D-term matters
        "hessians": np.stack([one, 10 * one]),
        "optima": np.array([[0.0], [1.0]]),
        "D": 3.0,
    }
    rng = np.random.default_rng(5)
    for k in range(60):
        dim = 1 if k < 30 else 2
        hess = []
        for _ in range(2):
            q, _r = np.linalg.qr(rng.standard_normal((dim, dim)))
            hess.append((q * rng.uniform(1.0, 10.0, dim)) @ q.T)
        gap = float((0.1, 0.5, 1.0, 3.0)[k % 4])
        direction = rng.standard_normal(dim)
        optima = (np.zeros(dim), gap * direction / np.linalg.norm(direction))
        d = float((0.0, 0.5, 1.0, 3.0)[(k // 4) % 4])
        yield {"hessians": np.stack(hess), "optima": np.stack(optima), "D": d}


_STATIONARY_DRAWN = (
    "equal-curvature 1-D pairs with optima 0.5 and 0.25 apart and D = 0, the pair with "
    "curvatures 1 and 10, optima 1 apart, D = 3; then seeded (seed 5) 60 pairs of quadratic "
    "clients in different clusters (30 in R^1, 30 in R^2; Hessian spectra uniform in "
    "[1, 10]; optima 0.1, 0.5, 1 or 3 apart; D in {0, 0.5, 1, 3}); Delta is the largest for "
    "which A5 holds both ways (a5_largest_gap), and both orders (i, j) are checked"
)


def _printed_stationary(gap: float, d: float) -> float:
    """§3.2 of the paper and §2.3 of the thesis: ||grad f_i(x_j*)||^2 >= Delta."""
    return gap


def _corrected_stationary(gap: float, d: float) -> float:
    """A5 for the pair (j, i) at x = x_j^*, where grad f_j = 0: ||grad f_i(x_j*)||^2 >= Delta^2."""
    return gap**2


def _stationary_check(at: str, rhs: Callable[[float, float], float]) -> Verdict:
    def holds(hessians: FloatArray, optima: FloatArray, D: float) -> bool:
        gap = a5_largest_gap((hessians[0], hessians[1]), (optima[0], optima[1]), D)
        for i, j in ((0, 1), (1, 0)):
            point = optima[j] if at == "other" else optima[i]
            lhs = float(np.sum((hessians[i] @ (point - optima[i])) ** 2))
            if lhs < rhs(gap, D) * (1 - 1e-9):
                return False
        return True

    def separated(hessians: FloatArray, optima: FloatArray, D: float) -> bool:
        return a5_largest_gap((hessians[0], hessians[1]), (optima[0], optima[1]), D) > 1e-9

    return on_points(
        holds,
        _stationary_points(),
        f"||grad f_i(x_{'j' if at == 'other' else 'i'}*)||^2 >= the stated right side "
        "(Delta as printed, Delta^2 corrected) for both orders (i, j), Delta the largest "
        "separation for which the pair satisfies A5 with its D",
        drawn=_STATIONARY_DRAWN,
        hypothesis=separated,
    )


@proposition(
    "clustering.a5.stationary",
    source=f"{PAPER}, §3.2, the paragraph after Assumption 5",
    statement="for i !~ j with stationary points x_i*, x_j*, Assumption 5 implies "
    "||grad f_i(x_j*)||^2 >= Delta and ||grad f_j(x_i*)||^2 >= Delta",
    holds=False,
    perturb={"rhs": _corrected_stationary},
)
def _paper_stationary(rhs: Callable[[float, float], float] = _printed_stationary) -> Verdict:
    return _stationary_check("other", rhs)


@proposition(
    "clustering.a5.stationary.corrected",
    source=f"{PAPER}, §3.2: corrects the paragraph after Assumption 5 ('Assumption 5 "
    "implies ... >= Delta'), by Assumption 5 evaluated at x = x_j*",
    statement="for i !~ j, Assumption 5 for the pair (j, i) at x = x_j* (where grad f_j = 0, "
    "so the D-term vanishes) gives ||grad f_i(x_j*)||^2 >= Delta^2, and likewise "
    "||grad f_j(x_i*)||^2 >= Delta^2: i and j share no stationary point",
    perturb={"rhs": _printed_stationary},
)
def _paper_stationary_corrected(
    rhs: Callable[[float, float], float] = _corrected_stationary,
) -> Verdict:
    return _stationary_check("other", rhs)


@proposition(
    "thesis.ch2.a5.stationary",
    source=f"{THESIS}, §2.3, the paragraph after Assumption 5 (the paper, §3.2, writes x_j*)",
    statement="for i !~ j with stationary points x_i*, x_j*, Assumption 5 implies "
    "||grad f_i(x_i*)||^2 >= Delta and ||grad f_j(x_j*)||^2 >= Delta",
    holds=False,
    perturb={"at": "other", "rhs": _corrected_stationary},
)
def _thesis_stationary(
    at: str = "own", rhs: Callable[[float, float], float] = _printed_stationary
) -> Verdict:
    return _stationary_check(at, rhs)


@proposition(
    "thesis.ch2.a5.stationary.corrected",
    source=f"{THESIS}, §2.3: corrects the paragraph after Assumption 5 ('Assumption 5 "
    "implies ||grad f_i(x_i*)||^2 >= Delta'), by Assumption 5 evaluated at x = x_j*",
    statement="for i !~ j: ||grad f_i(x_j*)||^2 >= Delta^2 and ||grad f_j(x_i*)||^2 >= Delta^2 "
    "(at the other client's stationary point; at its own, grad f_i(x_i*) = 0)",
    perturb={"at": "own"},
)
def _thesis_stationary_corrected(
    at: str = "other", rhs: Callable[[float, float], float] = _corrected_stationary
) -> Verdict:
    return _stationary_check(at, rhs)
