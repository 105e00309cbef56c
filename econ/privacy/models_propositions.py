"""The registered results about the client models of Tsoy et al. (2024).

Eqs. 1-3, Lemma B.1, Theorems 4.1, 4.7 and 4.8.

The closed forms of :mod:`econ.privacy.models` against the printed equations (eqs. 1-3 of sections
4.1-4.3 and Lemma B.1), and Monte Carlo checks of Theorems 4.1 and 4.7-4.8 on the mechanisms they
describe.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import sympy as sp

from econ.privacy import symbolic as S
from econ.privacy._checks import (
    N_SYM,
    K,
    all_hold,
    client_sum,
    identity,
    mc_verdict,
    mc_within,
    proves_positive,
)
from econ.propositions import Verdict, proposition


@proposition(
    "tsoy.eq1",
    source="Tsoy et al. (2024), section 4.1, eq. (1), and its rewriting in Appendix B.2",
    statement=(
        "DP mean: u_i - u_i^0 = -kappa^2 rho beta_i/(rho - beta_i) + lambda_i gamma_i/(rho "
        "(gamma_i + rho)), with u_i = -kappa^2/alpha_i^2 - lambda_i/(gamma_i + rho) and u_i^0 = "
        "-lambda_i/rho; it is >= 0 iff zeta_i Gamma rho - (Gamma + rho) beta_i + beta_i^2 >= 0"
    ),
    perturb={"gain": lambda b, g, r, k, la: -(k**2) * r * b / (r - b) + la * g / (g + r)},
)
def _eq1(
    gain: Callable[..., sp.Expr] = lambda b, g, r, k, la: (
        -(k**2) * r * b / (r - b) + la * g / (r * (g + r))
    ),
) -> Verdict:
    """Eq. (1) from the utility of section 4.1, Theorem 4.1 and leak = kappa/alpha."""
    printed = gain(S.beta, S.gamma, S.rho, S.kappa, S.lam)
    alpha2 = S.ALPHA2_OF_BETA.subs(S.dim, 1)
    utility = -(S.kappa**2) / alpha2 - S.lam / (S.gamma + S.rho)
    alone = sp.limit(utility.subs(S.gamma, 0), S.beta, 0)  # every alpha_k -> infinity
    q = S.ZETA * (S.gamma + S.beta) * S.rho - (S.gamma + S.beta + S.rho) * S.beta + S.beta**2
    factor = S.rho * (S.gamma + S.rho) * (S.rho - S.beta) / (S.lam + S.kappa**2 * S.rho**2)
    return all_hold(
        [
            identity(alone + S.lam / S.rho, "u_i^0 (all alpha_k -> infinity) + lambda/rho"),
            identity(utility - alone - printed, "u_i - u_i^0 - eq. (1)"),
            identity(q / factor - printed, "q_i / (positive factor) - eq. (1)"),
        ],
        "eq. (1) and Appendix B.2's q_i form",
    )


@proposition(
    "tsoy.eq2",
    source="Tsoy et al. (2024), section 4.2, eq. (2)",
    statement=(
        "DP SGD: with u_i = -kappa^2/alpha_i^2 - lambda_i/(L mu Gamma) and u_i^0 = "
        "-lambda_i/(L mu rho), u_i >= u_i^0 iff psi_i (1 - rho/Gamma) >= beta_i/(rho - beta_i), "
        "psi_i = lambda_i/(L mu d kappa^2 rho^2)"
    ),
    perturb={"rhs": lambda b, r: b / (r + b)},
)
def _eq2(
    lhs: Callable[..., sp.Expr] = lambda psi, r, big_gamma: psi * (1 - r / big_gamma),
    rhs: Callable[..., sp.Expr] = lambda b, r: b / (r - b),
) -> Verdict:
    """u_i - u_i^0 = kappa^2 d rho (lhs - rhs), and kappa^2 d rho > 0."""
    big_gamma = S.gamma + S.beta
    utility = -(S.kappa**2) / S.ALPHA2_OF_BETA - S.lam / (S.L_smooth * S.mu_sc * big_gamma)
    alone = -S.lam / (S.L_smooth * S.mu_sc * S.rho)
    form = S.kappa**2 * S.dim * S.rho * (lhs(S.PSI, S.rho, big_gamma) - rhs(S.beta, S.rho))
    return identity(utility - alone - form, "u_i - u_i^0 - kappa^2 d rho (lhs - rhs) of eq. (2)")


@proposition(
    "tsoy.eq3",
    source="Tsoy et al. (2024), section 4.3, eq. (3), from Theorems 4.7 and 4.8",
    statement=(
        "Bayes: with leak_i^2 = S - E(reconstruction MSE), u_i >= u_i^0 = -lambda_i/(rho+tau) iff "
        "(rho - beta_i)^2/((Gamma + tau) rho^2) - beta_i/rho^2 - lambda_i/(gamma_i + rho + tau) "
        ">= 1/tau - lambda_i/(rho + tau)"
    ),
    perturb={
        "p_minus": lambda b, g, r, t: (r - b) ** 2 / ((g + t) * r**2) - b / r**2,
    },
)
def _eq3(
    p_minus: Callable[..., sp.Expr] = lambda b, g, r, t: (
        (r - b) ** 2 / ((g + b + t) * r**2) - b / r**2
    ),
) -> Verdict:
    """Theorem 4.8's P_i at alpha(beta), leak^2 = sigma^2 + 1/tau - E(recon)/n, u^0 as beta -> 0."""
    n, sigma2 = sp.symbols("n sigma2", positive=True)
    p_i = S.BAYES_P.subs(S.alpha2, S.ALPHA2_OF_BETA.subs(S.dim, 1))
    recon = sigma2 * (n - 1) + n * p_i  # Theorem 4.8
    leak2 = (sigma2 + 1 / S.tau - recon / n).subs(sigma2, n / S.rho)
    utility = -leak2 - S.lam / (S.gamma + S.rho + S.tau)  # Theorem 4.7
    alone = sp.limit(utility.subs(S.gamma, 0), S.beta, 0)
    lhs = p_minus(S.beta, S.gamma, S.rho, S.tau) - S.lam / (S.gamma + S.rho + S.tau)
    rhs = 1 / S.tau - S.lam / (S.rho + S.tau)
    return all_hold(
        [
            identity(alone + S.lam / (S.rho + S.tau), "u_i^0 (all beta_k -> 0) + lambda/(rho+tau)"),
            identity(utility - alone - (lhs - rhs), "u_i - u_i^0 - (lhs - rhs of eq. (3))"),
        ],
        "eq. (3) from Theorems 4.7 and 4.8",
    )


@proposition(
    "tsoy.lemmaB.1",
    source=(
        "Tsoy et al. (2024), Lemma B.1 (Appendix B.4) and the weights of Theorem 4.1 (Appendix B.1)"
    ),
    statement=(
        "for independent unbiased messages of variances v_k = 1/beta_k, the weights a_k = "
        "beta_k/Gamma minimise sum_k a_k^2 v_k subject to sum_k a_k = 1, with minimum 1/Gamma "
        "(Var g = 1/Gamma), for every N"
    ),
    perturb={"minimum": lambda big_gamma: 2 / big_gamma},
)
def _lemma_b1(
    weights: Callable[[sp.Expr, sp.Expr], sp.Expr] = lambda beta, big_gamma: beta / big_gamma,
    minimum: Callable[[sp.Expr], sp.Expr] = lambda big_gamma: 1 / big_gamma,
) -> Verdict:
    """sum_k v_k a_k^2 = minimum + sum_k v_k (a_k - w_k)^2 on the constraint, for symbolic N."""
    v, a = sp.IndexedBase("v", positive=True), sp.IndexedBase("a", real=True)
    big_gamma = sp.Symbol("Gamma", positive=True)
    w = weights(1 / v[K], big_gamma)
    constraint = {
        sp.Sum(a[K], (K, 1, N_SYM)): 1,
        sp.Sum(1 / v[K], (K, 1, N_SYM)): big_gamma,
    }
    decomposition = identity(
        (client_sum(v[K] * (a[K] - w) ** 2) - client_sum(v[K] * a[K] ** 2)).subs(constraint).doit()
        + minimum(big_gamma),
        "sum v_k (a_k - w_k)^2 - (sum v_k a_k^2 - minimum) at sum a = 1",
    )
    feasible = identity(
        client_sum(w).subs(constraint).doit() - 1, "sum_k w_k - 1 (the weights are feasible)"
    )
    return all_hold(
        [decomposition, feasible],
        "the objective is minimum + a sum of non-negative squares that vanishes only at a = w "
        "(Theorem 4.1's weights are the case v_i = 1/rho for the own sample mean)",
    )


#: Theorem 4.1 settings: (clients' noise levels alpha_k, samples n, support width B, data law).
_THM41_SETTINGS = (
    ((0.05, 0.1, 0.2, 0.4), 50, 2.0, "uniform"),
    ((0.0, 0.3), 10, 1.0, "two-point"),
    ((0.5, 0.5, 0.5), 20, 4.0, "uniform"),
    ((0.01, 5.0, 0.0, 0.2, 1.0), 5, 1.0, "two-point"),
    ((0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), 30, 2.0, "uniform"),
    ((2.0, 0.1), 100, 10.0, "uniform"),
    ((0.0, 10.0, 10.0), 8, 3.0, "two-point"),
    ((0.2, 0.05, 0.3, 0.1), 40, 1.0, "two-point"),
)


@proposition(
    "tsoy.thm4.1",
    source="Tsoy et al. (2024), section 4.1, Theorem 4.1 (proof in Appendix B.1)",
    statement=(
        "DP mean: the best unbiased linear predictor from D_i and the messages has "
        "E(mu_hat_i - mu)^2 = 1/(gamma_i + rho), rho = n/sigma^2, beta_k = 1/(1/rho + alpha_k^2)"
    ),
    perturb={"mse": lambda gamma, rho: 1 / (gamma + 2 * rho)},
)
def _thm41(
    mse: Callable[[float, float], float] = lambda gamma, rho: 1 / (gamma + rho),
) -> Verdict:
    """One independent Monte Carlo estimate (10 000 draws, its own seed) per setting.

    The estimator uses the weights of Lemma B.1 (``tsoy.lemmaB.1`` proves them optimal).
    """
    results = []
    for seed, (alphas, n, bound, law) in enumerate(_THM41_SETTINGS):
        rng = np.random.default_rng(4100 + seed)
        alpha, reps, mean = np.array(alphas), 10_000, 0.3
        sigma2 = bound**2 / 12 if law == "uniform" else bound**2 / 4
        rho = n / sigma2
        if law == "uniform":
            samples = rng.uniform(-bound / 2, bound / 2, (reps, alpha.size, n))
        else:
            samples = bound / 2 * rng.choice([-1.0, 1.0], (reps, alpha.size, n))
        xbar = mean + samples.mean(axis=2)
        msgs = xbar + alpha * rng.standard_normal((reps, alpha.size))
        beta = 1 / (1 / rho + alpha**2)
        gamma = beta[1:].sum()
        est = (rho * xbar[:, 0] + msgs[:, 1:] @ beta[1:]) / (gamma + rho)
        results.append(
            mc_within(
                (est - mean) ** 2, float(mse(gamma, rho)), f"setting {seed}, N = {alpha.size}"
            )
        )
    return mc_verdict(
        results,
        drawn=(
            f"{len(_THM41_SETTINGS)} fixed settings, each one estimate of 10 000 draws with its "
            "own seed, estimator weighted as in Lemma B.1: N from 2 to 8, n from 5 to 100, "
            "uniform or two-point (+-B/2, the "
            "extreme law of the support) data, noiseless (alpha = 0) and nearly silent "
            "(alpha = 10) messages included"
        ),
    )


#: Theorems 4.7/4.8 settings: (alpha_k, n, sigma, tau).
_THM47_SETTINGS = (
    ((0.3, 0.6, 1.0), 20, 1.5, 0.5),
    ((0.1, 0.1), 10, 1.0, 5.0),
    ((1.0, 0.2, 0.2, 0.2), 5, 2.0, 1.0),
    ((0.05, 3.0), 30, 0.5, 0.2),
    ((2.0, 0.5, 1.0, 0.1, 0.3), 8, 1.0, 3.0),
    ((0.4, 0.0001), 15, 3.0, 10.0),
)


@proposition(
    "tsoy.thm4.7-4.8",
    source="Tsoy et al. (2024), section 4.3, Theorems 4.7 and 4.8 (proofs in Appendices B.10, B.9)",
    statement=(
        "Bayes: the posterior mean has E(mu_hat_i - mu)^2 = 1/(gamma_i + rho + tau); the best "
        "reconstruction from the messages has E sum_j (x_hat_i^j - x_i^j)^2 = sigma^2 (n-1) + n P_i, "
        "P_i = (1/alpha_i^2 + rho (gamma_i + tau)/(gamma_i + rho + tau))^-1"
    ),
    perturb={"err2": lambda gamma, rho, tau: 1 / (gamma + rho)},
)
def _thm47_48(
    err2: Callable[[float, float, float], float] = lambda gamma, rho, tau: 1 / (gamma + rho + tau),
    recon: Callable[..., float] = lambda a2, gamma, rho, tau, n, s2: (
        s2 * (n - 1) + n / (1 / a2 + rho * (gamma + tau) / (gamma + rho + tau))
    ),
) -> Verdict:
    """Two independent estimates (Thm 4.7, Thm 4.8) per setting, 20 000 draws each."""
    results = []
    for seed, (alphas, n, sigma, tau) in enumerate(_THM47_SETTINGS):
        rng = np.random.default_rng(4700 + seed)
        alpha, reps = np.array(alphas), 20_000
        rho = n / sigma**2
        beta = 1 / (1 / rho + alpha**2)
        gamma = beta[1:].sum()
        mu = rng.standard_normal(reps) / np.sqrt(tau)
        xbar = mu[:, None] + sigma / np.sqrt(n) * rng.standard_normal((reps, alpha.size))
        within = sigma**2 * rng.chisquare(n - 1, reps)  # sum_j (x_j - xbar)^2, independent of xbar
        msgs = xbar + alpha * rng.standard_normal((reps, alpha.size))
        s0 = msgs[:, 1:] @ beta[1:]
        est = (s0 + rho * xbar[:, 0]) / (gamma + rho + tau)
        prec = 1 / alpha[0] ** 2 + rho * (gamma + tau) / (gamma + rho + tau)
        rec = (msgs[:, 0] / alpha[0] ** 2 + rho * s0 / (gamma + rho + tau)) / prec
        results.append(
            mc_within((est - mu) ** 2, float(err2(gamma, rho, tau)), f"Thm 4.7, setting {seed}")
        )
        results.append(
            mc_within(
                within + n * (rec - xbar[:, 0]) ** 2,
                float(recon(alpha[0] ** 2, gamma, rho, tau, n, sigma**2)),
                f"Thm 4.8, setting {seed}",
            )
        )
    return mc_verdict(
        results,
        drawn=(
            f"{len(_THM47_SETTINGS)} fixed settings x 2 statements, each one estimate of 20 000 "
            "Gaussian draws with its own seed: N from 2 to 5, n from 5 to 30, tau from 0.2 to 10, "
            "own noise from 1e-4 to 2"
        ),
    )


@proposition(
    "tsoy.eq1.min_noise",
    source="Tsoy et al. (2024), section 4.1, the first observation after Theorem 4.2",
    statement="eq. (1) implies rho alpha_i^2 >= kappa^2 rho^2/lambda_i (a minimal noise level)",
    perturb={"bound": lambda kappa, rho, lam: 2 * kappa**2 * rho**2 / lam},
)
def _eq1_min_noise(
    bound: Callable[..., sp.Expr] = lambda kappa, rho, lam: kappa**2 * rho**2 / lam,
) -> Verdict:
    """Eq. (1)'s minimal noise level, by a chain of inequalities.

    kappa^2/alpha^2 <= lambda gamma/(rho (gamma + rho)) < lambda/rho, so rho alpha^2 > kappa^2
    rho^2/lambda.
    """
    accuracy = S.lam * S.gamma / (S.rho * (S.gamma + S.rho))
    return all_hold(
        [
            identity(
                S.lam / S.rho - accuracy - S.lam / (S.gamma + S.rho),
                "lambda/rho - lambda gamma/(rho (gamma + rho)) - lambda/(gamma + rho)",
            ),
            proves_positive(S.lam / (S.gamma + S.rho), "lambda/(gamma + rho)"),
            # from kappa^2/alpha^2 < lambda/rho: rho alpha^2 > kappa^2 rho^2/lambda >= bound
            proves_positive(
                S.kappa**2 * S.rho**2 / S.lam - bound(S.kappa, S.rho, S.lam),
                "kappa^2 rho^2/lambda - printed bound",
                strict=False,
            ),
        ],
        "the accuracy gain of eq. (1) is below lambda/rho, so its privacy term is too",
    )
