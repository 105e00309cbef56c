"""Tsoy et al. (2024), section 4: existence of a mutually beneficial protocol.

Theorems 4.2, 4.5, 4.9 and Corollary 4.6.

The tests themselves (``exists`` and the per-model functions) are in
:mod:`econ.privacy.existence`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import sympy as sp
from numpy.typing import NDArray

from econ.privacy import symbolic as S
from econ.privacy._checks import (
    N_SYM,
    K,
    all_hold,
    client_sum,
    identity,
    proves_positive,
)
from econ.privacy.existence import sgd_f_max
from econ.privacy.models import DPSGD, Bayes
from econ.propositions import Verdict, on_points, proposition, proved, refuted

Array = NDArray[np.float64]

_b, _Z, _zi, _zmin, _G, _z, _c, _s, _w = sp.symbols(
    "b Z zeta_i zeta_min Gamma z c s w", positive=True
)
_beta_k, _zeta_k = sp.IndexedBase("beta", nonnegative=True), sp.IndexedBase("zeta", positive=True)


def _family_bracket(zeta_i: sp.Expr, z: sp.Expr, b: sp.Expr) -> sp.Expr:
    """q_i / (zeta_i b) on the family beta = zeta b (Appendix B.2)."""
    return (z - 1) * S.rho - (z - zeta_i) * b


def _zeta_family_gains(zeta: list[sp.Rational], b: sp.Expr) -> list[sp.Expr]:
    """Exact q_i of every client on beta_i = zeta_i b (rho = 1)."""
    total = sum(zeta) * b
    return [z * total - (total + 1) * z * b + (z * b) ** 2 for z in zeta]


@proposition(
    "tsoy.thm4.2",
    source="Tsoy et al. (2024), section 4.1, Theorem 4.2 (proof in Appendix B.2)",
    statement=(
        "DP mean: eq. (1) has non-trivial solutions iff sum_i zeta_i > 1, zeta_i = lambda_i/"
        "(lambda_i + kappa^2 rho^2); then beta_i = zeta_i b is a solution for every "
        "b in [0, (1 - 1/sum zeta) rho]"
    ),
    perturb={"threshold": 1.5},
)
def _thm42(
    threshold: float = 1.0,
    strict: bool = True,
    upper: Callable[[sp.Expr, sp.Expr], sp.Expr] = lambda Z, rho: (1 - 1 / Z) * rho,
) -> Verdict:
    """Theorem 4.2 for every N: sums over clients are symbolic sums over k = 1..N."""
    q_k = _zeta_k[K] * _G * S.rho - (_G + S.rho) * _beta_k[K] + _beta_k[K] ** 2
    sums = {
        sp.Sum(_beta_k[K], (K, 1, N_SYM)): _G,
        sp.Sum(_zeta_k[K], (K, 1, N_SYM)): _Z,
    }
    # necessity: sum_k q_k = Gamma rho (Z - 1) - sum_k beta_k gamma_k, and beta_k gamma_k >= 0
    total = identity(
        (client_sum(q_k) - (_G * S.rho * (_Z - 1) - client_sum(_beta_k[K] * (_G - _beta_k[K]))))
        .subs(sums)
        .doit(),
        "sum_k q_k - (Gamma rho (Z - 1) - sum_k beta_k gamma_k), for symbolic N",
    )
    # with a single non-zero beta_i the sum of the beta_k gamma_k is 0 but q_i < 0: zeta_i < 1
    single = identity(
        (S.ZETA * _G * S.rho - (_G + S.rho) * S.beta + S.beta**2).subs(_G, S.beta)
        - S.beta * S.rho * (S.ZETA - 1),
        "q_i with only beta_i non-zero - beta_i rho (zeta_i - 1)",
    )
    below_one = proves_positive(1 - S.ZETA, "1 - zeta_i")
    # sufficiency: on beta = zeta b, q_i = zeta_i b ((Z-1) rho - (Z - zeta_i) b)
    family = identity(
        (_zi * _Z * _b * S.rho - (_Z * _b + S.rho) * _zi * _b + (_zi * _b) ** 2)
        - _zi * _b * _family_bracket(_zi, _Z, _b),
        "q_i on beta = zeta b - zeta_i b ((Z-1) rho - (Z - zeta_i) b)",
    )
    # the bracket falls in b; at the printed end of the range it is >= 0 (Z = 1 + z, zeta_i = 1/(1+c))
    end = upper(1 + _z, S.rho)
    at_end = proves_positive(
        _family_bracket(1 / (1 + _c), 1 + _z, end), "bracket at the end of the range", strict=False
    )
    inside = proves_positive(S.rho - end, "rho - end of the range (beta_i < rho)")
    nontrivial = proves_positive(end, "end of the range (non-trivial solutions)")
    proof = all_hold(
        [total, single, below_one, family, at_end, inside, nontrivial],
        "Theorem 4.2: a solution needs sum_k beta_k gamma_k > 0 (two non-zero beta), so "
        "0 <= sum q_k < Gamma rho (Z - 1); the zeta family solves eq. (1) on the range",
    )
    if not proof.holds:
        return proof
    # the proof gives exactly 'Z > 1'; compare the printed condition 'Z > threshold'
    if threshold > 1:
        z = sp.nsimplify((1 + threshold) / 2)
        zeta = [z / 2, z / 2]
        b = (1 - 1 / z) / 2
        gains = _zeta_family_gains(zeta, b)
        if min(gains) >= 0:
            return refuted(
                f"sum zeta = {z} <= {threshold}, yet beta = zeta b solves eq. (1) (exact q_i "
                f"{[str(g) for g in gains]} >= 0, rho = 1)",
                {"zeta": [str(x) for x in zeta], "b": str(b), "rho": 1},
            )
    if threshold < 1 or not strict:
        # a printed condition admitting Z = z <= 1: every member of the family fails at z
        z = sp.nsimplify(threshold if not strict else 1)
        zeta = [z / 2, z / 2]
        b_small = sp.Rational(1, 100)
        gains = _zeta_family_gains(zeta, b_small)
        if min(gains) < 0:
            return refuted(
                f"sum zeta = {z} passes the condition, but the family beta = zeta b fails eq. (1) "
                f"(exact q_i {[str(g) for g in gains]} at b = {b_small}, rho = 1), as a solution "
                "needs sum zeta > 1 (sum_k q_k < Gamma rho (Z - 1) <= 0)",
                {"zeta": [str(x) for x in zeta], "b": str(b_small), "rho": 1},
            )
    return proof


@proposition(
    "tsoy.thm4.2.family_max",
    source=(
        "Tsoy et al. (2024), Theorem 4.2; the family's inequality in Appendix B.2 solved for b"
    ),
    statement=(
        "the family beta_i = zeta_i b is mutually beneficial exactly for b <= b_max = "
        "(Z - 1) rho/(Z - zeta_min), where the client with the smallest zeta is indifferent"
    ),
    kind="derived",
    perturb={"b_max": lambda Z, zmin, rho: (1 - 1 / Z) * rho},
)
def _family_max(
    b_max: Callable[[sp.Expr, sp.Expr, sp.Expr], sp.Expr] = lambda Z, zmin, rho: (
        (Z - 1) * rho / (Z - zmin)
    ),
) -> Verdict:
    """q_i = zeta_i b (bracket_i), each bracket linear in b with slope -(Z - zeta_i) < 0."""
    bmax = b_max(_Z, _zmin, S.rho)
    indifferent = identity(
        _family_bracket(_zmin, _Z, bmax), "bracket of the smallest-zeta client at b_max"
    )
    # any other client: zeta_i = zeta_min + w; and Z = zeta_min + w + (others) > zeta_min + w
    # Z = 1 + z > 1 and zeta_min = Z/(1 + c) < Z parametrise the domain by positive symbols
    zmin = (1 + _z) / (1 + _c)
    others = proves_positive(
        _family_bracket(zmin + _w, 1 + _z, b_max(1 + _z, zmin, S.rho)),
        "bracket of a client with zeta_i = zeta_min + w at b_max",
        strict=False,
    )
    slope = proves_positive(
        -sp.diff(_family_bracket(_zi, _zi + _w, _b), _b), "-(d bracket/db) = Z - zeta_i"
    )
    return all_hold(
        [indifferent, others, slope],
        "b_max is the largest b at which every bracket is >= 0, for every N",
    )


_x, _p = sp.symbols("x psi", positive=True)


@proposition(
    "tsoy.thm4.5",
    source="Tsoy et al. (2024), section 4.2, Theorem 4.5 (proof in Appendix B.6)",
    statement=(
        "DP SGD: eq. (2) has a solution iff sum_i psi_i x/((psi_i + 1) x + 1) >= x + 1 "
        "has a solution x >= 0"
    ),
    perturb={"rhs": lambda x: x},
)
def _thm45(
    term: Callable[[sp.Expr, sp.Expr], sp.Expr] = lambda psi, x: psi * x / ((psi + 1) * x + 1),
    rhs: Callable[[sp.Expr], sp.Expr] = lambda x: x + 1,
) -> Verdict:
    """Both directions for every N, with x = Gamma/rho - 1 and s_i = psi_i (1 - rho/Gamma)."""
    s = _p * _x / (_x + 1)  # psi (1 - rho/Gamma) with Gamma = rho (x + 1)
    # eq. (2)_i: beta/(rho - beta) <= s  <=>  beta <= rho s/(1 + s), as rho - beta > 0
    solved = identity(
        S.beta / (S.rho - S.beta) - s - ((1 + s) * S.beta - S.rho * s) / (S.rho - S.beta),
        "beta/(rho - beta) - s - ((1 + s) beta - rho s)/(rho - beta)",
    )
    bound = identity(S.rho * s / (1 + s) - S.rho * term(_p, _x), "rho s/(1+s) - rho * term")
    # summing beta_i <= rho term_i over the clients: Gamma/rho = x + 1 <= sum term_i
    summed = identity(
        client_sum(_beta_k[K]).subs(sp.Sum(_beta_k[K], (K, 1, N_SYM)), S.rho * (_x + 1)) / S.rho
        - rhs(_x),
        "(sum_k beta_k)/rho - right-hand side, at Gamma = rho (x + 1)",
    )
    # sufficiency: beta_i = rho term_i(x*) gives Gamma >= rho (x* + 1), i.e. x >= x*, and the
    # bound rho term_i(x) grows with x, so each eq. (2)_i holds
    grows = proves_positive(sp.diff(term(_p, _x), _x), "d term/dx")
    below_rho = proves_positive(1 - term(_p, _x), "1 - term (beta_i < rho)")
    # x >= 0: if Gamma <= rho the left side of eq. (2) is <= 0 < beta_i/(rho - beta_i)
    return all_hold(
        [solved, bound, summed, grows, below_rho],
        "Theorem 4.5 both ways for every N (sum of the per-client bounds, monotone bound)",
    )


@proposition(
    "tsoy.thm4.5.concave",
    source="Tsoy et al. (2024), Theorem 4.5: the function whose maximum decides existence",
    statement=(
        "F(x) = sum_i psi_i x/((psi_i + 1) x + 1) - x - 1 is strictly concave on x >= 0, so "
        "Theorem 4.5's test is a one-dimensional concave maximisation"
    ),
    kind="derived",
    perturb={"term": lambda psi, x: psi * x**2 / ((psi + 1) * x + 1)},
)
def _thm45_concave(
    term: Callable[[sp.Expr, sp.Expr], sp.Expr] = lambda psi, x: psi * x / ((psi + 1) * x + 1),
) -> Verdict:
    """Each term has a negative second derivative for every psi > 0, x > 0."""
    return all_hold(
        [proves_positive(-sp.diff(term(_p, _x), _x, 2), "-(d^2 term/dx^2)")],
        "a sum of strictly concave terms minus a line",
    )


def _symmetric_boundary(n_clients: int, factor: float) -> Array:
    """N equal clients with psi = factor * 4N/(N-1)^2, on either side of the symmetric threshold."""
    return np.full(n_clients, factor * 4 * n_clients / (n_clients - 1) ** 2)


def _sgd_solvable(psi: Array) -> bool:
    """Theorem 4.5's inequality has a solution: max_x F(x) >= 0, by the exact 1-D maximiser."""
    return sgd_f_max(DPSGD(n_clients=psi.size), psi * _lam_of_psi(psi.size))[0] >= 0


def _lam_of_psi(n_clients: int) -> float:
    """Lambda per unit psi for the default DPSGD model with ``n_clients`` clients."""
    model = DPSGD(n_clients=n_clients)
    return 1.0 / float(model.psi(np.ones(n_clients))[0])


@proposition(
    "tsoy.cor4.6",
    source="Tsoy et al. (2024), section 4.2, Corollary 4.6 (proof in Appendix B.7)",
    statement=(
        "eq. (2) has a solution if sum psi_i/(psi_i + 2) >= 2 and only if "
        "sum psi_i/sqrt(psi_i + 1) >= 4"
    ),
    perturb={"necessary": 5.0},
)
def _cor46(sufficient: float = 2.0, necessary: float = 4.0) -> Verdict:
    """Both constants of Corollary 4.6 from Theorem 4.5.

    The sufficient one at x = 1; the necessary one by AM-GM and min 2(sqrt x + 1/sqrt x).
    """
    term = _p * _x / ((_p + 1) * _x + 1)
    at_one = identity(term.subs(_x, 1) - _p / (_p + 2), "term at x = 1 - psi/(psi+2)")
    amgm = identity(
        ((_p + 1) * _x + 1) - 2 * sp.sqrt((_p + 1) * _x) - (sp.sqrt((_p + 1) * _x) - 1) ** 2,
        "(psi+1)x + 1 - 2 sqrt((psi+1)x) - (sqrt((psi+1)x) - 1)^2",
    )
    floor = identity(
        2 * (sp.sqrt(_x) + 1 / sp.sqrt(_x)) - 4 - 2 * (sp.sqrt(_x) - 1) ** 2 / sp.sqrt(_x),
        "2(sqrt x + 1/sqrt x) - 4 - 2 (sqrt x - 1)^2/sqrt x",
    )
    proof = all_hold(
        [at_one, amgm, floor],
        "sufficient constant x + 1 = 2 at x = 1; necessary constant min_x 2(sqrt x + 1/sqrt x) = 4",
    )
    if not proof.holds:
        return proof
    if necessary > 4:  # a solvable case below the claimed necessary level
        for n in range(2, 10_000):
            psi = _symmetric_boundary(n, 1.001)
            if np.sum(psi / np.sqrt(psi + 1)) < necessary and _sgd_solvable(psi):
                return refuted(
                    f"eq. (2) is solvable, yet sum psi/sqrt(psi+1) = "
                    f"{np.sum(psi / np.sqrt(psi + 1)):.6f} < {necessary}",
                    {"N": n, "psi": float(psi[0])},
                )
    if sufficient < 2:  # an unsolvable case above the claimed sufficient level
        for n in range(2, 10_000):
            psi = _symmetric_boundary(n, 0.999)
            if np.sum(psi / (psi + 2)) >= sufficient and not _sgd_solvable(psi):
                return refuted(
                    f"sum psi/(psi+2) = {np.sum(psi / (psi + 2)):.6f} >= {sufficient}, "
                    "yet eq. (2) has no solution",
                    {"N": n, "psi": float(psi[0])},
                )
    return proof


def _bayes_points(seed: int, count: int) -> list[dict[str, object]]:
    """Random (rho, tau, lambda) with lambda_i spread around the sign change of A_i."""
    rng = np.random.default_rng(seed)
    points: list[dict[str, object]] = []
    for _ in range(count):
        rho, tau = float(np.exp(rng.uniform(-2, 2))), float(np.exp(rng.uniform(-2, 2)))
        pivot = (rho + tau) ** 2 / tau**2  # A_i = 0 here
        lam = pivot * np.exp(rng.normal(1.0, 1.5, int(rng.integers(2, 9))))
        points.append({"rho": rho, "tau": tau, "lam": lam})
    # adversarial: sums of xi just above and below 1, one client just below A_i = 0
    for rho, tau, weights in (
        (1.0, 1.0, [5.0, 5.0, 5.0, 5.0]),
        (1.0, 1.0, [14.0, 14.0]),
        (1.0, 1.0, [12.0, 12.0]),
        (2.0, 0.5, [24.0, 200.0, 200.0, 200.0]),
        (0.2, 3.0, [1.3, 50.0, 50.0]),
    ):
        points.append({"rho": rho, "tau": tau, "lam": np.array(weights)})
    return points


def _bayes_model(rho: float, tau: float) -> Bayes:
    return Bayes(n=100.0, sigma=float(np.sqrt(100.0 / rho)), tau=tau)


@proposition(
    "tsoy.thm4.9",
    source="Tsoy et al. (2024), section 4.3, Theorem 4.9 (proof in Appendix B.11)",
    statement=(
        "Bayes: a small beneficial deviation for everyone exists iff all xi_i >= 0 and "
        "sum xi_i > 1, xi_i = (1 + (rho+tau)^2/(tau^2 rho^2 (lambda_i/(rho+tau)^2 - 1/tau^2)))^-1; "
        "beta_i = xi_i b with b small is one"
    ),
    perturb={"threshold": 1.5},
)
def _thm49(
    xi: Callable[[Array, float, float], Array] = lambda lam, rho, tau: (
        1 / (1 + (rho + tau) ** 2 / (tau**2 * rho**2 * (lam / (rho + tau) ** 2 - 1 / tau**2)))
    ),
    threshold: float = 1.0,
) -> Verdict:
    """Deviations of size b = 1e-6 rho along the witness xi b and 24 random directions."""
    rng = np.random.default_rng(49)

    def beneficial(model: Bayes, lam: Array, direction: Array, rho: float) -> bool:
        beta = 1e-6 * rho * direction / direction.max()
        return bool(model.gain(beta, lam).min() > 0)

    def agrees(rho: float, tau: float, lam: Array) -> bool:
        model = _bayes_model(rho, tau)
        x = xi(lam, rho, tau)
        claim = bool(x.min() >= 0 and x.sum() > threshold)
        witness = np.clip(x, 0, None) if x.max() > 0 else np.ones_like(x)
        if claim:
            return beneficial(model, lam, witness, rho)
        directions = [witness, *np.eye(lam.size), *rng.exponential(size=(24, lam.size))]
        return not any(beneficial(model, lam, d, rho) for d in directions)

    def decisive(rho: float, tau: float, lam: Array) -> bool:
        x = _bayes_model(rho, tau).xi(lam)
        return bool(abs(x.sum() - 1) > 0.02 and np.abs(x).min() > 0.01)

    return on_points(
        agrees,
        _bayes_points(490, 300),
        "at b = 1e-6 rho the witness xi b benefits everyone when all xi >= 0 and sum xi > 1; "
        "otherwise none of the witness, the unit vectors and 24 random directions does",
        drawn=(
            "seeded sample (seed 490) of 300 settings: rho, tau log-uniform in [e^-2, e^2], "
            "N uniform in 2..8, lambda_i log-normal around the sign change of A_i; plus 5 "
            "settings with sum xi near 1 or one xi just below 0"
        ),
        hypothesis=decisive,
    )


@proposition(
    "tsoy.thm4.9.local_only",
    source="Tsoy et al. (2024), section 4.3, Theorem 4.9 and eq. (3)",
    statement=(
        "Theorem 4.9 speaks of small deviations only: at rho = tau = 1, lambda = (3, 20, 20, 20, 20) "
        "xi_1 < 0, yet beta = (0, 1, 1, 1, 1) is mutually beneficial"
    ),
    kind="derived",
    perturb={"lam": (2, 20, 20, 20, 20)},
)
def _thm49_local(
    lam: tuple[int, ...] = (3, 20, 20, 20, 20), beta: tuple[int, ...] = (0, 1, 1, 1, 1)
) -> Verdict:
    """Exact rational arithmetic on eq. (3) and xi."""
    at = {S.rho: 1, S.tau: 1}
    xi_1 = S.XI.subs({**at, S.lam: lam[0]})
    total = sum(beta)
    gains = [
        sp.nsimplify(S.BAYES_GAIN.subs({**at, S.lam: la, S.beta: b, S.gamma: total - b}))
        for la, b in zip(lam, beta, strict=True)
    ]
    point = {"lambda": list(lam), "beta": list(beta), "xi_1": str(xi_1)}
    if xi_1 < 0 and min(gains) >= 0:
        return proved(f"exact: xi_1 = {xi_1} < 0 and gains {[str(g) for g in gains]} >= 0")
    return refuted(f"not a witness: xi_1 = {xi_1}, gains {[str(g) for g in gains]}", point)
