r"""Algorithm 5 with real gradient steps: Propositions 3-5 and its inner loop (Werner 2024, ch. 3).

:mod:`games.defection_free`'s rule run by :func:`games.defection_free.play` on the convex
firms of :mod:`games.quadratic_firms` (:func:`~games.quadratic_firms.thesis_toy` and
:func:`~games.quadratic_firms.random_firms`): ids ``thesis.ch3.prop*.gd`` and Algorithm 5's
inner loop, ``thesis.ch3.alg5.while``. The same results on the toy's qualities, vectorised
over hundreds of starts, are registered in :mod:`games.defection_free.toy_propositions`; the
quality-level results these rest on (the cap :math:`B`, Proposition 3, the Nash bargaining
solution) in :mod:`econ.quality_caps` and :mod:`econ.bargaining`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from econ import duopoly, quality_caps
from econ.propositions import Verdict, checked, proposition, refuted
from games.defection_free import DefectionFree, DefectionFreeConfig, play
from games.quadratic_firms import QuadraticFirms, random_firms, thesis_toy

_SRC = "Werner (2024), ch. 3"
_PROPS = f"{_SRC}, §3.4 (pp. 64-69)"
_PROOFS = f"{_SRC}, §3.7 (pp. 70ff)"

_T1 = ((-5.0, 5.0), (2.0, 2.0))  # q_l0 = 13/64, q_h0 = 55/64 (rho_0 < rho*)
_T2 = ((-5.0, 5.0), (float(np.sqrt(37.4)), 0.0))  # q_h0 = 0.4 (rho_0 >= rho*)


def _b_with_eleven(a: float, b: float) -> float:
    """:math:`B(a, b)` with the printed constant 12 replaced by 11 (stable form)."""
    return float(4.0 - 5.5 / (1.0 + np.sqrt(1.0 - 11.0 * (1.0 - a) / (b * (4.0 - a) ** 2))))


def _worst_revenue_step(q_l: NDArray[np.float64], q_h: NDArray[np.float64]) -> float:
    """The most negative round-to-round change of either revenue (labels of eq. 3.4)."""
    u_l, u_h = duopoly.revenues(q_l, q_h, literal=True)
    return float(min(np.diff(u_l).min(), np.diff(u_h).min()))


def _toy_start(rng: np.random.Generator) -> QuadraticFirms:
    """The toy from a uniform (q_l0, q_h0) with q_l0 < q_h0 < 63/64, in random directions."""
    q_l0, q_h0 = np.sort(rng.uniform(0.02, 0.97, 2))
    radius = np.sqrt(64.0 * (1.0 - np.array([q_l0, q_h0])) - 1.0)
    angles = rng.uniform(0.0, 2.0 * np.pi, 2)
    points = radius[:, None] * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return thesis_toy(points[0], points[1])


def _starts(seed: int, n_toy: int, n_random: int) -> Iterator[tuple[str, QuadraticFirms]]:
    """The named starting firms the checks run on (§3.2).

    T1, T2, then of ``n_toy`` uniform toy starts and ``n_random`` :func:`random_firms` (seeded)
    those at which both firms' losses lie in [0, 1].
    """
    yield "toy T1", thesis_toy(*_T1)
    yield "toy T2", thesis_toy(*_T2)
    rng = np.random.default_rng(seed)
    for i in range(n_toy):
        firms = _toy_start(rng)
        if firms.max_loss() <= 1.0:
            yield f"toy start {i}", firms
    for i, stream in enumerate(rng.spawn(n_random)):
        firms = random_firms(stream, const_step=float(stream.uniform(0.1, 1.0)))
        if firms.max_loss() <= 1.0:
            yield f"random firms {i}", firms


#: The low firm's cap and gate: the toolkit's (``DefectionFreeConfig``'s defaults) and
#: Algorithm 5's as printed (step 7's gate, step 8's cap alone).
_CONSTRUCTIONS: dict[str, dict[str, str]] = {
    "toolkit": {"cap_mode": "recommended", "gating": "none"},
    "printed": {"cap_mode": "literal", "gating": "line7"},
}


def _rule(
    firms: QuadraticFirms, cap_factor: Callable[..., Any] = quality_caps.cap_ratio, **config: Any
) -> DefectionFree:
    start = firms.measure()
    return DefectionFree(
        start["low"],
        start["high"],
        DefectionFreeConfig(q_max=firms.q_max, **config),
        cap_factor=cap_factor,
    )


@proposition(
    "thesis.ch3.prop3.gd",
    source=f"{_PROPS}, Proposition 3, with the low firm's steps of {_PROOFS}, proof of "
    "Proposition 3 (1/L for its 1: docs/errata.md, thesis.ch3.prop3.step)",
    statement="with real gradient steps on convex quadratic firms, the high firm paced or at a "
    "constant step <= 1/L and the low firm raised by gradient steps up to min(hat q_{l,t}, "
    "rho* q_{h,t}, q_l*) (the toolkit's cap) or, as printed, up to hat q_{l,t} whenever step "
    "7's gate is open, neither revenue falls in any round",
    perturb={"b_formula": _b_with_eleven},
)
def _prop3_gd(b_formula: Callable[..., Any] = quality_caps.cap_ratio) -> Verdict:
    worst = {"toolkit": np.inf, "printed": np.inf}
    n, outside = 0, 0
    for i, (label, firms) in enumerate(_starts(2024, n_toy=10, n_random=12)):
        schedule = ("paced", "const")[i % 2]
        for construction, config in _CONSTRUCTIONS.items():
            trial = _copy(firms)
            rule = _rule(trial, b_formula, schedule=schedule, **config)
            run = play(rule, trial, 60)
            if trial.max_loss() > 1.0:
                outside += 1
                continue
            step = _worst_revenue_step(run.q_l, run.q_h)
            n += 1
            if step < -1e-12 or np.any(np.diff(run.q_l) < 0):
                u_l, u_h = duopoly.revenues(run.q_l, run.q_h, literal=True)
                t = int(np.argmin(np.minimum(np.diff(u_l), np.diff(u_h))))
                return refuted(
                    "a revenue falls",
                    {
                        "start": label,
                        "construction": construction,
                        "schedule": schedule,
                        "worst_revenue_step": step,
                        "round": t + 1,
                        "q_l": run.q_l[t : t + 2].tolist(),
                        "q_h": run.q_h[t : t + 2].tolist(),
                    },
                )
            worst[construction] = min(worst[construction], step)
    return checked(
        f"worst round-to-round revenue change {worst['toolkit']:.1e} with the toolkit's cap "
        f"and {worst['printed']:.1e} with Algorithm 5 as printed (>= -1e-12)",
        n,
        drawn="two trajectories of 60 rounds per start, one with the toolkit's cap "
        "min(hat q_{l,t}, rho* q_{h,t}, q_l*) and no gate, one as printed (step 7's gate, step "
        "8's hat q_{l,t} alone): toys T1 and T2, of 10 toy starts with (q_l0, q_h0) uniform "
        "below 63/64 and 12 random convex quadratic firm pairs (seed 2024) those with both "
        "firms' losses in [0, 1], the high firm paced and at a constant step in turn; "
        f"{outside} runs whose losses left [0, 1] skipped",
    )


def _copy(firms: QuadraticFirms) -> QuadraticFirms:
    return QuadraticFirms(
        centre=firms.centre,
        curvature=firms.curvature,
        x_low=firms.x_low.copy(),
        x_high=firms.x_high.copy(),
        const_step=firms.const_step,
        loop_step=firms.loop_step,
    )


def _runs(
    side: str, rounds: int, n_starts: int, **config: Any
) -> tuple[list[dict[str, Any]], int, int]:
    """Runs of Algorithm 5 from the first ``n_starts`` starts with q_l0 above/below q_l*.

    Each start runs twice, the high firm paced and at a constant step; ``config`` sets the
    rule's cap and gating (:class:`~games.defection_free.DefectionFreeConfig`). Returns one
    record per run, the number of starts used, and the number of starts on the other side plus
    runs whose losses left [0, 1].
    """
    records: list[dict[str, Any]] = []
    skipped = used = 0
    for label, firms in _starts(7, n_toy=60, n_random=60):
        probe = _rule(firms)
        if (probe.q_l0 > probe.q_l_star) != (side == "above"):
            skipped += 1
            continue
        used += 1
        for schedule in ("paced", "const"):
            trial = _copy(firms)
            rule = _rule(trial, schedule=schedule, **config)
            run = play(rule, trial, rounds)
            if trial.max_loss() > 1.0:
                skipped += 1
                continue
            records.append(
                {
                    "start": label,
                    "schedule": schedule,
                    "q_l0_minus_q_l_star": rule.q_l0 - rule.q_l_star,
                    "low_moved": not np.array_equal(trial.x_low, firms.x_low),
                    "gap": float(
                        max(abs(run.q_l[-1] - rule.q_l_star), abs(run.q_h[-1] - trial.q_max))
                    ),
                    "gap_low": float(abs(run.q_l[-1] - rule.q_l_star)),
                    "q_l_T_minus_q_l_star": float(run.q_l[-1] - rule.q_l_star),
                    "revenue_step": _worst_revenue_step(run.q_l, run.q_h),
                }
            )
        if used == n_starts:
            break
    return records, used, skipped


#: Starts of each side that the checks of Propositions 4 and 5 run from: T1, T2 and the first
#: toy starts on the side (each run twice); a failing run appears among them when the
#: statement is changed (the registry's ``perturb``), and Algorithm 5 as printed fails among them.
_N_STARTS = 10


_DRAWN_RUNS = (
    "{n} runs from the first {starts} starts with q_l0 {side} q_l* among toys T1 and T2, toy "
    "starts with (q_l0, q_h0) uniform below 63/64 and random convex quadratic firm pairs (seed 7), "
    "those with both firms' losses in [0, 1], each run with the high firm paced and at a constant "
    "step; {skipped} starts on the other side or runs leaving [0, 1] skipped"
)


@proposition(
    "thesis.ch3.prop4.gd",
    source=f"{_PROPS}, Proposition 4 and its proof (qualities never fall, assumption A2)",
    statement="if q_l0 > q_l*, Algorithm 5 cannot converge to (q_l*, q_h*): on convex quadratic "
    "firms with gradient steps the low firm never moves, so q_l,T - q_l* = q_l0 - q_l* > 0",
    perturb={"side": "below"},
)
def _prop4_gd(side: str = "above") -> Verdict:
    n, least = 0, np.inf
    for construction, config in _CONSTRUCTIONS.items():
        records, used, skipped = _runs(side, rounds=60, n_starts=_N_STARTS, **config)
        for r in records:
            if r["low_moved"] or not float(r["gap_low"]) > 1e-6:
                return refuted(
                    "the low firm moved, or q_l,T came within 1e-6 of q_l*",
                    {**r, "construction": construction},
                )
        n += len(records)
        least = min(least, *(float(r["q_l0_minus_q_l_star"]) for r in records))
    return checked(
        f"x_l never changed in 60 rounds and q_l,T - q_l* = q_l0 - q_l* >= {least:.3f}, with "
        "the toolkit's cap and with Algorithm 5 as printed (step 7's gate, step 8's cap)",
        n,
        drawn="each start twice, with the toolkit's cap and as printed: "
        + _DRAWN_RUNS.format(n=len(records), starts=used, side=">", skipped=skipped),
    )


@proposition(
    "thesis.ch3.prop5.gd",
    source=f"{_PROPS}, Proposition 5, with the pacing of {_PROOFS}, proof of Proposition 5",
    statement="if q_l0 <= q_l*, Algorithm 5 with gradient steps on convex quadratic firms (low "
    "firm capped at min(hat q_{l,t}, rho* q_{h,t}, q_l*)) reaches (q_l*, Q) within 1e-9 in 150 "
    "rounds, no revenue falling",
    perturb={"side": "above"},
)
def _prop5_gd(side: str = "below") -> Verdict:
    records, used, skipped = _runs(side, rounds=150, n_starts=_N_STARTS)
    for r in records:
        if float(r["gap"]) > 1e-9 or float(r["revenue_step"]) < -1e-12:
            return refuted("no convergence to (q_l*, Q), or a revenue fell", r)
    gap = max(float(r["gap"]) for r in records)
    drop = min(float(r["revenue_step"]) for r in records)
    return checked(
        f"|(q_l,T, q_h,T) - (q_l*, Q)| <= {gap:.1e}; worst revenue step {drop:.1e}",
        len(records),
        drawn=_DRAWN_RUNS.format(n=len(records), starts=used, side="<=", skipped=skipped),
    )


def _prop5_runs(cap_mode: str) -> Verdict:
    """Proposition 5 for Algorithm 5 with step 7's gate and the cap ``cap_mode`` of step 8."""
    records, used, skipped = _runs(
        "below", rounds=150, n_starts=_N_STARTS, cap_mode=cap_mode, gating="line7"
    )
    over = [float(r["q_l_T_minus_q_l_star"]) for r in records]
    failing = [r for r in records if float(r["gap"]) > 1e-9 or float(r["revenue_step"]) < -1e-12]
    if failing:
        paced = [r for r in failing if r["schedule"] == "paced"]
        r = paced[0] if paced else failing[0]
        return refuted(
            f"in {len(failing)} of {len(records)} runs (q_l,T - q_l* in [{min(over):.3g}, "
            f"{max(over):.3g}]; {len(paced)} of them with the high firm paced by b~ as in the "
            "proof of Proposition 5) the low firm ends away from q_l*. Case 2 of the proof "
            "raises q_l to hat q_{l,t} = B(rho_{t-1}, b) q_{h,t} whenever step 7's gate is open "
            "(rho_{t-1} <= rho*), and B(rho_{t-1}, b) can exceed rho*, so rho_t passes rho*; "
            "qualities never fall (assumption 4 of section 3.3), so once q_h reaches Q, "
            "q_l,T > rho* Q = q_l*. Inside the hypotheses, checked in code: q_l0 <= q_l*, "
            "convex quadratic L-smooth losses in [0, 1], alpha_h paced or constant <= 1/L",
            r,
        )
    gap = max(float(r["gap"]) for r in records)
    return checked(
        f"|(q_l,T, q_h,T) - (q_l*, Q)| <= {gap:.1e}, no revenue falling; q_l,T - q_l* in "
        f"[{min(over):.1e}, {max(over):.1e}]",
        len(records),
        drawn=_DRAWN_RUNS.format(n=len(records), starts=used, side="<=", skipped=skipped),
    )


@proposition(
    "thesis.ch3.prop5.gd.as_printed",
    source=f"{_PROPS}, Algorithm 5, steps 7-8 (hat q_{{l,t}} = B(rho_{{t-1}}, q_{{h,t}}/"
    f"q_{{h,t-1}}) q_{{h,t}}), and {_PROOFS}, proof of Proposition 5, Case 2: rho_t - "
    "rho_{t-1} = B(rho_{t-1}, q_{h,t}/q_{h,t-1}) - rho_{t-1}",
    statement="as printed: if q_l0 <= q_l*, Algorithm 5 with step 7's gate, the low firm "
    "raised to hat q_{l,t} of step 8 (no other cap) and the high firm paced as in the proof "
    "of Proposition 5 (or at a constant step <= 1/L) reaches (q_l*, Q) within 1e-9 in 150 "
    "rounds on convex quadratic firms, no revenue falling",
    holds=False,
    perturb={"cap_mode": "recommended"},
)
def _prop5_as_printed(cap_mode: str = "literal") -> Verdict:
    return _prop5_runs(cap_mode)


@proposition(
    "thesis.ch3.prop5.gd.as_printed.corrected",
    source=f"{_PROPS}, Algorithm 5, step 8, with the cap min(hat q_{{l,t}}, rho* q_{{h,t}}, "
    f"q_l*) of {_PROOFS}, proof of Proposition 5, Case 1 ('ensure rho_{{t+1}} = rho*')",
    statement="Algorithm 5 as printed (step 7's gate kept) with step 8's cap lowered to "
    "min(hat q_{l,t}, rho* q_{h,t}, q_l*): if q_l0 <= q_l*, it reaches (q_l*, Q) within 1e-9 "
    "in 150 rounds on convex quadratic firms, no revenue falling",
    perturb={"cap_mode": "literal"},
)
def _prop5_as_printed_corrected(cap_mode: str = "recommended") -> Verdict:
    return _prop5_runs(cap_mode)


def _printed_rounds(inner: str, n_random: int) -> tuple[list[dict[str, Any]], int]:
    """One round of Algorithm 5 as printed (line 7's gate, hat q of step 8) from each start.

    The high firm steps as Algorithm 5's line 3 allows (paced, or a constant step <= 1/L);
    the low firm's loop is ``inner``. Starts at which line 7's gate closes, or a loss leaves
    [0, 1], are skipped and counted.
    """
    records, gated = [], 0
    for i, (label, firms) in enumerate(_starts(11, n_toy=n_random, n_random=n_random)):
        schedule = ("const", "paced")[i % 2]
        firms.loop_step = 0.05
        rule = _rule(firms, schedule=schedule, cap_mode="literal", gating="line7")
        run = play(rule, firms, 1, inner=inner)
        if np.isnan(run.hat_q[1]) or firms.max_loss() > 1.0:
            gated += 1
            continue
        u_l, u_h = duopoly.revenues(run.q_l, run.q_h, literal=True)
        records.append(
            {
                "start": label,
                "schedule": schedule,
                "q_l_prev": float(run.q_l[0]),
                "q_h_prev": float(run.q_h[0]),
                "q_h_new": float(run.q_h[1]),
                "hat_q": float(run.hat_q[1]),
                "q_l_new": float(run.q_l[1]),
                "U_l_change": float(u_l[1] - u_l[0]),
                "U_h_change": float(u_h[1] - u_h[0]),
            }
        )
    return records, gated


def _alg5_loop(inner: str, reach: float | None) -> Verdict:
    """Rounds of Algorithm 5 with the loop ``inner``; ``reach``: how close below hat q it ends."""
    records, gated = _printed_rounds(inner, n_random=80)
    failing = [
        r
        for r in records
        if float(r["q_l_new"]) > float(r["hat_q"])
        or min(float(r["U_l_change"]), float(r["U_h_change"])) < -1e-12
    ]
    if failing:  # a round where the low firm stays below the high firm, if there is one
        r = next((r for r in failing if r["q_l_new"] <= r["q_h_new"]), failing[0])
        return refuted(
            f"the loop ends above hat q_{{l,t}} or a revenue falls in {len(failing)} of "
            f"{len(records)} rounds. Read as printed, `while q_{{l,t}} <= hat q_{{l,t}}` ends only "
            "once q_{l,t} > hat q_{l,t}, whatever the step sizes, which is past the right root of "
            "(3.14), so U_h falls. Inside the hypotheses, checked in code: convex quadratic "
            "L-smooth losses, both firms' losses in [0, 1] at every point visited, alpha_h <= 1/L "
            "(line 3), alpha_l = 1/(20L), line 7's gate open",
            r,
        )
    short = max(float(r["hat_q"]) - float(r["q_l_new"]) for r in records)
    if reach is not None and short > reach:
        return refuted(f"the loop ends more than {reach} below hat q", {"shortfall": short})
    return checked(
        f"q_{{l,t-1}} <= q_{{l,t}} <= hat q_{{l,t}}, at most {short:.1e} below it, and neither "
        "revenue falls",
        len(records),
        drawn=f"one round from each of toys T1, T2, 80 uniform toy starts and 80 random convex "
        f"quadratic firm pairs (seed 11), high firm paced or at a constant step in turn; "
        f"{gated} starts where line 7's gate closes or a loss leaves [0, 1] skipped",
    )


@proposition(
    "thesis.ch3.alg5.while",
    source=f"{_PROPS}, Algorithm 5, lines 9-11",
    statement="as printed: the low firm updates `while q_{l,t} <= hat q_{l,t}`, and no revenue "
    "falls (Proposition 3)",
    holds=False,
    perturb={"inner": "gd"},
)
def _alg5_while(inner: str = "while") -> Verdict:
    return _alg5_loop(inner, reach=None)


@proposition(
    "thesis.ch3.alg5.while.corrected",
    source=f"{_PROPS}, Algorithm 5, lines 9-11 ('while q_{{l,t}} <= hat q_{{l,t}} do ... "
    "x_{l,t} <- x_{l,t} - alpha_{l,t} grad f_{l,t}'), whose loop stops before passing hat "
    f"q_{{l,t}}, with the step of {_PROOFS}, proof of Proposition 3, last display, alpha_{{l,t}} "
    "= min{(hat q_{l,t} - q_{l,t-1})/||grad f_{l,t-1}||^2, 1} with 1/L for its 1 (docs/errata.md, "
    "thesis.ch3.prop3.step)",
    statement="lines 9-11 as a guarded loop: steps min{(hat q_{l,t} - q_{l,t})/||g||^2, 1/L}, "
    "halved when the result would pass hat q_{l,t} or lower q_{l,t}, end at most 1e-9 below "
    "hat q_{l,t} and never above it, and no revenue falls",
    perturb={"inner": "while"},
)
def _alg5_while_corrected(inner: str = "gd") -> Verdict:
    return _alg5_loop(inner, reach=1e-9)
