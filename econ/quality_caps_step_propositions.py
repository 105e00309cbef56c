r"""The propositions of Werner (2024), ch. 3 about the low firm's step size in Algorithm 5.

The proof of Proposition 3 (§3.7, pp. 70ff) steps the low firm by
:math:`\alpha_{l,t} = \min\{(\hat q_{l,t} - q_{l,t-1})/\|\nabla f_{l,t-1}\|^2, 1\}`: the printed
rule, refuted by a round inside the hypotheses, and its correction with :math:`1/L`, checked on
convex :math:`L`-smooth losses with :mod:`econ.quality_caps` and :mod:`econ.bargaining`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from econ import bargaining, duopoly
from econ.propositions import Verdict, checked, proposition, refuted
from econ.quality_caps import cap_ratio

_PROOF3 = "Werner (2024), ch. 3, §3.7 (pp. 70ff), proof of Proposition 3"


def _one(L: float) -> float:
    """The constant 1 of the printed step size."""
    return 1.0


def _one_over_l(L: float) -> float:
    """1/L."""
    return 1.0 / L


#: The round of the in-domain counterexample: the joint loss f(x) = 1/50 + 2 x_1^2 + x_2^2/20
#: of f(x; l) = f(x) + x_2/50 and f(x; h) = f(x) - x_2/50, each convex and 4-smooth;
#: x_{h,0} = (2/5, 0), x_{l,0} = (1/9, 39/10).
_STEP_CURVATURE = np.array([4.0, 0.1])


_STEP_F_MIN = 0.02


_STEP_X_H0 = np.array([0.4, 0.0])


_STEP_X_L0 = np.array([1 / 9, 3.9])


_Loss = tuple[Callable[[NDArray[np.float64]], float], Callable[[NDArray[np.float64]], Any]]


def _quadratic(curvature: NDArray[np.float64], centre: NDArray[np.float64], fmin: float) -> _Loss:
    """f(x) = fmin + (x - centre)' H (x - centre)/2 (H a matrix, or a vector for diagonal H)."""
    hess = np.diag(curvature) if curvature.ndim == 1 else curvature

    def loss(y: NDArray[np.float64]) -> float:
        return float(fmin + 0.5 * (y - centre) @ hess @ (y - centre))

    return loss, lambda y: hess @ (y - centre)


def _softplus(mat: NDArray[np.float64], coef: float) -> _Loss:
    """f(x) = coef mean(log(1 + exp(A x)))."""

    def loss(y: NDArray[np.float64]) -> float:
        return float(coef * np.mean(np.logaddexp(0, mat @ y)))

    return loss, lambda y: coef * mat.T @ (1 / (1 + np.exp(-(mat @ y)))) / mat.shape[0]


def _step_instances(seed: int, n: int) -> Iterator[tuple[_Loss, float, Any, float, Any]]:
    """The round of the in-domain counterexample, then ``n`` random convex L-smooth losses.

    Each instance is ((loss, gradient), L, x, gap, round) with ``round`` the duopoly round
    where there is one (None otherwise). Random ones: quadratics f* + (x-x*)' H (x-x*)/2 in
    2-5 dimensions with eigenvalues spread over up to 4 decades, and softplus losses
    c mean(log(1 + e^{Ax})); each scaled so that f(x) <= 1, with a gap of 1e-6, 1/2, 1, 2
    or 50 times ||g||^2/L.
    """
    joint, grad = _quadratic(_STEP_CURVATURE, np.zeros(2), _STEP_F_MIN)
    lip = float(_STEP_CURVATURE.max())
    x_h1 = _STEP_X_H0 - grad(_STEP_X_H0) / lip  # Algorithm 5, lines 3-4 with alpha_h = 1/L
    q_h0, q_h1, q_l0 = (1 - joint(x) for x in (_STEP_X_H0, x_h1, _STEP_X_L0))
    hat_q = float(cap_ratio(q_l0 / q_h0, q_h1 / q_h0)) * q_h1
    duopoly_round = {
        "q_l_prev": q_l0,
        "q_h_prev": q_h0,
        "q_h_new": q_h1,
        "hat_q": hat_q,
        "points": [_STEP_X_H0, x_h1, _STEP_X_L0],
        "q_max": 1 - _STEP_F_MIN,
    }
    yield (joint, grad), lip, _STEP_X_L0, hat_q - q_l0, duopoly_round
    rng = np.random.default_rng(seed)
    for i in range(n):
        d = int(rng.integers(2, 6))
        x = rng.normal(size=d)
        if i % 2 == 0:
            basis, _ = np.linalg.qr(rng.normal(size=(d, d)))
            hess = basis @ np.diag(10.0 ** rng.uniform(-4, 0, d)) @ basis.T
            centre, fstar = rng.normal(size=d), float(rng.uniform(0, 0.3))
            scale = (1 - fstar) / max(0.5 * (x - centre) @ hess @ (x - centre), 1e-12)
            hess = hess * scale * float(rng.uniform(0.2, 1.0))
            pair = _quadratic(hess, centre, fstar)
            lip_i = float(np.linalg.eigvalsh(hess).max())
        else:
            mat = rng.normal(size=(8, d))
            coef = float(rng.uniform(0.2, 1.0)) / float(np.mean(np.logaddexp(0, mat @ x)))
            pair = _softplus(mat, coef)
            lip_i = coef * float(np.linalg.eigvalsh(mat.T @ mat).max()) / (4 * mat.shape[0])
        g = pair[1](x)
        gap = float((1e-6, 0.5, 1.0, 2.0, 50.0)[i % 5] * (g @ g) / lip_i)
        yield pair, lip_i, x, gap, None


def _prop3_step(step_cap: Callable[[float], float]) -> Verdict:
    n = 0
    for (loss, grad), lip, x, gap, rnd in _step_instances(seed=5, n=400):
        g = grad(x)
        alpha = min(gap / float(g @ g), step_cap(lip))
        after = x - alpha * g
        q0, q1 = 1 - loss(x), 1 - loss(after)
        if rnd is not None:
            values = [
                loss(p) + sign * p[1] / 50 for p in (*rnd["points"], after) for sign in (1, -1)
            ]
            sol = bargaining.duopoly_nash_solution(
                rnd["q_l_prev"], rnd["q_h_prev"], rnd["q_max"], allow_lower=True
            )
            inside = (
                all(0 <= v <= 1 for v in values)
                and rnd["q_l_prev"] < float(sol.q_l_star)
                and rnd["q_l_prev"] / rnd["q_h_new"] <= float(sol.rho_star)
            )
            if not inside:
                raise ValueError("the round of the step check is outside Algorithm 5's hypotheses")
            ul0, uh0 = duopoly.revenues(rnd["q_l_prev"], rnd["q_h_prev"])
            ul1, uh1 = duopoly.revenues(q1, rnd["q_h_new"])
            if q1 < q0 or ul1 < ul0 or uh1 < uh0:
                return refuted(
                    "the step alpha_l = min{(hat q - q_{l,t-1})/||g||^2, 1} = 1 exceeds 2/L = 1/2 and "
                    "raises the loss: q_{l,t} and U_l fall. Inside the hypotheses, checked in code: "
                    "f(x;l), f(x;h) = 1/50 + 2x_1^2 + x_2^2/20 +- x_2/50 are convex and 4-smooth with "
                    "the joint loss f = 1/50 + 2x_1^2 + x_2^2/20, their values at "
                    "x_{l,0}, x_{l,1}, x_{h,0}, x_{h,1} lie in [0, 1], alpha_h = 1/L, and line 7's gate "
                    "passes (q_{l,0} < q_l*, q_{l,0}/q_{h,1} <= rho*)",
                    {
                        "x_l0": "(1/9, 39/10)",
                        "x_h0": "(2/5, 0)",
                        "L": lip,
                        "alpha_l": alpha,
                        "q_l_prev": q0,
                        "q_l_new": q1,
                        "q_h_prev": rnd["q_h_prev"],
                        "q_h_new": rnd["q_h_new"],
                        "hat_q": rnd["hat_q"],
                        "U_l_prev": float(ul0),
                        "U_l_new": float(ul1),
                        "rho_star": float(sol.rho_star),
                    },
                )
        n += 1
        if not (q0 - 1e-14 <= q1 <= q0 + gap + 1e-14):
            return refuted(
                "the step lowers the quality or passes hat q",
                {"L": lip, "alpha": alpha, "gap": gap, "q_before": q0, "q_after": q1},
            )
    return checked(
        "q_{l,t-1} <= q_{l,t} <= hat q_{l,t} after one step, and at the duopoly round neither "
        "revenue falls",
        n,
        drawn="the duopoly round f = 1/50 + 2x_1^2 + x_2^2/20 from x_{l,0} = (1/9, 39/10), plus 400 "
        "random convex L-smooth losses scaled into [0, 1] (seed 5): quadratics in 2-5 dimensions "
        "with eigenvalues over 4 decades and softplus losses, each with a gap of 1e-6, 1/2, 1, 2 "
        "or 50 times ||g||^2/L (both branches of the min)",
    )


@proposition(
    "thesis.ch3.prop3.step",
    source=f"{_PROOF3}, alpha_{{l,t}} = min{{(hat q_{{l,t}} - q_{{l,t-1}})/||grad f_{{l,t-1}}||^2, 1}}",
    statement="as printed: the low firm's step alpha_{l,t} = min{(hat q_{l,t} - q_{l,t-1})/"
    "||grad f_{l,t-1}||^2, 1} keeps q_{l,t-1} <= q_{l,t} <= hat q_{l,t}, so no revenue falls",
    holds=False,
    perturb={"step_cap": _one_over_l},
)
def _prop3_step_printed(step_cap: Callable[[float], float] = _one) -> Verdict:
    return _prop3_step(step_cap)


@proposition(
    "thesis.ch3.prop3.step.corrected",
    source=f"{_PROOF3}, the last display: alpha_{{l,t}} = min{{(hat q_{{l,t}} - q_{{l,t-1}})/"
    "||grad f_{l,t-1}||^2, 1}, whose 1 becomes 1/L",
    statement="alpha_{l,t} = min{(hat q_{l,t} - q_{l,t-1})/||grad f_{l,t-1}||^2, 1/L} keeps "
    "q_{l,t-1} <= q_{l,t} <= hat q_{l,t} for convex L-smooth losses",
    perturb={"step_cap": _one},
)
def _prop3_step_corrected(step_cap: Callable[[float], float] = _one_over_l) -> Verdict:
    return _prop3_step(step_cap)
