"""The registered statement about the many-client limit of :mod:`econ.privacy.many_clients`.

Theorem 4.11 of Tsoy et al. (2024) for DP mean estimation: with a noise level fixed from the
smallest weight, the symmetric protocol is mutually beneficial for every N beyond some
:math:`N_1` (which :func:`~econ.privacy.many_clients.min_clients` computes).
"""

from __future__ import annotations

import sympy as sp

from econ.privacy._checks import all_hold, identity, proves_positive
from econ.propositions import Verdict, proposition

#: Any admissible noise of Appendix B.14: alpha^2 = (1 + v) kappa^2 rho/lambda_min, v > 0.
_ANY_FACTOR = 1 + sp.Symbol("v", positive=True)


@proposition(
    "tsoy.thm4.11",
    source="Tsoy et al. (2024), section 4.4, Theorem 4.11 (proof in Appendix B.14)",
    statement=(
        "DP mean instance: for weights lambda from a finite set with minimum lambda_min > 0, the "
        "symmetric protocol with any alpha of Appendix B.14's construction, leak^2 = kappa^2/"
        "alpha^2 < min_j lambda_j/rho (u(0, leak) > u(err^0, 0)), i.e. every alpha^2 = (1 + v) "
        "kappa^2 rho/lambda_min, v > 0, is mutually beneficial for every N >= some N_1 (which "
        "depends on v)"
    ),
    perturb={"alpha2_factor": 1},
)
def _thm411(alpha2_factor: int | sp.Expr = _ANY_FACTOR) -> Verdict:
    """The gain grows in N towards lambda/rho - kappa^2/alpha^2 > 0 for every lambda >= lambda_min.

    The default factor 1 + v, v > 0 symbolic, is the whole open set of noise levels the proof
    of Appendix B.14 admits, so the check covers every alpha it may choose.
    """
    lam, lam_min, rho, kappa, n, u = sp.symbols("lambda lambda_min rho kappa N u", positive=True)
    alpha2 = alpha2_factor * kappa**2 * rho / lam_min
    beta = 1 / (1 / rho + alpha2)
    gain = lam / rho - lam / ((n - 1) * beta + rho) - kappa**2 / alpha2
    limit = sp.limit(gain, n, sp.oo)
    return all_hold(
        [
            identity(
                sp.diff(gain, n) - lam * beta / ((n - 1) * beta + rho) ** 2,
                "d gain/dN - lambda beta/((N-1) beta + rho)^2",
            ),
            proves_positive(lam * beta / ((n - 1) * beta + rho) ** 2, "d gain/dN"),
            identity(
                limit - (lam / rho - kappa**2 / alpha2), "lim gain - (lambda/rho - kappa^2/alpha^2)"
            ),
            lambda: proves_positive(limit.subs(lam, lam_min), "limit of the gain at lambda_min"),
            lambda: proves_positive(
                limit.subs(lam, lam_min * (1 + u)),
                "limit of the gain at lambda = lambda_min (1 + u)",
            ),
        ],
        "each client's gain increases in N to a positive limit, so finitely many weights all "
        "gain beyond the largest of their crossing points N_1",
    )
