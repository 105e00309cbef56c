"""Lemmas B.2-B.4 and Theorem 4.3 of Tsoy et al. (2024), Appendix B.4.

Algorithm 1's steps and bound.

The step sizes, rounds and bound themselves are in :mod:`econ.privacy.sgd`, the recursion's
sympy forms in :mod:`econ.privacy.symbolic`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import NDArray

from econ.privacy import symbolic as S
from econ.privacy._checks import all_hold, identity, proves_positive
from econ.privacy.sgd import bound_recursion, error_bound, rounds, squared_errors
from econ.propositions import Verdict, checked, on_points, proposition, refuted


@proposition(
    "tsoy.lemmaB.4",
    source="Tsoy et al. (2024), Lemma B.4 (Appendix B.4)",
    statement=(
        "the step eta* = y^t/(L(y^t + 1)) < 2/L minimises y^{t+1} = (1 - 2 eta mu + L mu eta^2) "
        "y^t + L mu eta^2, with minimum (1 - chi y^t/(y^t + 1)) y^t, chi = mu/L"
    ),
    perturb={"eta_star": lambda y, L: y / (L * (y + 2))},
)
def _lemma_b4(
    eta_star: Callable[[sp.Expr, sp.Expr], sp.Expr] = lambda y, L: y / (L * (y + 1)),
    minimum: Callable[[sp.Expr, sp.Expr], sp.Expr] = lambda y, chi: (1 - chi * y / (y + 1)) * y,
    cap: int | sp.Expr = 2,
) -> Verdict:
    """First-order condition, convexity in eta, the minimum and the cap.

    For all y > 0 and chi in (0, 1].
    """
    eta = eta_star(S.y_bound, S.L_smooth)
    return all_hold(
        [
            identity(sp.diff(S.Y_NEXT, S.eta).subs(S.eta, eta), "d y^{t+1}/d eta at eta*"),
            proves_positive(sp.diff(S.Y_NEXT, S.eta, 2), "d^2 y^{t+1}/d eta^2"),
            identity(
                S.Y_NEXT.subs(S.eta, eta) - minimum(S.y_bound, S.chi), "y^{t+1}(eta*) - minimum"
            ),
            proves_positive(cap / S.L_smooth - eta, "cap/L - eta*"),
        ],
        "Lemma B.4: y^{t+1} is a convex quadratic in eta minimised at eta*",
    )


def _h_direction(direction: str) -> Verdict:
    """Decide the printed direction of monotonicity of h from the sign of h'.

    ``"increasing"`` asks sympy for h' > 0, ``"decreasing"`` for -h' > 0, each for every
    y > 0 and chi in (0, 1] (chi = 1/(1 + c), c > 0, covers (0, 1)); a failure carries the
    point where the sign is wrong, and for a refuted decrease the exact pair h(1) < h(2).
    """
    sign = 1 if direction == "increasing" else -1
    slope = sign * sp.diff(S.H_MAP, S.y_bound)
    c = sp.Symbol("c", positive=True)
    what = "h'(y)" if sign > 0 else "-h'(y)"
    verdict = all_hold(
        [
            proves_positive(
                slope.subs(S.chi, 1 / (1 + c)), f"{what} for chi = 1/(1 + c) in (0, 1)"
            ),
            proves_positive(slope.subs(S.chi, 1), f"{what} for chi = 1"),
        ],
        f"{what} > 0 for every y > 0 and chi in (0, 1]",
    )
    if verdict.holds or sign > 0:
        return verdict
    h = sp.Lambda((S.y_bound, S.chi), S.H_MAP)
    chi = sp.Rational(1, 2)  # mu = L/2, inside chi = mu/L in (0, 1]
    low, high = h(1, chi), h(2, chi)
    if not low < high:
        return verdict
    return refuted(
        f"{verdict.evidence}; exactly h(1) = {low} < h(2) = {high} at chi = 1/2",
        {"chi": "1/2", "y": [1, 2], "h(y)": [str(low), str(high)]},
    )


@proposition(
    "tsoy.lemmaB.4.monotone",
    source="Tsoy et al. (2024), proof of Theorem 4.3 (Appendix B.4): 'Notice that h(y) is decreasing in y.'",
    statement="as printed: h(y) = (1 - chi y/(y+1)) y is decreasing in y",
    holds=False,
    perturb={"direction": "increasing"},
)
def _h_decreasing_printed(direction: str = "decreasing") -> Verdict:
    return _h_direction(direction)


@proposition(
    "tsoy.lemmaB.4.monotone.corrected",
    source=(
        "Tsoy et al. (2024), proof of Theorem 4.3 (Appendix B.4); the induction "
        "y^{t+1+T} <= h(y^{t+T}) <= h(z^t) needs h increasing"
    ),
    statement="h(y) = (1 - chi y/(y+1)) y is increasing in y > 0 for chi in (0, 1]",
    perturb={"direction": "decreasing"},
)
def _h_increasing(direction: str = "increasing") -> Verdict:
    return _h_direction(direction)


def _thm43_points() -> list[dict[str, float]]:
    points = []
    for chi in (1.0, 0.5, 0.1, 0.01, 0.002):
        for y0 in (0.3, 1.0, 10.0, 1e3, 1e6):
            t_rounds = int(rounds(y0, chi, integer=True))
            ms = {1, 2, max(t_rounds - 1, 1), t_rounds, t_rounds + 1, 2 * t_rounds}
            ms |= {t_rounds + int(k / chi) for k in (1, 5, 20)}
            points += [{"chi": chi, "y0": y0, "m": float(m)} for m in sorted(ms)]
    return points


@proposition(
    "tsoy.thm4.3",
    source="Tsoy et al. (2024), section 4.2, Theorem 4.3 (proof in Appendix B.4)",
    statement=(
        "with the steps of Lemma B.4, L mu Gamma E||w^m - w*||^2 <= 1/(1 + chi (m - T)/(2 - chi)) "
        "for m >= T and <= (1 - chi/2)^m y^0_* for m < T, T = ceil(-ln y^0_*/ln(1 - chi/2)) "
        "(T <= 0 when y^0_* < 1)"
    ),
    perturb={"slope": lambda chi: 2 * chi / (2 - chi)},
)
def _thm43(
    slope: Callable[[float], float] = lambda chi: chi / (2 - chi),
    rate: Callable[[float], float] = lambda chi: 1 - chi / 2,
) -> Verdict:
    """The exact optimal-step recursion y^m (Lemma B.4) against the printed bound."""

    def bound(chi: float, y0: float, m: float) -> float:
        t_rounds = np.ceil(-np.log(y0) / np.log(1 - chi / 2))  # as printed: no floor at 1
        if m >= t_rounds:
            return 1 / (1 + slope(chi) * (m - t_rounds))
        return rate(chi) ** m * y0

    zt = 1 / (1 + S.chi / (2 - S.chi) * S.t_round)
    step = identity(
        zt.subs(S.t_round, S.t_round + 1)
        - S.H_MAP.subs(S.y_bound, zt)
        - S.chi**2
        * S.t_round
        * (2 - S.chi)
        * (1 - S.chi)
        / (
            (S.chi * S.t_round + 2)
            * (S.chi * S.t_round - S.chi + 2)
            * (S.chi * S.t_round - 2 * S.chi + 4)
        ),
        "z^{t+1} - h(z^t) - chi^2 t (2-chi)(1-chi)/(...) (>= 0 for chi <= 1)",
    )
    if not step.holds:
        return step
    numeric = on_points(
        lambda chi, y0, m: bool(
            bound_recursion(y0, chi, int(m))[-1] <= bound(chi, y0, m) * (1 + 1e-12)
        ),
        _thm43_points(),
        "y^m of the exact recursion <= the printed bound (Delta w^m <= y^m/(L mu Gamma) is "
        "Lemmas B.2 and B.4)",
        drawn=(
            "grid chi in {1, 0.5, 0.1, 0.01, 0.002} x y^0_* in {0.3, 1, 10, 1e3, 1e6} x m in "
            "{1, 2, T-1, T, T+1, 2T, T + k/chi for k = 1, 5, 20}"
        ),
    )
    if not numeric.holds:
        return numeric
    return Verdict(
        numeric.status,
        f"{numeric.evidence}; {step.evidence}",
        n_points=numeric.n_points,
        drawn=numeric.drawn,
    )


def _final_display(exponent: Callable[[int, int], int]) -> Verdict:
    """The t < T branch of the last display of Appendix B.4 on the exact optimal-step sequence.

    The display bounds y^t_*/(L mu Gamma) by (1 - chi/2)^e y^0_*/(L mu Gamma) for t < T in a run
    of m rounds (t <= m), with e = ``exponent(t, m)``; the factor 1/(L mu Gamma) cancels.
    """
    points = [
        {"chi": chi, "y0": y0, "m": m, "t": t}
        for chi in (1.0, 0.5, 0.1)
        for y0 in (10.0, 1e3, 1e6)
        for m in (1, 3, 10, 40)
        for t in range(0, m + 1)
        if t < rounds(y0, chi, integer=True)
    ]
    return on_points(
        lambda chi, y0, m, t: bool(
            bound_recursion(y0, chi, max(t, 1))[t]
            <= (1 - chi / 2) ** exponent(t, m) * y0 * (1 + 1e-12)
        ),
        points,
        "y^t_* <= (1 - chi/2)^e y^0_* for t < T",
        drawn=(
            "grid chi in {1, 0.5, 0.1} x y^0_* in {10, 1e3, 1e6} x m in {1, 3, 10, 40} x every "
            "t = 0..m below T"
        ),
    )


@proposition(
    "tsoy.thm4.3.proof.final",
    source=(
        "Tsoy et al. (2024), Appendix B.4, proof of Theorem 4.3, last display: 'Delta w^t <= "
        "y^t_*/(L mu Gamma) <= ... (1 - chi/2)^m y^0_*/(L mu Gamma), t < T'"
    ),
    statement=(
        "as printed: in a run of m rounds, for t < T, y^t_* <= (1 - chi/2)^m y^0_* (so Delta w^t "
        "<= (1 - chi/2)^m y^0_*/(L mu Gamma)); at t = 0 it asks y^0_* <= (1 - chi/2)^m y^0_*, and "
        "Delta w^0 = D^2 for a w^0 at distance D from w* exceeds (1 - chi/2)^m y^0_*/(L mu Gamma) "
        "= (1 - chi/2)^m (n/b) D^2 (noiseless clients) once m (1 - chi/2)^m < 1 with b = n/m"
    ),
    holds=False,
    perturb={"exponent": lambda t, m: t},
)
def _final_printed(exponent: Callable[[int, int], int] = lambda t, m: m) -> Verdict:
    """The printed exponent m (the number of rounds) in the t < T branch."""
    return _final_display(exponent)


@proposition(
    "tsoy.thm4.3.proof.final.corrected",
    source=(
        "Tsoy et al. (2024), Appendix B.4, proof of Theorem 4.3, last display, t < T branch, "
        "with the exponent t of the line before ('y^t_* <= (1 - chi/2)^t y^0_*')"
    ),
    statement="for t < T, y^t_* <= (1 - chi/2)^t y^0_*, so Delta w^t <= (1 - chi/2)^t y^0_*/(L mu Gamma)",
    perturb={"exponent": lambda t, m: m},
)
def _final_corrected(exponent: Callable[[int, int], int] = lambda t, m: t) -> Verdict:
    """The exponent t; at t = m it is Theorem 4.3's m < T branch."""
    return _final_display(exponent)


def _log_cosh_setting(rng: np.random.Generator, dim: int) -> dict[str, NDArray[np.float64]]:
    r"""f(w) = sum_j mu_j w_j^2/2 + c_j log cosh(w_j): f'' in [mu_j, mu_j + c_j], f* = f(0) = 0."""
    return {"base": rng.uniform(0.05, 2.0, dim), "bump": rng.uniform(0.0, 5.0, dim)}


def _grad_log_cosh(
    w: NDArray[np.float64], base: NDArray[np.float64], bump: NDArray[np.float64]
) -> NDArray[np.float64]:
    return base * w + bump * np.tanh(w)


def _lemma_b2_points(eta_max: float) -> list[dict[str, object]]:
    rng = np.random.default_rng(2)
    points: list[dict[str, object]] = []
    for k in range(300):
        dim = int(rng.integers(1, 6))
        setting = _log_cosh_setting(rng, dim)
        if k % 2 == 0:  # a quadratic: no bump, curvature base
            setting["bump"] = np.zeros(dim)
        L = float(np.max(setting["base"] + setting["bump"]))
        fraction = 1.0 if k % 10 == 0 else float(rng.uniform(0, 1))
        w = rng.normal(size=dim) * float(np.exp(rng.uniform(-3, 2)))
        if k % 10 == 0:  # all weight on the stiffest coordinate
            w = np.where(setting["base"] + setting["bump"] == L, 1.0, 0.0)
        points.append(
            {
                **setting,
                "w": w,
                "eta": fraction * eta_max / L,
                "gamma": float(rng.uniform(0.1, 100)),
            }
        )
    return points


@proposition(
    "tsoy.lemmaB.2",
    source="Tsoy et al. (2024), Lemma B.2 (Appendix B.4)",
    statement=(
        "if eta <= 2/L, Delta w^{t+1} <= (1 - 2 eta mu + L mu eta^2) Delta w^t + eta^2/Gamma for "
        "L-smooth, mu-strongly convex f and an unbiased gradient of variance 1/Gamma"
    ),
    perturb={"eta_max": 3.0},
)
def _lemma_b2(
    eta_max: float = 2.0,
    factor: Callable[[float, float, float], float] = lambda eta, mu, L: (
        1 - 2 * eta * mu + L * mu * eta**2
    ),
) -> Verdict:
    """Exact one-step mean-square error: ||w - eta grad f(w)||^2 + eta^2/Gamma (w* = 0)."""

    def holds(
        base: NDArray[np.float64],
        bump: NDArray[np.float64],
        w: NDArray[np.float64],
        eta: float,
        gamma: float,
    ) -> bool:
        mu, L = float(np.min(base)), float(np.max(base + bump))
        exact = float(np.sum((w - eta * _grad_log_cosh(w, base, bump)) ** 2)) + eta**2 / gamma
        return exact <= (factor(eta, mu, L) * float(np.sum(w**2)) + eta**2 / gamma) * (1 + 1e-12)

    return on_points(
        holds,
        _lemma_b2_points(eta_max),
        "exact one-step error <= the Lemma B.2 bound (the printed range eta <= 2/L, although "
        "the proof's last step needs eta <= 1/L)",
        drawn=(
            f"seeded sample (seed 2) of 300: d in 1..5, half quadratics, half f = sum mu_j w_j^2/2 "
            f"+ c_j log cosh w_j (mu = min mu_j, L = max mu_j + c_j), eta uniform in "
            f"(0, {eta_max:g}/L] and eta = {eta_max:g}/L with w on the stiffest coordinate every "
            "tenth point"
        ),
        hypothesis=lambda base, bump, w, eta, gamma: bool(
            eta <= eta_max / float(np.max(base + bump)) * (1 + 1e-12)
        ),
    )


@proposition(
    "tsoy.lemmaB.3",
    source="Tsoy et al. (2024), Lemma B.3 (Appendix B.4)",
    statement="for L-smooth f with minimum f*: ||grad f(w)||^2 <= 2 L (f(w) - f*)",
    perturb={"const": 1.5},
)
def _lemma_b3(const: float = 2.0) -> Verdict:
    """Quadratics (equality along the stiffest direction) and log-cosh bumps (f* = f(0) = 0)."""
    rng = np.random.default_rng(3)
    points = []
    for k in range(300):
        d = int(rng.integers(1, 6))
        if k % 3 == 0:
            a = rng.normal(size=(d, d))
            hess = a @ a.T + 1e-3 * np.eye(d)
            w = rng.normal(size=d)
            if k % 9 == 0:
                w = np.linalg.eigh(hess)[1][:, -1]  # the equality case
            points.append({"kind": "quadratic", "params": hess, "w": w})
        else:
            setting = _log_cosh_setting(rng, d)
            points.append({"kind": "log-cosh", "params": setting, "w": rng.normal(size=d) * 3})

    def holds(kind: str, params: Any, w: NDArray[np.float64]) -> bool:
        if kind == "quadratic":
            L = float(np.linalg.eigvalsh(params)[-1])
            grad, gap = params @ w, 0.5 * float(w @ params @ w)
        else:
            base, bump = params["base"], params["bump"]
            L = float(np.max(base + bump))
            grad = _grad_log_cosh(w, base, bump)
            gap = float(np.sum(base * w**2 / 2 + bump * np.log(np.cosh(w))))
        return float(grad @ grad) <= const * L * gap * (1 + 1e-12)

    return on_points(
        holds,
        points,
        "||grad f||^2 <= 2 L (f - f*)",
        drawn=(
            "seeded sample (seed 3) of 300 points, d in 1..5: a third convex quadratics "
            "(w on the top eigenvector, the equality case, every ninth), two thirds "
            "f = sum mu_j w_j^2/2 + c_j log cosh w_j"
        ),
    )


#: Algorithm 1 runs: (curvatures h_j, clients' noise alpha_i, samples n, rounds m, seed).
_ALG1_SETTINGS = (
    (np.linspace(1, 2, 5), (0.01, 0.05, 0.1, 0.2), 2000, 10),
    (np.linspace(1, 2, 5), (0.01, 0.05, 0.1, 0.2), 2000, 39),
    (np.linspace(1, 2, 5), (0.01, 0.05, 0.1, 0.2), 2000, 100),
    (np.array([1.0, 1.0]), (0.0, 0.0, 0.0), 500, 20),
    (np.array([0.2, 1.0, 1.0]), (0.5, 0.5), 1000, 60),
    (np.array([1.0]), (1.0,), 200, 30),
    (np.array([0.5, 4.0, 2.0, 1.0]), (0.3, 0.01, 2.0), 3000, 50),
    (np.array([1.0, 1.5]), (3.0, 3.0, 3.0, 3.0, 3.0), 400, 15),
)


@proposition(
    "tsoy.thm4.3.monte_carlo",
    source="Tsoy et al. (2024), section 4.2, Theorem 4.3 and Algorithm 1",
    statement=(
        "the simulated E||w^m - w*||^2 of Algorithm 1 (batches of b = floor(n/m), Lemma B.4 "
        "steps, weights beta_i/Gamma) is at most the Theorem 4.3 bound with Gamma = "
        "sum_i 1/(1/rho + d alpha_i^2), rho = b/sigma^2"
    ),
    perturb={"gamma_of": lambda rho, d, alpha: float(np.sum(np.full(alpha.size, rho)))},
)
def _thm43_mc(
    gamma_of: Callable[[float, int, NDArray[np.float64]], float] = lambda rho, d, alpha: float(
        np.sum(1 / (1 / rho + d * alpha**2))
    ),
) -> Verdict:
    """One independent estimate (1500 runs, its own seed) per setting; a miss is > 4 SE above."""
    results, misses = [], []
    for seed, (h, alphas, n, m) in enumerate(_ALG1_SETTINGS):
        alpha, sigma = np.array(alphas), 1.0
        errors, _, y0 = squared_errors(
            h,
            np.maximum(alpha, 1e-12),
            n=n,
            rounds=m,
            sigma=sigma,
            diam=2.0,
            reps=1500,
            seed=430 + seed,
        )
        mu, L = float(h.min()), float(h.max())
        rho = (n // m) / sigma**2  # b = floor(n/m) points per batch (section 4.2)
        bound = error_bound(m, y0, mu / L) / (L * mu * gamma_of(rho, h.size, alpha))
        mean, se = float(errors.mean()), float(errors.std(ddof=1) / np.sqrt(errors.size))
        text = f"setting {seed} (d = {h.size}, N = {alpha.size}, m = {m}): {mean:.4g} +- {se:.1g} vs bound {bound:.4g}"
        results.append(text)
        if mean - 4 * se > bound:
            misses.append(text)
    if misses:
        return refuted(
            f"Monte Carlo error above the bound by > 4 SE: {misses[0]}", {"miss": misses}
        )
    return checked(
        "no estimate exceeds the bound by more than 4 standard errors: " + "; ".join(results),
        len(results),
        drawn=(
            f"{len(_ALG1_SETTINGS)} fixed settings, each one estimate of 1500 runs with its own "
            "seed: quadratics with d from 1 to 5 and chi = mu/L from 0.1 to 1, N from 1 to 5, "
            "noiseless and very noisy clients, m from 10 to 100 rounds on both sides of T, n/m "
            "whole in four settings and fractional (b = floor(n/m)) in four"
        ),
    )
