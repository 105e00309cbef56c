r"""Symmetric optima :math:`\beta_i = \beta` of the total utility (Tsoy et al. 2024, section 5).

* Theorem 5.1 (DP mean; corrected form, spec T1): if :math:`(N-1)\lambda > \kappa^2\rho^2`,

  .. math::

      \beta^* = \frac{(\sqrt{(N-1)\lambda}-\kappa\rho)\rho}{\sqrt{(N-1)\lambda}+(N-1)\kappa\rho},\quad
      (\alpha^*)^2 = \frac{N\kappa}{\sqrt{(N-1)\lambda}-\kappa\rho},\quad
      u^* - u^0 = \frac{(\sqrt{(N-1)\lambda}-\kappa\rho)^2}{N\rho}.

* Theorem 5.2 (DP SGD; corrected, spec T2): if :math:`(N-1)^2\psi \ge 4N`,
  :math:`\beta^* = \sqrt\psi\rho/(\sqrt\psi+\sqrt N)` and
  :math:`(\alpha^*)^2 = \sqrt{L\mu N}\,\kappa/\sqrt{\lambda d}`.
* Theorem 5.3 / Lemma B.5 (Bayes): the gain :math:`h_\lambda` is not concave; the optimum is
  the best of 0, ρ and the roots of :math:`h'_\lambda` (a quartic after clearing denominators).
* Theorem 5.4: for :math:`\lambda > (\rho+\tau)/\tau` and :math:`N\to\infty`,
  :math:`\beta^* \approx \rho\sqrt{(\lambda-1)/N}` and the gain tends to :math:`\lambda/(\rho+\tau) - 1/\tau`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ.privacy import symbolic as S
from econ.privacy.models import DPSGD, DPMean
from econ.propositions import Verdict, checked, is_zero, on_points, proposition, proved, refuted
from econ.validation import non_negative, positive, positive_int


@dataclass(frozen=True, slots=True)
class SymmetricOptimum:
    """The best symmetric protocol: its β, noise variance α², gain u - u^0 and Lemma B.5 case."""

    beta: float
    alpha2: float
    gain: float
    profitable: bool
    case: int | None = None


_ARGS = (S.n_clients, S.lam, S.rho, S.kappa)
_dp_beta = sp.lambdify(_ARGS, S.DP_MEAN_SYM_BETA)
_dp_alpha2 = sp.lambdify(_ARGS, S.DP_MEAN_SYM_ALPHA2)
_dp_gain = sp.lambdify(_ARGS, S.DP_MEAN_SYM_BEST_GAIN)


def _scalar_setting(model: DPMean | DPSGD, lam: float, n_clients: int) -> tuple[float, float]:
    positive_int("n_clients", n_clients)
    non_negative("lam", lam)
    rho, kappa = model.rho(n_clients), model.kappa(n_clients)
    if np.ptp(rho) > 0 or np.ptp(kappa) > 0:
        raise ValueError("symmetric optima assume identical clients (equal n and sigma)")
    return float(rho[0]), float(kappa[0])


def dp_mean_symmetric_optimum(model: DPMean, lam: float, n_clients: int) -> SymmetricOptimum:
    """Theorem 5.1 (corrected): the symmetric total-utility optimum of DP mean estimation."""
    rho, kappa = _scalar_setting(model, lam, n_clients)
    if (n_clients - 1) * lam <= kappa**2 * rho**2:
        return SymmetricOptimum(0.0, np.inf, 0.0, False)
    args = (n_clients, lam, rho, kappa)
    return SymmetricOptimum(
        float(_dp_beta(*args)), float(_dp_alpha2(*args)), float(_dp_gain(*args)), True
    )


_sgd_beta = sp.lambdify((S.psi, S.rho, S.n_clients), S.DP_SGD_SYM_BETA)
_sgd_gain = sp.lambdify((S.psi, S.rho, S.n_clients, S.kappa, S.dim), S.DP_SGD_SYM_BEST_GAIN)


def dp_sgd_symmetric_optimum(model: DPSGD, lam: float) -> SymmetricOptimum:
    """Theorem 5.2 (corrected): the symmetric optimum of DP SGD; unprofitable iff (N-1)^2 psi < 4N."""
    n = model.n_clients
    rho, kappa = _scalar_setting(model, lam, n)
    psi = float(model.psi(np.full(n, lam))[0])
    if (n - 1) ** 2 * psi < 4 * n:
        return SymmetricOptimum(0.0, np.inf, -np.inf, False)
    beta = float(_sgd_beta(psi, rho, n))
    alpha2 = float(model.alpha(np.full(n, beta), n)[0] ** 2)
    return SymmetricOptimum(beta, alpha2, float(_sgd_gain(psi, rho, n, kappa, model.dim)), True)


# --------------------------------------------------------------------------------------------
# Theorem 5.3 / Lemma B.5: symmetric Bayesian optimum
# --------------------------------------------------------------------------------------------

_BARGS = (S.beta, S.n_clients, S.lam, S.rho, S.tau)
_H1 = sp.diff(S.BAYES_SYM_GAIN_PRINTED, S.beta)
_H2 = sp.diff(_H1, S.beta)
_h = sp.lambdify(_BARGS, S.BAYES_SYM_GAIN_PRINTED)
_h1 = sp.lambdify(_BARGS, _H1)
_h2 = sp.lambdify(_BARGS, _H2)
_QUARTIC = sp.Poly(sp.numer(sp.together(_H1)), S.beta)
_quartic = sp.lambdify(_BARGS[1:], _QUARTIC.all_coeffs())


def bayes_symmetric_gain(
    beta: ArrayLike, rho: float, tau: float, lam: float, n_clients: int
) -> NDArray[np.float64]:
    r"""The symmetric Bayesian gain :math:`h_\lambda(\beta)` of Theorem 5.3 (Appendix B.12), vectorised in β."""
    b = non_negative("beta", beta)
    return np.asarray(
        _h(
            b,
            positive_int("n_clients", n_clients),
            float(non_negative("lam", lam)),
            float(positive("rho", rho)),
            float(positive("tau", tau)),
        )
    )


def bayes_symmetric_optimum(rho: float, tau: float, lam: float, n_clients: int) -> SymmetricOptimum:
    r"""Theorem 5.3 via Lemma B.5: maximise :math:`h_\lambda` over :math:`[0, \rho]`.

    Candidates are 0, ρ and the real roots of :math:`h'` in (0, ρ) (roots of a quartic);
    the case number follows Lemma B.5 (1: β* = ρ by slopes, 2: compare 0 and ρ, 3: a single
    interior root, 4: compare 0 with the root where h'' <= 0, 5: no root, β* = 0).
    """
    r, t = float(positive("rho", rho)), float(positive("tau", tau))
    lam_, n = float(non_negative("lam", lam)), positive_int("n_clients", n_clients)
    if n < 2:
        raise ValueError(f"n_clients must be >= 2 for a symmetric protocol, got {n}")
    args = (n, lam_, r, t)
    roots = np.roots(np.asarray(_quartic(*args), dtype=np.float64))
    interior = sorted(
        float(z.real) for z in roots if abs(z.imag) < 1e-9 * max(1.0, abs(z)) and 0 < z.real < r
    )
    candidates = [0.0, r, *[b for b in interior if _h2(b, *args) <= 0]]
    values = [float(_h(b, *args)) for b in candidates]
    best = int(np.argmax(values))
    d0, d_rho = _h1(0.0, *args), _h1(r, *args)
    case = 1 if d0 > 0 and d_rho > 0 else 2 if d_rho > 0 else 3 if d0 > 0 else 4 if interior else 5
    beta = candidates[best] if values[best] > 0 else 0.0
    alpha2 = np.inf if beta == 0 else 1 / beta - 1 / r
    return SymmetricOptimum(beta, float(alpha2), max(values[best], 0.0), values[best] > 0, case)


def bayes_asymptotic_optimum(
    rho: float, tau: float, lam: float, n_clients: int
) -> tuple[float, float]:
    r"""Theorem 5.4 leading terms: :math:`(\rho\sqrt{(\lambda-1)/N},\ \lambda/(\rho+\tau) - 1/\tau)` above the threshold, else (0, 0)."""
    r, t, lam_ = (
        float(positive("rho", rho)),
        float(positive("tau", tau)),
        float(non_negative("lam", lam)),
    )
    if lam_ <= (r + t) / t:
        return 0.0, 0.0
    return r * np.sqrt((lam_ - 1) / positive_int("n_clients", n_clients)), lam_ / (r + t) - 1 / t


# --------------------------------------------------------------------------------------------
# Registered results
# --------------------------------------------------------------------------------------------

_PAPER = {
    S.n_clients: 5,
    S.lam: 1,
    S.rho: 1,
    S.kappa: sp.sqrt(2 * sp.log(sp.Rational(125, 10) * 1000)) * 20 / 100,
}


@proposition(
    "tsoy.thm5.1",
    source="Tsoy et al. (2024), Theorem 5.1 (main text and last line of B.3)",
    statement="as printed: (alpha*)^2 = N kappa / sqrt((N-1) lambda - kappa rho)",
    holds=False,
)
def _thm51_printed() -> Verdict:
    printed = float(S.DP_MEAN_SYM_ALPHA2_PRINTED.subs(_PAPER))
    optimum = dp_mean_symmetric_optimum(DPMean(), 1.0, 5).alpha2
    if abs(printed - optimum) > 1e-9:
        return refuted(
            "the printed noise level is not the optimum",
            {
                "N": 5,
                "lambda": 1,
                "rho": 1,
                "kappa": 0.868722,
                "printed": printed,
                "optimum": optimum,
            },
        )
    return checked("printed value equals the optimum", 1)


@proposition(
    "tsoy.thm5.1.corrected",
    source="Tsoy et al. (2024), Theorem 5.1 and middle line of B.3; spec T1",
    statement="h is strictly concave; beta* solves h' = 0, (alpha*)^2 = N kappa/(sqrt((N-1) lambda) - kappa rho), gain (sqrt((N-1) lambda) - kappa rho)^2/(N rho)",
)
def _thm51() -> Verdict:
    h = S.DP_MEAN_SYM_GAIN
    foc = is_zero(sp.diff(h, S.beta).subs(S.beta, S.DP_MEAN_SYM_BETA), "h'(beta*)")
    alpha = is_zero(
        S.ALPHA2_OF_BETA.subs({S.dim: 1, S.beta: S.DP_MEAN_SYM_BETA}) - S.DP_MEAN_SYM_ALPHA2,
        "alpha^2(beta*) - closed form",
    )
    value = is_zero(
        h.subs(S.beta, S.DP_MEAN_SYM_BETA) - S.DP_MEAN_SYM_BEST_GAIN, "h(beta*) - closed form"
    )
    for v in (foc, alpha, value):
        if not v.holds:
            return v
    h2 = sp.factor(sp.diff(h, S.beta, 2))  # both terms negative on [0, rho)
    return proved(f"{foc.evidence}; {alpha.evidence}; {value.evidence}; h'' = {h2}")


_dalpha_dn = sp.diff(S.DP_MEAN_SYM_ALPHA2, S.n_clients)
_sqrt = sp.sqrt((S.n_clients - 1) * S.lam)


@proposition(
    "tsoy.thm5.1.noise_in_N",
    source="Tsoy et al. (2024), discussion after Theorem 5.1",
    statement="as printed: when N is large the optimal noise level increases, d(alpha*)^2/dN > 0 (read for every profitable N)",
    holds=False,
)
def _noise_in_n_printed() -> Verdict:
    slope = float(_dalpha_dn.subs(_PAPER))
    if slope < 0:
        return refuted(
            "noise falls with N",
            {"N": 5, "lambda": 1, "rho": 1, "kappa": 0.868722, "dalpha2/dN": slope},
        )
    return checked("noise rises with N at the paper's setting", 1)


@proposition(
    "tsoy.thm5.1.noise_in_N.corrected",
    source="Tsoy et al. (2024), Appendix B.3; spec T16",
    statement="sign d(alpha*)^2/dN = sign((N-2) sqrt(lambda) - 2 sqrt(N-1) kappa rho)",
)
def _noise_in_n() -> Verdict:
    scaled = _dalpha_dn * (_sqrt - S.kappa * S.rho) ** 2 * 2 * _sqrt / S.kappa
    target = sp.sqrt(S.lam) * (
        (S.n_clients - 2) * sp.sqrt(S.lam) - 2 * sp.sqrt(S.n_clients - 1) * S.kappa * S.rho
    )
    v = is_zero(
        scaled - target,
        "d(alpha*)^2/dN times a positive factor - sqrt(lambda)((N-2)sqrt(lambda) - 2 sqrt(N-1) kappa rho)",
    )
    return (
        v
        if not v.holds
        else proved(
            v.evidence
            + "; d(alpha*)^2/dlambda < 0: "
            + str(sp.factor(sp.diff(S.DP_MEAN_SYM_ALPHA2, S.lam)))
        )
    )


_PAPER_SGD = DPSGD()


@proposition(
    "tsoy.thm5.2",
    source="Tsoy et al. (2024), Theorem 5.2 (main text)",
    statement="as printed: (alpha*)^2 = sqrt(L mu N kappa)/sqrt(lambda d)",
    holds=False,
)
def _thm52_printed() -> Verdict:
    m, lam = _PAPER_SGD, 2e5
    subs = {
        S.L_smooth: m.L,
        S.mu_sc: m.mu,
        S.n_clients: m.n_clients,
        S.kappa: float(m.kappa(10)[0]),
        S.lam: lam,
        S.dim: m.dim,
    }
    printed = float(S.DP_SGD_SYM_ALPHA2_PRINTED.subs(subs))
    optimum = dp_sgd_symmetric_optimum(m, lam).alpha2
    if abs(printed - optimum) > 1e-9 * optimum:
        return refuted(
            "the printed noise level is not the optimum",
            {"lambda": lam, "printed": printed, "optimum": optimum},
        )
    return checked("printed value equals the optimum", 1)


@proposition(
    "tsoy.thm5.2.corrected",
    source="Tsoy et al. (2024), Theorem 5.2 and Appendix B.8; spec T2",
    statement="beta* = sqrt(psi) rho/(sqrt(psi)+sqrt(N)) solves h' = 0, (alpha*)^2 = sqrt(L mu N) kappa/sqrt(lambda d), gain >= 0 iff (N-1)^2 psi >= 4N",
)
def _thm52() -> Verdict:
    h = S.DP_SGD_SYM_GAIN
    foc = is_zero(sp.diff(h, S.beta).subs(S.beta, S.DP_SGD_SYM_BETA), "h'(beta*)")
    value = is_zero(
        h.subs(S.beta, S.DP_SGD_SYM_BETA) - S.DP_SGD_SYM_BEST_GAIN, "h(beta*) - closed form"
    )
    a2 = S.ALPHA2_OF_BETA.subs(S.beta, S.DP_SGD_SYM_BETA).subs(S.psi, S.PSI)
    alpha = is_zero(a2 - S.DP_SGD_SYM_ALPHA2, "alpha^2(beta*) - sqrt(L mu N) kappa/sqrt(lambda d)")
    # gain = kappa^2 rho d sqrt(psi/N) ((N-1) sqrt(psi/N) - 2): its sign is that of (N-1)^2 psi - 4N
    sign = is_zero(
        S.DP_SGD_SYM_BEST_GAIN
        - S.kappa**2
        * S.rho
        * S.dim
        * sp.sqrt(S.psi / S.n_clients)
        * ((S.n_clients - 1) * sp.sqrt(S.psi / S.n_clients) - 2),
        "gain factorisation",
    )
    for v in (foc, value, alpha, sign):
        if not v.holds:
            return v
    return proved("; ".join(v.evidence for v in (foc, value, alpha, sign)))


@proposition(
    "tsoy.thm5.3",
    source="Tsoy et al. (2024), Theorem 5.3 (Appendix B.12)",
    statement="Bayes symmetric: beta* = 0 if lambda < lambda_low; beta* > 0 if lambda > lambda_0; beta* = rho if also lambda >= lambda_rho",
)
def _thm53() -> Verdict:
    form = is_zero(
        S.BAYES_SYM_GAIN - S.BAYES_SYM_GAIN_PRINTED,
        "symmetric gain (B.12) - eq. (3) with gamma = (N-1) beta",
    )
    h1 = sp.diff(S.BAYES_SYM_GAIN_PRINTED, S.beta)
    d0 = is_zero(
        h1.subs(S.beta, 0) - (S.n_clients - 1) / (S.rho + S.tau) ** 2 * (S.lam - S.BAYES_LAMBDA_0),
        "h'(0) vs lambda_0",
    )
    dr = is_zero(
        h1.subs(S.beta, S.rho)
        - (S.n_clients - 1) / (S.n_clients * S.rho + S.tau) ** 2 * (S.lam - S.BAYES_LAMBDA_RHO),
        "h'(rho) vs lambda_rho",
    )
    for v in (form, d0, dr):
        if not v.holds:
            return v
    rng = np.random.default_rng(53)
    limits = sp.lambdify(
        (S.n_clients, S.rho, S.tau), [S.BAYES_LAMBDA_LOW, S.BAYES_LAMBDA_0, S.BAYES_LAMBDA_RHO]
    )
    points = []
    for _ in range(120):
        n, r, t = (
            int(rng.integers(2, 30)),
            float(np.exp(rng.normal(0, 1))),
            float(np.exp(rng.normal(0, 1))),
        )
        thresholds = [float(x) for x in limits(n, r, t)]
        points.append(
            {
                "n": n,
                "rho": r,
                "tau": t,
                "lam": float(np.exp(rng.uniform(-1, np.log(3 * max(thresholds))))),
                "th": thresholds,
            }
        )

    def regime(n: int, rho: float, tau: float, lam: float, th: list[float]) -> bool:
        opt = bayes_symmetric_optimum(rho, tau, lam, n)
        low, zero, top = th
        return (
            (lam >= low or opt.beta == 0)
            and (lam <= zero or opt.beta > 0)
            and (lam <= zero or lam < top or opt.beta == rho)
        )

    num = on_points(regime, points, "Lemma B.5 optimum obeys the three regimes")
    return (
        num
        if not num.holds
        else Verdict(num.status, f"{form.evidence}; {d0.evidence}; {dr.evidence}; {num.evidence}")
    )


@proposition(
    "tsoy.thm5.3.self_consistency",
    source="Tsoy et al. (2024), Theorem 5.3; spec section 4.11",
    statement="lambda_0 < lambda_rho iff N rho^3 + (2N+2) rho^2 tau < (N^2-N-5) rho tau^2 + (2N-4) tau^3",
)
def _self_consistency() -> Verdict:
    n, r, t = S.n_clients, S.rho, S.tau
    diff = sp.factor(sp.together(S.BAYES_LAMBDA_RHO - S.BAYES_LAMBDA_0))
    poly = (n**2 - n - 5) * r * t**2 + (2 * n - 4) * t**3 - n * r**3 - (2 * n + 2) * r**2 * t
    return is_zero(
        diff * (n - 1) * r * t**2 - poly, "(lambda_rho - lambda_0) (N-1) rho tau^2 - polynomial"
    )


@proposition(
    "tsoy.lemmaB.5",
    source="Tsoy et al. (2024), Lemma B.5 and B.6",
    statement="the optimum is 0, rho or a root of h' with h'' <= 0, and at such a root (N-1) beta + tau >= (N-1)^(1/3) rho",
)
def _lemma_b5() -> Verdict:
    rng = np.random.default_rng(55)
    points = [
        {
            "n": int(rng.integers(2, 12)),
            "rho": float(np.exp(rng.normal(0, 1))),
            "tau": float(np.exp(rng.normal(0, 1))),
            "lam": float(np.exp(rng.uniform(0, 4))),
        }
        for _ in range(60)
    ]

    def agrees(n: int, rho: float, tau: float, lam: float) -> bool:
        opt = bayes_symmetric_optimum(rho, tau, lam, n)
        grid = np.linspace(0, rho, 20001)
        best = float(np.max(_h(grid, n, lam, rho, tau)))
        interior_ok = opt.beta in (0.0, rho) or (n - 1) * opt.beta + tau >= (n - 1) ** (
            1 / 3
        ) * rho * (1 - 1e-9)
        return opt.gain >= best - 1e-9 * max(1.0, abs(best)) and interior_ok

    return on_points(
        agrees, points, "Lemma B.5 optimum >= dense-grid maximum (20001 points); Lemma B.6 bound"
    )


@proposition(
    "tsoy.thm5.4",
    source="Tsoy et al. (2024), Theorem 5.4 (Appendix B.13)",
    statement="for lambda > (rho+tau)/tau: beta* sqrt(N)/rho -> sqrt(lambda - 1) and gain -> lambda/(rho+tau) - 1/tau; below, beta* = 0",
)
def _thm54() -> Verdict:
    points = [{"lam": lam, "n": n} for lam in (3.0, 5.0, 1.5) for n in (10**4, 10**6)]

    def close(lam: float, n: int) -> bool:
        opt = bayes_symmetric_optimum(1.0, 1.0, lam, n)
        beta, gain = bayes_asymptotic_optimum(1.0, 1.0, lam, n)
        if beta == 0:
            return opt.beta == 0
        return abs(opt.beta / beta - 1) < 5 / np.sqrt(n) ** (2 / 3) and abs(
            opt.gain - gain
        ) < 5 / np.sqrt(n) ** (2 / 3)

    return on_points(close, points, "rho = tau = 1, N in {1e4, 1e6}: relative gap < 5 N^(-1/3)")
