r"""The N → ∞ limit (Tsoy et al. 2024, section 4.4, Theorem 4.11), made concrete for DP mean estimation.

For the symmetric protocol with a fixed noise level α (β = 1/(1/ρ + α²)) the gain of a client
with weight λ is

.. math::

    u_N - u^0 = \frac{\lambda}{\rho} - \frac{\lambda}{(N-1)\beta + \rho} - \frac{\kappa^2}{\alpha^2},

increasing in N with limit :math:`\lambda/\rho - \kappa^2/\alpha^2`. So for a finite set of
weights every client gains for all :math:`N \ge N_1` iff :math:`\alpha^2 > \kappa^2\rho/\lambda`
for the smallest λ, with

.. math:: N_1 = \max_\lambda \Big\lceil 1 + \Big(\frac{\lambda}{\lambda/\rho - \kappa^2/\alpha^2} - \rho\Big)\Big/\beta \Big\rceil .
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike

from econ.privacy._checks import all_hold, identity, proves_positive
from econ.privacy.client_model import client_weights
from econ.privacy.models import DPMean
from econ.propositions import Verdict, proposition
from econ.validation import positive


def min_clients(model: DPMean, lam: ArrayLike, alpha: float) -> int | None:
    """Theorem 4.11: the smallest N_1 >= 2 such that the symmetric protocol with noise ``alpha``
    is mutually beneficial for every N >= N_1 and every weight in ``lam``; ``None`` if no N works.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.4, Theorem 4.11 (N_1 made explicit for DP mean estimation,
    derived here; registered as `tsoy.thm4.11`).

    Examples
    --------
    >>> from econ.privacy.models import DPMean
    >>> min_clients(DPMean(), [0.5, 1.0], 2.0)
    5
    """
    lam_ = np.unique(client_weights(lam))
    a = float(positive("alpha", alpha))
    rho, kappa = float(model.rho(1)[0]), float(model.kappa(1)[0])
    margin = lam_ / rho - kappa**2 / a**2
    if np.any(margin <= 0):
        return None
    beta = 1 / (1 / rho + a**2)
    need = 1 + (lam_ / margin - rho) / beta
    return int(max(2, np.ceil(np.max(need) - 1e-12)))


def symmetric_gain(model: DPMean, lam: ArrayLike, alpha: float, n_clients: int) -> np.ndarray:
    """Gains of clients with weights ``lam`` in a symmetric protocol of ``n_clients`` clients with noise ``alpha``.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.1, Theorem 4.1 and Eq. (1), symmetric protocol p^sym of §4.4.

    Examples
    --------
    >>> from econ.privacy.models import DPMean
    >>> symmetric_gain(DPMean(), [0.5, 1.0], 2.0, 5).round(4)
    array([0.0336, 0.2558])
    """
    lam_ = client_weights(lam)
    beta = 1 / (1 / float(model.rho(1)[0]) + float(positive("alpha", alpha)) ** 2)
    return np.array([model.gain(np.full(n_clients, beta), np.full(n_clients, x))[0] for x in lam_])


@proposition(
    "tsoy.thm4.11",
    source="Tsoy et al. (2024), section 4.4, Theorem 4.11 (proof in Appendix B.14)",
    statement=(
        "DP mean instance: for weights lambda from a finite set with minimum lambda_min > 0, the "
        "symmetric protocol with alpha^2 = 2 kappa^2 rho/lambda_min is mutually beneficial for "
        "every N >= some N_1"
    ),
    perturb={"alpha2_factor": sp.Rational(1, 2)},
)
def _thm411(alpha2_factor: int | sp.Expr = 2) -> Verdict:
    """The gain grows in N towards lambda/rho - kappa^2/alpha^2 > 0 for every lambda >= lambda_min."""
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
            lambda: proves_positive(
                limit.subs(lam, lam_min * (1 + u)),
                "limit of the gain at lambda = lambda_min (1 + u)",
            ),
        ],
        "each client's gain increases in N to a positive limit, so finitely many weights all "
        "gain beyond the largest of their crossing points N_1",
    )
