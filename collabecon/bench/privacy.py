"""Benchmark: optimal protocols and existence tests of econ.privacy against the authors' scan.

Baseline (the authors' notebook, section 6 of Tsoy et al. 2024): a Python loop down a 100-point
grid of the scale b of the family beta_i = zeta_i b, evaluating every client's gain at each b
and stopping at the first b where all gains are >= 0.

Measured in one run on this machine:

1. 10,000 heterogeneous clients (lambda_i ~ LogNormal(0, 1), DP mean, n = 100, sigma = 10,
   B = 20): the exact max-accuracy protocol (the largest root in Gamma, by Newton from
   above), the same through the cvxpy program, and the max-welfare protocol (cvxpy), against
   the scan, in time and quality.
2. Existence for 1,000,000 clients (lambda_i ~ LogNormal(-3, 1)): the closed form
   sum zeta > 1 (Theorem 4.2) against the scan.
3. The draws of Figure 1 (N = 5, n = 100, sigma = 10; ``draws`` per point of each panel's
   m-grid, lambda_i ~ LogNormal(m, 1), seed 179): the largest Gamma over all mutually
   beneficial protocols, exact (DP mean, B = 20; Bayes, tau = 1), against the notebook's loop
   down the 100-point grid of its family (zeta, clipped xi), per draw. Ours twice: the
   optima of a grid point's draws in one call (:func:`econ.privacy.max_accuracy_totals`, as
   the figure computes them) and one :func:`~econ.privacy.optimal_protocol` per draw; also
   the library's vectorised scan (:func:`econ.privacy.families.scale_scan`), which evaluates
   the whole grid at once.

Run: ``collabecon bench privacy`` (``--clients``, ``--existence-clients`` and ``--draws``
set the three sizes). Each time is the best of a few timings (:mod:`collabecon.bench.timing`): five of
the scan and of the exact protocol, one of each cvxpy program, three of each side of the
Figure-1 draws (alternating, after a warm-up). The sizes are refused before
any work above :data:`MAX_PROTOCOL_CLIENTS`, :data:`MAX_EXISTENCE_CLIENTS` or
:data:`MAX_FIGURE1_DRAWS`, or when their
arrays (:data:`BYTES_PER_CLIENT` per client) cannot fit in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from collabecon.bench.timing import best_of, best_of_each, within
from econ.privacy import Bayes, DPMean, exists, max_accuracy_totals, optimal_protocol
from econ.privacy.effectiveness import BAYES_GRID, DP_GRID
from econ.privacy.families import family_weights, scale_scan
from econ.validation import fits_in_memory, positive_int

__all__ = [
    "BYTES_PER_CLIENT",
    "MAX_EXISTENCE_CLIENTS",
    "MAX_FIGURE1_DRAWS",
    "MAX_PROTOCOL_CLIENTS",
    "measure_privacy",
]

#: bytes per client of the largest step: the scan and the existence test (about 72,
#: measured with tracemalloc) or the exact protocol (about 112), and the draws of lambda
BYTES_PER_CLIENT = 160
#: the most clients of the optimal protocols: each cvxpy program has one variable per client
MAX_PROTOCOL_CLIENTS = 10**6
#: the most clients of the existence test (the scan walks its 100-point grid over them)
MAX_EXISTENCE_CLIENTS = 10**8
#: the most draws per grid point of the Figure-1 timing (the notebook's loop takes about 5 ms a
#: draw, four repeats of 18 grid points each)
MAX_FIGURE1_DRAWS = 10_000


def _authors_scan(model: DPMean | Bayes, lam: np.ndarray, family: str = "zeta") -> np.ndarray:
    """The notebook's loop: the largest grid scale with all gains >= 0 (zeros if none)."""
    w = family_weights(model, lam, family)
    rho = model.rho(lam.size)[0]
    for b in np.linspace(rho / (w.max() + 1e-8), 0.0, 100):
        beta = w * b
        if np.all(model.gain(beta, lam) >= 0):
            return beta
    return np.zeros_like(lam)


def _figure1_panel(model: DPMean | Bayes, grid: np.ndarray, draws: int) -> dict[str, Any]:
    """Time the exact optima of one panel's draws against the notebook's loop (module docstring)."""
    family = "zeta" if isinstance(model, DPMean) else "xi"
    rng = np.random.default_rng(179)
    lams = [rng.lognormal(m, 1.0, (draws, 5)) for m in grid]
    works = {
        "loop": lambda: [_authors_scan(model, lam, family).sum() for b in lams for lam in b],
        "scan": lambda: [scale_scan(model, lam, family).sum() for b in lams for lam in b],
        "batched": lambda: np.concatenate([max_accuracy_totals(model, b) for b in lams]),
        "per_draw": lambda: [optimal_protocol(model, lam, "accuracy") for b in lams for lam in b],
    }
    # warm-up: first-call imports and compilations
    works["batched"]()
    optimal_protocol(model, lams[0][0], "accuracy")
    _authors_scan(model, lams[0][0], family)
    scale_scan(model, lams[0][0], family)
    t = best_of_each(works, 3)
    loop = np.array(t["loop"].result)
    ours = np.asarray(t["batched"].result)
    protocols = t["per_draw"].result
    per_draw = np.array([p.gamma for p in protocols])
    gain = min(float(p.gain.min()) for p in protocols)
    return {
        "model": model.name,
        "family": family,
        "draws": len(per_draw),
        "loop_s": t["loop"].seconds,
        "scan_s": t["scan"].seconds,
        "batched_s": t["batched"].seconds,
        "per_draw_s": t["per_draw"].seconds,
        "loop_over_batched": t["loop"].seconds / t["batched"].seconds,
        "loop_over_per_draw": t["loop"].seconds / t["per_draw"].seconds,
        "scan_over_batched": t["scan"].seconds / t["batched"].seconds,
        "scan_over_per_draw": t["scan"].seconds / t["per_draw"].seconds,
        "higher_gamma": float(np.mean(ours > loop)),
        "min_gamma_minus_loop": float((ours - loop).min()),
        "batched_vs_per_draw": float(np.abs(ours - per_draw).max()),
        "min_gain": gain,
        "at_least_loop": bool(np.all(ours >= loop) and np.all(per_draw >= loop)),
    }


def _protocols(model: DPMean, lam: np.ndarray, label: str) -> dict[str, Any]:
    scan = best_of(lambda: _authors_scan(model, lam), 5)
    scan_gamma, scan_welfare = (
        float(scan.result.sum()),
        float(model.utility(scan.result, lam).sum()),
    )
    exact = best_of(lambda: optimal_protocol(model, lam, "accuracy"), 5)
    cvx = best_of(lambda: optimal_protocol(model, lam, "accuracy", method="cvxpy"), 1)
    welfare = best_of(lambda: optimal_protocol(model, lam, "welfare"), 1)
    best_welfare = float(welfare.result.utility.sum())
    return {
        "lambda": label,
        "clients": int(lam.size),
        "sum_zeta": float(model.zeta(lam).sum()),
        "scan_s": scan.seconds,
        "scan_gamma": scan_gamma,
        "scan_welfare": scan_welfare,
        "exact_s": exact.seconds,
        "exact_gamma": float(exact.result.gamma),
        "exact_min_gain": float(exact.result.gain.min()),
        "cvxpy_s": cvx.seconds,
        "cvxpy_gamma": float(cvx.result.gamma),
        "cvxpy_min_gain": float(cvx.result.gain.min()),
        "welfare_s": welfare.seconds,
        "welfare": best_welfare,
        "welfare_min_gain": float(welfare.result.gain.min()),
        "scan_over_exact": scan.seconds / exact.seconds,
        "cvxpy_over_exact": cvx.seconds / exact.seconds,
        "welfare_over_scan": welfare.seconds / scan.seconds,
        "exact_gamma_over_scan": (
            float(exact.result.gamma) / scan_gamma if scan_gamma > 0 else float("inf")
        ),
        "welfare_minus_scan": best_welfare - scan_welfare,
        "exact_at_least_scan": bool(exact.result.gamma >= scan_gamma),
        "welfare_at_least_scan": bool(best_welfare >= scan_welfare),
    }


def measure_privacy(
    *,
    clients: int = 10_000,
    existence_clients: int = 1_000_000,
    draws: int = 100,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Time the protocols and the existence test against the authors' scan.

    The protocols are those of ``clients`` heterogeneous clients, the existence test that of
    ``existence_clients``; the authors' scan is the DP mean with n = 100, sigma = 10, B = 20
    (seed 2024).

    ``protocols`` holds one entry per lambda distribution (LogNormal(0, 1), far inside the
    existence region; LogNormal(-9, 1), near its boundary); ``existence`` the test with
    lambda ~ LogNormal(-3, 1) and with lambda = 1e-9 (no protocol exists); ``figure1`` one
    entry per panel of Figure 1 (``draws`` per grid point: times of the notebook's loop, the
    vectorised scan, our batched and per-draw exact optima, their ratios, the share of draws
    where ours has the higher Gamma, and the least client gain of ours). ``progress`` is
    called with a short text as each of the four measurements starts.

    Raises
    ------
    ValueError
        A count not a positive integer, above its ceiling, or beyond memory.
    """
    positive_int("clients", clients)
    positive_int("existence_clients", existence_clients)
    positive_int("draws", draws)
    within(f"draws={draws}", draws, MAX_FIGURE1_DRAWS, "draws")
    within(f"clients={clients}", clients, MAX_PROTOCOL_CLIENTS, "clients")
    within(
        f"existence_clients={existence_clients}",
        existence_clients,
        MAX_EXISTENCE_CLIENTS,
        "clients",
    )
    fits_in_memory(
        f"clients={clients}, existence_clients={existence_clients}",
        float(BYTES_PER_CLIENT) * max(clients, existence_clients),
    )
    model = DPMean(n=100.0, sigma=10.0, bound=20.0)
    rng = np.random.default_rng(2024)
    protocols = []
    for label, log_mean in (
        ("LogNormal(0, 1): far inside the existence region", 0.0),
        ("LogNormal(-9, 1): near the boundary", -9.0),
    ):
        progress(f"optimal protocols of {clients} clients, lambda ~ {label}")
        protocols.append(_protocols(model, rng.lognormal(log_mean, 1.0, clients), label))
    progress(f"existence test of {existence_clients} clients")
    lam = rng.lognormal(-3.0, 1.0, existence_clients)
    scan = best_of(lambda: _authors_scan(model, lam), 3)
    closed = best_of(lambda: exists(model, lam), 5)
    lam_none = np.full(existence_clients, 1e-9)
    scan_none = best_of(lambda: _authors_scan(model, lam_none), 1)
    closed_none = best_of(lambda: exists(model, lam_none), 3)
    existence = {
        "clients": existence_clients,
        "scan_s": scan.seconds,
        "scan_found": bool(scan.result.any()),
        "closed_form_s": closed.seconds,
        "exists": bool(closed.result.exists),
        "sum_zeta": float(closed.result.statistic),
        "scan_over_closed_form": scan.seconds / closed.seconds,
        "none_sum_zeta": float(closed_none.result.statistic),
        "none_exists": bool(closed_none.result.exists),
        "none_scan_s": scan_none.seconds,
        "none_closed_form_s": closed_none.seconds,
        "none_scan_over_closed_form": scan_none.seconds / closed_none.seconds,
    }
    progress(f"Figure 1: exact optima of {draws} draws per grid point vs the notebook's loop")
    figure1 = [
        _figure1_panel(DPMean(n=100.0, sigma=10.0, bound=20.0), DP_GRID, draws),
        _figure1_panel(Bayes(n=100.0, sigma=10.0, tau=1.0), BAYES_GRID, draws),
    ]
    return {"model": "dp-mean", "protocols": protocols, "existence": existence, "figure1": figure1}
