"""IP-FL's theory, checkable: the Gaussian model of §3, Proposition 1's Lloyd process, the
Shapley approximation of App. H, and the token ledger's closed forms (Khan et al., arXiv
2304.07514 v4; readings of ``spec/ipfl.md`` §3 and §7).

Every statement is registered under ``ipfl.`` in :mod:`econ.propositions`; a printed
statement that fails carries ``holds=False`` and its fix the suffix ``.corrected``.
"""

from __future__ import annotations

import itertools
import math
from functools import cache

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ.propositions import Verdict, checked, is_zero, on_points, proposition, refuted
from econ.validation import positive_int
from games.ipfl import (
    IPFLConfig,
    Ledger,
    collect,
    literal_reward_total,
    net_token_change_expr,
    opt_outs,
    rank_rewards,
    reward,
    shapley_first_order,
)

__all__ = [
    "cluster_error_equal",
    "exact_errors",
    "lloyd",
    "working_errors",
]

FloatArray = NDArray[np.float64]

# --------------------------------------------------------------------------- §3 Gaussian model


def working_errors(
    sizes: ArrayLike, m1: int, sigma: float, tau_w: float, beta_gap: float
) -> dict[str, float]:
    """MSE of client 0 (in group :math:`T_1 = \\{0..m_1-1\\}`) under the paper's working model
    (independent :math:`\\mu_j | \\mu_i \\sim N(\\mu_i, 2\\tau^2)`), Eq. 4, the FL formula and Eq. 5:

    .. math::

        e_{loc} &= \\sigma^2/n_i, \\\\
        e_{FL} &= \\Big(\\sum_{j\\in T_2} \\tfrac{n_j}{n} (\\beta_2-\\beta_1)\\Big)^2
                 + \\sum_{j\\ne i} \\big(\\tfrac{n_j}{n}\\big)^2 (\\sigma^2/n_j + 2\\tau^2)
                 + \\big(\\tfrac{n_i}{n}\\big)^2 \\sigma^2/n_i, \\\\
        e_{T_1} &= \\sum_{j\\in T_1, j\\ne i} \\big(\\tfrac{n_j}{n_{T_1}}\\big)^2
                 (\\sigma^2/n_j + 2\\tau^2) + \\big(\\tfrac{n_i}{n_{T_1}}\\big)^2 \\sigma^2/n_i.
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
    """The same MSEs under the literal hierarchical model (3) (spec §3.1, discrepancy #27):

    .. math::

        e = \\Big(\\sum_{j\\in T_2} w_j\\Big)^2(\\beta_2-\\beta_1)^2 + \\sum_j w_j^2\\sigma^2/n_j
            + \\tau^2\\Big[\\sum_{j\\ne i} w_j^2 + (1-w_i)^2\\Big].
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
) -> dict[str, float]:
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
    return {
        "local": float(np.mean((means[:, 0] - target) ** 2)),
        "fl": float(np.mean((means @ w - target) ** 2)),
        "cluster": float(np.mean((means[:, :m1] @ w1 - target) ** 2)),
    }


@cache
def cluster_error_equal() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """Equal sizes :math:`n_0`: the cluster MSE under the working model (Eq. 6, with the
    corrected :math:`1/m_1^2`), under the hierarchical model, and the local MSE."""
    s2, t2, n0, m1 = sp.symbols("sigma2 tau2 n0 m1", positive=True)
    working = s2 / (m1 * n0) + 2 * t2 * (m1 - 1) / m1**2
    exact = s2 / (m1 * n0) + t2 * ((m1 - 1) / m1**2 + (1 - 1 / m1) ** 2)
    return working, exact, s2 / n0


@proposition(
    "ipfl.eq6",
    source="Khan et al. (IP-FL) §3, Eq. 6",
    statement="equal sizes: e_T1 < sigma^2/n0 iff tau^2 < m1 sigma^2/(2 n0) (working model)",
)
def _eq6() -> Verdict:
    working, _, local = cluster_error_equal()
    s2, t2, n0, m1 = sp.symbols("sigma2 tau2 n0 m1", positive=True)
    gap = sp.expand((working - local) * m1 / 2 / (m1 - 1))  # positive factor
    return is_zero(
        gap - (t2 - m1 * s2 / (2 * n0)) / m1, "(e_T1 - e_loc) m1/(2(m1-1)) vs tau^2 - m1 s^2/(2 n0)"
    )


@proposition(
    "ipfl.eq6.hierarchical",
    source="Khan et al. (IP-FL) §3, Eq. 3 and 6; spec §7 #27",
    statement="under the literal model (3) the benefit condition is tau^2 < sigma^2/n0, not "
    "tau^2 < m1 sigma^2/(2 n0)",
)
def _eq6_hierarchical() -> Verdict:
    _, exact, local = cluster_error_equal()
    s2, t2, n0, m1 = sp.symbols("sigma2 tau2 n0 m1", positive=True)
    verdict = is_zero(sp.expand((exact - local) * m1 / (m1 - 1)) - (t2 - s2 / n0), "e_T1 - e_loc")
    if not verdict.holds:
        return verdict
    point = {"m1": 10, "n0": 20, "sigma": 1.0, "tau_w": 0.3}
    w = working_errors([20] * 10, 10, 1.0, 0.3, 0.0)["cluster"]
    e = exact_errors([20] * 10, 10, 1.0, 0.3, 0.0)["cluster"]
    if not (w < 1 / 20 < e):
        return refuted("the two conditions agree at the spec's point", point)
    return verdict


@proposition(
    "ipfl.gaussian.monte_carlo",
    source="Khan et al. (IP-FL) §3, Eq. 4-5 and the FL error; spec T-G1, T-G2",
    statement="the error formulas match Monte Carlo within 2% (working and hierarchical models)",
)
def _gaussian_mc() -> Verdict:
    rng = np.random.default_rng(3)
    sizes = rng.integers(10, 40, size=8).astype(np.float64)
    m1, sigma, tau_w, gap = 5, 1.0, 0.3, 0.8
    points = []
    for working, formula in ((True, working_errors), (False, exact_errors)):
        mc = _simulate(sizes, m1, sigma, tau_w, gap, 200_000, rng, working=working)
        exact = formula(sizes, m1, sigma, tau_w, gap)
        points += [
            {
                "model": "working" if working else "hierarchical",
                "estimator": key,
                "mc": mc[key],
                "formula": exact[key],
            }
            for key in exact
        ]
    return on_points(
        lambda model, estimator, mc, formula: abs(mc - formula) <= 0.02 * formula,
        points,
        "relative error <= 2% for local, FL and cluster MSE under both models",
    )


# --------------------------------------------------------------------------- Proposition 1


def lloyd(
    means: ArrayLike, sizes: ArrayLike, init: ArrayLike, max_iter: int = 100
) -> tuple[NDArray[np.int64], FloatArray]:
    """The Lloyd process of Prop. 1's proof (App. I) on client means :math:`\\hat\\mu_i`:
    assign each client to the nearest centre, set each centre to the size-weighted mean of
    its clients; returns the final assignment and the objective after every iteration
    (:math:`\\sum_k \\sum_{i\\in C_k} n_i (\\beta_k - \\hat\\mu_i)^2`, the within-cluster sum
    over samples up to a constant)."""
    mu = np.asarray(means, dtype=np.float64)
    n = np.asarray(sizes, dtype=np.float64)
    centres = np.asarray(init, dtype=np.float64).copy()
    positive_int("max_iter", max_iter)
    objective = []
    labels = np.full(mu.size, -1)
    for _ in range(max_iter):
        new = np.argmin((mu[:, None] - centres[None, :]) ** 2, axis=1)
        objective.append(float(np.sum(n * (mu - centres[new]) ** 2)))
        if np.array_equal(new, labels):
            break
        labels = new
        for k in range(centres.size):
            members = labels == k
            if members.any():
                centres[k] = np.sum(n[members] * mu[members]) / n[members].sum()
    return labels, np.array(objective)


@proposition(
    "ipfl.prop1.lloyd",
    source="Khan et al. (IP-FL) Prop. 1, proof part 1 (App. I); spec T-P1a",
    statement="the Lloyd process converges with a non-increasing objective and recovers two "
    "well-separated Gaussian groups exactly",
)
def _prop1() -> Verdict:
    points = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        m, n0, sigma, tau_w = 20, 30, 1.0, 0.1
        truth = np.arange(m) >= m // 2
        mu = np.where(truth, 3.0, 0.0) + rng.normal(0, tau_w, m)
        means = mu + rng.normal(0, sigma / math.sqrt(n0), m)
        labels, objective = lloyd(means, np.full(m, n0), rng.choice(means, 2, replace=False))
        purity = max(np.mean(labels == truth), np.mean(labels != truth))
        points.append({"seed": seed, "objective": objective, "purity": purity})
    return on_points(
        lambda seed, objective, purity: bool(np.all(np.diff(objective) <= 1e-12)) and purity == 1.0,
        points,
        "objective non-increasing, assignments fixed, purity 1.0",
    )


# --------------------------------------------------------------------------- App. H Shapley


def _logistic_problem(rng: np.random.Generator, n_clients: int, dim: int) -> tuple:
    w_true = rng.normal(size=dim)
    sets = []
    for c in range(n_clients):
        x = rng.normal(size=(60, dim))
        y = (x @ w_true + rng.normal(0, 0.1 + 2.0 * c, 60) > 0).astype(np.float64)
        sets.append((x, y))
    xh = rng.normal(size=(400, dim))
    yh = (xh @ w_true > 0).astype(np.float64)
    return sets, (xh, yh)


def _loss_grad(w: FloatArray, x: FloatArray, y: FloatArray) -> tuple[float, FloatArray]:
    z = x @ w
    p = 1 / (1 + np.exp(-z))
    loss = float(np.mean(np.logaddexp(0, z) - y * z))
    return loss, x.T @ (p - y) / y.size


def _local(w: FloatArray, x: FloatArray, y: FloatArray, steps: int, lr: float) -> FloatArray:
    for _ in range(steps):
        w = w - lr * _loss_grad(w, x, y)[1]
    return w


def _spearman(a: FloatArray, b: FloatArray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def _shapley_case(seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    m, dim = 6, 20
    sets, (xh, yh) = _logistic_problem(rng, m, dim)
    w0 = np.zeros(dim)
    updates = np.stack([_local(w0, x, y, 5, 0.5) for x, y in sets])
    lam = np.full(m, 1.0 / m)
    w_m = lam @ updates
    g = _loss_grad(w_m, xh, yh)[1]
    psi = shapley_first_order(g, updates, w_m, lam)

    def value(coalition: tuple[int, ...]) -> float:
        if not coalition:
            return 0.0
        wc = updates[list(coalition)].mean(axis=0)
        return _loss_grad(w0, xh, yh)[0] - _loss_grad(wc, xh, yh)[0]

    exact = np.zeros(m)
    for i in range(m):
        others = [j for j in range(m) if j != i]
        for size in range(m):
            weight = math.factorial(size) * math.factorial(m - size - 1) / math.factorial(m)
            for coalition in itertools.combinations(others, size):
                exact[i] += weight * (value((*coalition, i)) - value(coalition))
    return {
        "seed": seed,
        "zero_sum": float(abs(psi.sum()) / np.abs(psi).sum()),
        "spearman": _spearman(psi, exact),
    }


@proposition(
    "ipfl.shapley.zero_sum",
    source="Khan et al. (IP-FL) App. H, Eq. 16 and Remark 8; spec T-S1",
    statement="under normalised FedAvg the first-order contributions sum to zero",
)
def _shapley_zero_sum() -> Verdict:
    points = []
    for seed in range(50):
        rng = np.random.default_rng(seed)
        n, d = int(rng.integers(2, 12)), int(rng.integers(1, 40))
        updates = rng.normal(size=(n, d))
        lam = rng.dirichlet(np.ones(n))
        psi = shapley_first_order(rng.normal(size=d), updates, lam @ updates, lam)
        points.append({"seed": seed, "ratio": abs(psi.sum()) / max(np.abs(psi).sum(), 1e-300)})
    return on_points(lambda seed, ratio: ratio < 1e-10, points, "|sum psi| < 1e-10 sum |psi|")


@proposition(
    "ipfl.shapley.ranks",
    source="Khan et al. (IP-FL) App. H, Eq. 16 vs Eq. 20; spec T-S2",
    statement="on logistic regression with graded label noise, the first-order contributions "
    "rank clients like the exact Shapley value (Spearman >= 0.8)",
)
def _shapley_ranks() -> Verdict:
    points = [_shapley_case(seed) for seed in range(3)]
    return on_points(
        lambda seed, zero_sum, spearman: spearman >= 0.8 and zero_sum < 1e-10,
        points,
        "Spearman(psi, exact Shapley) >= 0.8",
    )


# --------------------------------------------------------------------------- the ledger


@proposition(
    "ipfl.eq13",
    source="Khan et al. (IP-FL) Eq. 13 as printed, denominator N_r(N_r+1)/2",
    statement="the rank rewards pay out exactly the pool",
    holds=False,
)
def _eq13_literal() -> Verdict:
    points = [{"n_perf": p, "n_rand": r, "pool": 10.0} for p in range(0, 6) for r in range(1, 6)]
    return on_points(
        lambda n_perf, n_rand, pool: math.isclose(literal_reward_total(n_perf, n_rand, pool), pool),
        points,
        "sum of rank * pool / (N_r(N_r+1)/2) over ranks 1..N_p+N_r equals the pool",
    )


@proposition(
    "ipfl.eq13.corrected",
    source="Khan et al. (IP-FL) Eq. 13 with the denominator n(n+1)/2; spec §7 #12",
    statement="rank * pool / (n(n+1)/2) over ranks 1..n sums to the pool, and the net token "
    "change of rank alpha is (1-u) p (2 alpha/(n+1) - 1), summing to 0",
)
def _eq13_corrected() -> Verdict:
    alpha, n, u, p = sp.symbols("alpha n u p", positive=True)
    total = sp.summation(net_token_change_expr(), (alpha, 1, n))
    verdict = is_zero(total, "sum over alpha of net(alpha)")
    if not verdict.holds:
        return verdict
    closed = is_zero(
        net_token_change_expr() - (1 - u) * p * (2 * alpha / (n + 1) - 1), "net(alpha)"
    )
    if not closed.holds:
        return closed
    ok = all(math.isclose(rank_rewards(k, 7.0).sum(), 7.0) for k in range(1, 40))
    return verdict if ok else refuted("rank rewards miss the pool", {"pool": 7.0})


@proposition(
    "ipfl.eq2",
    source="Khan et al. (IP-FL) Eq. 2 as printed, opt-outs = sum_i H(PMA_i), H(x) = 1[x > 0]",
    statement="Eq. 2 counts the clients that opt out (PMA <= 0)",
    holds=False,
)
def _eq2_literal() -> Verdict:
    pmas = np.array([-3.0, 0.0, 2.5, 7.0, 9.0])
    printed = int(np.sum(pmas > 0))
    wanted = int(np.sum(opt_outs(pmas)))
    if printed != wanted:
        return refuted(
            "H(x) = 1[x > 0] counts satisfied clients",
            {"pma": pmas, "printed": printed, "opt_outs": wanted},
        )
    return checked("printed count equals the opt-out count", 1)


@proposition(
    "ipfl.ledger.conservation",
    source="Khan et al. (IP-FL) Eq. 9-13 under spec §1.6 readings; spec M1, M6",
    statement="a paid round (collect, refund, rewards) conserves tokens and keeps balances >= 0",
)
def _ledger_conservation() -> Verdict:
    config = IPFLConfig()
    points = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n, k = 12, 3
        ledger = Ledger(rng.integers(0, 4, n).astype(float), np.zeros(k))
        start = ledger.total
        for c in range(k):
            chosen = rng.choice(n, 5, replace=False)
            ledger, paid = collect(ledger, c, chosen, config.price)
            ledger = reward(ledger, c, paid, rng.normal(size=n), rng.integers(0, 5, n))
        points.append(
            {
                "seed": seed,
                "drift": abs(ledger.total - start),
                "min_balance": float(ledger.tokens.min()),
            }
        )
    return on_points(
        lambda seed, drift, min_balance: drift < 1e-9 and min_balance >= 0,
        points,
        "|total drift| < 1e-9 and every balance >= 0",
    )
