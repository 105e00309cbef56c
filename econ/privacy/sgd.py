r"""Step sizes, round count and error bound of Algorithm 1 (Tsoy et al. 2024, section 4.2, App. B.4).

With :math:`\chi = \mu/L` and :math:`y^0_* = L\mu nND^2/\sigma^2`, the optimal steps of Lemma B.4 are

.. math::

    \eta^{t+1}_* = \frac{y^t}{L(y^t+1)}, \qquad
    y^{t+1}_* = \Big(1 - \chi\frac{y^t_*}{y^t_*+1}\Big)y^t_*,

and Theorem 4.3 bounds :math:`\Delta w^m = \mathbf E\|w^m-w^*\|^2` by

.. math::

    \Delta w^{m,\mathrm{ub}} = \begin{cases}
      \big((1 + \frac{\chi}{2-\chi}(m-T))L\mu\Gamma\big)^{-1}, & m \ge T,\\
      (1-\chi/2)^m\,y^0_*/(L\mu\Gamma), & m < T,\end{cases}
    \qquad T = \max\Big(\Big\lceil\frac{-\ln y^0_*}{\ln(1-\chi/2)}\Big\rceil, 1\Big).
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ.propositions import Verdict, checked, is_zero, on_points, proposition, refuted
from econ.validation import in_interval, positive, positive_int

_y, _chi, _L, _eta, _t = sp.symbols("y chi L eta t", positive=True)
#: Lemma B.4: one step of the bound recursion, its minimiser and the optimal recursion map h.
Y_NEXT = (1 - 2 * _eta * _chi * _L + _L * _chi * _L * _eta**2) * _y + _L * _chi * _L * _eta**2
ETA_STAR = _y / (_L * (_y + 1))
H_MAP = (1 - _chi * _y / (_y + 1)) * _y


def rounds(y0: float, chi: float, *, integer: bool = False) -> float:
    r""":math:`T = \max(-\ln y^0/\ln(1-\chi/2), 1)`; with ``integer`` the ceiling (spec T5)."""
    y = float(positive("y0", y0))
    c = float(in_interval("chi", chi, 0.0, 1.0, low_open=True))
    t = -np.log(y) / np.log(1 - c / 2)
    return float(max(np.ceil(t) if integer else t, 1.0))


def bound_recursion(y0: float, chi: float, steps: int) -> NDArray[np.float64]:
    """The exact optimal-step sequence y^0, ..., y^steps of Lemma B.4."""
    y = np.empty(positive_int("steps", steps) + 1)
    y[0] = float(positive("y0", y0))
    c = float(in_interval("chi", chi, 0.0, 1.0, low_open=True))
    for t in range(steps):
        y[t + 1] = (1 - c * y[t] / (y[t] + 1)) * y[t]
    return y


def step_sizes(y0: float, L: float, mu: float, steps: int) -> NDArray[np.float64]:
    r"""Optimal steps :math:`\eta^{t+1} = y^t/(L(y^t+1))`; they do not depend on α (Lemma B.4)."""
    y = bound_recursion(y0, float(positive("mu", mu)) / float(positive("L", L)), steps)[:-1]
    return y / (L * (y + 1))


def error_bound(m: float, y0: float, chi: float) -> float:
    r""":math:`L\mu\Gamma\,\Delta w^{m,\mathrm{ub}}` of Theorem 4.3 (divide by :math:`L\mu\Gamma`)."""
    t_rounds = rounds(y0, chi, integer=True)
    if m >= t_rounds:
        return float(1 / (1 + chi / (2 - chi) * (m - t_rounds)))
    return float((1 - chi / 2) ** m * y0)


def simulate_algorithm1(
    curvature: ArrayLike,
    alpha: ArrayLike,
    *,
    n: int,
    rounds: int,
    sigma: float,
    diam: float,
    reps: int,
    seed: int | np.random.Generator | None = None,
) -> tuple[float, float]:
    r"""Monte Carlo :math:`\mathbf E\|w^m - w^*\|^2` of Algorithm 1 and its Theorem 4.3 bound.

    The objective is :math:`f(w) = \tfrac12\sum_j h_j w_j^2` (:math:`w^* = 0`, μ = min h, L = max h),
    W the ball of diameter D around 0, :math:`w^0` uniform in W, batches of size b = n/m, steps of
    Lemma B.4 and aggregation weights :math:`a_i = \beta_i/\Gamma`. Batch-mean gradient noise is
    Gaussian with :math:`\mathbf E\|\cdot\|^2 = \sigma^2/b` (the only moment the bound uses), so
    the aggregated message noise is :math:`N(0, I/(d\Gamma))`.
    Returns (Monte Carlo mean, :math:`\Delta w^{m,\mathrm{ub}}`).
    """
    rng = np.random.default_rng(seed)
    h = positive("curvature", curvature)
    a = np.atleast_1d(positive("alpha", alpha))
    m, dim, n_ = positive_int("rounds", rounds), h.size, positive_int("n", n)
    mu, L = float(h.min()), float(h.max())
    rho = (n_ / m) / float(positive("sigma", sigma)) ** 2
    gamma = float(np.sum(1 / (1 / rho + dim * a**2)))
    radius = float(positive("diam", diam)) / 2
    y0 = L * mu * n_ * a.size * (2 * radius) ** 2 / sigma**2
    eta = step_sizes(y0, L, mu, m)
    reps_ = positive_int("reps", reps)
    direction = rng.standard_normal((reps_, dim))
    w = (
        direction
        / np.linalg.norm(direction, axis=1, keepdims=True)
        * radius
        * rng.uniform(size=(reps_, 1)) ** (1 / dim)
    )
    for t in range(m):
        w = w - eta[t] * (h * w + rng.standard_normal((reps_, dim)) / np.sqrt(dim * gamma))
        norm = np.linalg.norm(w, axis=1, keepdims=True)
        w = np.where(norm > radius, w * radius / np.maximum(norm, 1e-300), w)
    return float(np.mean(np.sum(w**2, axis=1))), error_bound(m, y0, mu / L) / (L * mu * gamma)


@proposition(
    "tsoy.lemmaB.4",
    source="Tsoy et al. (2024), Lemma B.4",
    statement="eta* = y/(L(y+1)) minimises the one-step bound and gives y' = (1 - chi y/(y+1)) y",
)
def _lemma_b4() -> Verdict:
    foc = is_zero(sp.diff(Y_NEXT, _eta).subs(_eta, ETA_STAR), "d y'/d eta at eta*")
    rec = is_zero(Y_NEXT.subs(_eta, ETA_STAR) - H_MAP, "y'(eta*) - h(y)")
    convex = sp.diff(Y_NEXT, _eta, 2)
    if not (foc.holds and rec.holds) or not convex.is_positive:
        return (
            foc
            if not foc.holds
            else rec
            if not rec.holds
            else refuted("not convex", {"d2": str(convex)})
        )
    return Verdict(foc.status, f"{foc.evidence}; {rec.evidence}; second derivative {convex} > 0")


@proposition(
    "tsoy.lemmaB.4.monotone",
    source="Tsoy et al. (2024), Appendix B.4 (proof of Theorem 4.3)",
    statement="as printed: h(y) = (1 - chi y/(y+1)) y is decreasing in y",
    holds=False,
)
def _h_decreasing_printed() -> Verdict:
    h = sp.lambdify((_y, _chi), H_MAP)
    if h(2.0, 0.5) > h(1.0, 0.5):
        return refuted("h increases", {"chi": 0.5, "h(1)": h(1.0, 0.5), "h(2)": h(2.0, 0.5)})
    return checked("h(2) <= h(1) at chi = 0.5", 1)


@proposition(
    "tsoy.lemmaB.4.monotone.corrected",
    source="Tsoy et al. (2024), Appendix B.4; spec T9",
    statement="h is increasing: h'(y) = ((1 - chi)(y+1)^2 + chi)/(y+1)^2 > 0 for chi in (0, 1]",
)
def _h_increasing() -> Verdict:
    return is_zero(
        sp.diff(H_MAP, _y) - ((1 - _chi) * (_y + 1) ** 2 + _chi) / (_y + 1) ** 2,
        "h'(y) - closed form",
    )


@proposition(
    "tsoy.thm4.3",
    source="Tsoy et al. (2024), Theorem 4.3 (Appendix B.4; spec T10)",
    statement="L mu Gamma E||w^m - w*||^2 <= 1/(1 + chi(m - T)/(2 - chi)) for m >= T under the optimal steps",
)
def _thm43() -> Verdict:
    zt = 1 / (1 + _chi / (2 - _chi) * _t)
    gap = sp.factor(sp.simplify(zt.subs(_t, _t + 1) - H_MAP.subs(_y, zt)))
    target = (
        _chi**2
        * _t
        * (2 - _chi)
        * (1 - _chi)
        / ((_chi * _t + 2) * (_chi * _t - _chi + 2) * (_chi * _t - 2 * _chi + 4))
    )
    induction = is_zero(gap - target, "z^{t+1} - h(z^t) - chi^2 t (2-chi)(1-chi)/(...) (>= 0)")
    points = [
        {"L": L, "mu": mu, "y0": y0, "m": m}
        for L, mu, y0 in ((2.0, 1.0, 64000.0), (1.0, 0.5, 5e4), (10.0, 1.0, 1e6), (1.0, 0.01, 10.0))
        for m in range(1, 4 * int(rounds(y0, mu / L, integer=True)) + 1, 7)
    ]
    numeric = on_points(
        lambda L, mu, y0, m: (
            bound_recursion(y0, mu / L, m)[-1] <= error_bound(m, y0, mu / L) * (1 + 1e-12)
        ),
        points,
        "exact recursion y^m <= Theorem 4.3 bound, m <= 4T",
    )
    if not induction.holds:
        return induction
    return (
        numeric
        if not numeric.holds
        else Verdict(numeric.status, f"{numeric.evidence}; {induction.evidence}")
    )


@proposition(
    "tsoy.lemmaB.2",
    source="Tsoy et al. (2024), Lemma B.2 (step size restricted as in spec T8)",
    statement="E||w' - w*||^2 <= (1 - 2 eta mu + L mu eta^2) E||w - w*||^2 + eta^2/Gamma for eta <= 1/L",
)
def _lemma_b2() -> Verdict:
    # exact one-step error on f = sum_j h_j w_j^2 / 2 (mu = min h, L = max h) with an unbiased
    # gradient of variance 1/Gamma: sum_j (1 - eta h_j)^2 w_j^2 + eta^2/Gamma (no projection)
    rng = np.random.default_rng(2)
    points = []
    for _ in range(300):
        h = np.sort(rng.uniform(0.1, 5.0, int(rng.integers(1, 6))))
        points.append(
            {
                "h": h,
                "w": rng.normal(size=h.size),
                "eta": float(rng.uniform(0, 1 / h[-1])),
                "gamma": float(rng.uniform(0.1, 100)),
            }
        )

    def holds(h: NDArray[np.float64], w: NDArray[np.float64], eta: float, gamma: float) -> bool:
        mu, L = h[0], h[-1]
        exact = float(np.sum((1 - eta * h) ** 2 * w**2)) + eta**2 / gamma
        bound = (1 - 2 * eta * mu + L * mu * eta**2) * float(np.sum(w**2)) + eta**2 / gamma
        return exact <= bound * (1 + 1e-12)

    return on_points(
        holds, points, "exact one-step error on random diagonal quadratics <= Lemma B.2 bound"
    )


@proposition(
    "tsoy.lemmaB.3",
    source="Tsoy et al. (2024), Lemma B.3",
    statement="for L-smooth f: ||grad f(w)||^2 <= 2 L (f(w) - f*)",
)
def _lemma_b3() -> Verdict:
    rng = np.random.default_rng(3)
    points = []
    for _ in range(300):
        d = int(rng.integers(1, 6))
        a = rng.normal(size=(d, d))
        points.append({"hess": a @ a.T + 1e-3 * np.eye(d), "w": rng.normal(size=d)})

    def holds(hess: NDArray[np.float64], w: NDArray[np.float64]) -> bool:
        L = float(np.linalg.eigvalsh(hess)[-1])
        grad = hess @ w
        return float(grad @ grad) <= 2 * L * 0.5 * float(w @ hess @ w) * (1 + 1e-12)

    return on_points(holds, points, "random convex quadratics f = w'Hw/2 (f* = 0)")


@proposition(
    "tsoy.thm4.3.monte_carlo",
    source="Tsoy et al. (2024), Theorem 4.3 and Algorithm 1; spec section 7.5",
    statement="the simulated E||w^m - w*||^2 of Algorithm 1 is at most the Theorem 4.3 bound",
)
def _thm43_mc() -> Verdict:
    rng = np.random.default_rng(43)
    results = []
    for m in (10, 39, 60, 100):
        mean, bound = simulate_algorithm1(
            np.linspace(1, 2, 5),
            [0.01, 0.05, 0.1, 0.2],
            n=2000,
            rounds=m,
            sigma=1.0,
            diam=2.0,
            reps=2000,
            seed=rng,
        )
        results.append((m, mean, bound))
    evidence = "; ".join(f"m={m}: {mean:.3g} <= {bound:.3g}" for m, mean, bound in results)
    if all(mean <= bound for _, mean, bound in results):
        return checked(
            f"quadratic d = 5, N = 4, n = 2000, 2000 runs each: {evidence}", len(results)
        )
    return refuted("Monte Carlo error above the bound", {"results": results})
