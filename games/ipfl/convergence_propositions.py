r"""IP-FL's §5 and App. I, checkable: Proposition 1 part 2, Theorems 3, 4 and 6, Corollary 8.1.

Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4),
§5 'Convergence Analysis of the IP-FL' and App. I 'Proofs for Section 5'. Proposition 1 part 1
(the Lloyd process) is ``ipfl.prop1.lloyd`` in :mod:`games.ipfl.propositions`. The models are
those of the paper's proofs: Gaussian clients :math:`z_{ij} \sim N(\mu_i, \sigma^2)` clustered
by their means, and gradient descent on convex (quadratic or least-squares) losses.

The printed statements that fail:

- Proposition 1, part 2: the bias of a cluster, read as the weighted spread of its clients'
  means around its centroid, can exceed the whole system's (``ipfl.prop1.bias``); compared
  with the same clients' spread around the system's average it is never larger, cluster by
  cluster (``ipfl.prop1.bias.corrected``).
- Theorem 4 puts "there exists T" before "for every :math:`\epsilon`", a quantifier-order
  slip that claims :math:`PMA_i^{(t)} = PMA_i^*` after finitely many rounds; gradient descent
  only approaches it (``ipfl.thm4``; the proof's Eq. 46 has the right order). The twin takes
  :math:`PMA_i^*` to be the value at the limit of the cluster model; the maximum of
  :math:`PMA_i` is approached only by clients at their cluster's average.
- Corollary 8.1 claims :math:`PMA_i > 0` for every client; in the Gaussian model of §3 a
  cluster of small noisy datasets, even one well apart from the others, can be worse than
  FedAvg (``ipfl.cor8.1``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.propositions import Kind, Verdict, checked, on_points, proposition, refuted
from games.ipfl import opt_outs
from games.ipfl.config import FloatArray
from games.ipfl.gaussian_propositions import exact_errors
from games.ipfl.propositions import PAPER, lloyd, lloyd_fixed_points

__all__ = ["cluster_biases"]


def _spread(mu: FloatArray, n: FloatArray, centre: float) -> float:
    """The size-weighted mean squared distance of the means ``mu`` to ``centre``."""
    return float(np.sum(n * (mu - centre) ** 2) / n.sum())


def cluster_biases(
    means: ArrayLike, sizes: ArrayLike, labels: ArrayLike
) -> tuple[dict[int, float], float, dict[int, float]]:
    r"""The bias of each cluster and of the system, and each cluster's spread around the system.

    .. math::

        \mathrm{Bias}(C_k) = \frac{\sum_{i \in C_k} n_i (\hat\mu_i - \beta_k)^2}
                                  {\sum_{i \in C_k} n_i}, \qquad
        \mathrm{Bias}(System) = \frac{\sum_i n_i (\hat\mu_i - \bar\beta)^2}{\sum_i n_i},

    with :math:`\beta_k` and :math:`\bar\beta` the size-weighted means of the cluster and of
    every client: "the deviation of the average data distribution in the cluster from" the
    clients' own. The third value is, for each cluster, the same clients' spread around the
    system's average,
    :math:`\sum_{i \in C_k} n_i (\hat\mu_i - \bar\beta)^2 / \sum_{i \in C_k} n_i
    = \mathrm{Bias}(C_k) + (\beta_k - \bar\beta)^2`.

    References
    ----------
    Khan et al., IP-FL (arXiv 2304.07514 v4), App. I, proof of Proposition 1, part 2.
    """
    mu, n, lab = (np.asarray(x) for x in (means, sizes, labels))
    centre = float(np.sum(n * mu) / n.sum())
    biases, around_system = {}, {}
    for k in np.unique(lab):
        members = lab == k
        own = float(np.sum(n[members] * mu[members]) / n[members].sum())
        biases[int(k)] = _spread(mu[members], n[members], own)
        around_system[int(k)] = _spread(mu[members], n[members], centre)
    return biases, _spread(mu, n, centre), around_system


def _clusterings() -> Iterator[dict[str, Any]]:
    # one heavy client at 0 and two light ones at 10 and 11: the light pair is a cluster
    yield {"mu": [0.0, 10.0, 11.0], "n": [1000.0, 1.0, 1.0], "init": [0.0, 10.0]}
    for seed in range(40):
        rng = np.random.default_rng(100 + seed)
        k = int((2, 3, 4)[seed % 3])
        m = int(rng.integers(2 * k, 41))
        sizes = rng.integers(5, 201, m).astype(np.float64)
        mu = float((0.3, 1.0, 3.0)[seed % 3]) * rng.integers(0, k, m) + rng.normal(0, 0.3, m)
        yield {"mu": mu, "n": sizes, "init": rng.choice(mu, k, replace=False)}


def _bias_holds(reference: str, mu: FloatArray, n: FloatArray, labels: NDArray[np.int64]) -> bool:
    """Prop. 1 part 2 at one clustering, against the system (printed) or the same members."""
    biases, system, around_system = cluster_biases(mu, n, labels)
    if reference == "system":
        return all(b < system for b in biases.values())
    means, sizes = np.asarray(mu), np.asarray(n)
    centre = np.sum(sizes * means) / sizes.sum()
    for k, bias in biases.items():
        members = labels == k
        own = np.sum(sizes[members] * means[members]) / sizes[members].sum()
        # Bias(C_k) + (beta_k - beta)^2: strictly below unless the centroids coincide
        if not (bias < around_system[k] or np.isclose(own, centre, rtol=1e-12, atol=1e-12)):
            return False
        if bias > around_system[k] * (1 + 1e-12):
            return False
    return True


def _prop1_bias(reference: str) -> Verdict:
    def holds(mu: FloatArray, n: FloatArray, init: FloatArray) -> bool:
        labels, _ = lloyd(mu, n, init, max_iter=500)
        return _bias_holds(reference, np.asarray(mu), np.asarray(n), labels)

    verdict = on_points(
        holds,
        _clusterings(),
        "Bias(C_k) < Bias(System) for every cluster k of the converged Lloyd process"
        if reference == "system"
        else "for every cluster k of the converged Lloyd process, Bias(C_k) is at most the "
        "spread of the same clients around the system's average, strictly below it unless "
        "beta_k equals that average",
        drawn="means (0, 10, 11) with sizes (1000, 1, 1) started at centroids (0, 10), then 40 "
        "seeded instances (seeds 100-139): K = 2, 3, 4, 2K-40 clients of 5-200 samples, group "
        "means 0.3, 1 or 3 apart with N(0, 0.3^2) client shifts, centroids started at K "
        "random client means",
    )
    # the clustering is a Lloyd fixed point, not unique: the range over those 16 starts reach
    total = good = several = 0
    for index, point in enumerate(_clusterings()):
        mu, n = np.asarray(point["mu"], dtype=np.float64), np.asarray(point["n"], dtype=np.float64)
        init = np.asarray(point["init"], dtype=np.float64)
        found = lloyd_fixed_points(mu, n, init.size, init, 15, index)
        several += len(found) > 1
        total += len(found)
        good += sum(_bias_holds(reference, mu, n, labels) for labels in found)
    note = (
        f"over every fixed point that the drawn start and 15 further starts (K random client "
        f"means) reach, {total} clusterings of the 41 instances ({several} instances with "
        f"several), the statement holds at {good} and fails at {total - good}"
    )
    if verdict.holds:
        return checked(
            f"{verdict.evidence}; {note}", verdict.n_points or 1, drawn=verdict.drawn or ""
        )
    return refuted(f"{verdict.evidence}; {note}", verdict.counterexample or {})


@proposition(
    "ipfl.prop1.bias",
    source=f"{PAPER}, §5 Proposition 1 ('the within-cluster bias is reduced'); App. I, proof "
    "of Proposition 1, part 2 (Bias(C_k) < Bias(System)); reading: Bias(C_k) is the "
    "size-weighted mean squared distance of the cluster's clients' means to the cluster's "
    "average, Bias(System) that of all clients to the system's average. Under the other "
    "reading, the same clients' spread around their cluster's average against their spread "
    "around the system's, it holds for every cluster (ipfl.prop1.bias.corrected)",
    statement="for every cluster C_k of the converged clustering, Bias(C_k) < Bias(System) "
    "(a cluster's weighted spread against the whole system's); the clustering is the Lloyd "
    "fixed point reached from the drawn start, and the evidence reports the statement at "
    "every fixed point that 16 starts reach",
    holds=False,
    kind=Kind.READING,
    perturb={"reference": "members"},
)
def _prop1_bias_printed(reference: str = "system") -> Verdict:
    return _prop1_bias(reference)


@proposition(
    "ipfl.prop1.bias.corrected",
    source=f"{PAPER}, App. I, proof of Proposition 1, part 2, with both biases taken over the "
    "same clients: the cluster's average minimises their weighted squared distance "
    "(sum_(i in C_k) n_i (mu_i - c)^2 = N_k Bias(C_k) + N_k (beta_k - c)^2)",
    statement="for every cluster C_k of a converged clustering, Bias(C_k) <= sum_(i in C_k) "
    "n_i (mu_i - beta)^2 / N_k (the same clients around the system's average beta), with "
    "equality only if beta_k = beta; hence, summed over K >= 2 distinct centroids, the "
    "within-cluster sum of squares is below the total one (at the Lloyd fixed point reached "
    "from the drawn start, and at every fixed point that 16 starts reach, reported)",
    perturb={"reference": "system"},
)
def _prop1_bias_corrected(reference: str = "members") -> Verdict:
    return _prop1_bias(reference)


def _regression(rng: np.random.Generator, n: int, d: int) -> tuple[FloatArray, FloatArray]:
    """The Hessian and linear term of the least-squares loss on n Gaussian samples."""
    x = rng.normal(size=(n, d))
    y = x @ rng.normal(0, 2, d) + rng.normal(0, 0.5, n)
    return x.T @ x / n, x.T @ y / n


@proposition(
    "ipfl.thm3",
    source=f"{PAPER}, §5 Theorem 3; App. I, proof of Theorem 3 (Eq. 40-45: gradient steps "
    "theta^(t+1) = theta^(t) - eta_t grad L(theta^(t)) with 0 < eta_t < 2/beta); reading: the "
    "theorem fixes no step size (nor the beta-smoothness its proof uses), the proof's are "
    "taken: constant steps eta = c/beta, 0 < c < 2. Other readings: any step size, which "
    "fails (eta > 2/beta diverges on a quadratic, this entry's perturbation); the diminishing "
    "steps the proof ends with (sum_t eta_t = oo), the setting of Theorem 6 (ipfl.thm6)",
    statement="for clusters of Gaussian data and a convex loss L (least squares on Gaussian "
    "features), gradient descent with 0 < eta < 2/beta converges to the minimiser theta* of the "
    "global loss, and, on each cluster once the clustering has converged, to the minimiser "
    "theta_k* of the cluster's loss",
    kind=Kind.READING,
    perturb={"step": 2.2},
)
def _thm3(step: float | None = None) -> Verdict:
    def cases() -> Iterator[dict[str, Any]]:
        rng = np.random.default_rng(3)
        for _ in range(30):
            d, k = int(rng.integers(1, 8)), int(rng.integers(2, 4))
            parts = [_regression(rng, int(rng.integers(5 * d, 40 * d + 1)), d) for _ in range(k)]
            c = float(rng.uniform(0.05, 1.95)) if step is None else step
            yield {"parts": parts, "c": c}

    def converges(parts: list[tuple[FloatArray, FloatArray]], c: float) -> bool:
        losses = [
            *parts,
            (sum(h for h, _ in parts) / len(parts), sum(g for _, g in parts) / len(parts)),
        ]
        for hessian, linear in losses:
            optimum = np.asarray(np.linalg.solve(hessian, linear))
            eta = c / float(np.linalg.eigvalsh(hessian)[-1])
            # 3000 steps theta <- theta - eta (H theta - g) from 0 leave (I - eta H)^3000 theta*
            with np.errstate(over="ignore", invalid="ignore"):
                power = np.linalg.matrix_power(np.eye(optimum.size) - eta * hessian, 3000)
                error = np.linalg.norm(power @ optimum)
            if not error <= 1e-6 * (1 + np.linalg.norm(optimum)):
                return False
        return True

    return on_points(
        converges,
        cases(),
        "||theta_3000 - theta*|| <= 1e-6 (1 + ||theta*||) for the global loss and every cluster",
        drawn="30 seeded problems (seed 3): 2-3 clusters in R^1..R^7, each 5d-40d samples with "
        "N(0, I) features, N(0, 2^2) true weights and N(0, 0.5^2) label noise; the global loss "
        "their average; step eta = c/beta with c uniform in [0.05, 1.95] (beta the largest "
        "Hessian eigenvalue), started at 0",
    )


def _thm4_points() -> Iterator[dict[str, Any]]:
    one = Fraction(1)
    yield {"eta": one / 4, "theta0": one, "mu": [0 * one], "weights": [one], "epsilon": one / 1000}
    rng = np.random.default_rng(4)
    for _ in range(40):
        m = int(rng.integers(1, 8))
        mu = [Fraction(int(v), 8) for v in rng.integers(-40, 41, m)]
        weights = [Fraction(int(v)) for v in rng.integers(1, 50, m)]
        yield {
            "eta": Fraction(int(rng.integers(1, 100)), 100),
            "theta0": Fraction(int(rng.integers(-40, 41)), 4),
            "mu": mu,
            "weights": weights,
            "epsilon": Fraction(1, 10 ** int(rng.integers(1, 13))),
        }


def _thm4(order: str, optimum: str) -> Verdict:
    r"""Theorem 4 on gradient descent for one cluster of Gaussian clients, in exact arithmetic.

    With :math:`f_i(\theta) = -E(\theta - z_i)^2` and the cluster model
    :math:`\theta_t = \beta + d_t`, :math:`d_t = (1 - 2\eta)^t d_0`,
    :math:`PMA_i^* - PMA_i(t) = (\theta_t - \mu_i)^2 - c_i` with :math:`c_i = (\beta - \mu_i)^2`
    for ``optimum="limit"`` (:math:`PMA_i^* = f_i(\beta) - \rho_i`) and :math:`c_i = 0` for
    ``optimum="maximiser"`` (:math:`PMA_i^* = \max_\theta f_i(\theta) - \rho_i`).
    """

    def holds(
        eta: Fraction,
        theta0: Fraction,
        mu: list[Fraction],
        weights: list[Fraction],
        epsilon: Fraction,
    ) -> bool:
        beta = Fraction(sum(w * m for w, m in zip(weights, mu, strict=True))) / sum(weights)
        ratio, start, theta = 1 - 2 * eta, theta0 - beta, Fraction(theta0)
        for t in range(30):  # gradient descent on sum_i w_i E(theta - z_i)^2, step eta
            if theta - beta != ratio**t * start:  # its closed form d_t = ratio^t d_0
                return False
            theta -= 2 * eta * (theta - beta)
        # the gap (theta_t - mu_i)^2 - c_i tends to (beta - mu_i)^2 - c_i
        limits = [(beta - m) ** 2 if optimum == "maximiser" else Fraction(0) for m in mu]
        if order == "exists T first":
            # d_t is never 0 unless ratio or d_0 is, and d_t (d_t + 2 (beta - mu_i)) vanishes
            # at most once: the gap is 0 from some T on iff d_t is and the limit is 0
            return (ratio == 0 or start == 0) and not any(limits)
        margin = epsilon - max(limits)
        if margin == 0:
            raise ValueError("a limit of the gap equals epsilon: sign of the approach undecided")
        if margin < 0:  # the gap tends to a value beyond epsilon
            return False
        spread = 2 * max(abs(beta - m) for m in mu)

        def bound(t: int) -> Fraction:  # |gap_i(t) - limit_i| <= |d_t| (|d_t| + spread)
            d = abs(Fraction(ratio**t) * start)
            return d * (d + spread)

        first = 1
        while bound(first) >= margin and first < 1 << 14:
            first *= 2
        return bound(first) < margin and all(
            abs((beta + ratio**t * start - m) ** 2 - (beta - m) ** 2 + limit) < epsilon
            for t in range(first, first + 20)
            for m, limit in zip(mu, limits, strict=True)
        )

    target = (
        "PMA_i* = f_i(beta) - rho_i (the value at the limit beta of the cluster model)"
        if optimum == "limit"
        else "PMA_i* = max_theta f_i(theta) - rho_i = f_i(mu_i) - rho_i (the maximiser of PMA_i)"
    )
    return on_points(
        holds,
        _thm4_points(),
        f"there is T with PMA_i(t) = PMA_i* for every t >= T (every epsilon > 0), {target}"
        if order == "exists T first"
        else f"for every epsilon > 0 there is T with |PMA_i(t) - PMA_i*| < epsilon for t >= T, "
        f"{target}",
        drawn="one client with mean 0, the model started at 1, eta = 1/4 (so d_t = 2^-t), "
        "epsilon = 1/1000; then 40 seeded exact (rational) instances (seed 4): 1-7 Gaussian "
        "clients of one cluster with means in [-5, 5] (steps of 1/8) and weights 1-49, the "
        "cluster model started in [-10, 10] and run by gradient descent with step eta in "
        "{0.01, ..., 0.99} (0 < eta < 2/beta = 1), epsilon = 10^-1 .. 10^-12; exact "
        "arithmetic, the closed form of gradient descent confirmed on its first 30 steps, T "
        "found by doubling and the 20 rounds from T on compared with epsilon",
    )


@proposition(
    "ipfl.thm4",
    source=f"{PAPER}, §5 Theorem 4 (under Proposition 1 and Theorem 3); PMA_i = f_i(w_k) - "
    "rho_i (Remark 5) with a performance f_i continuous in the model, as the proof (Eq. 46) "
    "assumes. A quantifier-order slip: the theorem prints 'there exists T, for all t >= T, "
    "for every epsilon', the proof's Eq. 46 'for given epsilon > 0, there exists a finite T'",
    statement="there exists a finite T such that for all t >= T, for every epsilon, "
    "|PMA_i(t) - PMA_i*| < epsilon for each client i (as printed: exists T before for every "
    "epsilon, so PMA_i(t) = PMA_i* from round T on; gradient descent with eta = 1/4 from "
    "theta_0 = 1 on one client of mean 0 has d_t = 2^-t, never 0)",
    holds=False,
    perturb={"order": "epsilon first"},
)
def _thm4_printed(order: str = "exists T first", optimum: str = "limit") -> Verdict:
    return _thm4(order, optimum)


@proposition(
    "ipfl.thm4.corrected",
    source=f"{PAPER}, App. I, proof of Theorem 4, Eq. 46 ('for given epsilon > 0, there exists "
    "a finite T'), with PMA_i* read as the limit f_i(beta) - rho_i of the cluster model; read "
    "as the maximiser of PMA_i (the proof's theta_i* 'that maximizes PMA_i'), it fails for "
    "every client whose mean is not the cluster's average beta",
    statement="for every epsilon > 0 there exists a finite T with |PMA_i(t) - PMA_i*| < "
    "epsilon for all t >= T, where PMA_i* = f_i(beta) - rho_i is the value at the limit beta "
    "of the cluster model (not max_theta PMA_i, which the cluster model reaches only if "
    "mu_i = beta)",
    perturb={"optimum": "maximiser"},
)
def _thm4_corrected(order: str = "epsilon first", optimum: str = "limit") -> Verdict:
    return _thm4(order, optimum)


def _fedavg(
    a: FloatArray, m: FloatArray, w: FloatArray, local: int, c: float, t0: float, rounds: int
) -> list[list[float]]:
    r"""Global models of weighted aggregation of E local GD steps on L_i = a_i/2 ||M - m_i||^2.

    E steps of size :math:`\eta_t = c/(t + t_0)` on client i's quadratic shrink its distance to
    :math:`m_i` by :math:`s_{t,i} = (1 - \eta_t a_i)^E`, so the aggregate is affine in the
    model: :math:`M_{t+1} = \sum_i w_i (m_i + s_{t,i}(M_t - m_i)) = b_t + g_t M_t` with
    :math:`g_t = \sum_i w_i s_{t,i}` and :math:`b_t = \sum_i w_i (1 - s_{t,i}) m_i`, whose
    coefficients are computed for every round at once; the rounds then run in Python floats
    (one list of floats per round).
    """
    t = np.arange(1, rounds + 1, dtype=np.float64)
    shrink = (1 - (c / (t + t0))[:, None] * a[None, :]) ** local  # (rounds, clients)
    gain = (shrink @ w).tolist()
    offset = (((1 - shrink) * w) @ m).tolist()  # (rounds, d)
    model, path = [0.0] * m.shape[1], []
    for g, b in zip(gain, offset, strict=True):
        path.append(model)
        model = [bk + g * xk for bk, xk in zip(b, model, strict=True)]
    path.append(model)
    return path


@proposition(
    "ipfl.thm6",
    source=f"{PAPER}, §5 Theorem 6; App. I, proof of Theorem 6 (local gradient descent, "
    "weighted aggregation M_(t+1) = sum_i w_i M_(t+1)^i)",
    statement="for convex beta-smooth local losses L_i, local gradient steps with eta_t, "
    "sum eta_t = infinity and sum eta_t^2 < infinity, and aggregation with the data weights "
    "w_i, the global models M_t converge to a minimiser M* of L(M) = sum_i w_i L_i(M)",
    perturb={"target_weights": "uniform"},
)
def _thm6(target_weights: str = "data") -> Verdict:
    def cases() -> Iterator[dict[str, Any]]:
        rng = np.random.default_rng(6)
        for _ in range(30):
            n, d = int(rng.integers(2, 11)), int(rng.integers(1, 6))
            a = rng.uniform(0.5, 5.0, n)
            c = float(rng.uniform(1.0, 3.0)) / a.min()
            yield {
                "a": a,
                "m": rng.normal(0, 3, (n, d)),
                "sizes": rng.integers(1, 101, n).astype(np.float64),
                "local": int(rng.choice((1, 2, 5))),
                "c": c,
                "t0": c * a.max() * float(rng.uniform(1.0, 3.0)),
            }

    def converges(
        a: FloatArray, m: FloatArray, sizes: FloatArray, local: int, c: float, t0: float
    ) -> bool:
        w = sizes / sizes.sum()
        v = w if target_weights == "data" else np.full(w.size, 1 / w.size)
        optimum = (v * a) @ m / (v * a).sum()  # the minimiser of sum_i v_i L_i
        path = _fedavg(a, m, w, local, c, t0, 4000)
        err = [
            float(np.linalg.norm(np.asarray(x) - optimum)) for x in (path[0], path[1000], path[-1])
        ]
        return err[2] <= 0.05 * err[0] and err[2] <= max(0.5 * err[1], 1e-9 * err[0])

    return on_points(
        converges,
        cases(),
        "after 4000 rounds ||M_t - M*|| is below 5% of ||M_0 - M*|| and below half its value "
        "at round 1000 (still shrinking) or below 1e-9 ||M_0 - M*|| (rounding)",
        drawn="30 seeded problems (seed 6): 2-10 clients, L_i = a_i/2 ||M - m_i||^2 in R^1..R^5 "
        "with a_i uniform in [0.5, 5] (beta = max a_i), m_i ~ N(0, 3^2 I), 1-100 samples per "
        "client as weights, E = 1, 2 or 5 local steps, eta_t = c/(t + t0) with c a_min uniform "
        "in [1, 3] and t0 = (1-3) c beta (so eta_1 <= 1/beta), started at 0",
    )


def _cor8_points() -> Iterator[dict[str, Any]]:
    yield {"sizes": np.full(10, 5.0), "m1": 5, "sigma": 5.0, "tau": 0.1, "gap": 1.0}
    rng = np.random.default_rng(81)
    for _ in range(59):
        m = int(rng.integers(3, 30))
        yield {
            "sizes": rng.integers(5, 200, m).astype(np.float64),
            "m1": int(rng.integers(1, m)),
            "sigma": float(rng.uniform(0.2, 3.0)),
            "tau": float(rng.uniform(0.0, 1.0)),
            "gap": float(rng.uniform(0.0, 3.0)),
        }


def _cor8(claim: str, stays: Callable[[FloatArray], NDArray[np.bool_]]) -> Verdict:
    """PMA of client 0 in cluster T_1 under Eq. 3: its FedAvg MSE minus its cluster MSE."""

    def holds(sizes: FloatArray, m1: int, sigma: float, tau: float, gap: float) -> bool:
        errors = exact_errors(sizes, m1, sigma, tau, gap)
        pma = errors["fl"] - errors["cluster"]
        if claim == "positive":
            return pma > 0
        return pma <= 0 or bool(np.asarray(stays(np.array([pma])))[0])

    return on_points(
        holds,
        _cor8_points(),
        "PMA_i > 0" if claim == "positive" else "a client with PMA_i > 0 does not opt out",
        drawn="10 clients of 5 samples, T_1 = 5 of them, sigma = 5, tau = 0.1 and the groups' "
        "means 1 = 10 tau apart (PMA_i = -0.249; -0.251 by the MSE printed under Eq. 4, "
        "games.ipfl.gaussian_propositions.working_errors), then seeded (seed 81) 59 models of Eq. 3: 3-29 clients of 5-199 "
        "samples, |T_1| in 1..m-1, sigma in [0.2, 3], tau in [0, 1], gap in [0, 3]; PMA_i = "
        "f_i(cluster) - f_i(FedAvg) with f_i = -MSE of client 0's estimate (games.ipfl."
        "gaussian_propositions.exact_errors)",
    )


def _stays(pma: FloatArray) -> NDArray[np.bool_]:
    """Eq. 2 corrected (games.ipfl.opt_outs): a client stays iff PMA_i > 0."""
    return ~opt_outs(pma)


@proposition(
    "ipfl.cor8.1",
    source=f"{PAPER}, App. I, Corollary 8.1 and its proof, in the Gaussian model of §3 (Eq. 3)",
    statement="for each client i, PMA_i is positive and approaches PMA_i*; if PMA_i > 0 the "
    "likelihood of client i opting out is minimised",
    holds=False,
    perturb={"claim": "stays"},
)
def _cor8_printed(
    claim: str = "positive", stays: Callable[[FloatArray], NDArray[np.bool_]] = _stays
) -> Verdict:
    return _cor8(claim, stays)


@proposition(
    "ipfl.cor8.1.corrected",
    source=f"{PAPER}, App. I, Corollary 8.1 without 'PMA_i is positive' (its proof says 'for "
    "most clients'), with Eq. 2's opt-out rule as corrected in ipfl.eq2.corrected",
    statement="a client with PMA_i > 0 does not opt out (opt-out likelihood 0, its minimum); "
    "PMA_i > 0 is not guaranteed",
    perturb={"stays": lambda pma: np.asarray(pma) > 1e9},
)
def _cor8_corrected(
    claim: str = "stays", stays: Callable[[FloatArray], NDArray[np.bool_]] = _stays
) -> Verdict:
    return _cor8(claim, stays)
