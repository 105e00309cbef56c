r"""The registered statement about the protocol families of :mod:`econ.privacy.families`.

Section 6 of Tsoy et al. (2024) says that for DP mean estimation the personalised family
(:math:`\beta_i = \zeta_i b`) is always more beneficial than the symmetric one
(:math:`\beta_i = b`); registered as a reading, per draw and at exact scales.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp

from econ.privacy import symbolic as S
from econ.privacy._checks import all_hold, identity, proves_positive
from econ.propositions import Verdict, proposition

_n, _zm, _z, _c, _e, _b = sp.symbols("N zeta_min Z c e b", positive=True)


@proposition(
    "tsoy.sec6.dp_personalised",
    source=(
        "Tsoy et al. (2024), section 6, DP mean estimation: 'the personalized version of the "
        "protocol is always more beneficial than the symmetric version' (Figure 1, upper half)"
    ),
    statement=(
        "for every lambda, the zeta family at its largest beneficial scale reaches a total "
        "Gamma at least that of the symmetric family at its largest beneficial scale (the "
        "section's 'always', read per draw and at exact scales rather than the grid scan's)"
    ),
    kind="reading",
    perturb={
        "symmetric_scale": lambda n, zmin, rho: (n * zmin - 1) * rho / (n - 1) ** 2 * n,
    },
)
def _dp_personalised(
    symmetric_scale: Callable[..., sp.Expr] = lambda n, zmin, rho: (n * zmin - 1) * rho / (n - 1),
) -> Verdict:
    """Gamma_zeta = Z (Z-1) rho/(Z - zeta_min) grows in Z and equals Gamma_sym at Z = N zeta_min."""
    rho = S.rho
    # symmetric family beta_i = b: q_i = b ((N zeta_i - 1) rho - (N - 1) b), tightest at zeta_min
    q_sym = _zm * _n * _b * rho - (_n * _b + rho) * _b + _b**2
    bracket = identity(
        q_sym - _b * ((_n * _zm - 1) * rho - (_n - 1) * _b),
        "q_min on beta = b - b((N zeta_min - 1) rho - (N - 1) b)",
    )
    at_scale = identity(
        ((_n * _zm - 1) * rho - (_n - 1) * symmetric_scale(_n, _zm, rho)),
        "bracket at the symmetric scale (the smallest-zeta client is indifferent)",
    )
    personal = _z * (_z - 1) * rho / (_z - _zm)  # Z b_max, b_max = (Z-1) rho/(Z - zeta_min)
    # zeta_min = 1/(1 + c) < 1 and Z = zeta_min + e > zeta_min
    grows = proves_positive(
        sp.diff(personal, _z).subs({_zm: 1 / (1 + _c), _z: 1 / (1 + _c) + _e}),
        "d Gamma_zeta/dZ",
    )
    # Z >= N zeta_min; at equality (all zeta equal) both families coincide
    meet = identity(
        personal.subs(_z, _n * _zm) - _n * symmetric_scale(_n, _zm, rho),
        "Gamma_zeta at Z = N zeta_min - N b_sym",
    )
    return all_hold(
        [bracket, at_scale, grows, lambda: meet],
        "Z >= N zeta_min and Gamma_zeta increases in Z from N b_sym (when N zeta_min > 1; "
        "otherwise the symmetric family only has b = 0)",
    )
