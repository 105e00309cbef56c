"""Benchmark: optimal protocols and existence tests of econ.privacy against the authors' scan.

Baseline (the authors' notebook, section 6 of Tsoy et al. 2024): a Python loop down a 100-point
grid of the scale b of the family beta_i = zeta_i b, evaluating every client's gain at each b
and stopping at the first b where all gains are >= 0.

Measured in one run on this machine:

1. 10,000 heterogeneous clients (lambda_i ~ LogNormal(0, 1), DP mean, n = 100, sigma = 10,
   B = 20): the exact max-accuracy protocol (1-D bisection on Gamma), the same through the
   cvxpy program, and the max-welfare protocol (cvxpy), against the scan, in time and quality.
2. Existence for 1,000,000 clients (lambda_i ~ LogNormal(-3, 1)): the closed form
   sum zeta > 1 (Theorem 4.2) against the scan.
3. One call for a few clients (``--few-clients``, default 5): the exact max-accuracy protocol
   per call, and its 1-D solver (below 8 clients the bisection's test sum_i phi_i(Gamma) >=
   Gamma runs in Python floats) against the same bisection with numpy's test at every step,
   timed alternately.

Run: ``collabecon bench privacy`` (``--clients`` and ``--existence-clients`` set the two
sizes). Each time is the best of a few timings (:mod:`collabecon.bench.timing`): five of
the scan and of the exact protocol, one of each cvxpy program. The sizes are refused before
any work above :data:`MAX_PROTOCOL_CLIENTS` or :data:`MAX_EXISTENCE_CLIENTS`, or when their
arrays (:data:`BYTES_PER_CLIENT` per client) cannot fit in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from collabecon.bench.timing import best_of, best_of_each, within
from econ.privacy import DPMean, exists, optimal_protocol
from econ.privacy.optimal_dp import dp_mean_accuracy, dp_mean_phi
from econ.validation import fits_in_memory, positive_int

__all__ = [
    "BYTES_PER_CLIENT",
    "MAX_EXISTENCE_CLIENTS",
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


def _authors_scan(model: DPMean, lam: np.ndarray, grid: int = 100) -> np.ndarray:
    """The notebook's loop: the largest grid scale with all gains >= 0 (zeros if none)."""
    w = model.zeta(lam)
    rho = model.rho(lam.size)[0]
    for b in np.linspace(rho / (w.max() + 1e-8), 0.0, grid):
        beta = w * b
        if np.all(model.gain(beta, lam) >= 0):
            return beta
    return np.zeros_like(lam)


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
    few_clients: int = 5,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Time the protocols and the existence test against the authors' scan.

    The protocols are those of ``clients`` heterogeneous clients, the existence test that of
    ``existence_clients``; the authors' scan is the DP mean with n = 100, sigma = 10, B = 20
    (seed 2024).

    ``protocols`` holds one entry per lambda distribution (LogNormal(0, 1), far inside the
    existence region; LogNormal(-9, 1), near its boundary); ``existence`` the test with
    lambda ~ LogNormal(-3, 1) and with lambda = 1e-9 (no protocol exists); ``few`` the
    microseconds per call of the exact max-accuracy protocol of ``few_clients`` clients, of its
    1-D solver (:func:`econ.privacy.optimal_dp.dp_mean_accuracy`) and of the same bisection
    with numpy's test at every step (:func:`_numpy_bisection`).
    ``progress`` is called with a short text as each of the measurements starts.

    Raises
    ------
    ValueError
        A count not a positive integer, above its ceiling, or beyond memory.
    """
    positive_int("clients", clients)
    positive_int("existence_clients", existence_clients)
    positive_int("few_clients", few_clients)
    within(f"few_clients={few_clients}", few_clients, MAX_FEW_CLIENTS, "clients")
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
    progress(f"one call for {few_clients} clients")
    few = _few_clients(model, rng.lognormal(0.0, 1.0, few_clients))
    return {"model": "dp-mean", "protocols": protocols, "existence": existence, "few": few}


#: the most clients of the one-call row (its calls are timed in batches of :data:`_CALLS`)
MAX_FEW_CLIENTS = 10**4
_CALLS = 50


def _numpy_bisection(zeta: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """The baseline: bisection on Gamma with numpy's test sum_i phi_i(Gamma) >= Gamma per step."""
    lo, hi = 0.0, float(rho.sum())
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if dp_mean_phi(mid, zeta, rho).sum() >= mid else (lo, mid)
    return dp_mean_phi(lo, zeta, rho)


def _few_clients(model: DPMean, lam: np.ndarray) -> dict[str, Any]:
    """Microseconds per call: the protocol, its exact 1-D solver, and the numpy bisection."""
    zeta, rho = model.zeta(lam), model.rho(lam.size)
    works = {
        "protocol": lambda: [optimal_protocol(model, lam, "accuracy") for _ in range(_CALLS)],
        "solver": lambda: [dp_mean_accuracy(model, lam)[0] for _ in range(_CALLS)],
        "bisection_numpy": lambda: [_numpy_bisection(zeta, rho) for _ in range(_CALLS)],
    }
    for work in works.values():
        work()  # warm-up
    best = best_of_each(works, 5)
    per_call = {name: 1e6 * t.seconds / _CALLS for name, t in best.items()}
    ours, base = best["solver"].result[-1], best["bisection_numpy"].result[-1]
    return {
        "clients": int(lam.size),
        "protocol_us": round(per_call["protocol"], 1),
        "solver_us": round(per_call["solver"], 1),
        "bisection_numpy_us": round(per_call["bisection_numpy"], 1),
        "solver_ratio": round(per_call["bisection_numpy"] / per_call["solver"], 2),
        "same_beta": bool(np.array_equal(ours, base)),
    }
