"""The graphs of ``collabecon.graphs`` hold what the toolkit computed: the threshold graph's
components are Threshold-Clustering's clusters, the collaboration graph's Laplacian is CoBo's
penalty matrix and its components the oracle's clusters, the bid graph has one edge per bid."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from collabecon.graphs import bid_graph, collaboration_graph, component_labels, threshold_graph
from games.ipfl import IPFLConfig, preference_bids
from learning.algorithms.cobo_quadratic import QuadraticToy, simulate_quadratic
from learning.algorithms.cobo_steps import oracle_weights
from learning.algorithms.threshold_clustering import (
    FixedRadius,
    QuantileRadius,
    threshold_clustering,
)


def test_threshold_graph_with_a_fixed_radius_joins_the_points_at_most_tau_apart():
    points = np.array([[0.0], [1.0], [2.5], [10.0]])
    graph = threshold_graph(points, FixedRadius(1.5))
    assert sorted(graph.nodes) == [0, 1, 2, 3]
    assert sorted(graph.edges(data="distance")) == [(0, 1, 1.0), (1, 2, 1.5)]
    strict = threshold_graph(points, FixedRadius(1.5), inclusive=False)
    assert sorted(strict.edges) == [(0, 1)]
    assert component_labels(graph).tolist() == [0, 0, 0, 1]
    assert component_labels(strict).tolist() == [0, 0, 1, 2]


def test_threshold_graph_components_are_the_clusters_threshold_clustering_finds():
    rng = np.random.default_rng(0)
    means = np.array([[0.0, 0.0], [6.0, 0.0], [3.0, 5.0]])
    labels = np.repeat(np.arange(3), 20)
    points = torch.as_tensor(means[labels] + rng.normal(scale=0.5, size=(60, 2)))
    init = points[[0, 20, 40]]
    result = threshold_clustering(points, init, 10, QuantileRadius(0.25))
    assigned = torch.cdist(points, result.centers).argmin(1).numpy()
    graph = threshold_graph(points, QuantileRadius(0.25))
    assert graph.number_of_nodes() == 60
    # floor(0.25 * 60) = 15 nearest others inside each ball, all of its own blob
    assert all(graph.degree(i) >= 15 for i in graph.nodes)
    np.testing.assert_array_equal(component_labels(graph), assigned)
    np.testing.assert_array_equal(component_labels(graph), labels)


def test_collaboration_graph_laplacian_is_cobos_penalty_and_its_components_the_clusters():
    run = simulate_quadratic(QuadraticToy(), 300, seed=0)
    graph = collaboration_graph(run.weights)
    n = run.weights.shape[0]
    assert graph.number_of_nodes() == n
    assert graph.number_of_edges() == int((np.triu(run.weights, k=1) > 0).sum())
    degree = np.diag(run.weights.sum(axis=1))
    laplacian = nx.laplacian_matrix(graph, nodelist=range(n), weight="weight").toarray()
    np.testing.assert_allclose(laplacian, degree - run.weights)
    np.testing.assert_array_equal(run.weights, oracle_weights(run.clusters))
    np.testing.assert_array_equal(component_labels(graph), run.clusters)


def test_collaboration_graph_weights_and_the_simplex_domain():
    w = np.array([[1.0, 0.25, 0.0], [0.25, 1.0, 0.5], [0.0, 0.5, 1.0]])
    graph = collaboration_graph(w)
    assert sorted(graph.edges(data="weight")) == [(0, 1, 0.25), (1, 2, 0.5)]
    rows = np.array([[0.0, 0.75, 0.25], [0.5, 0.0, 0.5], [1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="directed=True"):
        collaboration_graph(rows)
    directed = collaboration_graph(rows, directed=True)
    assert directed.is_directed() and directed.number_of_edges() == 5
    assert directed[2][0]["weight"] == 1.0 and not directed.has_edge(2, 1)
    assert component_labels(directed).tolist() == [0, 0, 0]


def test_bid_graph_is_bipartite_with_one_edge_per_bid():
    scores = np.array([[0.95, 0.2], [0.1, 0.8], [0.92, 0.91], [0.3, 0.4]])
    bids = preference_bids(scores, np.full(4, 10.0), IPFLConfig(), np.random.default_rng(0))
    graph = bid_graph(bids)
    # above the bid threshold 0.9, or the best cluster: client 2 bids for both
    expected = {(0, 0), (1, 1), (2, 0), (2, 1), (3, 1)}
    assert set(zip(*np.nonzero(bids), strict=True)) == expected
    assert graph.number_of_nodes() == 6
    assert {frozenset(e) for e in graph.edges} == {
        frozenset({("client", i), ("cluster", k)}) for i, k in expected
    }
    assert graph.degree(("cluster", 1)) == 3
    clients = {v for v, side in graph.nodes(data="bipartite") if side == 0}
    assert clients == {("client", i) for i in range(4)}
    assert nx.is_bipartite(graph)
    assert bid_graph(bids.astype(int)).edges == graph.edges


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: threshold_graph(np.zeros(3), FixedRadius(1.0)), "points"),
        (lambda: threshold_graph([[np.nan, 0.0], [0.0, 0.0]], FixedRadius(1.0)), "finite"),
        (lambda: collaboration_graph(np.ones((2, 3))), "square"),
        (lambda: collaboration_graph(-np.ones((2, 2))), "non-negative"),
        (lambda: bid_graph(np.ones(3)), r"\(N, K\)"),
        (lambda: bid_graph(np.full((2, 2), 2)), "0/1"),
        (lambda: component_labels(nx.path_graph(["a", "b"])), "0 .. n-1"),
    ],
)
def test_bad_inputs_are_value_errors_that_say_what_is_wrong(call, match):
    with pytest.raises(ValueError, match=match):
        call()
