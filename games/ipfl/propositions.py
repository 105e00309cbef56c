r"""IP-FL's theory, checkable: Eq. 2, Eq. 7-8 and Proposition 1's Lloyd process.

The Gaussian model of §3, Proposition 1's Lloyd process, the Shapley approximation of App. H, and
the token economy of §4.2 (Eq. 9-13) against the ledger of :mod:`games.ipfl`. Every statement
is registered under ``ipfl.`` in :mod:`econ.propositions`; a printed statement that fails
carries ``holds=False`` and its fix the suffix ``.corrected``. Where the printed text is
ambiguous the reading the toolkit adopts is stated in the entry's source as "reading: ...", or
registered with ``kind="reading"``.

The printed statements that fail:

- Eq. 2 counts the clients with positive PMA, not those that opt out (``ipfl.eq2``).
- The FL error, Eq. 5 and Eq. 6 of §3 treat the differences :math:`\mu_j - \mu_i` as
  independent :math:`N(0, 2\tau^2)`; under the model Eq. 3 they share :math:`\mu_i`, the
  errors are larger, and clustering beats local training iff :math:`\tau^2 < \sigma^2/n_0`,
  not :math:`\tau^2 < m_1\sigma^2/(2n_0)` (``ipfl.fl_error``, ``ipfl.eq5``, ``ipfl.eq6``;
  the formulas are exact under that independence, ``ipfl.eq6.working``).
- The FedAvg and cluster minimisers of §3 weight the summed losses by :math:`n_i/n` (their
  minimiser weights :math:`\hat\mu_i` by :math:`n_i^2`), the cluster one averages
  :math:`\hat\mu_i` for :math:`\hat\mu_j`, and Eq. 6's first form has :math:`1/m^2` for
  :math:`1/m_1^2` (``ipfl.fl_minimiser``, ``ipfl.cluster_minimiser``, ``ipfl.eq6.first_form``).
- Eq. 12 takes :math:`\tau_{ar} \cdot Util` from every client instead of refunding the
  consumers out of the pool, and gives Util the range :math:`[0, \gamma]` where Eq. 11 gives
  :math:`[0, \eta]` (``ipfl.eq12``).
- Eq. 7's importance weights, read as the accuracies App. I describes, do not sum to 1, and
  Eq. 8 then scales the model instead of averaging (``ipfl.eq7``).
- Eq. 13's denominator :math:`N_r(N_r+1)/2` pays out more than the pool whenever
  :math:`N_p > 0` (``ipfl.eq13``).

This module holds Eq. 2, Eq. 7-8 and Proposition 1 (with :func:`lloyd`, the process it is
about); the Gaussian model of §3 is in :mod:`games.ipfl.gaussian_propositions` and
:mod:`games.ipfl.gaussian_derivation_propositions`, the Shapley approximation in
:mod:`games.ipfl.shapley_propositions`, the token economy in
:mod:`games.ipfl.ledger_propositions` (Eq. 9-12) and :mod:`games.ipfl.reward_propositions`
(Eq. 13, a client's net token change, conservation).

References
----------
Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4),
§3-4, Proposition 1, App. H.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.propositions import (
    Kind,
    Verdict,
    checked,
    on_points,
    proposition,
)
from econ.validation import positive_int
from games.ipfl import (
    importance_weights,
    opt_outs,
    personalised_model,
)
from games.ipfl.config import FloatArray

__all__ = ["lloyd", "lloyd_fixed_points"]


PAPER = "Khan et al. (IP-FL, arXiv 2304.07514 v4)"


def _printed_heaviside(x: FloatArray) -> NDArray[np.bool_]:
    """Eq. 2: H(x) = 0 if x <= 0, 1 if x > 0."""
    return np.asarray(x) > 0


def _opt_out_heaviside(x: FloatArray) -> NDArray[np.bool_]:
    """The complement: 1 if x <= 0 (the client's gain does not exceed its threshold)."""
    return np.asarray(x) <= 0


def _pma_points() -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(2)
    yield {"pma": np.zeros(4)}
    yield {"pma": np.array([-3.0, 0.0, 2.5, 7.0, 9.0])}
    yield {"pma": np.full(3, 5.0)}
    yield {"pma": np.full(3, -5.0)}
    for _ in range(56):
        n = int(rng.integers(1, 30))
        pma = np.round(rng.normal(0, 5, n), int(rng.integers(0, 3)))
        pma[rng.random(n) < 0.2] = 0.0
        yield {"pma": pma}


_PMA_DRAWN = (
    "four edge vectors (all PMA 0; -3, 0, 2.5, 7, 9; all positive; all negative), then seeded "
    "(seed 2) 56 vectors of 1-29 PMAs ~ N(0, 5^2) rounded to 0-2 decimals, a fifth of them "
    "set to exactly 0"
)


def _eq2_check(heaviside: Callable[[FloatArray], NDArray[np.bool_]]) -> Verdict:
    def holds(pma: FloatArray) -> bool:
        count = int(np.sum(heaviside(pma)))
        leaving = int(np.sum(pma <= 0))
        return count == leaving == int(np.sum(opt_outs(pma)))

    return on_points(
        holds,
        _pma_points(),
        "sum_i H(PMA_i) = #{i : PMA_i <= 0} = the ledger's opt-out count (games.ipfl.opt_outs)",
        drawn=_PMA_DRAWN,
    )


@proposition(
    "ipfl.eq2",
    source=f"{PAPER}, §3 'Problem Formulation', Eq. 1-2",
    statement="opt-outs = sum_i H(PMA_i), H(x) = 0 if x <= 0 and 1 if x > 0, counts the clients "
    "that opt out, i.e. those whose PMA_i = f_i(w_k) - rho_i does not exceed 0 (rho_i is the "
    "minimum accuracy that justifies participation)",
    holds=False,
    perturb={"heaviside": _opt_out_heaviside},
)
def _eq2_printed(
    heaviside: Callable[[FloatArray], NDArray[np.bool_]] = _printed_heaviside,
) -> Verdict:
    return _eq2_check(heaviside)


@proposition(
    "ipfl.eq2.corrected",
    source=f"{PAPER}, §3, Eq. 2 with H replaced by its complement; reading: a client with "
    "PMA_i = 0 exactly (no gain over FedAvg) opts out, the complement of the printed H(0) = 0",
    statement="opt-outs = sum_i 1[PMA_i <= 0], as games.ipfl.opt_outs counts them",
    perturb={"heaviside": lambda x: np.asarray(x) < 0},
)
def _eq2_corrected(
    heaviside: Callable[[FloatArray], NDArray[np.bool_]] = _opt_out_heaviside,
) -> Verdict:
    return _eq2_check(heaviside)


def _weight_points() -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(8)
    yield {"accuracy": np.array([[0.9, 0.8]]), "models": np.array([[1.0, -2.0], [1.0, -2.0]])}
    yield {"accuracy": np.zeros((2, 3)), "models": np.ones((3, 4))}
    for _ in range(58):
        n, k, d = int(rng.integers(1, 8)), int(rng.integers(1, 6)), int(rng.integers(1, 30))
        accuracy = np.round(rng.uniform(0, 1, (n, k)), int(rng.integers(1, 4)))
        accuracy[rng.random((n, k)) < 0.1] = 0.0
        yield {"accuracy": accuracy, "models": np.repeat(rng.normal(size=(1, d)), k, axis=0)}


def _raw_accuracy(accuracy: FloatArray) -> FloatArray:
    """Eq. 7 as printed: upsilon_ik = n_ik/n_k, the share of D_i that M_k predicts correctly."""
    return np.asarray(accuracy, dtype=np.float64)


def _weighted_average_check(weights: Callable[[FloatArray], FloatArray], ratios: bool) -> Verdict:
    """Whether ``weights`` make Eq. 8's P_i a weighted average of the cluster models.

    With ``ratios`` also whether they keep Eq. 7's ratios between clusters (where a client's
    accuracies are not all 0) and equal :func:`games.ipfl.importance_weights`.
    """

    def holds(accuracy: FloatArray, models: FloatArray) -> bool:
        w = weights(accuracy)
        personal = personalised_model(w, models)
        average = bool(
            np.all(w >= 0)
            and np.allclose(w.sum(axis=1), 1.0)
            and np.allclose(personal, models[0][None, :], atol=1e-12)
        )
        if not ratios:
            return average
        scale = accuracy.sum(axis=1, keepdims=True)
        kept = np.allclose((w * scale)[scale[:, 0] > 0], accuracy[scale[:, 0] > 0], atol=1e-12)
        return average and kept and bool(np.allclose(importance_weights(accuracy), w))

    return on_points(
        holds,
        _weight_points(),
        "weights >= 0 summing to 1 per client and P_i = M when every M_k = M"
        + (
            "; w_ik sum_k' upsilon_ik' = upsilon_ik where some upsilon_ik > 0, and w = "
            "games.ipfl.importance_weights"
            if ratios
            else ""
        ),
        drawn="accuracies (0.9, 0.8) with two equal models, an all-zero accuracy matrix, then "
        "seeded (seed 8) 58 matrices of 1-7 clients x 1-5 clusters with accuracies uniform in "
        "[0, 1] rounded to 1-3 decimals (a tenth set to 0) and K copies of a random model in "
        "R^1..R^29",
    )


_EQ7_READINGS = (
    "the printed n_ik/n_k names neither count; the readings: (a) the share of D_i that M_k "
    "predicts correctly ('normalized sum of correctly predicted data points on local dataset "
    "D_i'; App. I, proof of Proposition 1: 'a value of 1 indicating perfect prediction "
    "accuracy'), one accuracy per cluster, not summing to 1 over k; (b) those accuracies "
    "normalised over the clusters; (c) FedSoft's importance weight (§1 cites it), the share "
    "of D_i on which M_k has the smallest loss, which sums to 1 over k"
)


@proposition(
    "ipfl.eq7",
    source=f"{PAPER}, §4.1 'Profiler', Eq. 7 (upsilon_ik = n_ik/n_k in [0, 1]) as the weights "
    f"of Eq. 8 (P_ik = sum_k upsilon_ik x omega_k), under reading (a): {_EQ7_READINGS}",
    statement="with upsilon_ik the share of D_i that M_k predicts correctly, Eq. 8's "
    "'weighted aggregation' P_i = sum_k upsilon_ik omega_k is a weighted average of the "
    "cluster models: K identical cluster models give that model back",
    holds=False,
    kind=Kind.READING,
    perturb={"weights": importance_weights},
)
def _eq7_printed(weights: Callable[[FloatArray], FloatArray] = _raw_accuracy) -> Verdict:
    return _weighted_average_check(weights, ratios=False)


@proposition(
    "ipfl.eq7.corrected",
    source=f"{PAPER}, §4.1, Eq. 7 normalised over the clusters (reading (b) of ipfl.eq7), so "
    "that Eq. 8 averages the cluster models",
    statement="w_ik = upsilon_ik/sum_k' upsilon_ik' (uniform where every upsilon_ik is 0) "
    "keeps Eq. 7's ratios between the clusters and makes P_i = sum_k w_ik M_k a weighted "
    "average: K identical cluster models give that model back (games.ipfl.importance_weights)",
    kind=Kind.DERIVED,
    perturb={"weights": _raw_accuracy},
)
def _eq7_corrected(weights: Callable[[FloatArray], FloatArray] = importance_weights) -> Verdict:
    return _weighted_average_check(weights, ratios=True)


@proposition(
    "ipfl.eq8",
    source=f"{PAPER}, §4.1 'Profiler', Eq. 7-8; reading (b): the 'normalized' importance "
    "weights of Eq. 7 are normalised over the clusters, w_ik = upsilon_ik/sum_k' upsilon_ik' "
    f"(uniform where every accuracy is 0); {_EQ7_READINGS}. Reading (a) fails (ipfl.eq7); (c) "
    "needs per-sample losses the toolkit's profiler does not keep",
    statement="the personalised model P_i = sum_k w_ik M_k is a convex combination of the "
    "cluster models: K identical cluster models give that model back "
    "(games.ipfl.importance_weights, games.ipfl.personalised_model)",
    kind=Kind.READING,
    perturb={"weights": _raw_accuracy},
)
def _eq8(weights: Callable[[FloatArray], FloatArray] = importance_weights) -> Verdict:
    return _weighted_average_check(weights, ratios=False)


def _weighted_centre(mu: FloatArray, n: FloatArray) -> float:
    """Prop. 1's proof: beta_k = sum n_i mu_hat_i / sum n_i."""
    return float(np.sum(n * mu) / n.sum())


def lloyd(
    means: ArrayLike,
    sizes: ArrayLike,
    init: ArrayLike,
    max_iter: int = 100,
    *,
    centre: Callable[[FloatArray, FloatArray], float] = _weighted_centre,
) -> tuple[NDArray[np.int64], FloatArray]:
    r"""The Lloyd process of Prop. 1's proof (App. I, part 1) on client means :math:`\hat\mu_i`.

    Assign each client to the nearest centre, set each centre to ``centre`` of its clients (the
    size-weighted mean :math:`\sum n_i \hat\mu_i / \sum n_i`); returns the final assignment and the
    objective after every assignment step and every centroid step
    (:math:`\sum_k \sum_{i\in C_k} n_i (\beta_k - \hat\mu_i)^2`, the proof's
    :math:`\sum_i \sum_j (\beta_k - z_{ij})^2` up to a constant).
    """
    mu = np.asarray(means, dtype=np.float64)
    n = np.asarray(sizes, dtype=np.float64)
    centres = np.asarray(init, dtype=np.float64).copy()
    positive_int("max_iter", max_iter)
    objective = []
    labels = np.full(mu.size, -1)
    for _ in range(max_iter):
        new = np.argmin((mu[:, None] - centres[None, :]) ** 2, axis=1)
        objective.append(float(np.sum(n * (mu - centres[new]) ** 2)))
        if np.array_equal(new, labels):
            break
        labels = new
        for k in range(centres.size):
            members = labels == k
            if members.any():
                centres[k] = centre(mu[members], n[members])
        objective.append(float(np.sum(n * (mu - centres[labels]) ** 2)))
    return labels, np.array(objective)


def lloyd_fixed_points(
    means: ArrayLike, sizes: ArrayLike, k: int, init: ArrayLike, tries: int, seed: int
) -> list[NDArray[np.int64]]:
    """The distinct clusterings :func:`lloyd` converges to from ``init`` and ``tries`` more starts.

    The further starts are seeded random choices of ``k`` distinct client means. A clustering
    is a partition of the clients (labels up to renaming), listed once, ``init``'s first; one
    with fewer than ``k`` non-empty clusters is kept (Prop. 1 does not exclude it).
    """
    mu = np.asarray(means, dtype=np.float64)
    rng = np.random.default_rng(seed)
    starts = [np.asarray(init, dtype=np.float64)]
    starts += [rng.choice(mu, k, replace=False) for _ in range(tries)]
    seen: dict[frozenset[frozenset[int]], NDArray[np.int64]] = {}
    for start in starts:
        labels, _ = lloyd(mu, sizes, start, max_iter=500)
        partition = frozenset(frozenset(np.flatnonzero(labels == c).tolist()) for c in set(labels))
        seen.setdefault(partition, labels)
    return list(seen.values())


@proposition(
    "ipfl.prop1.lloyd",
    source=f"{PAPER}, §5 Proposition 1; App. I, proof of Proposition 1, part 1",
    statement="the proof's process (assign each client to the centroid minimising "
    "sum_j (beta_k - z_ij)^2, move each centroid to sum n_i mu_hat_i / sum n_i) never increases "
    "L = sum_i sum_j (beta_k(i) - z_ij)^2 and its assignments stop changing after finitely many "
    "iterations (from any start; the check starts at K drawn client means, ties in the "
    "assignment going to the lower-index centroid). The fixed point reached depends on the "
    "start: the evidence reports how many distinct ones 16 starts reach",
    perturb={"centre": lambda mu, n: float(np.mean(mu))},
)
def _prop1(centre: Callable[[FloatArray, FloatArray], float] = _weighted_centre) -> Verdict:
    points, reached = [], []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        k = int((2, 3, 4)[seed % 3])
        m = int(rng.integers(2 * k, 41))
        sizes = rng.integers(5, 201, m).astype(np.float64)
        groups = rng.integers(0, k, m)
        spread = float((0.3, 1.0, 3.0)[seed % 3])  # overlapping to well separated groups
        mu = spread * groups + rng.normal(0, 0.3, m) + rng.normal(0, 1, m) / np.sqrt(sizes)
        init = rng.choice(mu, k, replace=False)
        _, objective = lloyd(mu, sizes, init, max_iter=500, centre=centre)
        reached.append(len(lloyd_fixed_points(mu, sizes, k, init, 15, seed)))
        points.append(
            {
                "seed": seed,
                "K": k,
                "m": m,
                "worst_increase": float(np.max(np.diff(objective), initial=0.0)),
                "scale": float(objective[0]),
                "iterations": int(objective.size),
                "stopped": bool(objective.size < 2 * 500),
            }
        )
    verdict = on_points(
        lambda worst_increase, scale, stopped, **_: (
            worst_increase <= 1e-12 * max(scale, 1.0) and stopped
        ),
        points,
        "L non-increasing after every assignment and every centroid step, assignments fixed "
        "before 500 iterations",
        drawn="40 seeded instances (seeds 0-39): K = 2, 3, 4 centroids, 2K-40 clients of 5-200 "
        "samples, group means 0.3, 1 or 3 apart (overlapping to separated) with N(0, 0.3^2) "
        "client shifts and sampling noise, centroids started at K random client means",
    )
    if not verdict.holds:
        return verdict
    several = sum(r > 1 for r in reached)
    return checked(
        f"{verdict.evidence}; the fixed point is not unique: from the drawn start and 15 "
        f"further starts (K random client means) {several} of the 40 instances reach several "
        f"clusterings, up to {max(reached)}",
        verdict.n_points or 1,
        drawn=verdict.drawn or "",
    )
