"""Privacy-accuracy trade-offs in federated learning (Tsoy et al., AISTATS 2024).

The paper's authors: Tsoy, Mihalkova, Todorova and Konstantinov.

Modules:

``symbolic``       every closed form once, as a sympy expression (β-parametrisation);
``conversions``    α <-> β <-> ε, and (ε, δ) through the analytic Gaussian mechanism;
``accountants``    (ε, δ) through dp-accounting's PLD or RDP accountant (optional extra);
``mechanisms``     the privacy constants κ (Gaussian mechanism, shuffled DP-SGD);
``sgd``            step sizes, rounds and error bound of Algorithm 1;
``models``         DP mean, DP SGD and Bayesian mean estimation for heterogeneous clients;
``client_model``   what the models share: clients' weights and data, formula evaluation;
``empirical``      clients of a measured (noise, ε, accuracy) curve of DP-SGD training;
``monotone``       monotone fits of measured curves (isotonic regression, PCHIP);
``existence``      Theorems 4.2, 4.5 / Corollary 4.6 and 4.9, and the scan of measured clients;
``symmetric``      Theorems 5.1-5.4 (corrected forms);
``families``       the paper's one-parameter families and its grid scan;
``optimal``        optimal protocols: the result, the entry point, measured clients;
``optimal_dp``     the DP models' optimal protocols: exact 1-D solvers, cvxpy programs;
``optimal_bayes``  the Bayesian model's optimal protocols: certified search of Γ, SLSQP;
``leakage_utility`` the alternative utility -leak - λ err² of Appendix C;
``many_clients``   the N -> infinity limit (Theorem 4.11);
``effectiveness``  protocol effectiveness against heterogeneity (Figure 1), with the exact optimum.
"""

from econ.privacy.empirical import Empirical
from econ.privacy.existence import Existence, exists
from econ.privacy.models import DPSGD, MODELS, Bayes, DPMean
from econ.privacy.optimal import (
    SharingProtocol,
    family_protocol,
    max_accuracy_totals,
    optimal_protocol,
)

__all__ = [
    "DPSGD",
    "MODELS",
    "Bayes",
    "DPMean",
    "Empirical",
    "Existence",
    "SharingProtocol",
    "exists",
    "family_protocol",
    "max_accuracy_totals",
    "optimal_protocol",
]
