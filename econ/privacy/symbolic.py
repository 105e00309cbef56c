r"""Every closed form of Tsoy et al. (2024) once, as a sympy expression in the β-parametrisation.

Tsoy, Mihalkova, Todorova, Konstantinov, *Provable Mutual Benefits from Federated Learning in
Privacy-Sensitive Domains*, AISTATS 2024. The numeric functions of :mod:`econ.privacy` are
derived from these expressions with :func:`sympy.lambdify`.

Client :math:`i` sends a message with Gaussian noise of standard deviation :math:`\alpha_i`;
its informativeness is

.. math::

    \beta_i = \frac{1}{1/\rho + d\,\alpha_i^2} \in [0, \rho], \qquad
    \gamma_i = \sum_{k \ne i} \beta_k, \qquad \Gamma = \sum_k \beta_k

(Theorems 4.1, 4.3 and 4.7; :math:`d = 1` in the mean settings). The utility is
:math:`u_i = -\mathrm{leak}_i^2 - \lambda_i\,\mathrm{err}_i^2` (section 3.3 of the paper).
"""

from __future__ import annotations

import sympy as sp

beta, gamma, rho, kappa, lam, tau, dim = sp.symbols(
    "beta gamma rho kappa lambda tau d", positive=True
)
L_smooth, mu_sc, n_clients, psi = sp.symbols("L mu N psi", positive=True)
alpha2 = sp.Symbol("alpha2", positive=True)  # alpha^2, the noise variance of one message

#: Informativeness of a message and its inverse (section 2.7); ``dim`` = 1 for the mean models.
BETA_OF_ALPHA2 = 1 / (1 / rho + dim * alpha2)
ALPHA2_OF_BETA = (1 / beta - 1 / rho) / dim

# --------------------------------------------------------------------------------------------
# DP mean estimation (section 4.1, Theorem 4.1, eq. 1)
# --------------------------------------------------------------------------------------------

#: Theorem 4.1: MSE of the best unbiased linear estimator of client i.
DP_MEAN_ERR2 = 1 / (gamma + rho)
#: leak^2 = kappa^2 / alpha^2 in β-space.
DP_MEAN_LEAK2 = kappa**2 * rho * beta / (rho - beta)
DP_MEAN_UTILITY = -DP_MEAN_LEAK2 - lam * DP_MEAN_ERR2
DP_MEAN_ALONE = -lam / rho
#: Eq. (1): u_i - u_i^0.
DP_MEAN_GAIN = lam * gamma / (rho * (gamma + rho)) - kappa**2 * rho * beta / (rho - beta)
#: zeta_i of Theorem 4.2.
ZETA = lam / (lam + kappa**2 * rho**2)
#: Appendix B.2: eq. (1) times a positive factor, q_i = zeta Gamma rho - (Gamma + rho) beta + beta^2.
DP_MEAN_Q = ZETA * (gamma + beta) * rho - (gamma + beta + rho) * beta + beta**2
DP_MEAN_Q_FACTOR = rho * (gamma + rho) * (rho - beta) / (lam + kappa**2 * rho**2)

# --------------------------------------------------------------------------------------------
# Algorithm 1's bound recursion (Lemma B.4); chi = mu/L
# --------------------------------------------------------------------------------------------

y_bound, chi, eta, t_round = sp.symbols("y chi eta t", positive=True)
#: Lemma B.4: one step of the bound recursion, its minimiser and the optimal recursion map h.
Y_NEXT = (1 - 2 * eta * chi * L_smooth + L_smooth * chi * L_smooth * eta**2) * y_bound + (
    L_smooth * chi * L_smooth * eta**2
)
ETA_STAR = y_bound / (L_smooth * (y_bound + 1))
H_MAP = (1 - chi * y_bound / (y_bound + 1)) * y_bound

# --------------------------------------------------------------------------------------------
# DP strongly convex SGD (section 4.2, Theorem 4.3, eq. 2); Gamma = gamma + beta
# --------------------------------------------------------------------------------------------

DP_SGD_ERR2 = 1 / (L_smooth * mu_sc * (gamma + beta))
DP_SGD_LEAK2 = kappa**2 * dim * rho * beta / (rho - beta)
DP_SGD_UTILITY = -DP_SGD_LEAK2 - lam * DP_SGD_ERR2
DP_SGD_ALONE = -lam / (L_smooth * mu_sc * rho)
DP_SGD_GAIN = DP_SGD_UTILITY - DP_SGD_ALONE
#: psi_i of Theorem 4.5.
PSI = lam / (L_smooth * mu_sc * dim * kappa**2 * rho**2)

# --------------------------------------------------------------------------------------------
# Bayesian mean estimation with reconstruction privacy (section 4.3, Theorems 4.7, 4.8, eq. 3)
# --------------------------------------------------------------------------------------------

#: Theorem 4.7: posterior-mean MSE.
BAYES_ERR2 = 1 / (gamma + rho + tau)
#: Theorem 4.8: P_i, the posterior variance of client i's sample mean given all messages.
BAYES_P = 1 / (1 / alpha2 + rho * (gamma + tau) / (gamma + rho + tau))
#: P_i - 1/rho in β-space (eq. 3); finite at beta = rho (no noise) and beta = 0 (pure noise).
BAYES_P_MINUS_INV_RHO = (rho - beta) ** 2 / ((gamma + beta + tau) * rho**2) - beta / rho**2
#: leak^2 = S - reconstruction MSE = 1/rho + 1/tau - P_i.
BAYES_LEAK2 = 1 / tau - BAYES_P_MINUS_INV_RHO
BAYES_UTILITY = -BAYES_LEAK2 - lam * BAYES_ERR2
BAYES_ALONE = -lam / (rho + tau)
#: Eq. (3) in gain form, g_i = u_i - u_i^0.
BAYES_GAIN = BAYES_UTILITY - BAYES_ALONE
#: Theorem 4.9: A_i and xi_i.
BAYES_A = lam / (rho + tau) ** 2 - 1 / tau**2
XI = BAYES_A / (BAYES_A + (rho + tau) ** 2 / (rho**2 * tau**2))

# --------------------------------------------------------------------------------------------
# Symmetric protocols (section 5): beta_i = beta for all N clients
# --------------------------------------------------------------------------------------------

_SYM = {gamma: (n_clients - 1) * beta}
#: Theorem 5.1: symmetric DP-mean gain h_lambda(beta).
DP_MEAN_SYM_GAIN = DP_MEAN_GAIN.subs(_SYM)
_ROOT = sp.sqrt((n_clients - 1) * lam)
#: Theorem 5.1 with the noise level of Appendix B.3 (docs/errata.md, tsoy.thm5.1): the optimum
#: when (N - 1) lambda > kappa^2 rho^2.
DP_MEAN_SYM_BETA = (_ROOT - kappa * rho) * rho / (_ROOT + (n_clients - 1) * kappa * rho)
DP_MEAN_SYM_ALPHA2 = n_clients * kappa / (_ROOT - kappa * rho)
DP_MEAN_SYM_BEST_GAIN = (_ROOT - kappa * rho) ** 2 / (n_clients * rho)

#: Theorem 5.2: symmetric DP-SGD gain in the psi form, and its optimum.
DP_SGD_SYM_GAIN = (
    kappa**2 * rho * dim * (psi * (1 - rho / (n_clients * beta)) - beta / (rho - beta))
)
DP_SGD_SYM_BETA = sp.sqrt(psi) * rho / (sp.sqrt(psi) + sp.sqrt(n_clients))
DP_SGD_SYM_BEST_GAIN = (
    kappa**2 * rho * dim * (psi * (n_clients - 1) / n_clients - 2 * sp.sqrt(psi / n_clients))
)
#: Theorem 5.2 in terms of L, mu, kappa, lambda (Appendix B.8; docs/errata.md, tsoy.thm5.2).
DP_SGD_SYM_ALPHA2 = sp.sqrt(L_smooth * mu_sc * n_clients) * kappa / sp.sqrt(lam * dim)

#: Theorem 5.3: symmetric Bayesian gain h_lambda(beta) (Appendix B.12).
BAYES_SYM_GAIN = BAYES_GAIN.subs(_SYM)
BAYES_SYM_GAIN_PRINTED = (
    -(n_clients - 1) * beta / (n_clients * rho**2)
    - (rho + tau / n_clients) ** 2 / (tau * rho**2)
    + lam / (rho + tau)
    + (rho + tau / n_clients) ** 2 / (n_clients * rho**2 * (beta + tau / n_clients))
    - lam / ((n_clients - 1) * (beta + (rho + tau) / (n_clients - 1)))
)
#: The thresholds of Theorem 5.3 (lambda_low, lambda_0, lambda_rho) and the bound of case 3 of
#: Appendix B.12 (lambda_cc) above which h'' < 0 on [0, rho].
BAYES_LAMBDA_LOW = (n_clients * rho + tau) ** 2 / ((n_clients - 1) ** 2 * rho**2)
BAYES_LAMBDA_0 = (
    (n_clients * rho**2 + 2 * rho * tau + tau**2)
    * (rho + tau) ** 2
    / ((n_clients - 1) * rho**2 * tau**2)
)
BAYES_LAMBDA_RHO = (n_clients * rho + tau) ** 2 / ((n_clients - 1) * rho**2)
BAYES_LAMBDA_CC = (
    (n_clients * rho + tau) ** 2 * (rho + tau) ** 3 / ((n_clients - 1) ** 2 * rho**2 * tau**3)
)

# --------------------------------------------------------------------------------------------
# Appendix C.1: u = -leak - lambda err^2 with the simplified (Dorner et al.) aggregation
# --------------------------------------------------------------------------------------------

a_var, s_var = sp.symbols("a s", positive=True)  # a = sigma^2/n, s = alpha^2 (symmetric)
#: Symmetric gain lambda (N-1)/N (a - s/N) - kappa/sqrt(s) and its maximiser s* = aN/3 (registered as tsoy.appC.1).
APPC_SYM_GAIN = lam * (n_clients - 1) / n_clients * (a_var - s_var / n_clients) - kappa / sp.sqrt(
    s_var
)
APPC_SYM_BENEFIT = lam * (n_clients - 1) / n_clients * (a_var - s_var / n_clients) * sp.sqrt(s_var)
APPC_SYM_S = a_var * n_clients / 3
