r"""IP-FL's Shapley approximation of App. H, checkable.

Holds the registered statements about the first-order contributions
:math:`\psi_i = -g^\top \lambda_i (W_i - W_M)` of :func:`games.ipfl.shapley_first_order`: that
they rank the clients like the exact Shapley value (``ipfl.shapley.ranks``, a reading of Remark
7) and that under normalised aggregation they sum to zero (``ipfl.shapley.zero_sum``).

References
----------
Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4),
App. H, Alg. 3, Eq. 16 and Eq. 20, Remarks 7-8.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np

from econ.propositions import Kind, Verdict, on_points, proposition
from games.ipfl import shapley_first_order
from games.ipfl.config import FloatArray
from games.ipfl.propositions import PAPER


def _logistic_problem(
    rng: np.random.Generator, n_clients: int, dim: int, noise_step: float
) -> tuple[list[tuple[FloatArray, FloatArray]], tuple[FloatArray, FloatArray]]:
    w_true = rng.normal(size=dim)
    sets = []
    for c in range(n_clients):
        x = rng.normal(size=(60, dim))
        y = (x @ w_true + rng.normal(0, 0.1 + noise_step * c, 60) > 0).astype(np.float64)
        sets.append((x, y))
    xh = rng.normal(size=(400, dim))
    yh = (xh @ w_true > 0).astype(np.float64)
    return sets, (xh, yh)


def _loss_grad(w: FloatArray, x: FloatArray, y: FloatArray) -> tuple[float, FloatArray]:
    z = x @ w
    p = 1 / (1 + np.exp(-z))
    loss = float(np.mean(np.logaddexp(0, z) - y * z))
    return loss, x.T @ (p - y) / y.size


def _local(w: FloatArray, x: FloatArray, y: FloatArray, steps: int, lr: float) -> FloatArray:
    for _ in range(steps):
        w = w - lr * _loss_grad(w, x, y)[1]
    return w


def _spearman(a: FloatArray, b: FloatArray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def _shapley_case(
    seed: int, m: int, lr: float, noise_step: float, dim: int, sign: float
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    sets, (xh, yh) = _logistic_problem(rng, m, dim, noise_step)
    w0 = np.zeros(dim)
    updates = np.stack([_local(w0, x, y, 5, lr) for x, y in sets])
    lam = np.full(m, 1.0 / m)
    w_m = lam @ updates
    g = _loss_grad(w_m, xh, yh)[1]
    psi = sign * shapley_first_order(g, updates, w_m, lam)
    base = _loss_grad(w0, xh, yh)[0]

    @cache
    def value(coalition: frozenset[int]) -> float:
        if not coalition:
            return 0.0
        wc = updates[sorted(coalition)].mean(axis=0)
        return base - _loss_grad(wc, xh, yh)[0]

    exact = np.zeros(m)
    for i in range(m):
        others = [j for j in range(m) if j != i]
        for size in range(m):
            weight = math.factorial(size) * math.factorial(m - size - 1) / math.factorial(m)
            for coalition in itertools.combinations(others, size):
                exact[i] += weight * (
                    value(frozenset((*coalition, i))) - value(frozenset(coalition))
                )
    return {"seed": seed, "m": m, "lr": lr, "spearman": _spearman(psi, exact)}


@proposition(
    "ipfl.shapley.ranks",
    source=f"{PAPER}, App. H, Alg. 3 and Eq. 16 (normalised aggregation) against the Shapley "
    "value Eq. 20; Remarks 7-8",
    statement="the first-order contributions psi_i = -g^T lambda_i (W_i - W_M) rank the clients "
    "like the exact Shapley value of the hold-out loss reduction of normalised coalition "
    "models on logistic regression with graded label noise; Remark 7 says only that the "
    "first-order term 'approximates' a client's contribution, and the criterion Spearman "
    ">= 0.8 is our reading of that word, not printed",
    kind=Kind.READING,
    perturb={"sign": -1.0},
)
def _shapley_ranks(sign: float = 1.0, threshold: float = 0.8) -> Verdict:
    points = [
        _shapley_case(seed, m, lr, noise, dim, sign)
        for seed, (m, lr, noise, dim) in enumerate(
            itertools.product((4, 5, 6), (0.1, 0.5), (0.5, 2.0), (5, 20)), start=10
        )
    ]
    return on_points(
        lambda spearman, **_: spearman >= threshold,
        points,
        f"Spearman(psi, exact Shapley) >= {threshold} (a threshold we chose)",
        drawn="24 seeded problems (seeds 10-33): every combination of 4, 5 or 6 clients, "
        "local step size 0.1 or 0.5 (5 steps), label-noise scale 0.1 + 0.5 c or 0.1 + 2 c for "
        "client c, dimension 5 or 20; 60 training and 400 hold-out points; exact Shapley over "
        "all 2^m coalitions",
    )


@proposition(
    "ipfl.shapley.zero_sum",
    source=f"{PAPER}, App. H, Eq. 16 and Remark 8 (normalised aggregation W_M = sum lambda_i W_i, "
    "sum lambda_i = 1)",
    statement="under normalised FedAvg the first-order contributions -g^T lambda_i (W_i - W_M) "
    "sum to zero over the participants",
    kind=Kind.DERIVED,
    perturb={"normalized": False},
)
def _shapley_zero_sum(normalized: bool = True) -> Verdict:
    def cases() -> Iterator[dict[str, Any]]:
        rng = np.random.default_rng(16)
        yield {"g": np.ones(3), "updates": np.array([[1.0, 2.0, 3.0]]), "lam": np.ones(1)}
        yield {"g": np.ones(2), "updates": np.eye(2) * 1e6, "lam": np.array([1.0, 0.0])}
        for _ in range(58):
            n, d = int(rng.integers(2, 12)), int(rng.integers(1, 40))
            scale = float(10.0 ** rng.integers(-3, 4))
            yield {
                "g": rng.normal(size=d),
                "updates": scale * rng.normal(size=(n, d)),
                "lam": rng.dirichlet(np.ones(n)),
            }

    def zero_sum(g: FloatArray, updates: FloatArray, lam: FloatArray) -> bool:
        model = lam @ updates
        psi = shapley_first_order(g, updates, model, lam, normalized=normalized)
        scale = float(np.abs(lam * (updates @ g)).sum() + abs(model @ g)) + 1e-300
        return abs(float(psi.sum())) <= 1e-10 * scale

    return on_points(
        zero_sum,
        cases(),
        "|sum_i psi_i| <= 1e-10 (sum_i |lambda_i g^T W_i| + |g^T W_M|)",
        drawn="a single client, a one-hot lambda with updates of size 1e6, then seeded (seed "
        "16) 58 draws of 2-11 clients in R^1..R^39 with updates of scale 1e-3..1e3 and "
        "Dirichlet(1) weights",
    )
