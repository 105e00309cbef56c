"""Federated-, Myopic- and Momentum-Clustering: the toy failure modes (Werner et al. 2023,
§2.1, Examples 1-3, and §3.1.3), the synthetic clustered regression (§4.1, Fig. 3) and the
variants.

Reference values marked "port" come from an independent numpy port of the authors'
published synthetic code (same data, same procedure); the paper prints only the figure."""

import copy

import numpy as np
import pytest
import torch

from collabecon.reproductions.clustering import errors, panel, regression, setup
from learning.algorithms import Context, LocalTraining, build_algorithm
from learning.algorithms.federated_clustering import (
    fc_clusters,
    fc_directions,
    myopic_directions,
    reseed_collapsed,
)
from learning.algorithms.threshold_clustering import FixedRadius, QuantileRadius
from learning.all_pairs import client_batches, flatten, pairwise_gradients, unflatten
from learning.engine import BatchedEngine, ShardedData, Task, select
from learning.loop import run_rounds
from learning.optim import SGDConfig
from learning.rng import round_rng
from tests.learning._tiny_problem import initial_models, tiny_context

F64 = torch.float64


# ------------------------------------------------------------------ Example 1 (Myopic fails)


def _example1_grads(x, eta):
    x1, x2, x3 = x
    g1 = x1 / (3 * eta)
    g2 = 12 * x2 * (x2 - 1) ** 2 if x2 < 1 else (x2 - 1) / eta
    g3 = (x3 - 2) / eta
    return np.array([g1, g2, g3])


def _g_all(x, eta):
    """points[i, j] = g_j(x_i)."""
    return torch.tensor(np.array([_example1_grads([xi] * 3, eta) for xi in x]), dtype=F64)[
        ..., None
    ]


@pytest.mark.parametrize("eta", [0.5, 0.1])
def test_myopic_trace_gets_client_2_stuck(eta):
    rng = np.random.default_rng(0)
    x = np.full(3, 1.5)
    for t in range(1, 31):
        g = torch.tensor(_example1_grads(x, eta), dtype=F64)[:, None]
        labels, step = myopic_directions(g, 2, rng)
        x = x - eta * step[:, 0].numpy()
        if t == 1:
            assert np.allclose(x, [1, 1, 2])
            assert labels[0] == labels[1] != labels[2]
        if t == 2:
            assert labels[1] == labels[2] != labels[0]
        assert x[1] == 1.0 and x[2] == 2.0
    assert abs(x[0]) < 1e-4


def _fc_example1(eta, tau, rounds):
    x = np.full(3, 1.5)
    history = []
    for _ in range(rounds):
        v = fc_directions(_g_all(x, eta), 10, FixedRadius(tau), inclusive=True)
        x = x - eta * v[:, 0].numpy()
        history.append(x.copy())
    return history


def test_fc_escapes_the_saddle_and_the_negative_control_does_not():
    history = _fc_example1(0.1, 5.0, 2000)
    assert np.allclose(history[1], [0.833333, 0.833333, 2.0], atol=1e-5)
    assert abs(history[-1][0]) < 1e-4 and abs(history[-1][1]) < 1e-4
    assert abs(history[-1][2] - 2.0) < 1e-6
    control = _fc_example1(0.1, 10.0, 300)
    assert control[-1][1] > 1.0


# ------------------------------------------------------------------ Example 2 (IFCA fails)


def _toy_context(targets):
    """Client i has one example x = 1 with target targets[i]: loss (w - t_i)^2."""
    model = torch.nn.Linear(1, 1, bias=False)
    xs = [np.ones((1, 1), np.float32) for _ in targets]
    ys = [np.array([t], np.float32) for t in targets]
    data = ShardedData.from_arrays(xs, ys, "cpu")
    return Context(
        engine=BatchedEngine(model, Task(classification=False), torch.device("cpu")),
        train=data,
        test=data,
        local=LocalTraining(10, 1, SGDConfig(0.1)),
        clusters=np.arange(len(targets)),
    )


@pytest.mark.parametrize(
    ("name", "option"), [("ifca", "gradient"), ("ifca", "model"), ("hypcluster", None)]
)
def test_ifca_and_hypcluster_stay_stuck(name, option):
    ctx = _toy_context([-0.5, 0.5])
    params = {} if option is None else {"option": option}
    algorithm = build_algorithm(name, ctx, **params)
    state = {
        "clusters": {"weight": torch.tensor([[[-1.5]], [[0.0]]])},
        "assignment": torch.zeros(2, dtype=torch.long),
    }
    for r in range(20):
        state, _ = algorithm.round(state, np.arange(2), round_rng(0, r))
    assert torch.allclose(state["clusters"]["weight"].flatten(), torch.tensor([-1.5, 0.0]))
    assert state["assignment"].tolist() == [1, 1]


def test_fc_separates_the_two_clients():
    ctx = _toy_context([-0.5, 0.5])
    algorithm = build_algorithm("federated-clustering", ctx, radius=1.0, iters=5, lr=0.1)
    models = {"weight": torch.zeros(2, 1, 1)}
    result = run_rounds(algorithm, models, 300, 0)
    assert torch.allclose(result.models["weight"].flatten(), torch.tensor([-0.5, 0.5]), atol=1e-5)


# ------------------------------------------------------------------ synthetic regression


def _trajectory(name, truth, start, clusters, train, lr, rounds, log, oracle_start=True, **params):
    """:func:`clustering.errors` of plain GD (FC: its own momentum parameter) at step ``lr``."""
    algorithm, models = setup(name, truth, start, clusters, train, lr, oracle_start, **params)
    return errors(algorithm, models, truth, clusters, rounds, log)


def _run(name, truth, start, clusters, train, lr, rounds, oracle_start=True, **params):
    return _trajectory(
        name, truth, start, clusters, train, lr, rounds, {rounds}, oracle_start, **params
    )[rounds]


def _paper_panel(grid, rounds, log=(100, 200, 400, 800), dtype=torch.float32):
    return panel(grid, rounds, log, dtype)


def _fig3_checks(runs, end):
    """The paper's claim (§4.1, Fig. 3: FC outperforms the non-oracle baselines in all
    cases), then a regression check against the port (FC/GT within [0.8, 1.25] at e100, the
    port's FC ~ GT ~ 4.0e-3, ours ~2.0e-3; FC within 2x GT at the end; Global above 100x
    Local)."""
    fc, gt = runs["fc"], runs["oracle"]
    for baseline in ("local", "ifca", "fedavg"):
        assert fc[end] < runs[baseline][end], baseline
    # regression against the port
    assert 0.8 <= fc[100] / gt[100] <= 1.25
    assert fc[end] <= 2 * gt[end]
    assert runs["fedavg"][end] > 100 * runs["local"][end]


def test_fc_tracks_the_oracle_at_4x4():
    runs = _paper_panel((4, 4), 200, log=(100, 200))
    _fig3_checks(runs, 200)
    assert runs["fc"][200] < 1e-4  # both at the float32 floor (~5e-5) by e200


@pytest.mark.slow
def test_fc_tracks_the_oracle_at_4x4_full_length():
    runs = _paper_panel((4, 4), 800)
    _fig3_checks(runs, 800)
    # port at e800: Local 0.120, IFCA-M 0.0115, Global 190 (GT and FC at the float32
    # floor: 4.8e-5 and 5.3e-5 here, the port's float64 1.48e-5)
    assert runs["local"][800] == pytest.approx(0.120, rel=0.05)
    assert runs["ifca"][800] == pytest.approx(0.0115, rel=0.05)
    assert runs["fedavg"][800] == pytest.approx(190, rel=0.03)


@pytest.mark.slow
def test_fc_matches_the_oracle_at_4x16_reduced():
    runs = _paper_panel((4, 16), 100, log=(50, 100))
    for epoch in (50, 100):
        assert 0.8 <= runs["fc"][epoch] / runs["oracle"][epoch] <= 1.25
    assert runs["fc"][100] < min(runs["local"][100], runs["ifca"][100])
    assert runs["fedavg"][100] > 100  # port: Global plateaus at ~133


@pytest.mark.slow
def test_fc_matches_the_oracle_at_4x16_in_float64():
    """The port's arithmetic: float64 on the float32 data. Measured: FC/GT e100 1.24e-3/1.23e-3,
    e200 8.7e-6/8.5e-6, e400 and e800 5.75e-6/5.63e-6 (the port's e800 values); the
    correctly initialised IFCA-M 4.5e-4 (port 4.5e-4; 3.3e-3 in float32, where its option-II
    average, engine.group_mean's float32 sum of n_k w_k, stalls)."""
    runs = _paper_panel((4, 16), 800, dtype=torch.float64)
    for epoch in (100, 200, 400, 800):
        assert 0.8 <= runs["fc"][epoch] / runs["oracle"][epoch] <= 1.25
    assert runs["oracle"][800] == pytest.approx(5.63e-6, rel=0.05)
    assert runs["fc"][800] == pytest.approx(5.75e-6, rel=0.05)
    assert runs["local"][800] == pytest.approx(0.0839, rel=0.05)
    assert runs["ifca"][800] == pytest.approx(4.5e-4, rel=0.05)
    assert runs["fedavg"][800] == pytest.approx(133, rel=0.03)


@pytest.mark.slow
def test_fc_matches_the_oracle_at_4x16_in_float32():
    """The authors' float32. Measured FC/GT: e100 1.25e-3/1.23e-3, e200 2.77e-5/2.83e-5, e400
    2.83e-5/2.70e-5, e800 2.83e-5/2.50e-5 (the float32 floor). An average that sums the n_k w_k in
    float32 stalls GT at 1.45e-4; engine.group_mean averages the differences w_k - w_g."""
    runs = _paper_panel((4, 16), 800)
    for epoch in (100, 200, 400, 800):
        assert 0.8 <= runs["fc"][epoch] / runs["oracle"][epoch] <= 1.25
    assert runs["fc"][800] < min(runs["local"][800], runs["ifca"][800])
    assert runs["fedavg"][800] == pytest.approx(133, rel=0.03)


@pytest.mark.slow
def test_half_quantile_from_scratch():
    """Regression against the port (the paper reports no from-scratch run): from zero, q = 1/8
    brings every client of (4, 4) to the truth (port: mean error ~ 0.01)."""
    problem = regression(4, 4)
    # heavy ball 0.9 at lr 0.01 is the authors' EMA momentum 0.9 at lr 0.1 (Fig. 3's runs)
    half = _run(
        "federated-clustering",
        *problem,
        0.01,
        800,
        oracle_start=False,
        quantile=0.125,
        momentum=0.9,
    )
    assert half < 0.1


@pytest.mark.slow
def test_sixteen_clusters_full_length():
    """Port at e800: GT 0.0092 < FC 0.018 < Local 0.121, IFCA-M 0.207, Global 194.
    Measured: 0.0095, 0.0185, 0.121, 0.207, 194."""
    runs = _paper_panel((16, 4), 800)
    gt, fc, local = (runs[m][800] for m in ("oracle", "fc", "local"))
    assert gt < fc < local
    assert fc < runs["ifca"][800]
    for method, port in (("oracle", 0.0092), ("fc", 0.018), ("local", 0.121), ("ifca", 0.207)):
        assert runs[method][800] == pytest.approx(port, rel=0.1)
    assert runs["fedavg"][800] == pytest.approx(194, rel=0.03)


# ------------------------------------------------------------------ variants and relatives


def test_an_unknown_fc_variant_is_refused():
    with pytest.raises(ValueError, match="variant"):
        build_algorithm("federated-clustering", _toy_context([0.0]), variant="other")


def test_as_run_variant_is_heavy_ball_on_the_cluster_estimate():
    truth, start, clusters, train = regression(4, 4)
    algorithm, models = setup(
        "federated-clustering", truth, start, clusters, train, 0.01, variant="as-run", iters=3
    )
    engine, lr, everyone = algorithm.ctx.engine, algorithm.lr, np.arange(16)
    x, y = client_batches(train, everyone, 9, np.random.default_rng(0))  # full batches

    def direction(params):
        grads, _ = pairwise_gradients(engine, params, x, y)
        rule = QuantileRadius(0.25, scale=0.99)
        return fc_directions(flatten(grads, lead=2), 3, rule, inclusive=True)

    state = algorithm.init(models, np.random.default_rng(0))
    flat0 = flatten(models)
    v1 = direction(models)
    flat1 = flat0 - lr * v1
    v2 = direction(unflatten(flat1, models))
    expected = flat1 - lr * (0.9 * v1 + v2)
    for r in range(2):
        state, _ = algorithm.round(state, everyone, round_rng(0, r))
    assert torch.allclose(flatten(state["models"]), expected, atol=1e-4)
    assert torch.allclose(state["momentum"], 0.9 * v1 + v2, atol=1e-3)


def test_myopic_and_momentum_clustering_learn_the_regression():
    problem = regression(4, 4)
    start = _run("local", *problem, 0.01, 1)
    for name in ("myopic-clustering", "momentum-clustering"):
        assert _run(name, *problem, 0.01, 60) < start


def test_reseed_moves_a_collapsed_centre_to_the_farthest_point():
    points = torch.tensor([[0.0, 0.0], [0.1, 0.0], [10.0, 0.0], [10.1, 0.0], [50.0, 0.0]])
    centers = torch.tensor([[0.05, 0.0], [0.06, 0.0], [10.05, 0.0]])
    new, moved = reseed_collapsed(centers, torch.ones(3), points)
    assert moved == [1]
    assert torch.equal(new[1], points[4])
    assert torch.equal(new[[0, 2]], centers[[0, 2]])
    same, none = reseed_collapsed(centers, torch.full((3,), 0.001), points)
    assert none == [] and torch.equal(same, centers)


@pytest.mark.parametrize("reseed", [True, False])
def test_momentum_clustering_reseeds_collapsed_centres(reseed):
    truth, start, clusters, train = regression(4, 4)
    algorithm, models = setup(
        "momentum-clustering", truth, start, clusters, train, 0.01, reseed=reseed
    )
    state = algorithm.init(models, np.random.default_rng(0))
    state, _ = algorithm.round(state, np.arange(16), np.random.default_rng(1))
    state["centers"] = state["centers"][[0, 0, 0, 0]]  # all four on one cluster
    state, _ = algorithm.round(state, np.arange(16), np.random.default_rng(2))
    distinct = torch.unique(state["centers"], dim=0).shape[0]
    assert distinct == (4 if reseed else 1)


def test_fc_in_random_subgroups_clusters_within_each_subgroup():
    """``groups=2`` on five clients: one permutation cuts them into subgroups of 3 and 2, each
    participant receives only its subgroup's models (padded to 3 with zeros), every client
    draws one minibatch (one draw for all), and each receiver's direction is one-centre
    Threshold-Clustering over the gradients of its own subgroup."""
    ctx = tiny_context()
    algorithm = build_algorithm("federated-clustering", ctx, groups=2, lr=0.1)
    generator = torch.Generator().manual_seed(3)
    models = {
        k: v + 0.01 * torch.randn(v.shape, generator=generator)
        for k, v in initial_models(ctx).items()
    }
    state, everyone = algorithm.init(models, np.random.default_rng(0)), np.arange(5)
    rng = round_rng(0, 0)
    sent = algorithm.dispatch(state, everyone, copy.deepcopy(rng))
    reference = copy.deepcopy(rng)
    order = reference.permutation(5)
    subgroups = [np.sort(order[:3]), np.sort(order[3:])]
    for members in subgroups:
        for place, k in enumerate(members):
            assert int(sent.each["count"][k]) == members.size
            assert int(sent.each["position"][k]) == place
            received = flatten(sent.each["models"], lead=2)[k]
            assert torch.equal(received[: members.size], flatten(models)[members])
            assert not received[members.size :].any()
    x, y = client_batches(ctx.train, everyone, algorithm.batch_size, reference)
    v = torch.empty_like(flatten(models))
    inside = torch.zeros(5, 5, dtype=torch.bool)
    for members in subgroups:
        grads, _ = pairwise_gradients(ctx.engine, select(models, members), x[members], y[members])
        clustered = fc_clusters(flatten(grads, lead=2), 10, QuantileRadius(0.25), inclusive=False)
        v[members] = clustered.centers[:, 0]
        inside[np.ix_(members, members)] = clustered.members[:, 0]
        assert torch.equal(
            v[members],
            fc_directions(flatten(grads, lead=2), 10, QuantileRadius(0.25), inclusive=False),
        )
    new, _ = algorithm.round(state, everyone, rng)
    assert torch.allclose(flatten(new["models"]), flatten(models) - 0.1 * v, atol=1e-6)
    # the clusters of the round: each receiver's ball, never across subgroups
    assert torch.equal(new["members"], inside)
    assert not inside[np.ix_(subgroups[0], subgroups[1])].any()
    assert not inside[np.ix_(subgroups[1], subgroups[0])].any()
