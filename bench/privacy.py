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

Run: ``python bench/privacy.py``.
"""

from __future__ import annotations

import time

import numpy as np

from econ.privacy import DPMean, exists, optimal_protocol


def _best_time(fn, repeats: int) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _authors_scan(model: DPMean, lam: np.ndarray, grid: int = 100) -> np.ndarray:
    """The notebook's loop: the largest grid scale with all gains >= 0 (zeros if none)."""
    w = model.zeta(lam)
    rho = model.rho(lam.size)[0]
    for b in np.linspace(rho / (w.max() + 1e-8), 0.0, grid):
        beta = w * b
        if np.all(model.gain(beta, lam) >= 0):
            return beta
    return np.zeros_like(lam)


def main() -> None:
    model = DPMean(n=100.0, sigma=10.0, bound=20.0)
    rng = np.random.default_rng(2024)

    for label, log_mean in (
        ("LogNormal(0, 1): far inside the existence region", 0.0),
        ("LogNormal(-9, 1): near the boundary", -9.0),
    ):
        print(f"1) optimal protocol, 10,000 heterogeneous clients (DP mean), lambda ~ {label}")
        lam = rng.lognormal(log_mean, 1.0, 10_000)
        t_scan, scan_beta = _best_time(lambda lam=lam: _authors_scan(model, lam), 5)
        scan_gamma, scan_welfare = scan_beta.sum(), model.utility(scan_beta, lam).sum()
        t_exact, exact = _best_time(lambda lam=lam: optimal_protocol(model, lam, "accuracy"), 5)
        t_cvx, cvx = _best_time(
            lambda lam=lam: optimal_protocol(model, lam, "accuracy", method="cvxpy"), 1
        )
        t_welfare, welfare = _best_time(lambda lam=lam: optimal_protocol(model, lam, "welfare"), 1)
        print(f"   sum zeta = {model.zeta(lam).sum():.3f}")
        print(
            f"   authors' scan (zeta family, 100 points): {t_scan:8.4f} s  Gamma {scan_gamma:.6g}  sum u {scan_welfare:.6g}"
        )
        print(
            f"   max accuracy, exact 1-D:                 {t_exact:8.4f} s  Gamma {exact.gamma:.6g}  min gain {exact.gain.min():.1e}"
        )
        print(
            f"   max accuracy, cvxpy program:             {t_cvx:8.4f} s  Gamma {cvx.gamma:.6g}  min gain {cvx.gain.min():.1e}"
        )
        print(
            f"   max welfare, cvxpy program:              {t_welfare:8.4f} s  sum u {welfare.utility.sum():.6g}  min gain {welfare.gain.min():.1e}"
        )
        print(
            f"   time ratios: scan / exact 1-D {t_scan / t_exact:.2f}x;  cvxpy accuracy / exact 1-D {t_cvx / t_exact:.1f}x;  welfare (cvxpy) / scan {t_welfare / t_scan:.1f}x"
        )
        ratio = (
            f"{exact.gamma / scan_gamma:.4f}"
            if scan_gamma > 0
            else "inf (the scan finds no protocol)"
        )
        gap = welfare.utility.sum() - scan_welfare
        print(
            f"   quality: Gamma exact / scan = {ratio};  sum u welfare optimum - scan = {gap:.6g}"
        )
        assert exact.gamma >= scan_gamma and welfare.utility.sum() >= scan_welfare

    print("2) existence test, 1,000,000 clients (DP mean)")
    lam = rng.lognormal(-3.0, 1.0, 1_000_000)
    t_scan, scan_beta = _best_time(lambda: _authors_scan(model, lam), 3)
    t_closed, result = _best_time(lambda: exists(model, lam), 5)
    print(f"   authors' scan:          {t_scan:8.4f} s  found a protocol: {bool(scan_beta.any())}")
    print(
        f"   sum zeta > 1 (Thm 4.2): {t_closed:8.4f} s  exists: {result.exists}  (sum zeta = {result.statistic:.1f})"
    )
    print(f"   time ratio scan / closed form: {t_scan / t_closed:8.1f}x")
    lam_none = np.full(1_000_000, 1e-9)
    t_scan_none, _ = _best_time(lambda: _authors_scan(model, lam_none), 1)
    t_closed_none, none = _best_time(lambda: exists(model, lam_none), 3)
    print(
        f"   no protocol (lambda = 1e-9, sum zeta = {none.statistic:.2e}): scan {t_scan_none:.4f} s (all 100 points),"
        f" closed form {t_closed_none:.4f} s, ratio {t_scan_none / t_closed_none:.1f}x"
    )


if __name__ == "__main__":
    main()
