r"""Existence of a mutually beneficial protocol (Tsoy et al. 2024, section 4).

* DP mean (Theorem 4.2): a non-trivial protocol exists iff :math:`\sum_i\zeta_i > 1`,
  :math:`\zeta_i = \lambda_i/(\lambda_i + \kappa_i^2\rho_i^2)`. The proof's
  :math:`\varphi`-argument (spec section 5) carries over verbatim to per-client
  :math:`\rho_i, \kappa_i` (spec 9.5), so the same test is used there.
* DP SGD (Theorem 4.5): a protocol exists iff :math:`\max_{x\ge0} F(x) \ge 0`,

  .. math:: F(x) = \sum_i \frac{\psi_i x}{(\psi_i+1)x+1} - x - 1,

  a concave 1-D problem; for per-client :math:`\rho_i` the analogue in :math:`G=\Gamma/\bar\rho`
  is :math:`F(G) = \sum_i r_i s_i/(1+s_i) - G`, :math:`s_i = \psi_i(1 - r_i/G)`, :math:`r_i = \rho_i/\bar\rho`.
* Bayesian (Theorem 4.9): a *small* beneficial deviation exists iff all :math:`\xi_i \ge 0`
  and :math:`\sum_i\xi_i > 1` (a local statement; spec T14).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ.privacy import symbolic as S
from econ.privacy.models import DPSGD, Bayes, DPMean, Model, client_weights
from econ.propositions import Verdict, checked, is_zero, on_points, proposition, proved, refuted

Array = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Existence:
    """The outcome of an existence test: ``exists`` iff ``statistic`` passes ``threshold``."""

    exists: bool
    statistic: float
    threshold: float

    def to_dict(self) -> dict[str, float | bool]:
        return {"exists": self.exists, "statistic": self.statistic, "threshold": self.threshold}


def dp_mean_exists(model: DPMean, lam: ArrayLike) -> Existence:
    r"""Theorem 4.2: :math:`\sum_i\zeta_i > 1`."""
    z = float(model.zeta(lam).sum())
    return Existence(z > 1.0, z, 1.0)


def zeta_family_max_scale(model: DPMean, lam: ArrayLike) -> float:
    r"""Largest b with :math:`\beta_i = \zeta_i b` mutually beneficial (equal ρ; spec T15).

    .. math:: b_{\max} = \frac{(Z-1)\rho}{Z - \zeta_{\min}}, \qquad Z = \sum_i\zeta_i,

    0 when Z <= 1. The paper's range :math:`[0, (1-1/Z)\rho]` is a sub-range.
    """
    zeta = model.zeta(lam)
    rho = model.rho(zeta.size)
    if np.ptp(rho) > 0:
        raise ValueError("the zeta family of Theorem 4.2 assumes equal rho for all clients")
    z = zeta.sum()
    return float(max(z - 1.0, 0.0) * rho[0] / (z - zeta.min()))


def sgd_f_max(model: DPSGD, lam: ArrayLike) -> tuple[float, float]:
    r"""The maximum of :math:`F` (Theorem 4.5) and its maximiser :math:`G = \Gamma/\bar\rho`.

    F is concave with derivative :math:`F'(G) = \sum_i \psi_i r_i^2/(G^2(1+s_i)^2) - 1`, decreasing
    in G; the maximiser is the root of F' above :math:`\max_i r_i`, found by bisection in O(N) a step.
    """
    psi = model.psi(lam)
    rho = model.rho(psi.size)
    r = rho / rho.mean()
    lo, hi = float(r.max()), float(max(r.max(), np.sqrt(np.sum(psi * r**2)))) + 1.0

    def slope(g: float) -> float:
        s = psi * (1 - r / g)
        return float(np.sum(psi * r**2 / (g**2 * (1 + s) ** 2)) - 1.0)

    if slope(lo) > 0:
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
            if hi - lo <= 1e-15 * hi:
                break
    g = lo
    return float(sgd_f(psi, r, g)), g


def sgd_f(psi: Array, r: Array, g: float | Array) -> Array:
    r""":math:`F(G) = \sum_i r_i s_i/(1+s_i) - G`, :math:`s_i = \psi_i(1 - r_i/G)` (Theorem 4.5 for r = 1, G = x + 1)."""
    g_ = np.asarray(g, dtype=np.float64)[..., None]
    s = psi * (1 - r / g_)
    return np.asarray(np.sum(r * s / (1 + s), axis=-1) - g_[..., 0])


def dp_sgd_exists(model: DPSGD, lam: ArrayLike) -> Existence:
    r"""Theorem 4.5: :math:`\max_x F(x) \ge 0`."""
    value, _ = sgd_f_max(model, lam)
    return Existence(value >= 0.0, value, 0.0)


def corollary_4_6(psi: ArrayLike) -> tuple[float, float]:
    r"""Corollary 4.6 sums: sufficient :math:`\sum\psi/(\psi+2) \ge 2`, necessary :math:`\sum\psi/\sqrt{\psi+1} \ge 4`."""
    p = client_weights(psi, "psi")
    return float(np.sum(p / (p + 2))), float(np.sum(p / np.sqrt(p + 1)))


def bayes_small_deviation_exists(model: Bayes, lam: ArrayLike) -> Existence:
    r"""Theorem 4.9: all :math:`\xi_i \ge 0` and :math:`\sum_i\xi_i > 1` (strict, spec T14)."""
    xi = model.xi(lam)
    total = float(xi.sum())
    return Existence(bool(xi.min() >= 0.0 and total > 1.0), total, 1.0)


#: Existence test per model class.
EXISTENCE = {DPMean: dp_mean_exists, DPSGD: dp_sgd_exists, Bayes: bayes_small_deviation_exists}


def exists(model: Model, lam: ArrayLike) -> Existence:
    """The model's existence test (Theorem 4.2, 4.5 or 4.9)."""
    return EXISTENCE[type(model)](model, lam)  # type: ignore[operator]


# --------------------------------------------------------------------------------------------
# Registered results
# --------------------------------------------------------------------------------------------

_b, _Z, _zi, _zmin, _G = sp.symbols("b Z zeta_i zeta_min Gamma", positive=True)


@proposition(
    "tsoy.thm4.2",
    source="Tsoy et al. (2024), Theorem 4.2 (Appendix B.2)",
    statement="DP mean: non-trivial solutions of eq. (1) exist iff sum zeta > 1; beta_i = zeta_i b, b in [0, (1-1/Z) rho] are solutions",
)
def _thm42() -> Verdict:
    # q_i = zeta Gamma rho - (Gamma + rho) beta + beta^2 summed over clients (necessity) ...
    q = S.ZETA * _G * S.rho - (_G + S.rho) * S.beta + S.beta**2
    one_client = is_zero(
        q.subs(_G, S.beta) - S.beta * S.rho * (S.ZETA - 1), "q_i with a single non-zero beta"
    )
    # ... and on the family beta_i = zeta_i b (sufficiency): q_i = zeta_i b ((Z-1) rho - (Z - zeta_i) b)
    fam = (_zi * _Z * _b * S.rho - (_Z * _b + S.rho) * _zi * _b + (_zi * _b) ** 2) - _zi * _b * (
        (_Z - 1) * S.rho - (_Z - _zi) * _b
    )
    family = is_zero(fam, "q_i on beta = zeta b minus zeta_i b((Z-1) rho - (Z-zeta_i) b)")
    for v in (one_client, family):
        if not v.holds:
            return v
    rng = np.random.default_rng(42)
    model = DPMean()
    points = [
        {"lam": np.exp(rng.normal(m, 1.0, int(rng.integers(2, 12))))}
        for m in np.linspace(-3, 3, 60)
    ]

    def family_ok(lam: Array) -> bool:
        z = model.zeta(lam).sum()
        if z <= 1:
            return True
        return all(
            model.gain(model.zeta(lam) * b, lam).min() >= -1e-12
            for b in np.linspace(0, 1 - 1 / z, 7)
        )

    num = on_points(family_ok, points, "family gains >= 0 on the paper's range")
    return (
        num
        if not num.holds
        else proved(
            f"{one_client.evidence} (< 0, so Z > 1 is strict); {family.evidence}; {num.evidence}"
        )
    )


@proposition(
    "tsoy.thm4.2.family_max",
    source="Tsoy et al. (2024), Theorem 4.2; spec section 4.2 and T15",
    statement="the zeta family is beneficial exactly up to b_max = (Z-1) rho/(Z - zeta_min), where the smallest-zeta client is indifferent",
)
def _family_max() -> Verdict:
    bmax = (_Z - 1) * S.rho / (_Z - _zmin)
    fam = _zmin * _b * ((_Z - 1) * S.rho - (_Z - _zmin) * _b)
    return is_zero(fam.subs(_b, bmax), "q_min at b_max")


_x, _p = sp.symbols("x psi", positive=True)


@proposition(
    "tsoy.thm4.5",
    source="Tsoy et al. (2024), Theorem 4.5 (Appendix B.6)",
    statement="DP SGD: eq. (2) has a solution iff F(x) = sum psi x/((psi+1)x+1) - x - 1 >= 0 for some x >= 0; F is concave",
)
def _thm45() -> Verdict:
    # eq. (2) with x = Gamma/rho - 1 binds at beta_i = rho psi x/((psi+1)x+1)
    bound = S.rho * _p * _x / ((_p + 1) * _x + 1)
    binding = is_zero(
        (_p * (1 - 1 / (_x + 1)) - S.beta / (S.rho - S.beta)).subs(S.beta, bound),
        "eq. (2) at the bound",
    )
    second = sp.factor(sp.diff(_p * _x / ((_p + 1) * _x + 1), _x, 2))
    if not binding.holds:
        return binding
    if not second.is_negative:
        return refuted("term not concave", {"second derivative": str(second)})
    return proved(f"{binding.evidence}; each term has second derivative {second} < 0")


@proposition(
    "tsoy.cor4.6",
    source="Tsoy et al. (2024), Corollary 4.6",
    statement="sum psi/(psi+2) >= 2 is sufficient and sum psi/sqrt(psi+1) >= 4 necessary for a DP-SGD solution",
)
def _cor46() -> Verdict:
    rng = np.random.default_rng(46)
    points = [
        {"psi": np.exp(rng.normal(m, 1.0, int(rng.integers(2, 20))))}
        for m in np.linspace(-2, 3, 150)
    ] + [{"psi": np.ones(6)}]

    def sandwich(psi: Array) -> bool:
        r = np.ones_like(psi)
        xs = np.linspace(1.0, 1.0 + np.sqrt(np.sum(psi)) + 2, 4001)
        best = float(np.max(sgd_f(psi, r, xs)))
        suff, nec = corollary_4_6(psi)
        return (suff < 2 - 1e-12 or best >= -1e-12) and (best < -1e-12 or nec >= 4 - 1e-12)

    return on_points(sandwich, points, "sufficient => max F >= 0 => necessary")


@proposition(
    "tsoy.thm4.9",
    source="Tsoy et al. (2024), Theorem 4.9 (Appendix B.11)",
    statement="Bayes: a small beneficial deviation exists iff all xi_i >= 0 and sum xi > 1; witness beta = xi b, b small",
)
def _thm49() -> Verdict:
    at0 = {S.beta: 0, S.gamma: 0}
    own = is_zero(
        sp.diff(S.BAYES_GAIN, S.beta).subs(at0) + (S.rho + S.tau) ** 2 / (S.rho**2 * S.tau**2),
        "dg_i/dbeta_i at 0 + (rho+tau)^2/(rho tau)^2",
    )
    other = is_zero(sp.diff(S.BAYES_GAIN, S.gamma).subs(at0) - S.BAYES_A, "dg_i/dbeta_k at 0 - A_i")
    for v in (own, other):
        if not v.holds:
            return v
    rng = np.random.default_rng(49)
    points = []
    for _ in range(80):
        model = Bayes(n=1.0, sigma=1.0, tau=float(rng.uniform(0.5, 2.0)))
        points.append(
            {"model": model, "lam": np.exp(rng.normal(2.5, 1.0, int(rng.integers(2, 8))))}
        )

    def agrees(model: Bayes, lam: Array) -> bool:
        xi = model.xi(lam)
        if xi.min() < 0 or abs(xi.sum() - 1) < 1e-3:
            return True  # outside the first-order regime the theorem speaks about
        gains = model.gain(np.clip(xi, 0, None) * 1e-5, lam)
        return bool((gains.min() > 0) == (xi.sum() > 1))

    num = on_points(
        agrees, points, "witness gains at b = 1e-5 positive iff sum xi > 1 (all xi >= 0)"
    )
    return (
        num
        if not num.holds
        else Verdict(num.status, f"{own.evidence}; {other.evidence}; {num.evidence}")
    )


@proposition(
    "tsoy.thm4.9.local_only",
    source="Tsoy et al. (2024), Theorem 4.9; spec section 4.8 and 7.6",
    statement="the condition is local: rho = tau = 1, lam = (3, 20, 20, 20, 20) has xi_1 < 0 yet beta = (0, 1, 1, 1, 1) is mutually beneficial",
)
def _thm49_local() -> Verdict:
    model, lam = Bayes(n=1.0, sigma=1.0, tau=1.0), np.array([3.0, 20, 20, 20, 20])
    gains = model.gain(np.array([0.0, 1, 1, 1, 1]), lam)
    if model.xi(lam)[0] < 0 and gains.min() >= 0:
        return checked(f"xi_1 = {model.xi(lam)[0]:.6f}, gains {np.round(gains, 6).tolist()}", 1)
    return refuted("example fails", {"gains": gains})
