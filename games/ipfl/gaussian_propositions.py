r"""IP-FL's Gaussian model of §3, checkable: the MSEs of local, FL and cluster estimates.

Holds the errors of the estimates and the registered statements about them. The printed FL
error, Eq. 5 and Eq. 6 treat the differences :math:`\mu_j - \mu_i` as independent
:math:`N(0, 2\tau^2)` (:func:`working_errors`); under the model Eq. 3 they share :math:`\mu_i`
(:func:`exact_errors`), the errors are larger, and clustering beats local training iff
:math:`\tau^2 < \sigma^2/n_0` (``ipfl.fl_error``, ``ipfl.eq5``, ``ipfl.eq6``, ``ipfl.eq6.working``).
Each entry is checked against a Monte Carlo simulation of the model. The estimates as minimisers
of the printed losses and Eq. 6's first form are in
:mod:`games.ipfl.gaussian_derivation_propositions`.

References
----------
Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4), §3,
Eq. 3-6.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike

from econ.propositions import (
    Kind,
    Verdict,
    on_points,
    proposition,
    proved,
    refuted,
)
from games.ipfl.config import FloatArray
from games.ipfl.propositions import PAPER

__all__ = ["cluster_error_equal", "exact_errors", "working_errors"]

Formula = Callable[..., sp.Expr]


def working_errors(
    sizes: ArrayLike, m1: int, sigma: float, tau_w: float, beta_gap: float
) -> dict[str, float]:
    r"""MSE of client 0 by the paper's formulas: Eq. 4, the FL error and Eq. 5 of §3.

    Client 0 is in group :math:`T_1 = \{0..m_1-1\}`. The formulas are exact when the other clients'
    means are independent around :math:`\mu_i`
    (:math:`\mu_j - \mu_i \sim N(\beta_{g(j)}-\beta_1, 2\tau^2)`, the working model):

    .. math::

        e_{loc} &= \sigma^2/n_i, \\
        e_{FL} &= \Big(\sum_{j\in T_2} \tfrac{n_j}{n} (\beta_2-\beta_1)\Big)^2
                 + \sum_{j\ne i} \big(\tfrac{n_j}{n}\big)^2 (\sigma^2/n_j + 2\tau^2)
                 + \big(\tfrac{n_i}{n}\big)^2 \sigma^2/n_i, \\
        e_{T_1} &= \sum_{j\in T_1, j\ne i} \big(\tfrac{n_j}{n_{T_1}}\big)^2
                 (\sigma^2/n_j + 2\tau^2) + \big(\tfrac{n_i}{n_{T_1}}\big)^2 \sigma^2/n_i.
    """
    n = np.asarray(sizes, dtype=np.float64)
    s2, t2 = float(sigma) ** 2, float(tau_w) ** 2
    w = n / n.sum()
    w1 = n[:m1] / n[:m1].sum()
    e_fl = (w[m1:].sum() * beta_gap) ** 2 + np.sum(w[1:] ** 2 * (s2 / n[1:] + 2 * t2))
    e_fl += w[0] ** 2 * s2 / n[0]
    e_t1 = np.sum(w1[1:] ** 2 * (s2 / n[1:m1] + 2 * t2)) + w1[0] ** 2 * s2 / n[0]
    return {"local": s2 / n[0], "fl": float(e_fl), "cluster": float(e_t1)}


def exact_errors(
    sizes: ArrayLike, m1: int, sigma: float, tau_w: float, beta_gap: float
) -> dict[str, float]:
    r"""The same MSEs under the hierarchical model Eq. 3 as printed.

    Every :math:`\mu_j \sim N(\beta_{g(j)}, \tau^2)` independently, target :math:`\mu_i`:

    .. math::

        e = \Big(\sum_{j\in T_2} w_j\Big)^2(\beta_2-\beta_1)^2 + \sum_j w_j^2\sigma^2/n_j
            + \tau^2\Big[\sum_{j\ne i} w_j^2 + (1-w_i)^2\Big].
    """
    n = np.asarray(sizes, dtype=np.float64)
    s2, t2 = float(sigma) ** 2, float(tau_w) ** 2

    def err(w: FloatArray, sz: FloatArray, gap_mass: float) -> float:
        return float(
            gap_mass**2 * beta_gap**2
            + np.sum(w**2 * s2 / sz)
            + t2 * (np.sum(w[1:] ** 2) + (1 - w[0]) ** 2)
        )

    w = n / n.sum()
    w1 = n[:m1] / n[:m1].sum()
    return {
        "local": s2 / n[0],
        "fl": err(w, n, float(w[m1:].sum())),
        "cluster": err(w1, n[:m1], 0.0),
    }


def _simulate(
    sizes: FloatArray,
    m1: int,
    sigma: float,
    tau_w: float,
    beta_gap: float,
    draws: int,
    rng: np.random.Generator,
    *,
    working: bool,
) -> dict[str, tuple[float, float]]:
    """Monte Carlo MSE and its standard error for each estimator."""
    m = sizes.size
    mu_i = np.zeros(draws)
    shift = np.where(np.arange(m) >= m1, beta_gap, 0.0)
    if working:  # mu_j | mu_i independent around mu_i (+ gap), variance 2 tau^2
        mu = mu_i[:, None] + shift[None, :] + rng.normal(0, math.sqrt(2) * tau_w, (draws, m))
        mu[:, 0] = mu_i
    else:  # hierarchical: every mu_j ~ N(beta_g, tau^2), target mu_0
        mu = shift[None, :] + rng.normal(0, tau_w, (draws, m))
    means = mu + rng.normal(0, 1, (draws, m)) * sigma / np.sqrt(sizes)[None, :]
    target = mu[:, 0]
    w = sizes / sizes.sum()
    w1 = sizes[:m1] / sizes[:m1].sum()
    out = {}
    for key, est in (
        ("local", means[:, 0]),
        ("fl", means @ w),
        ("cluster", means[:, :m1] @ w1),
    ):
        sq = (est - target) ** 2
        out[key] = (float(sq.mean()), float(sq.std() / math.sqrt(draws)))
    return out


def _model3_mse(
    sizes: FloatArray, m1: int, sigma: float, tau_w: float, beta_gap: float, estimator: str
) -> float:
    """MSE under Eq. 3 of client 0's estimate with coefficients a_j on the client means.

    The squared bias sum_{T_2} a_j (beta_2 - beta_1), plus tau^2 ||a - e_0||^2 from the mu_j
    (independent N(beta, tau^2)), plus sum a_j^2 sigma^2/n_j from the sampling noise.
    """
    a = np.zeros(sizes.size)
    members = slice(None) if estimator == "fl" else slice(0, m1)
    a[members] = sizes[members] / sizes[members].sum()
    shifted = a - np.eye(sizes.size)[0]
    bias = float(a[m1:].sum()) * beta_gap
    return bias**2 + tau_w**2 * float(shifted @ shifted) + float(np.sum(a**2 * sigma**2 / sizes))


def _mse_settings() -> Iterator[dict[str, Any]]:
    yield {"sizes": np.full(10, 20.0), "m1": 10, "sigma": 1.0, "tau_w": 0.3, "gap": 0.0}
    yield {"sizes": np.array([20.0, 20.0, 30.0]), "m1": 2, "sigma": 1.0, "tau_w": 0.3, "gap": 1.0}
    rng = np.random.default_rng(5)
    for _ in range(58):
        m = int(rng.integers(2, 12))
        yield {
            "sizes": rng.integers(1, 60, m).astype(np.float64),
            "m1": int(rng.integers(1, m + 1)),
            "sigma": float(rng.uniform(0.1, 3.0)),
            "tau_w": float(rng.choice([0.0, rng.uniform(0.01, 2.0)])),
            "gap": float(rng.choice([0.0, rng.uniform(-3, 3)])),
        }


def _mse_check(estimator: str, formula: Callable[..., dict[str, float]]) -> Verdict:
    key = "fl" if estimator == "fl" else "cluster"

    def holds(sizes: FloatArray, m1: int, sigma: float, tau_w: float, gap: float) -> bool:
        stated = formula(sizes, m1, sigma, tau_w, gap)[key]
        exact = _model3_mse(sizes, m1, sigma, tau_w, gap, estimator)
        return math.isclose(stated, exact, rel_tol=1e-9, abs_tol=1e-15)

    def two_means(sizes: FloatArray, m1: int, sigma: float, tau_w: float, gap: float) -> bool:
        return (sizes.size if estimator == "fl" else m1) >= 2  # else the estimator is local

    verdict = on_points(
        holds,
        _mse_settings(),
        f"the stated {key} MSE = its value under Eq. 3 from the estimator's coefficients",
        drawn="10 equal clients of 20 samples (sigma 1, tau 0.3), three clients of 20, 20, 30 "
        "with two in T_1 (gap 1); then seeded (seed 5) 58 settings: 2-11 clients of 1-59 "
        "samples, 1..m in T_1, sigma in [0.1, 3], tau 0 or in [0.01, 2], gap 0 or in [-3, 3]",
        hypothesis=two_means,
    )
    if verdict.holds or verdict.counterexample is None:
        return verdict
    point = dict(verdict.counterexample)
    args = (np.asarray(point["sizes"]), point["m1"], point["sigma"], point["tau_w"], point["gap"])
    point["stated_mse"] = formula(*args)[key]
    point["mse_under_eq3"] = _model3_mse(*args, estimator)
    point["local_mse"] = float(point["sigma"] ** 2 / args[0][0])
    return refuted(verdict.evidence, point)


@proposition(
    "ipfl.eq5",
    source=f"{PAPER}, §3 'Theoretical foundation', Eq. 3 and Eq. 5",
    statement="under Eq. 3, client i in T_1 using mu_hat_T1 = sum_{j in T_1} (n_j/n_T1) "
    "mu_hat_j has e(mu_hat_T1) = sum_{j in T_1, j != i} (n_j/n_T1)^2 (sigma^2/n_j + 2 tau^2) + "
    "(n_i/n_T1)^2 sigma^2/n_i",
    holds=False,
    perturb={"formula": exact_errors},
)
def _eq5_printed(formula: Callable[..., dict[str, float]] = working_errors) -> Verdict:
    return _mse_check("cluster", formula)


@proposition(
    "ipfl.eq5.corrected",
    source=f"{PAPER}, §3, Eq. 5 recomputed under Eq. 3: the mu_j - mu_i share mu_i",
    statement="under Eq. 3, e(mu_hat_T1) = sum_{j in T_1} w_j^2 sigma^2/n_j + "
    "tau^2 (sum_{j != i} w_j^2 + (1 - w_i)^2), w_j = n_j/n_T1 (exact_errors)",
    perturb={"formula": working_errors},
)
def _eq5_corrected(formula: Callable[..., dict[str, float]] = exact_errors) -> Verdict:
    return _mse_check("cluster", formula)


@proposition(
    "ipfl.fl_error",
    source=f"{PAPER}, §3, the FL error between Eq. 4 and Eq. 5 (unnumbered), under Eq. 3",
    statement="under Eq. 3, FedAvg's mu_hat_FL = sum_j (n_j/n) mu_hat_j has e(mu_hat_FL) = "
    "(sum_{j in T_2} (n_j/n)(beta_2 - beta_1))^2 + sum_{j != i} (n_j/n)^2 (sigma^2/n_j + "
    "2 tau^2) + (n_i/n)^2 sigma^2/n_i",
    holds=False,
    perturb={"formula": exact_errors},
)
def _fl_error_printed(formula: Callable[..., dict[str, float]] = working_errors) -> Verdict:
    return _mse_check("fl", formula)


@proposition(
    "ipfl.fl_error.corrected",
    source=f"{PAPER}, §3, the FL error recomputed under Eq. 3",
    statement="under Eq. 3, e(mu_hat_FL) = (sum_{j in T_2} w_j)^2 (beta_2 - beta_1)^2 + "
    "sum_j w_j^2 sigma^2/n_j + tau^2 (sum_{j != i} w_j^2 + (1 - w_i)^2), w_j = n_j/n "
    "(exact_errors); the bias term stays as n_j -> oo, as §3 says",
    perturb={"formula": working_errors},
)
def _fl_error_corrected(formula: Callable[..., dict[str, float]] = exact_errors) -> Verdict:
    return _mse_check("fl", formula)


@cache
def cluster_error_equal() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """The cluster MSEs under the working and the hierarchical model, and the local MSE.

    Equal sizes :math:`n_0`: the cluster MSE under the working model (Eq. 6), under the hierarchical
    model Eq. 3, and the local MSE (Eq. 4).
    """
    s2, t2, n0, m1 = sp.symbols("sigma2 tau2 n0 m1", positive=True)
    return (
        _model_error("working", s2, t2, n0, m1),
        _model_error("hierarchical", s2, t2, n0, m1),
        (s2 / n0),
    )


def _model_error(model: str, s2: sp.Expr, t2: sp.Expr, n0: sp.Expr, m1: sp.Expr) -> sp.Expr:
    """Var(mu_hat_T1 - mu_i) with equal sizes n0, from the coefficients of the estimator.

    mu_hat_T1 = (1/m1) sum_j (mu_j + e_j), e_j ~ N(0, sigma^2/n0). Working model: mu_j - mu_i
    ~ N(0, 2 tau^2) independent for the m1 - 1 others. Eq. 3: mu_j = beta_1 + u_j with iid
    u_j ~ N(0, tau^2), so mu_hat_T1 - mu_i has coefficient 1/m1 on each other u_j and
    1/m1 - 1 on u_i.
    """
    w = 1 / m1
    noise = m1 * w**2 * s2 / n0
    if model == "working":
        return noise + (m1 - 1) * w**2 * 2 * t2
    if model == "hierarchical":
        return noise + t2 * ((m1 - 1) * w**2 + (w - 1) ** 2)
    raise ValueError(f"model must be 'working' or 'hierarchical', got {model!r}")


def _printed_eq6_error(s2: sp.Expr, t2: sp.Expr, n0: sp.Expr, m1: sp.Expr) -> sp.Expr:
    """Eq. 6's last form: sigma^2/(m1 n0) + 2 tau^2 (m1 - 1)/m1^2."""
    return s2 / (m1 * n0) + (m1 - 1) / m1**2 * 2 * t2


def _printed_eq6_threshold(s2: sp.Expr, n0: sp.Expr, m1: sp.Expr) -> sp.Expr:
    """Eq. 6: smaller than Eq. 4 iff tau^2 < m1 sigma^2/(2 n0)."""
    return m1 * s2 / (2 * n0)


def _hierarchical_error(s2: sp.Expr, t2: sp.Expr, n0: sp.Expr, m1: sp.Expr) -> sp.Expr:
    """Eq. 3's exact error with equal sizes."""
    return s2 / (m1 * n0) + t2 * ((m1 - 1) / m1**2 + (1 - 1 / m1) ** 2)


def _hierarchical_threshold(s2: sp.Expr, n0: sp.Expr, m1: sp.Expr) -> sp.Expr:
    """Under Eq. 3 clustering beats local training iff tau^2 < sigma^2/n0."""
    return s2 / n0


def _eq6_check(model: str, error: Formula, threshold: Formula) -> Verdict:
    """Whether ``error`` is the cluster MSE under ``model`` and beats local training as claimed.

    That is, ``error`` equals the cluster MSE and is below the local MSE exactly when tau^2 <
    ``threshold`` (m1 >= 2 clients in the cluster, all of size n0).
    """
    s2, t2, n0 = sp.symbols("sigma2 tau2 n0", positive=True)
    k = sp.Symbol("k", nonnegative=True, integer=True)
    m1 = k + 2  # m1 >= 2
    exact = _model_error(model, s2, t2, n0, m1)
    local = s2 / n0
    gap = sp.expand(sp.cancel(exact - local))  # linear in tau^2
    slope, offset = gap.coeff(t2, 1), gap.coeff(t2, 0)
    if sp.simplify(gap - slope * t2 - offset) != 0 or not sp.factor(slope).is_positive:
        raise ValueError("the cluster MSE must grow linearly in tau^2")
    root = sp.simplify(-offset / slope)
    formula_ok = sp.simplify(error(s2, t2, n0, m1) - exact) == 0
    threshold_ok = sp.simplify(threshold(s2, n0, m1) - root) == 0
    m = sp.Symbol("m1", positive=True)

    def show(expr: sp.Expr) -> sp.Expr:
        return sp.factor(expr.subs(k, m - 2))

    if formula_ok and threshold_ok:
        return proved(
            f"under the {model} model with m1 >= 2 equal clients: e_T1 = {show(exact)}; "
            f"e_T1 - sigma^2/n0 = {show(slope)} (tau^2 - {show(root)}) with a positive "
            "factor, so e_T1 < sigma^2/n0 iff tau^2 < the threshold (both directions)"
        )
    values = {s2: 1, n0: 20, k: 8}  # m1 = 10, n0 = 20, sigma = 1
    lo, hi = sorted([float(root.subs(values)), float(threshold(s2, n0, m1).subs(values))])
    tau2 = sp.nsimplify((lo + hi) / 2) if hi > lo else sp.Rational(9, 100)
    at = values | {t2: tau2}
    point = {
        "m1": 10,
        "n0": 20,
        "sigma2": 1,
        "tau2": float(tau2),
        "printed_error": float(error(s2, t2, n0, m1).subs(at)),
        "exact_error": float(exact.subs(at)),
        "local_error": 1 / 20,
        "printed_threshold": float(threshold(s2, n0, m1).subs(values)),
        "exact_threshold": float(root.subs(values)),
    }
    problems = []
    if not formula_ok:
        problems.append(f"the {model} model's MSE is {show(exact)}, not the stated formula")
    if not threshold_ok:
        problems.append(
            f"the MSE drops below sigma^2/n0 iff tau^2 < {show(root)}, not below the stated "
            "threshold"
        )
    return refuted("; ".join(problems), point)


@proposition(
    "ipfl.eq6",
    source=f"{PAPER}, §3 'Theoretical foundation', Eq. 3-6",
    statement="under the model Eq. 3 (mu_j ~ N(beta_1, tau^2) for j in T_1), with equal sizes "
    "n0 the cluster estimate's MSE is e(mu_hat_T1) = sigma^2/(m1 n0) + 2 tau^2 (m1 - 1)/m1^2 "
    "(Eq. 6), smaller than the local sigma^2/n0 (Eq. 4) iff tau^2 < m1 sigma^2/(2 n0)",
    holds=False,
    perturb={"error": _hierarchical_error, "threshold": _hierarchical_threshold},
)
def _eq6_printed(
    error: Formula = _printed_eq6_error, threshold: Formula = _printed_eq6_threshold
) -> Verdict:
    return _eq6_check("hierarchical", error, threshold)


@proposition(
    "ipfl.eq6.corrected",
    source=f"{PAPER}, §3, Eq. 6 recomputed under Eq. 3 (the means mu_j - mu_i of a cluster "
    "share mu_i; Monte Carlo in ipfl.gaussian.monte_carlo)",
    statement="under Eq. 3 with m1 >= 2 equal clients of size n0: e(mu_hat_T1) = "
    "sigma^2/(m1 n0) + tau^2 ((m1 - 1)/m1^2 + (1 - 1/m1)^2), smaller than sigma^2/n0 iff "
    "tau^2 < sigma^2/n0, whatever m1",
    perturb={"threshold": _printed_eq6_threshold},
)
def _eq6_corrected(
    error: Formula = _hierarchical_error, threshold: Formula = _hierarchical_threshold
) -> Verdict:
    return _eq6_check("hierarchical", error, threshold)


@proposition(
    "ipfl.eq6.working",
    source=f"{PAPER}, §3, Eq. 4-6; reading: the '2 tau^2' of the FL error and Eq. 5 treats the "
    "other clients' mu_j - mu_i as independent N(0, 2 tau^2), which makes the printed formulas "
    "exact. The text states only the marginal mu_j | mu_i ~ N(mu_i, 2 tau^2) (flat prior on "
    "beta_1); the other readings, Eq. 3 with beta_1 fixed or that flat prior, both make the "
    "mu_j - mu_i share mu_i - beta_1 (covariance tau^2) and give ipfl.eq6.corrected",
    statement="if the mu_j - mu_i (j in T_1, j != i) are independent N(0, 2 tau^2), Eq. 6 "
    "holds as printed: e = sigma^2/(m1 n0) + 2 tau^2 (m1 - 1)/m1^2 < sigma^2/n0 iff "
    "tau^2 < m1 sigma^2/(2 n0) (m1 >= 2)",
    kind=Kind.READING,
    perturb={"threshold": _hierarchical_threshold},
)
def _eq6_working(
    error: Formula = _printed_eq6_error, threshold: Formula = _printed_eq6_threshold
) -> Verdict:
    return _eq6_check("working", error, threshold)


def _gaussian_settings() -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(3)
    for k in range(6):
        m = int(rng.integers(4, 11))
        yield {
            "sizes": rng.integers(5, 41, size=m).astype(np.float64),
            "m1": int(rng.integers(2, m)),
            "sigma": float((0.5, 1.0, 2.0)[k % 3]),
            "tau_w": float((0.1, 0.3, 1.0)[k % 3]),
            "gap": float((0.0, 0.8, 2.0)[(k + 1) % 3]),
            "seed": 100 + k,
        }


@proposition(
    "ipfl.gaussian.monte_carlo",
    source=f"{PAPER}, §3, Eq. 3-5 and the unnumbered FL error between them",
    statement="the closed forms of the local, FL and cluster MSEs match Monte Carlo: the "
    "paper's formulas (working_errors) under independent mu_j - mu_i ~ N(., 2 tau^2), and "
    "exact_errors under Eq. 3 as printed",
    kind=Kind.DERIVED,
    perturb={"hierarchical": working_errors},
)
def _gaussian_mc(
    working: Callable[..., dict[str, float]] = working_errors,
    hierarchical: Callable[..., dict[str, float]] = exact_errors,
) -> Verdict:
    points = []
    for setting in _gaussian_settings():
        args = (setting["sizes"], setting["m1"], setting["sigma"], setting["tau_w"])
        rng = np.random.default_rng(setting["seed"])
        for is_working, formula in ((True, working), (False, hierarchical)):
            mc = _simulate(*args, setting["gap"], 40_000, rng, working=is_working)
            closed = formula(*args, setting["gap"])
            for key, (mean, se) in mc.items():
                points.append(
                    {
                        "model": "working" if is_working else "Eq. 3",
                        "estimator": key,
                        "m": int(setting["sizes"].size),
                        "m1": setting["m1"],
                        "mc": mean,
                        "se": se,
                        "formula": closed[key],
                    }
                )
    return on_points(
        lambda mc, se, formula, **_: abs(mc - formula) <= 5 * se,
        points,
        "|Monte Carlo MSE - closed form| <= 5 standard errors, local, FL and cluster MSE, both "
        "models",
        drawn="6 seeded settings (seed 3: 4-10 clients of 5-40 samples, 2..m-1 in T_1, "
        "sigma 0.5/1/2, tau 0.1/0.3/1, beta gap 0/0.8/2), each simulated with 40 000 draws per "
        "model (seeds 100-105); one point = one (setting, model, estimator)",
    )
