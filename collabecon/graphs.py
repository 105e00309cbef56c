r"""The graphs the toolkit computes, as :mod:`networkx` graphs for analysis and drawing.

- :func:`threshold_graph`: who lies inside whose ball in one step of Threshold-Clustering
  (Werner et al. 2023, Algorithm 3; Werner 2024, eq. (2.4)), every point a centre;
- :func:`collaboration_graph`: CoBo's collaboration weights :math:`W` (Hashemi, He and Jaggi
  2024), the graph whose Laplacian :math:`D_W - W` is CoBo's penalty;
- :func:`bid_graph`: IP-FL's preference bids, clients against cluster models (Khan et al.,
  Alg. 2);
- :func:`component_labels`: the connected component of every node, numbered like cluster
  labels.

The first two graphs have the nodes ``0 .. n-1`` (points, clients); the bid graph is
bipartite with the nodes ``("client", i)`` and ``("cluster", k)`` and the node attribute
``bipartite`` (0 for clients, 1 for clusters), the convention of :mod:`networkx.algorithms.bipartite`.

Examples
--------
>>> import numpy as np
>>> from collabecon.graphs import collaboration_graph, component_labels
>>> w = np.array([[1.0, 0.8, 0.0], [0.8, 1.0, 0.0], [0.0, 0.0, 1.0]])
>>> g = collaboration_graph(w)
>>> sorted(g.edges(data="weight"))
[(0, 1, 0.8)]
>>> component_labels(g).tolist()
[0, 0, 1]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    from learning.algorithms.threshold_clustering import RadiusRule

__all__ = ["bid_graph", "collaboration_graph", "component_labels", "threshold_graph"]


def threshold_graph(points: Any, radius: RadiusRule, *, inclusive: bool = True) -> nx.Graph:
    r"""The threshold graph of ``points``: every point the centre of its own ball.

    Point :math:`i` is the centre of a ball of radius :math:`\tau_i`, the radius rule applied
    to its distances :math:`d_{ij} = \lVert z_i - z_j \rVert` to all :math:`N` points (itself
    included), as in one iteration of Threshold-Clustering started at :math:`z_i` (Werner et
    al. 2023, Algorithm 3, eq. (4); the receivers of Federated-Clustering when every gradient
    is taken at one model). The graph joins :math:`i \ne j` when either lies in the other's
    ball,

    .. math::

        \{i, j\} \in E \iff d_{ij} \le \tau_i \ \text{or}\ d_{ij} \le \tau_j

    (``<`` with ``inclusive=False``), with the edge attribute ``distance`` :math:`d_{ij}`.
    :class:`~learning.algorithms.threshold_clustering.FixedRadius` joins the points at most
    :math:`\tau` apart; :class:`~learning.algorithms.threshold_clustering.QuantileRadius` (scale
    1) joins each point to its :math:`\lfloor qN \rfloor` nearest others (one fewer with the
    strict comparison; ties aside), and to the points that have it among theirs. Its connected
    components
    (:func:`component_labels`) are the groups whose points pull on each other's centres.

    Parameters
    ----------
    points : array or Tensor (N, P)
        The points :math:`z_i` (flattened gradients, momenta, ...), at least two.
    radius : RadiusRule
        ``FixedRadius``, ``QuantileRadius`` or a callable mapping distances ``(N, N)`` to
        radii ``(N,)`` (:mod:`learning.algorithms.threshold_clustering`).
    inclusive : bool
        A point is inside a ball when its distance is ``<= tau`` (True, eq. (4)) or ``< tau``.

    Returns
    -------
    networkx.Graph
        Nodes ``0 .. N-1``; edges with ``distance``.

    Raises
    ------
    ValueError
        When ``points`` is not a finite ``(N, P)`` array with ``N >= 2``.

    References
    ----------
    Werner, Mangold, Durmus, Fiorentini, Jordan, He, "Provably Personalized and Robust
    Federated Learning" (2023), Algorithm 3 and eq. (4); Werner (2024), Collaborative Learning:
    Aligning Goals and Outcomes, ch. 2, eq. (2.4).
    """
    import torch  # torch loads with the first threshold graph, not with this module

    z = points if torch.is_tensor(points) else torch.as_tensor(np.asarray(points, dtype=float))
    z = z.detach().cpu().to(torch.float64)
    if z.ndim != 2 or z.shape[0] < 2 or not bool(torch.isfinite(z).all()):
        raise ValueError(
            f"points must be a finite (N, P) array with N >= 2, got shape {tuple(z.shape)}"
        )
    d = torch.cdist(z, z, compute_mode="donot_use_mm_for_euclid_dist")
    tau = radius(d).to(d.dtype)
    inside = (d <= tau[:, None]) if inclusive else (d < tau[:, None])
    joined = (inside | inside.T).numpy()
    distance = d.numpy()
    graph = nx.Graph()
    graph.add_nodes_from(range(z.shape[0]))
    rows, cols = np.nonzero(np.triu(joined, k=1))
    graph.add_edges_from(
        (int(i), int(j), {"distance": float(distance[i, j])})
        for i, j in zip(rows, cols, strict=True)
    )
    return graph


def collaboration_graph(weights: ArrayLike, *, directed: bool = False) -> nx.Graph:
    r"""CoBo's collaboration weights :math:`W` as a weighted graph.

    Clients :math:`i \ne j` are joined when :math:`w_{ij} > 0`, with the edge attribute
    ``weight`` :math:`w_{ij}`; the diagonal is left out, as in CoBo's penalty
    :math:`\rho \sum_k w_{ik} (x_i - x_k)`, whose matrix :math:`D_W - W`,
    :math:`D_W = \mathrm{diag}(W \mathbf 1)`, is this graph's Laplacian. On the box domain
    :math:`W` is symmetric and the graph undirected; the simplex domain (Remark 1) gives a
    row-stochastic :math:`W`, drawn with ``directed=True`` as the edges :math:`i \to j`. When
    :math:`W` is the oracle, the connected components (:func:`component_labels`) are the
    clusters.

    Parameters
    ----------
    weights : array (n, n)
        :math:`W`, finite and non-negative: :attr:`learning.algorithms.cobo_quadratic.QuadraticRun.weights`,
        or the ``"weights"`` of a CoBo state moved to the CPU.
    directed : bool
        A :class:`networkx.DiGraph` for a :math:`W` that is not symmetric.

    Returns
    -------
    networkx.Graph or networkx.DiGraph
        Nodes ``0 .. n-1``; edges with ``weight``.

    Raises
    ------
    ValueError
        When ``weights`` is not a finite, non-negative square matrix, or is not symmetric and
        ``directed`` is False.

    References
    ----------
    Hashemi, He, Jaggi, "CoBo: Collaborative Learning via Bilevel Optimization" (NeurIPS
    2024), Section 2 (the updates of :math:`w_{ij}` and :math:`x_i`) and Remark 1.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or w.shape[0] < 1:
        raise ValueError(f"weights must be a square (n, n) matrix, got shape {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("weights must be finite and non-negative")
    if not directed and not np.array_equal(w, w.T):
        raise ValueError(
            "weights is not symmetric (the simplex domain): pass directed=True for a DiGraph"
        )
    graph: nx.Graph = nx.DiGraph() if directed else nx.Graph()
    graph.add_nodes_from(range(w.shape[0]))
    rows, cols = np.nonzero((w > 0) & ~np.eye(w.shape[0], dtype=bool))
    graph.add_weighted_edges_from(
        (int(i), int(j), float(w[i, j])) for i, j in zip(rows, cols, strict=True)
    )
    return graph


def bid_graph(bids: ArrayLike) -> nx.Graph:
    r"""IP-FL's preference bids as a bipartite graph of clients and cluster models.

    Client :math:`i` is joined to cluster :math:`k` when :math:`k \in P_B(i)`, its
    preference list of the round (Khan et al., Alg. 2; :func:`games.ipfl.preference_bids`,
    :attr:`games.ipfl.Opening.bids`, or the ``"bids"`` of a round of
    :attr:`learning.drivers.ipfl.IPFLResult.history`). A cluster's degree is its number of
    bidders; a client's, the clusters it offers to pay for.

    Parameters
    ----------
    bids : array (N, K) of bool or 0/1
        ``bids[i, k]``: client ``i`` bids for cluster ``k``.

    Returns
    -------
    networkx.Graph
        Nodes ``("client", i)`` with ``bipartite=0`` and ``("cluster", k)`` with
        ``bipartite=1``, every client and cluster included; an edge per bid.

    Raises
    ------
    ValueError
        When ``bids`` is not an (N, K) matrix of booleans or 0/1 entries.

    References
    ----------
    Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514
    v4), Alg. 2 and §4.1, Eq. 7.
    """
    b = np.asarray(bids)
    if b.ndim != 2 or b.size == 0:
        raise ValueError(f"bids must be a non-empty (N, K) matrix, got shape {b.shape}")
    if b.dtype != np.bool_:
        if not np.isin(b, (0, 1)).all():
            raise ValueError("bids must hold booleans or 0/1 entries")
        b = b.astype(bool)
    n, k = b.shape
    graph = nx.Graph()
    graph.add_nodes_from((("client", i) for i in range(n)), bipartite=0)
    graph.add_nodes_from((("cluster", c) for c in range(k)), bipartite=1)
    rows, cols = np.nonzero(b)
    graph.add_edges_from(
        (("client", int(i)), ("cluster", int(c))) for i, c in zip(rows, cols, strict=True)
    )
    return graph


def component_labels(graph: nx.Graph) -> NDArray[np.int64]:
    r"""The connected component of every node of a graph on the nodes ``0 .. n-1``.

    Components are numbered ``0, 1, ...`` in the order of each component's smallest node
    (weakly connected components for a directed graph): cluster labels, comparable with an
    assignment.

    Parameters
    ----------
    graph : networkx.Graph or networkx.DiGraph
        A graph of :func:`threshold_graph` or :func:`collaboration_graph`.

    Returns
    -------
    ndarray (n,) of int64

    Raises
    ------
    ValueError
        When the nodes are not ``0 .. n-1``.

    References
    ----------
    Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 2 (clusters of
    clients); Hashemi, He, Jaggi (NeurIPS 2024), Section 2 (the oracle :math:`W^\star`).
    """
    n = graph.number_of_nodes()
    if set(graph.nodes) != set(range(n)):
        raise ValueError("component_labels needs a graph on the nodes 0 .. n-1")
    parts = (
        nx.weakly_connected_components(graph)
        if graph.is_directed()
        else nx.connected_components(graph)
    )
    labels = np.empty(n, dtype=np.int64)
    for label, part in enumerate(sorted(parts, key=min)):
        labels[sorted(part)] = label
    return labels
