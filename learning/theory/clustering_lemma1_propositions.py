r"""Lemma 1 of Werner (2024), ch. 2, §2.3 (thesis only), registered and checked on quadratic clients.

Lemma 1 gives A4 with :math:`A = 2L/\mu` and A5 with :math:`D^2 = 2(1 + (L/\mu)^2)` and
:math:`\Delta^2 = \tfrac12(\max_{j\not\sim i}\lVert\nabla f_j(x_i^*)\rVert)^2`; its proof
(eq. (2.17)) bounds each pair by its own :math:`\tfrac12\lVert\nabla f_j(x_i^*)\rVert^2`, so
a uniform :math:`\Delta` takes the minimum over pairs, not the maximum
(``thesis.ch2.lemma1.a5``, corrected as ``thesis.ch2.lemma1.a5.corrected``). The clients and
the terms of both inequalities are in :mod:`learning.theory.clustering_lemma1`; the overview of
the chapter's statements is :mod:`learning.theory.clustering_propositions`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from econ.propositions import Verdict, on_points, proposition
from learning.theory.clustering import THESIS, FloatArray
from learning.theory.clustering_lemma1 import (
    QuadraticClusters,
    lemma1_terms,
    random_quadratic_clusters,
)


def _outlier_cluster(n: int, dim: int, mu: float, smoothness: float) -> QuadraticClusters:
    """Two clusters, each with one outlying client of curvature ``smoothness``.

    In each cluster one client has Hessian ``smoothness * I`` and the others ``mu * I``: the
    cluster mean gradient is small where the outlier's is large.
    """
    eye = np.eye(dim)
    one = [smoothness * eye] + [mu * eye] * (n - 1)
    hessians = np.stack(one + one)
    optima = np.stack([np.zeros(dim), np.full(dim, 3.0)])
    return QuadraticClusters(hessians, optima, np.repeat(np.arange(2), n))


def _three_cluster_line() -> QuadraticClusters:
    """1-D, identity curvature, one client per cluster, cluster optima 0, 1 and 10."""
    return QuadraticClusters(
        np.ones((3, 1, 1)), np.array([[0.0], [1.0], [10.0]]), np.arange(3, dtype=np.int64)
    )


_LEMMA1_DRAWN = (
    "seeded (seed 2024): 36 random problems (2-3 clusters of 1-3 clients in R^1, R^2 or R^4; "
    "Hessians with spectrum spread over [mu, L], both ends attained; kappa = L/mu in "
    "{1, 2, 5, 10}) and 4 adversarial ones (a cluster of 4 or 12 clients of which one has "
    "Hessian L I and the others mu I, kappa 5 and 10), 25 points x each at the cluster optima "
    "plus Gaussian offsets of scale 1e-3, 0.1, 1 or 10; one point = one (problem, x), the "
    "inequality checked for every client or pair"
)


def _lemma1_points() -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(2024)
    problems: list[tuple[QuadraticClusters, float, float]] = []
    for k in range(36):
        mu = float(rng.choice([0.2, 0.5, 1.0]))
        kappa = float((1.0, 2.0, 5.0, 10.0)[k % 4])
        dim = int((1, 2, 4)[k % 3])
        clusters, per = int(rng.integers(2, 4)), int(rng.integers(1, 4))
        problems.append(
            (random_quadratic_clusters(rng, clusters, per, dim, mu, kappa * mu), kappa * mu, mu)
        )
    for n, kappa in ((4, 5.0), (4, 10.0), (12, 5.0), (12, 10.0)):
        problems.append((_outlier_cluster(n, 2, 1.0, kappa), kappa, 1.0))
    for problem, smoothness, mu in problems:
        in_class = problem.in_class(mu, smoothness)
        for j in range(25):
            centre = problem.optima[j % problem.optima.shape[0]]
            scale = (0.0, 1e-3, 0.1, 1.0, 10.0)[j % 5]
            x = centre + scale * rng.standard_normal(centre.size)
            yield _point(problem, x, smoothness, mu, in_class)


def _point(
    problem: QuadraticClusters, x: FloatArray, smoothness: float, mu: float, in_class: bool
) -> dict[str, Any]:
    return {
        "hessians": problem.hessians,
        "optima": problem.optima,
        "clusters": problem.clusters,
        "x": x,
        "L": smoothness,
        "mu": mu,
        "in_class": in_class,
    }


def _problem(
    hessians: FloatArray, optima: FloatArray, clusters: NDArray[np.int64]
) -> QuadraticClusters:
    return QuadraticClusters(np.asarray(hessians), np.asarray(optima), np.asarray(clusters))


def _in_class(in_class: bool, **_: Any) -> bool:
    return in_class


def _printed_a(smoothness: float, mu: float) -> float:
    """Lemma 1: A = 2L/mu."""
    return 2 * smoothness / mu


def _printed_d2(smoothness: float, mu: float) -> float:
    """Lemma 1: D^2 = 2(1 + (L/mu)^2)."""
    return 2 * (1 + (smoothness / mu) ** 2)


@proposition(
    "thesis.ch2.lemma1.a4",
    source=f"{THESIS}, §2.3 Lemma 1 (first inequality); proof in §2.6, eq. (2.14)-(2.16)",
    statement="if the f_i are L-smooth and mu-strongly convex and clients of a cluster share "
    "their optimum, then ||grad f_i(x) - grad f_bar_i(x)||^2 <= (2L/mu)^2 ||grad f_bar_i(x)||^2 "
    "for all x (A4 with A = 2L/mu)",
    perturb={"a": lambda smoothness, mu: smoothness / (2 * mu)},
)
def _lemma1_a4(a: Callable[[float, float], float] = _printed_a) -> Verdict:
    def holds(
        hessians: FloatArray,
        optima: FloatArray,
        clusters: NDArray[np.int64],
        x: FloatArray,
        L: float,
        mu: float,
        **_: Any,
    ) -> bool:
        pc = lemma1_terms(_problem(hessians, optima, clusters), x)
        return bool(np.all(pc.dev2 <= a(L, mu) ** 2 * pc.bar2 * (1 + 1e-9) + 1e-12))

    return on_points(
        holds,
        _lemma1_points(),
        "||grad f_i - grad f_bar_i||^2 <= A^2 ||grad f_bar_i||^2 for every client",
        drawn=_LEMMA1_DRAWN,
        hypothesis=_in_class,
    )


def _a5_holds(
    hessians: FloatArray,
    optima: FloatArray,
    clusters: NDArray[np.int64],
    x: FloatArray,
    L: float,
    mu: float,
    *,
    half: float,
    d2: Callable[[float, float], float],
    gap: Callable[[FloatArray, NDArray[np.bool_]], FloatArray] | None,
    **_: Any,
) -> bool:
    """Whether A5 holds at ``x`` for every pair i !~ j of clients in different clusters.

    The separation term is ``gap(at_opt, other)``, the per-client
    ||grad f_j'(x_i^*)|| reduced over j' !~ i, or (``None``) the pair's own.
    """
    pc = lemma1_terms(_problem(hessians, optima, clusters), x)
    term = pc.at_opt if gap is None else gap(pc.at_opt, pc.other)[:, None]
    slack = pc.diff2 - half * term**2 + d2(L, mu) * pc.own2[:, None]
    scale = 1e-9 * (1 + pc.diff2 + term**2)
    return bool(np.all(slack[pc.other] >= -scale[pc.other]))


def _max_other(at_opt: FloatArray, other: NDArray[np.bool_]) -> FloatArray:
    """Lemma 1 as printed: max over j' !~ i of ||grad f_j'(x_i^*)||."""
    return np.where(other, at_opt, -np.inf).max(1)


def _min_other(at_opt: FloatArray, other: NDArray[np.bool_]) -> FloatArray:
    """The uniform constant the proof supports: min over j' !~ i."""
    return np.where(other, at_opt, np.inf).min(1)


def _a5_points() -> Iterator[dict[str, Any]]:
    line = _three_cluster_line()
    for x in (0.0, 0.5, 1.0, 10.0):
        yield _point(line, np.array([x]), 1.0, 1.0, line.in_class(1.0, 1.0))
    yield from _lemma1_points()


_A5_DRAWN = (
    "the line of three one-client clusters with optima 0, 1, 10 (L = mu = 1) at x = 0, 0.5, "
    f"1, 10; then {_LEMMA1_DRAWN}"
)


@proposition(
    "thesis.ch2.lemma1.a5",
    source=f"{THESIS}, §2.3 Lemma 1 (second inequality) and the last line of its proof (§2.6)",
    statement="under Lemma 1's hypotheses, for clients i !~ j in different clusters: "
    "||grad f_i(x) - grad f_j(x)||^2 >= (1/2)(max_{j !~ i} ||grad f_j(x_i*)||)^2 - "
    "2(1 + (L/mu)^2)||grad f_i(x)||^2 for all x",
    holds=False,
    perturb={"gap": _min_other},
)
def _lemma1_a5_printed(
    gap: Callable[[FloatArray, NDArray[np.bool_]], FloatArray] = _max_other,
    half: float = 0.5,
    d2: Callable[[float, float], float] = _printed_d2,
) -> Verdict:
    return on_points(
        lambda **pt: _a5_holds(**pt, half=half, d2=d2, gap=gap),
        _a5_points(),
        "A5 with Delta^2 = (1/2)(reduced ||grad f_j'(x_i*)||)^2 and D^2 for every pair i !~ j "
        "(losses 1/2 (x - c)^2 with L = mu = 1 are in the lemma's class)",
        drawn=_A5_DRAWN,
        hypothesis=_in_class,
    )


@proposition(
    "thesis.ch2.lemma1.a5.corrected",
    source=f"{THESIS}: corrects the second display of Lemma 1 (§2.3) and the last line of its "
    "proof (§2.6, 'Delta = (1/sqrt 2) max_{j != i} ||grad f_j(x_i*)||') by eq. (2.17), which "
    "bounds each pair by its own gradient at x_i*",
    statement="under Lemma 1's hypotheses, for i !~ j: ||grad f_i(x) - grad f_j(x)||^2 >= "
    "(1/2)||grad f_j(x_i*)||^2 - 2(1 + (L/mu)^2)||grad f_i(x)||^2 for all x; so A5 holds with "
    "D = sqrt(2(1+(L/mu)^2)) and Delta^2 = (1/2) min_{i !~ j} ||grad f_j(x_i*)||^2",
    perturb={"half": 1.0},
)
def _lemma1_a5_corrected(
    half: float = 0.5, d2: Callable[[float, float], float] = _printed_d2
) -> Verdict:
    return on_points(
        lambda **pt: _a5_holds(**pt, half=half, d2=d2, gap=None),
        _a5_points(),
        "the pairwise inequality (2.17) for every pair i !~ j",
        drawn=_A5_DRAWN,
        hypothesis=_in_class,
    )
