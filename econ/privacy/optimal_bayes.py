r"""Optimal protocols of the Bayesian model (Tsoy et al. 2024, sections 5-6), a non-convex problem.

Accuracy: Γ scanned on a grid and refined at the largest feasible point (for fixed Γ,
:math:`g_i` is strictly decreasing in :math:`\beta_i`, :func:`bayes_phi`). Welfare: scipy SLSQP
started from the best points of the family scans and the accuracy optimum; a local optimum.
:func:`econ.privacy.optimal.optimal_protocol` dispatches here.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from numpy.typing import NDArray
from scipy.optimize import minimize

from econ.privacy import symbolic as S
from econ.privacy.families import family_weights, scale_scan
from econ.privacy.models import Bayes

Array = NDArray[np.float64]

_G = sp.Symbol("G", positive=True)
_bayes_gain_at_total = sp.lambdify(
    (S.beta, _G, S.lam, S.rho, S.tau), S.BAYES_GAIN.subs(S.gamma, _G - S.beta), "numpy"
)


def bayes_phi(gamma_total: Array, lam: Array, rho: Array, tau: float) -> tuple[Array, Array]:
    r"""Each client's largest acceptable :math:`\beta_i` at each total Γ, and whether 0 is.

    For each total Γ (rows) and client (columns): the largest acceptable
    :math:`\beta_i \le \min(\rho_i, \Gamma)` given the total, and whether :math:`\beta_i = 0` is
    acceptable at all.

    Uses that :math:`g_i(\beta_i; \Gamma)` is strictly decreasing in :math:`\beta_i` at fixed Γ
    (eq. 3); vectorised bisection over all (Γ, client) pairs.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.3, Eq. (3) and Theorem 4.9 (the per-client constraint at
    fixed Γ).
    """
    g = np.asarray(gamma_total, dtype=np.float64)[:, None]
    lo = np.zeros((g.shape[0], lam.size))
    hi = np.minimum(rho, g) + lo
    ok0 = _bayes_gain_at_total(lo, g, lam, rho, tau) >= 0
    top_ok = _bayes_gain_at_total(hi, g, lam, rho, tau) >= 0
    for _ in range(45):
        mid = 0.5 * (lo + hi)
        good = _bayes_gain_at_total(mid, g, lam, rho, tau) >= 0
        lo, hi = np.where(good, mid, lo), np.where(good, hi, mid)
    phi = np.where(top_ok, np.minimum(rho, g), lo)
    return np.where(ok0, phi, 0.0), ok0


def bayes_accuracy(model: Bayes, lam: Array, grid: int = 400) -> tuple[Array | None, str]:
    """The most accurate Bayesian protocol found, and the method's note.

    Γ is scanned on ``grid`` points and refined at the largest feasible one; ``None`` when none is
    feasible.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 and §4.3, Eq. (3).
    """
    rho, tau = model.rho(lam.size), model.tau
    method = f"non-convex: scan of Gamma on {grid} points, refined by nested 32-point scans at the largest feasible one"

    def feasible_many(totals: Array) -> Array:
        phi, ok0 = bayes_phi(totals, lam, rho, tau)
        return np.asarray(ok0.all(axis=1) & (phi.sum(axis=1) >= totals))

    totals = np.linspace(0.0, float(rho.sum()), grid + 1)[1:]
    good = feasible_many(totals)
    if not good.any():
        return None, method
    k = int(np.flatnonzero(good)[-1])
    g = totals[k]
    if k + 1 < totals.size:  # the boundary lies in (totals[k], totals[k + 1]); resolution step/32^7
        lo, hi = totals[k], totals[k + 1]
        for _ in range(7):
            sub = np.linspace(lo, hi, 34)[1:-1]
            ok = feasible_many(sub)
            if ok.any():
                j = int(np.flatnonzero(ok)[-1])
                lo, hi = sub[j], (sub[j + 1] if j + 1 < sub.size else hi)
            else:
                hi = sub[0]
        g = lo
    phi = bayes_phi(np.array([g]), lam, rho, tau)[0][0]
    if not phi.sum() > 0:
        return None, method
    return phi * (g / phi.sum()), method


def bayes_welfare(model: Bayes, lam: Array, nu: Array) -> tuple[Array | None, str]:
    """A locally welfare-optimal Bayesian protocol, and the method's note.

    SLSQP from the best scanned starts; ``None`` for the trivial protocol.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §5 (optimal protocols for utility) and §4.3, Eq. (3).
    """
    rho = model.rho(lam.size)
    method = "non-convex: scipy SLSQP from the best scanned starts (symmetric, xi, max-accuracy families); a local optimum"
    starts = [np.zeros_like(lam)]
    if np.ptp(rho) == 0:
        starts += [scale_scan(model, lam, fam, grid=200) for fam in ("symmetric", "xi")]
        w = family_weights(model, lam, "xi")
        if w.max() > 0:
            starts += [w * b for b in np.linspace(0, rho[0] / w.max(), 50)[1:]]
        starts += [np.full_like(lam, b) for b in np.linspace(0, rho[0], 50)[1:]]
    best_acc, _ = bayes_accuracy(model, lam)
    if best_acc is not None:
        starts += [best_acc * f for f in (0.25, 0.5, 0.75, 1.0)]

    def welfare(b: Array) -> float:
        return float(nu @ model.gain(np.clip(b, 0, rho), lam))

    # the trivial protocol is always feasible (its gain is 0 up to rounding)
    feasible = starts[:1] + [s for s in starts[1:] if model.gain(s, lam).min() >= 0]
    feasible.sort(key=welfare, reverse=True)
    best, best_value = feasible[0], welfare(feasible[0])
    for start in feasible[:3]:
        res = minimize(
            lambda b: -welfare(b),
            start,
            method="SLSQP",
            bounds=list(zip(np.zeros_like(rho), rho, strict=True)),
            constraints=[{"type": "ineq", "fun": lambda b: model.gain(np.clip(b, 0, rho), lam)}],
            options={"maxiter": 500, "ftol": 1e-12},
        )
        cand = np.clip(res.x, 0, rho)
        if model.gain(cand, lam).min() >= -1e-10 and welfare(cand) > best_value:
            best, best_value = cand, welfare(cand)
    return (best if best.any() else None), method
