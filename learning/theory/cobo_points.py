r"""The points at which CoBo's convergence statements are checked, and the comparisons.

Theorem 1 and Corollary 2 (:mod:`learning.theory.cobo_propositions`) are checked on whole expected
trajectories, :func:`theorem_runs`: each a :class:`~learning.theory.quadratic.ClusterRun`
(a cluster of quadratic losses sharing their minimiser, the step sizes, the noise and the
horizon), drawn at random and at the thresholds of the hypotheses; :func:`compare` holds a
bound against the exact expectations at every run inside its hypotheses. Lemmas 3 and 4
(:mod:`learning.theory.cobo_lemmas_propositions`) are checked on single rounds from arbitrary models and
weights, :func:`lemma_states` (each a :class:`~learning.theory.quadratic.QuadraticRound`), by
:func:`compare_states`. The bounds themselves, as the paper (Hashemi, He and Jaggi, "CoBo:
Collaborative Learning via Bilevel Optimization", NeurIPS 2024, Section 3 and Appendix A)
prints them, are with the statements; as corrected, in :mod:`learning.theory.cobo`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

import numpy as np

from econ.propositions import Verdict, checked, refuted
from learning.theory.quadratic import (
    ClusterProblem,
    ClusterRun,
    QuadraticRound,
    random_cluster,
    random_spd,
    smoothness,
)

SQRT3 = math.sqrt(3.0)

#: A bound: a function of the symbols of a run or state (keyword arguments) to a float.
Formula = Callable[..., float]
#: A statement's hypotheses: a function of the same symbols to a bool.
Hypothesis = Callable[..., bool]


# --------------------------------------------------------------------------- Theorem 1's runs


def _pair(a1: float, a2: float) -> ClusterProblem:
    """Two scalar clients :math:`f_i = a_i x^2 / 2` started at 1 (Example 2 with d = 1)."""
    return ClusterProblem(np.array([[[a1]], [[a2]]]), np.zeros(1), np.ones(1))


def _ratio_for(m2: float) -> float:
    """The curvature ratio a2/a1 whose pair has :math:`M^2 = m2` (M = (r-1)/(r+1))."""
    m = math.sqrt(m2)
    return (1 + m) / (1 - m)


#: How the points of the theorem checks are drawn (one point = one problem and parameters,
#: whose whole expected trajectory is computed exactly).
DRAWN = (
    "{n_random} clusters drawn with seed {seed}: c in {{2,3,4}} clients, d in {{1,2,3}}, "
    "curvature spread in {{0.003, 0.03, 0.1, 0.3}} (M^2 from ~1e-6 to ~0.2), start at "
    "distance 0.1, 1 or 10 from the shared minimiser, rho = max(L, sqrt(3) L/c) times 1, 1.5, "
    "4 or 20, eta = 1/(2 rho c) times 1, 1/2, 1/10 or 1/100{eta_noise}, T in {{1, 3, 10, 50, "
    "200}}{sigma}; plus adversarial points: {adversarial}"
)


@cache
def theorem_runs(noisy: bool) -> tuple[ClusterRun, ...]:
    """The runs at which Theorem 1 and Corollary 2 are checked, noisy or not.

    The points of the Theorem 1 and Corollary 2 checks (cached: the trajectories are
    shared by the printed and corrected statements).
    """
    seed = 2025 if noisy else 2024
    rng = np.random.default_rng(seed)
    runs: list[ClusterRun] = []
    base = _pair(1.0, 1.5)  # M^2 = 1/25, L = 3/2, S = 5/2
    if noisy:
        # sigma small, eta at the cap: the printed bounds are proportional to sigma
        runs.append(ClusterRun("hand-picked: a = (1, 3/2), sigma = 1/10", base, 1 / 6, 1.5, 0.1, 1))
        runs.append(
            ClusterRun("hand-picked: a = (1, 3/2), sigma = 1/10", base, 1 / 6, 1.5, 0.1, 10)
        )
    else:
        # a small step size, allowed by a theorem without a step-size condition
        runs.append(ClusterRun("hand-picked: a = (1, 3/2), small step", base, 1 / 60, 1.5, 0.0, 10))
        # the same trajectory with every loss scaled: the printed consensus bound scales as 1/kappa
        hand = ClusterRun("hand-picked: a = (1, 3/2)", base, 1 / 6, 1.5, 0.0, 10)
        runs += [hand, hand.scaled(10.0), hand.scaled(1000.0)]
    for k in range(48):
        c = int(rng.integers(2, 5))
        d = int(rng.integers(1, 4))
        spread = float(rng.choice([0.003, 0.03, 0.1, 0.3]))
        problem = random_cluster(rng, c, d, spread, float(rng.choice([0.1, 1.0, 10.0])))
        L = problem.smoothness
        rho = max(L, SQRT3 * L / c) * float(rng.choice([1.0, 1.5, 4.0, 20.0]))
        rounds = int(rng.choice([1, 3, 10, 50, 200]))
        cap = 1 / (2 * rho * c)
        sigma = 0.0
        if noisy:
            u = problem.x0 - problem.mu
            sigma = float(rng.choice([0.01, 0.1, 1.0, 10.0])) * L * math.sqrt(u @ u)
            cap = min(cap, printed_step_cap(problem.gap, c, L, sigma, rounds))
        eta = cap * float(rng.choice([1.0, 0.5, 0.1, 0.01]))
        runs.append(ClusterRun(f"random cluster #{k}", problem, eta, rho, sigma, rounds))
    # adversarial: curvature ratios at the thresholds M^2 = 1/104 and 1/5, rho at sqrt(3) L/c,
    # eta at 1/(2 rho c), long and short horizons, large sigma, losses scaled by 1e-3 and 1e3
    for m2 in (0.999 / 104, 0.999 / 25, 0.999 / 5):
        for rounds in (1, 400):
            for sigma in (0.0, 3.0) if noisy else (0.0,):
                pb = _pair(1.0, _ratio_for(m2))
                L = pb.smoothness
                rho = max(L, SQRT3 * L / 2)
                eta = 1 / (2 * rho * 2)
                if noisy:
                    eta = min(eta, printed_step_cap(pb.gap, 2, L, sigma, rounds))
                runs.append(ClusterRun(f"threshold M^2 = {m2:.5g}", pb, eta, rho, sigma, rounds))
    for c in (3, 4):
        pc = ClusterProblem(
            np.array([[[1.0 + 0.09 * i]] for i in range(c)]), np.zeros(1), np.ones(1)
        )
        L = pc.smoothness
        rho = max(L, SQRT3 * L / c)
        for rounds in (2, 400):
            sigma = 2.0 if noisy else 0.0
            eta = 1 / (2 * rho * c)
            if noisy:
                eta = min(eta, printed_step_cap(pc.gap, c, L, sigma, rounds))
            runs.append(
                ClusterRun(f"c = {c} scalar clients, rho at threshold", pc, eta, rho, sigma, rounds)
            )
    random = [r for r in runs if r.label.startswith("random")]
    runs += [random[0].scaled(1e-3), random[1].scaled(1e3), random[2].scaled(1e3)]
    return tuple(runs)


def printed_step_cap(gap: float, c: int, L: float, sigma: float, rounds: int) -> float:
    r"""The printed step-size cap :math:`\frac{2}{\sigma\sqrt{LT}}\sqrt{S/c^2}` (inf at sigma 0)."""
    if sigma == 0:
        return math.inf
    return 2 / (sigma * math.sqrt(L * rounds)) * math.sqrt(gap / c**2)


def drawn(noisy: bool) -> str:
    """How the points of :func:`theorem_runs` are drawn, for a verdict."""
    return DRAWN.format(
        n_random=48,
        seed=2025 if noisy else 2024,
        eta_noise=(" (of the smaller of 1/(2 rho c) and the printed sigma cap)" if noisy else ""),
        sigma=(", sigma = L |x0 - mu| times 0.01, 0.1, 1 or 10" if noisy else ", exact gradients"),
        adversarial=(
            "two clients at M^2 = 0.999/104, 0.999/25, 0.999/5 with rho and eta at their "
            "thresholds, T = 1 and 400"
            + (", sigma 0 and 3" if noisy else "")
            + "; 3 and 4 scalar clients with rho = max(L, sqrt(3) L/c); three random points "
            "with every loss scaled by 1e-3 or 1e3 (rho, eta, sigma rescaled)"
            + (
                "; first, two hand-picked points (a = (1, 3/2), rho = 3/2, eta = 1/6, "
                "sigma = 1/10, T = 1 and 10)"
                if noisy
                else "; first, a hand-picked pair a = (1, 3/2), rho = 3/2 with eta = 1/60, "
                "and with eta = 1/6 unscaled and scaled by 10 and 1000"
            )
        ),
    )


def compare(
    runs: Iterable[ClusterRun],
    measure: Callable[[ClusterRun], float],
    bound: Formula,
    hypothesis: Hypothesis,
    what: str,
    drawn: str,
) -> Verdict:
    """A bound against the exact expectations at every run inside its hypotheses.

    ``checked`` if ``measure(run) <= bound(**quantities)`` at every run inside
    ``hypothesis``, else ``refuted`` at the first run where it fails (round-off allowed).

    The point count is the number of distinct trajectories (:meth:`ClusterRun.trajectory`), not of
    runs: the corrected bounds are invariant under the scaling of :meth:`ClusterRun.scaled`, so a
    scaled copy, like a shorter horizon of the same iterates, adds no point.
    """
    n = outside = 0
    worst = 0.0
    trajectories: set[tuple[str, ...]] = set()
    for run in runs:
        q = run.quantities()
        if not hypothesis(**q):
            outside += 1
            continue
        n += 1
        trajectories.add(run.trajectory())
        lhs, rhs = measure(run), bound(**q)
        slack = 1e-9 * abs(rhs) + 1e-12 * run.scale * max(1.0, q["L"]) ** 2
        if not lhs <= rhs + slack:
            example: dict[str, Any] = {"point": run.label, "measured": lhs, "bound": rhs}
            example.update({k: v for k, v in q.items()})
            example["curvatures"] = [np.linalg.eigvalsh(a).tolist() for a in run.problem.a]
            return refuted(
                f"fails: {what}; at {run.label} (inside the hypotheses) the exact expectation "
                f"is {lhs:.6g} > the bound {rhs:.6g}",
                example,
            )
        if rhs > 0:
            worst = max(worst, lhs / rhs)
    if n == 0:
        raise ValueError(f"no point satisfies the hypotheses of {what!r}")
    note = f"; {outside} further points outside the hypotheses skipped" if outside else ""
    note += (
        f"; the {n} runs inside the hypotheses follow {len(trajectories)} distinct trajectories, "
        "each counted once (a run with every loss scaled, rho, eta and sigma rescaled, moves "
        "the same iterates, and a shorter horizon is a prefix of a longer one)"
    )
    return checked(
        f"{what} (exact expectations; largest measured/bound ratio {worst:.3g}; {n} runs)",
        len(trajectories),
        drawn=drawn + note,
    )


# --------------------------------------------------------------------------- the lemmas' states


@cache
def lemma_states() -> tuple[QuadraticRound, ...]:
    """The points of the Lemma 3 and Lemma 4 checks (cached)."""
    rng = np.random.default_rng(2026)
    states: list[QuadraticRound] = []
    # hand-picked: every model at the shared minimiser 0, f_i = (1 + i/10) x^2/2, sigma = 1
    for c in (2, 3):
        a = np.array([[[1.0 + 0.1 * i]] for i in range(c)])
        rho = SQRT3 * (1.0 + 0.1 * (c - 1)) / c
        states.append(
            QuadraticRound(
                f"hand-picked: {c} clients f_i = (1 + i/10) x^2/2, every model at the "
                "minimiser, sigma = 1",
                a,
                np.zeros((c, 1)),
                c,
                np.zeros((c, 1)),
                np.ones((c, c)),
                1 / (2 * rho * c),
                rho,
                1.0,
                1.0,
                1.0,
            )
        )
    for k in range(400):
        c = int(rng.integers(2, 5))
        others = int(rng.integers(0, 3))
        d = int(rng.integers(1, 4))
        spread = float(rng.choice([0.0, 0.01, 0.05, 0.2]))
        cluster = random_cluster(rng, c, d, spread, 1.0)
        a = np.concatenate([cluster.a, *(random_spd(rng, d)[None] for _ in range(others))])
        mu = cluster.mu
        centres = np.concatenate([np.tile(mu, (c, 1)), rng.normal(scale=3.0, size=(others, d))])
        n = c + others
        L = smoothness(a)
        near = mu + rng.normal(size=d) * float(rng.choice([0.0, 0.01, 1.0, 10.0]))
        x = near + float(rng.choice([0.0, 1e-3, 0.1, 1.0, 10.0])) * rng.normal(size=(n, d))
        kind = int(rng.integers(0, 4))
        if kind == 0:
            w = np.ones((n, n))
        elif kind == 1:
            w = np.zeros((n, n))
            w[:c, :c] = 1.0
        else:
            w = rng.uniform(0, 1, size=(n, n))
            w = (w + w.T) / 2
        rho = SQRT3 * L / c * float(rng.choice([1.0, 1.5, 4.0, 20.0]))
        eta = min(1 / (2 * rho * c), 1 / (2 * L)) * float(rng.choice([1.0, 0.5, 0.1]))
        sigma = float(rng.choice([0.0, 0.0, 0.1, 1.0, 10.0])) * L
        gamma = float(rng.choice([0.0, 0.1, 10.0]))
        b = float(rng.choice([1.0, 16.0, 1e6]))
        states.append(
            QuadraticRound(f"random state #{k}", a, centres, c, x, w, eta, rho, sigma, gamma, b)
        )
    return tuple(states)


LEMMA_DRAWN = (
    "2 hand-picked states (2 and 3 clients with f_i = (1 + i/10) x^2/2, every model at the "
    "minimiser, sigma = 1, rho = sqrt(3) L/c, eta = 1/(2 rho c)) first, then 400 states drawn with seed 2026: a "
    "cluster of c in {2,3,4} quadratics sharing a minimiser (curvature spread 0, 0.01, 0.05 or "
    "0.2) and 0-2 clients of other clusters, d in {1,2,3}, models around a point at distance "
    "0, 0.01, 1 or 10 from the minimiser with spread 0, 1e-3, 0.1, 1 or 10, W^t all ones, "
    "exactly W*, or uniform symmetric, rho = sqrt(3) L/c times 1, 1.5, 4 or 20, eta = "
    "min(1/(2 rho c), 1/(2L)) times 1, 1/2 or 1/10, sigma = L times 0, 0.1, 1 or 10, gamma in "
    "{0, 0.1, 10}, b in {1, 16, 1e6}; expectations over the model-gradient noise exact"
)


def compare_states(
    lhs: Callable[[QuadraticRound], float],
    rhs: Callable[[QuadraticRound], float],
    hypothesis: Hypothesis,
    what: str,
) -> Verdict:
    """``checked`` if ``lhs <= rhs`` at every state inside ``hypothesis`` (round-off allowed)."""
    n = outside = 0
    for s in lemma_states():
        if not hypothesis(**s.quantities()):
            outside += 1
            continue
        n += 1
        left, right = lhs(s), rhs(s)
        size = float((s.x**2).sum() + (s.centres**2).sum()) + 1.0
        if (
            not left
            <= right + 1e-9 * max(abs(left), abs(right)) + 1e-12 * size * (1.0 + s.smoothness) ** 2
        ):
            example: dict[str, Any] = {"point": s.label, "lhs": left, "rhs": right}
            example.update(s.quantities())
            return refuted(
                f"fails: {what}; at {s.label} (inside the hypotheses) the left side is "
                f"{left:.6g} > the right side {right:.6g}",
                example,
            )
    note = f"; {outside} further states outside the hypotheses skipped" if outside else ""
    return checked(what, n, drawn=LEMMA_DRAWN + note)
