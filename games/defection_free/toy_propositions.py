r"""The toy's quality path under Algorithm 5: Propositions 4-5, Theorem 5, Corollary 1 (ch. 3).

Werner (2024), ch. 3, checked vectorised over hundreds of starts (``thesis.ch3.prop4``,
``.prop5``, ``.thm5``, ``.cor1``): along the gradient path of
:func:`~games.quadratic_firms.thesis_toy` the high firm's quality has a closed form, its step
is :func:`games.defection_free.paced_step_size` or a constant, and the low firm steps to
:func:`econ.quality_caps.next_low_quality`. The same results with real gradient steps are
registered in :mod:`games.defection_free.propositions`; the quality-level results these rest
on (the cap :math:`B`, Proposition 3, the Nash bargaining solution) in
:mod:`econ.quality_caps` and :mod:`econ.bargaining`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ import duopoly, quality_caps
from econ.bargaining import duopoly_nash_solution, nash_product
from econ.duopoly_propositions import same_expression
from econ.propositions import Verdict, on_points, proposition
from games.defection_free import B_TILDE, paced_step_size
from games.quadratic_firms import thesis_toy

_THESIS = "Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3"
_S34 = f"{_THESIS}, section 3.4 (pp. 64-69)"
_S37 = f"{_THESIS}, section 3.7 (pp. 70ff)"

#: The convex toy :func:`~games.quadratic_firms.thesis_toy`: f(x) = (||x||^2 + 1)/64 for both
#: firms, so q(x) = 1 - f(x), Q = 63/64, grad f = x/32 and L = 1/32. Every quality in
#: [q(x), Q] is one gradient step from x (the step runs straight to the minimiser 0), so the
#: low firm can choose its learning rate to land on any target quality: the oracle low-firm
#: update of quality_caps.next_low_quality.
_TOY = thesis_toy((0.0, 0.0), (0.0, 0.0))
_TOY_Q = _TOY.q_max
_TOY_L = _TOY.smoothness


def _toy_quality(norm2: NDArray[np.float64]) -> NDArray[np.float64]:
    """The toy's quality 1 - (||x||^2 + 1)/64 at points of squared norm ``norm2``."""
    return 1 - (norm2 + 1) / 64


def _toy_high_path(qh0: ArrayLike, alpha: ArrayLike | None, rounds: int) -> tuple[NDArray, NDArray]:
    """High-firm qualities and step sizes of gradient descent on the toy, one column per start.

    ``alpha=None`` is the proof of Proposition 5's pacing (:func:`paced_step_size` with
    :data:`B_TILDE`); otherwise a constant step (<= 1/L) per start. A step alpha scales x by
    1 - alpha L, so only ||x||^2 is tracked.
    """
    norm2 = (1 - np.asarray(qh0, dtype=np.float64)) * 64 - 1  # ||x_0||^2
    qs, alphas = np.empty((rounds, *norm2.shape)), np.empty((rounds, *norm2.shape))
    for t in range(rounds):
        if alpha is None:
            step = paced_step_size(B_TILDE, _toy_quality(norm2), norm2 * _TOY_L**2, 1 / _TOY_L)
        else:
            step = np.broadcast_to(np.asarray(alpha, dtype=np.float64), norm2.shape)
        norm2 = norm2 * (1 - step * _TOY_L) ** 2
        qs[t], alphas[t] = _toy_quality(norm2), step
    return qs, alphas


def _simulate(
    ql0: ArrayLike,
    qh0: ArrayLike,
    q_h_path: ArrayLike,
    q_max: float = 1.0,
    *,
    cap_mode: str = "recommended",
    gated: bool = False,
) -> NDArray[np.float64]:
    """Low-firm qualities of Algorithm 5 along given high-firm paths (one column per start).

    The low firm steps to min(hat q_{l,t}, rho* q_{h,t}, q_l*) (never below where it is), a
    learning rate that lines 9-11 of Algorithm 5 allow: it keeps q_{l,t} <= hat q_{l,t}.
    ``cap_mode="literal"`` steps to hat q_{l,t} of step 8 alone, as printed; ``gated`` moves
    the low firm only while step 7's gate is open (q_{l,t-1} < q_l* and
    q_{l,t-1}/q_{h,t} <= rho*). Both together are Algorithm 5 as printed.
    """
    sol = duopoly_nash_solution(ql0, qh0, q_max, allow_lower=True)
    path = np.asarray(q_h_path, dtype=np.float64)
    out = np.empty_like(path)
    ql, prev = np.asarray(ql0, dtype=np.float64), np.asarray(qh0, dtype=np.float64)
    for t, qh in enumerate(path):
        step = quality_caps.next_low_quality(
            ql,
            prev,
            qh,
            rho_star=sol.rho_star,
            q_l_star=sol.q_l_star,
            cap_mode=cap_mode,
        )
        if gated:
            step = np.where((ql < sol.q_l_star) & (ql / qh <= sol.rho_star), step, ql)
        ql = step
        out[t], prev = ql, qh
    return out


_SCHEDULES = (None, 1 / _TOY_L, 1 / (4 * _TOY_L), 1 / (32 * _TOY_L))
_SCHEDULE_WORDS = "high-firm steps cycling through the proof's pacing min{(b~-1)q/||g||^2, 1/L}, 1/L, 1/(4L), 1/(32L)"


@functools.cache
def _toy_runs(rounds: int = 500) -> dict[str, NDArray[np.float64]]:
    """Algorithm 5 on the toy from 400 seeded starts, each with one of four high-firm schedules."""
    rng = np.random.default_rng(0)
    qh0 = rng.uniform(0.02, _TOY_Q, 400)
    ql0 = rng.uniform(0.0, 1.0, 400) * qh0
    q_h = np.empty((rounds, 400))
    alphas = np.empty((rounds, 400))
    for k, alpha in enumerate(_SCHEDULES):
        cols = np.arange(400) % len(_SCHEDULES) == k
        q_h[:, cols], alphas[:, cols] = _toy_high_path(qh0[cols], alpha, rounds)
    q_l = _simulate(ql0, qh0, q_h, _TOY_Q)
    q_l_printed = _simulate(ql0, qh0, q_h, _TOY_Q, cap_mode="literal", gated=True)
    sol = duopoly_nash_solution(ql0, qh0, _TOY_Q, allow_lower=True)
    ul, uh = duopoly.revenues(np.vstack([ql0, q_l]), np.vstack([qh0, q_h]))
    drop = np.minimum(
        np.diff(ul, axis=0) / np.maximum(ul[:-1], 1e-300),
        np.diff(uh, axis=0) / np.maximum(uh[:-1], 1e-300),
    )
    return {
        "q_l0": ql0,
        "q_h0": qh0,
        "q_l": q_l,
        "q_l_printed": q_l_printed,
        "q_h": q_h,
        "alpha": alphas,
        "q_l_star": sol.q_l_star,
        "rho_star": sol.rho_star,
        "N_star": sol.nash_product,
        "worst_drop": drop.min(axis=0),
        "lowest_q_l": np.minimum(q_l.min(axis=0), q_l_printed.min(axis=0)),
    }


_TOY_DRAWN = (
    "400 seeded starts on the convex toy f(x) = (||x||^2+1)/64 (Q = 63/64, L = 1/32): q_h0 uniform in "
    f"[0.02, Q], q_l0 = u q_h0 with u uniform (seed 0); {_SCHEDULE_WORDS}; 500 rounds; each start's "
    "trajectory is one point"
)


def _toy_points(keys: Sequence[str]) -> list[dict[str, float]]:
    runs = _toy_runs()
    return [
        {
            "q_l0": float(a),
            "q_h0": float(b),
            "q_l_star": float(c),
            **{k: float(runs[k][-1, i] if runs[k].ndim == 2 else runs[k][i]) for k in keys},
        }
        for i, (a, b, c) in enumerate(
            zip(runs["q_l0"], runs["q_h0"], runs["q_l_star"], strict=True)
        )
    ]


@proposition(
    "thesis.ch3.prop4",
    source=f"{_S34}, Proposition 4",
    statement="if q_l0 > q_l*, Algorithm 5 cannot converge to (q_l*, q_h*)",
    perturb={"start_above": False},
)
def _prop4(start_above: bool = True) -> Verdict:
    return on_points(
        lambda q_l0, q_h0, q_l_star, q_l, q_l_printed, lowest_q_l: (
            lowest_q_l >= q_l0 and min(abs(q_l - q_l_star), abs(q_l_printed - q_l_star)) > 1e-6
        ),
        _toy_points(["q_l", "q_l_printed", "lowest_q_l"]),
        "the low firm never falls below q_l0, so it ends at least q_l0 - q_l* > 1e-6 from q_l*, "
        "with the toolkit's cap min(hat q_l,t, rho* q_h,t, q_l*) and with Algorithm 5 as printed "
        "(step 7's gate, step 8's hat q_l,t alone)",
        drawn=_TOY_DRAWN,
        hypothesis=(lambda q_l0, q_l_star, **_: q_l0 > q_l_star)
        if start_above
        else (lambda q_l0, q_l_star, **_: q_l0 <= q_l_star),
    )


@proposition(
    "thesis.ch3.prop5",
    source=f"{_S34}, Proposition 5; proof in section 3.7",
    statement="if q_l0 <= q_l*, there exist learning-rate schedules {alpha_l,t}, {alpha_h,t} such that after T rounds "
    "Algorithm 5 converges to (q_l*, q_h*)",
    perturb={"start_above": True},
)
def _prop5(start_above: bool = False) -> Verdict:
    runs = _toy_runs()
    below = runs["q_l0"] <= runs["q_l_star"]
    over = (runs["q_l_printed"][-1] - runs["q_l_star"])[below]
    return on_points(
        lambda q_l0, q_h0, q_l_star, q_l, q_h, worst_drop: (
            abs(q_l - q_l_star) <= 1e-9 and abs(q_h - _TOY_Q) <= 1e-9 and worst_drop >= -1e-12
        ),
        _toy_points(["q_l", "q_h", "worst_drop"]),
        "with the low firm's schedule stepping to min(hat q_l,t, rho* q_h,t, q_l*) each round, (q_l, q_h) ends "
        "within 1e-9 of (q_l*, Q) and no revenue ever falls (relative step >= -1e-12), under every one of the "
        "four high-firm schedules. Algorithm 5 as printed (step 7's gate, step 8's hat q_l,t "
        f"alone) ends with q_l,T - q_l* in [{over.min():.1e}, {over.max():.3f}] on the same starts "
        "(docs/errata.md, thesis.ch3.prop5.gd.as_printed)",
        drawn=_TOY_DRAWN,
        hypothesis=(lambda q_l0, q_l_star, **_: q_l0 > q_l_star)
        if start_above
        else (lambda q_l0, q_l_star, **_: q_l0 <= q_l_star),
    )


_x, _xs, _g = (sp.Matrix(sp.symbols(f"{n}1 {n}2", real=True)) for n in ("x", "s", "g"))
_ALPHA = sp.Symbol("alpha", positive=True)


@proposition(
    "thesis.ch3.thm5.identity",
    source=f"{_S37}, proof of Theorem 5, last line of the gradient-descent chain",
    statement="as printed: f* + g'(x - x*) - (alpha/2)||g||^2 = f* + (2/alpha)(||x - x*||^2 - ||x - alpha g - x*||^2)",
    holds=False,
    perturb={"factor": 1 / (2 * _ALPHA)},
)
def _thm5_identity(factor: sp.Expr = 2 / _ALPHA) -> Verdict:
    lhs = (_g.T * (_x - _xs))[0] - _ALPHA / 2 * (_g.T * _g)[0]
    step = _x - _ALPHA * _g - _xs
    rhs = factor * (((_x - _xs).T * (_x - _xs))[0] - (step.T * step)[0])
    return same_expression(
        lhs,
        rhs,
        f"g'(x - x*) - (alpha/2)||g||^2 minus ({factor})(||x - x*||^2 - ||x - alpha g - x*||^2) in R^2",
    )


proposition(
    "thesis.ch3.thm5.identity.corrected",
    source=f"{_S37}, proof of Theorem 5, with 1/(2 alpha) in place of 2/alpha",
    statement="g'(x - x*) - (alpha/2)||g||^2 = (1/(2 alpha))(||x - x*||^2 - ||x - alpha g - x*||^2), so "
    "f_T - f* <= ||x_0 - x*||^2/(2 sum alpha)",
    perturb={"factor": 2 / _ALPHA},
)(lambda factor=1 / (2 * _ALPHA): _thm5_identity(factor))


@proposition(
    "thesis.ch3.thm5",
    source=f"{_S34}, Theorem 5, eq. (3.5); proof in section 3.7",
    statement="if q_l0 <= q_l*, N* - N_T <~ ||x_h0 - x_h*||^2/sum_t alpha_h,t + |rho* - rho_T|; instantiated as "
    "N* - N_T <= c((1 + rho*)||x_h0 - x*||^2/(2 sum alpha) + |rho* - rho_T|) with c = 1/27, for the "
    "toolkit's low-firm cap and for Algorithm 5 as printed",
    perturb={"constant": 1 / 2700},
)
def _thm5(constant: float = 1 / 27) -> Verdict:
    runs = _toy_runs()
    q_h, alpha = runs["q_h"], runs["alpha"]
    dist2 = (1 - runs["q_h0"]) * 64 - 1
    excess, worst = [], {}
    for construction, q_l in (("toolkit", runs["q_l"]), ("printed", runs["q_l_printed"])):
        gap = runs["N_star"][None, :] - nash_product(
            q_l, q_h, runs["q_l0"][None, :], runs["q_h0"][None, :]
        )
        shape = (1 + runs["rho_star"]) * dist2 / (2 * np.cumsum(alpha, axis=0)) + np.abs(
            runs["rho_star"] - q_l / q_h
        )
        excess.append((gap - constant * shape).max(axis=0))
        below = runs["q_l0"] <= runs["q_l_star"]
        worst[construction] = float((gap / shape).max(axis=0)[below].max())
    return on_points(
        lambda q_l0, q_h0, q_l_star, excess: excess <= 1e-15,
        [
            {"q_l0": float(a), "q_h0": float(b), "q_l_star": float(c), "excess": float(e)}
            for a, b, c, e in zip(
                runs["q_l0"], runs["q_h0"], runs["q_l_star"], np.maximum(*excess), strict=True
            )
        ],
        f"the bound with c = {constant:.6g} holds at every one of the 500 rounds, with the low "
        "firm at the toolkit's cap min(hat q_{l,t}, rho* q_{h,t}, q_l*) and with Algorithm 5 as "
        "printed (step 7's gate, step 8's hat q_{l,t} alone, which overshoots q_l*: "
        "docs/errata.md, thesis.ch3.prop5.gd.as_printed); the largest (N* - N_T)/(bound/c) is "
        f"{worst['toolkit']:.2e} and {worst['printed']:.2e}",
        drawn=_TOY_DRAWN,
        hypothesis=lambda q_l0, q_h0, q_l_star, excess: q_l0 <= q_l_star,
    )


@proposition(
    "thesis.ch3.cor1",
    source=f"{_S34}, Corollary 1; proof in section 3.7 (log read as log10, as in the proof of Proposition 5)",
    statement="if q_l0 <= q_l*, after T >= max{log(rho_0/rho*)/log b~, log(q_h*/q_h0)/log((b~+1)/2) + "
    "L||x_h0 - x*||^2/(2 eps)} rounds with the paced schedule, q_h* - q_h,T <= eps and "
    "|rho* - rho_T| <= (4 - 5 rho*) log10(q_h*/(q_h* - eps))",
    perturb={"rounds_scale": 0.1},
)
def _cor1(rounds_scale: float = 1.0, cap_mode: str = "recommended", gated: bool = False) -> Verdict:
    b_t = B_TILDE
    runs = _toy_runs()
    starts = [
        (a, b)
        for a, b, c in zip(runs["q_l0"], runs["q_h0"], runs["q_l_star"], strict=True)
        if a <= c
    ][::4]
    ql0, qh0 = (np.array([s[i] for s in starts]) for i in (0, 1))
    sol = duopoly_nash_solution(ql0, qh0, _TOY_Q, allow_lower=True)
    points = []
    for eps in (1e-2, 1e-3):
        dist2 = (1 - qh0) * 64 - 1
        case1 = np.log(np.maximum(ql0 / qh0, 1e-300) / sol.rho_star) / np.log(b_t)
        case2 = np.log(_TOY_Q / qh0) / np.log((b_t + 1) / 2) + _TOY_L * dist2 / (2 * eps)
        rounds = np.maximum(np.ceil(rounds_scale * np.maximum(case1, case2)).astype(int), 1)
        q_h, _ = _toy_high_path(qh0, None, int(rounds.max()))
        q_l = _simulate(ql0, qh0, q_h, _TOY_Q, cap_mode=cap_mode, gated=gated)
        at = rounds - 1, np.arange(len(rounds))
        points += [
            {
                "q_l0": float(a),
                "q_h0": float(b),
                "eps": eps,
                "T": int(t),
                "q_h_gap": float(_TOY_Q - h),
                "rho_gap": float(abs(r - lo / h)),
                "rho_bound": float((4 - 5 * r) * np.log10(_TOY_Q / (_TOY_Q - eps))),
            }
            for a, b, t, h, lo, r in zip(
                ql0, qh0, rounds, q_h[at], q_l[at], sol.rho_star, strict=True
            )
        ]
    return on_points(
        lambda q_l0, q_h0, eps, T, q_h_gap, rho_gap, rho_bound: (
            q_h_gap <= eps and rho_gap <= rho_bound + 1e-12
        ),
        points,
        f"at the prescribed T (scaled by {rounds_scale}) both q_h* - q_h,T <= eps and "
        "|rho* - rho_T| <= (4 - 5 rho*) log10(q_h*/(q_h* - eps)) hold",
        drawn="every fourth start with q_l0 <= q_l* of the convex-toy sample (400 seeded starts, seed 0), "
        "each with eps = 1e-2 and 1e-3, paced high schedule; the low firm "
        + (
            "at step 8's hat q_{l,t}"
            if cap_mode == "literal"
            else "at min(hat q_{l,t}, rho* q_{h,t}, q_l*)"
        )
        + (" while step 7's gate is open" if gated else ""),
    )


_ALG5_78 = (
    "Algorithm 5, steps 7-8 (hat q_{l,t} = B(rho_{t-1}, q_{h,t}/q_{h,t-1}) "
    "q_{h,t} whenever q_{l,t} < q_l* and q_{l,t}/q_{h,t} <= rho*)"
)


@proposition(
    "thesis.ch3.cor1.as_printed",
    source=f"{_S34}, Corollary 1, run with {_ALG5_78}; proof in section 3.7",
    statement="as printed: if q_l0 <= q_l*, Algorithm 5 with step 7's gate and the low firm raised "
    "to step 8's hat q_{l,t} (no other cap), after the proof's T with the paced schedule, has "
    "q_h* - q_h,T <= eps and |rho* - rho_T| <= (4 - 5 rho*) log10(q_h*/(q_h* - eps))",
    holds=False,
    perturb={"cap_mode": "recommended"},
)
def _cor1_as_printed(cap_mode: str = "literal") -> Verdict:
    return _cor1(cap_mode=cap_mode, gated=True)


@proposition(
    "thesis.ch3.cor1.as_printed.corrected",
    source=f"{_S34}, Corollary 1, run with {_ALG5_78}, with step 8's cap lowered to min(hat q_{{l,t}}, "
    f"rho* q_{{h,t}}, q_l*) as in {_S37}, proof of Proposition 5, Case 1 ('ensure "
    "rho_{t+1} = rho*'); docs/errata.md, thesis.ch3.prop5.gd.as_printed",
    statement="Algorithm 5 with step 7's gate and the low firm raised to min(hat q_{l,t}, rho* "
    "q_{h,t}, q_l*): if q_l0 <= q_l*, after the proof's T with the paced schedule, q_h* - q_h,T "
    "<= eps and |rho* - rho_T| <= (4 - 5 rho*) log10(q_h*/(q_h* - eps))",
    perturb={"cap_mode": "literal"},
)
def _cor1_as_printed_corrected(cap_mode: str = "recommended") -> Verdict:
    return _cor1(cap_mode=cap_mode, gated=True)


def _case1_points(rate: float) -> list[dict[str, float]]:
    """Case-1 starts of the toy and rho_T after log(rho_0/rho*)/log(rate) rounds.

    Case 1: rho_0 > rho*, q_l0 <= q_l*.
    """
    rng = np.random.default_rng(1)
    qh0 = rng.uniform(0.02, _TOY_Q, 2000)
    ql0 = rng.uniform(0.0, 1.0, 2000) * qh0
    sol = duopoly_nash_solution(ql0, qh0, _TOY_Q, allow_lower=True)
    keep = (ql0 / qh0 > sol.rho_star + 1e-9) & (ql0 <= sol.q_l_star)
    ql0, qh0, r = ql0[keep], qh0[keep], sol.rho_star[keep]
    rounds = np.maximum(np.ceil(np.log(ql0 / qh0 / r) / np.log(rate)).astype(int), 1)
    q_h, _ = _toy_high_path(qh0, None, int(rounds.max()))
    q_l = _simulate(ql0, qh0, q_h, _TOY_Q)
    at = rounds - 1, np.arange(rounds.size)
    return [
        {"q_l0": float(a), "q_h0": float(b), "rho_star": float(c), "T": int(t), "rho_T": float(d)}
        for a, b, c, t, d in zip(ql0, qh0, r, rounds, q_l[at] / q_h[at], strict=True)
    ]


@proposition(
    "thesis.ch3.cor1.case1",
    source=f"{_S37}, proof of Corollary 1, Case 1",
    statement="as printed: if rho_0 >= rho*, then since q_h,t/q_h,t-1 <= b~ (the paced schedule of Proposition 5's "
    "proof), rho_T = rho* after log(rho_0/rho*)/log(b~) rounds",
    holds=False,
    perturb={"rate": "(b~+1)/2"},
)
def _cor1_case1(rate: str = "b~") -> Verdict:
    b_t = B_TILDE
    value = {"b~": b_t, "(b~+1)/2": (b_t + 1) / 2}[rate]
    return on_points(
        lambda q_l0, q_h0, rho_star, T, rho_T: abs(rho_T - rho_star) <= 1e-9,
        _case1_points(value),
        f"after ceil(log(rho_0/rho*)/log({rate})) paced rounds rho_T = rho* (to 1e-9): growth per round is at most "
        "b~, so this many rounds is a lower bound on the wait, not an upper one",
        drawn="the Case-1 starts (rho_0 > rho*, q_l0 <= q_l*) among 2000 seeded starts of the convex toy "
        "f(x) = (||x||^2+1)/64 (q_h0 uniform in [0.02, 63/64], q_l0 = u q_h0, seed 1); paced high schedule "
        "min{(b~-1)q/||g||^2, 1/L}; the low firm idles until q_l0/q_h,t <= rho*, then holds rho*",
    )


proposition(
    "thesis.ch3.cor1.case1.corrected",
    source=f"{_S37}, proof of Corollary 1, Case 1, the display q_h,T/q_h,0 = rho_0/rho* <= b~^T "
    "and T >= log(rho_0/rho*)/log(b~), with the per-round growth (b~+1)/2 of Proposition 5's proof",
    statement="if rho_0 >= rho*, the paced schedule grows q_h by at least (b~+1)/2 per round while paced (and a 1/L step "
    "reaches Q on the toy), so rho_T = rho* after log(rho_0/rho*)/log((b~+1)/2) rounds",
    perturb={"rate": "b~"},
)(lambda rate="(b~+1)/2": _cor1_case1(rate))
