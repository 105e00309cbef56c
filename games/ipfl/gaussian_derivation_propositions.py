r"""IP-FL's derivation of §3, checkable: the estimates as minimisers and Eq. 6's first form.

Holds the registered steps of the derivation of the Gaussian model's estimates that are not its
errors (those are in :mod:`games.ipfl.gaussian_propositions`): the summed local loss
:math:`L_i(\mu) = \sum_j (\mu - z_{ij})^2` weighted by :math:`n_i/n` is minimised by
:math:`\sum_i n_i^2\hat\mu_i/\sum_i n_i^2`, not by the printed :math:`\hat\mu_{FL}`
(``ipfl.fl_minimiser``); the printed :math:`\hat\mu_{T1}` averages :math:`\hat\mu_i` instead of
:math:`\hat\mu_j` (``ipfl.cluster_minimiser``); and Eq. 6's first form has :math:`1/m^2` for
:math:`1/m_1^2` (``ipfl.eq6.first_form``). Each printed slip is registered with its
``.corrected`` twin.

References
----------
Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4), §3
'Federated training' and 'Cluster-based personalized FL', Eq. 5-6.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import sympy as sp

from econ.propositions import Verdict, on_points, proposition, proved, refuted
from games.ipfl.propositions import PAPER


def _minimiser_points() -> Iterator[dict[str, Any]]:
    """Clients' samples (exact rationals) and the size m1 of T_1; client i is client 0."""
    yield {"samples": [[0], [1, 1, 1]], "m1": 2}  # n = (1, 3), mu_hat = (0, 1)
    yield {"samples": [[2, 2], [0, 0]], "m1": 2}  # equal sizes
    rng = np.random.default_rng(7)
    for _ in range(38):
        m = int(rng.integers(1, 7))
        samples = [rng.integers(-5, 6, int(rng.integers(1, 7))).tolist() for _ in range(m)]
        yield {"samples": samples, "m1": int(rng.integers(1, m + 1))}


_MINIMISER_DRAWN = (
    "samples (0) and (1, 1, 1) (n = (1, 3), mu_hat = (0, 1)), samples (2, 2) and (0, 0), then "
    "seeded (seed 7) 38 sets of 1-6 clients with 1-6 integer samples in [-5, 5] each, "
    "|T_1| in 1..m; the minimiser solved exactly by sympy from the printed loss"
)

#: The weight of client j's loss L_j in the objective (n_j, the total of the group).
Weight = Callable[[int, int], Any]
#: The printed closed form of the minimiser (sizes, local means, the target client i = 0).
Estimate = Callable[[list[int], list[Any]], Any]


def _printed_weight(n_j: int, total: int) -> Any:
    """§3: the objective sum_j (n_j/n) L_j(mu)."""
    return sp.Rational(n_j, total)


def _mean_loss_weight(n_j: int, total: int) -> Any:
    """The same objective with L_j's mean (1/n_j) sum (mu - z_j.)^2: weight 1/n."""
    return sp.Rational(1, total)


def _size_weighted_mean(sizes: list[int], means: list[Any]) -> Any:
    """sum_j (n_j/n) mu_hat_j."""
    return sum(sp.Rational(n, sum(sizes)) * mu for n, mu in zip(sizes, means, strict=True))


def _printed_cluster_estimate(sizes: list[int], means: list[Any]) -> Any:
    """§3 as printed: mu_hat_T1 = sum_{j in T_1} (n_j/n_T1) mu_hat_i (the index i, not j)."""
    return sum(sp.Rational(n, sum(sizes)) * means[0] for n in sizes)


def _minimiser_check(group: str, weight: Weight, estimate: Estimate) -> Verdict:
    """Whether ``estimate`` minimises sum_j weight(n_j, n) L_j(mu), L_j = sum_l (mu - z_jl)^2."""
    mu = sp.Symbol("mu", real=True)

    def values(samples: list[list[int]], m1: int) -> tuple[Any, Any]:
        members = samples if group == "FL" else samples[:m1]
        sizes = [len(z) for z in members]
        objective = sum(weight(len(z), sum(sizes)) * sum((mu - x) ** 2 for x in z) for z in members)
        slope = sp.Poly(sp.diff(objective, mu), mu)  # linear: c1 mu + c0
        minimum = -slope.coeff_monomial(1) / slope.coeff_monomial(mu)
        means = [sp.Rational(sum(z), len(z)) for z in members]
        return minimum, estimate(sizes, means)

    def equal(samples: list[list[int]], m1: int) -> bool:
        minimum, stated = values(samples, m1)
        return bool(sp.nsimplify(minimum - stated) == 0)

    verdict = on_points(
        equal,
        _minimiser_points(),
        f"the {group} estimate stated equals the minimiser of the stated objective",
        drawn=_MINIMISER_DRAWN,
    )
    if verdict.holds or verdict.counterexample is None:
        return verdict
    point = dict(verdict.counterexample)
    minimum, stated = values(point["samples"], point["m1"])
    point["minimiser"], point["stated_estimate"] = str(minimum), str(stated)
    return refuted(verdict.evidence, point)


@proposition(
    "ipfl.fl_minimiser",
    source=f"{PAPER}, §3 'Federated training': 'the global minimum of the loss sum_(i=1)^m "
    "(n_i/n) L_i(mu), n = sum_i n_i, which can be calculated to be mu_hat_FL = sum_(i=1)^m "
    "(n_i/n) mu_hat_i', with the local loss L_i(mu) = sum_(j=1)^(n_i) (mu - z_ij)^2 of "
    "'Local training'",
    statement="with L_i(mu) = sum_j (mu - z_ij)^2, the minimiser of sum_i (n_i/n) L_i(mu) is "
    "mu_hat_FL = sum_i (n_i/n) mu_hat_i",
    holds=False,
    perturb={"weight": _mean_loss_weight},
)
def _fl_minimiser_printed(
    weight: Weight = _printed_weight, estimate: Estimate = _size_weighted_mean
) -> Verdict:
    return _minimiser_check("FL", weight, estimate)


@proposition(
    "ipfl.fl_minimiser.corrected",
    source=f"{PAPER}, §3 'Federated training', the objective sum_(i=1)^m (n_i/n) L_i(mu) "
    "corrected: weighting the summed loss L_i by n_i/n counts n_i twice (its minimiser is "
    "sum_i n_i^2 mu_hat_i/sum_i n_i^2); with the mean loss L_i/n_i, or the unweighted "
    "sum_i L_i(mu), the minimiser is the printed mu_hat_FL, the estimate the FL error of §3 "
    "is computed for",
    statement="the minimiser of sum_i (n_i/n) L_i(mu)/n_i = (1/n) sum_i L_i(mu) is "
    "mu_hat_FL = sum_i (n_i/n) mu_hat_i",
    perturb={"weight": _printed_weight},
)
def _fl_minimiser_corrected(
    weight: Weight = _mean_loss_weight, estimate: Estimate = _size_weighted_mean
) -> Verdict:
    return _minimiser_check("FL", weight, estimate)


@proposition(
    "ipfl.cluster_minimiser",
    source=f"{PAPER}, §3 'Cluster-based personalized FL': 'the Cluster 1 model will be the "
    "minimum of the loss sum_(j in T_1) (n_j/n_T1) L_j(mu), ..., which can be calculated to be "
    "mu_hat_T1 = sum_(j in T_1) (n_j/n_T1) mu_hat_i'",
    statement="with L_j(mu) = sum_l (mu - z_jl)^2, the minimiser of sum_(j in T_1) (n_j/n_T1) "
    "L_j(mu) is sum_(j in T_1) (n_j/n_T1) mu_hat_i, which is client i's own mu_hat_i",
    holds=False,
    perturb={"weight": _mean_loss_weight, "estimate": _size_weighted_mean},
)
def _cluster_minimiser_printed(
    weight: Weight = _printed_weight, estimate: Estimate = _printed_cluster_estimate
) -> Verdict:
    return _minimiser_check("cluster", weight, estimate)


@proposition(
    "ipfl.cluster_minimiser.corrected",
    source=f"{PAPER}, §3 'Cluster-based personalized FL', mu_hat_T1 = sum_(j in T_1) "
    "(n_j/n_T1) mu_hat_i corrected to mu_hat_j (the estimate Eq. 5 is computed for) and its "
    "objective to the mean losses L_j/n_j, as in ipfl.fl_minimiser.corrected",
    statement="the minimiser of sum_(j in T_1) (n_j/n_T1) L_j(mu)/n_j is mu_hat_T1 = "
    "sum_(j in T_1) (n_j/n_T1) mu_hat_j",
    perturb={"estimate": _printed_cluster_estimate},
)
def _cluster_minimiser_corrected(
    weight: Weight = _mean_loss_weight, estimate: Estimate = _size_weighted_mean
) -> Verdict:
    return _minimiser_check("cluster", weight, estimate)


def _eq6_printed_first_form(s2: sp.Expr, t2: sp.Expr, n0: sp.Expr, m1: sp.Expr, m: sp.Expr) -> Any:
    """Eq. 6's first right-hand side: (m1 - 1)/m1^2 (sigma^2/n0 + 2 tau^2) + sigma^2/(m^2 n0)."""
    return (m1 - 1) / m1**2 * (s2 / n0 + 2 * t2) + s2 / (m**2 * n0)


def _eq6_first_form(s2: sp.Expr, t2: sp.Expr, n0: sp.Expr, m1: sp.Expr, m: sp.Expr) -> Any:
    """The same with (n_i/n_T1)^2 = 1/m1^2: (m1 - 1)/m1^2 (sigma^2/n0 + 2 tau^2) + sigma^2/(m1^2 n0)."""
    return (m1 - 1) / m1**2 * (s2 / n0 + 2 * t2) + s2 / (m1**2 * n0)


def _eq6_first_step(form: Callable[..., Any]) -> Verdict:
    s2, t2, n0, m1, m2 = sp.symbols("sigma2 tau2 n0 m1 m2", positive=True, integer=True)
    w = n0 / (m1 * n0)  # n_j/n_T1 with every n_j = n0
    eq5 = (m1 - 1) * w**2 * (s2 / n0 + 2 * t2) + w**2 * s2 / n0  # Eq. 5: m1 - 1 equal terms
    residual = sp.factor(sp.simplify(form(s2, t2, n0, m1, m1 + m2) - eq5))
    if residual == 0:
        return proved(
            "Eq. 5 with every n_j = n0 minus the stated form simplifies to 0 for symbolic "
            "m1, m2 = m - m1, n0, sigma^2, tau^2"
        )
    at = {s2: 1, t2: sp.Rational(9, 100), n0: 20, m1: 10, m2: 10}
    return refuted(
        f"stated form minus Eq. 5 with every n_j = n0 is {residual}, non-zero whenever m2 >= 1",
        {
            "m1": 10,
            "m2": 10,
            "n0": 20,
            "sigma2": 1,
            "tau2": 0.09,
            "stated": float(form(s2, t2, n0, m1, m1 + m2).subs(at)),
            "eq5": float(eq5.subs(at)),
        },
    )


@proposition(
    "ipfl.eq6.first_form",
    source=f"{PAPER}, §3, Eq. 6, first equality: e(mu_hat_T1) = (m1 - 1)/m1^2 (sigma^2/n0 + "
    "2 tau^2) + (1/m^2) sigma^2/n0, from Eq. 5 with all n_i = n0 (m = m1 + m2 clients in "
    "the two subsets)",
    statement="with every n_i = n0, Eq. 5 equals (m1 - 1)/m1^2 (sigma^2/n0 + 2 tau^2) + "
    "sigma^2/(m^2 n0)",
    holds=False,
    perturb={"form": _eq6_first_form},
)
def _eq6_first_printed(form: Callable[..., Any] = _eq6_printed_first_form) -> Verdict:
    return _eq6_first_step(form)


@proposition(
    "ipfl.eq6.first_form.corrected",
    source=f"{PAPER}, §3, Eq. 6, first equality with 1/m^2 corrected to 1/m1^2 "
    "((n_i/n_T1)^2 = 1/m1^2), as Eq. 6's second equality already has it",
    statement="with every n_i = n0, Eq. 5 equals (m1 - 1)/m1^2 (sigma^2/n0 + 2 tau^2) + "
    "sigma^2/(m1^2 n0)",
    perturb={"form": _eq6_printed_first_form},
)
def _eq6_first_corrected(form: Callable[..., Any] = _eq6_first_form) -> Verdict:
    return _eq6_first_step(form)
