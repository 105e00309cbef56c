"""Federated-, Myopic- and Momentum-Clustering: the toy failure modes (spec ch2 §3,
claims U9-U11), the synthetic clustered regression (S1, S3, S5, S6) and the variants."""

import numpy as np
import pytest
import torch

from learning.algorithms import Context, LocalTraining, build_algorithm
from learning.algorithms.federated_clustering import fc_directions, myopic_directions
from learning.algorithms.threshold_clustering import FixedRadius
from learning.data import clustered_regression
from learning.engine import BatchedEngine, SGDConfig, ShardedData, Task, broadcast
from learning.loop import run_rounds
from learning.rng import round_rng

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
def test_u9_myopic_trace_gets_client_2_stuck(eta):
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


def test_u10_fc_escapes_the_saddle_and_the_negative_control_does_not():
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
def test_u11_ifca_and_hypcluster_stay_stuck(name, option):
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


def test_u11_fc_separates_the_two_clients():
    ctx = _toy_context([-0.5, 0.5])
    algorithm = build_algorithm("federated-clustering", ctx, radius=1.0, iters=5, lr=0.1)
    models = {"weight": torch.zeros(2, 1, 1)}
    result = run_rounds(algorithm, models, 300, 0)
    assert torch.allclose(result.models["weight"].flatten(), torch.tensor([-0.5, 0.5]), atol=1e-5)


# ------------------------------------------------------------------ synthetic regression


def _regression(n_clusters, per_cluster, seed=0):
    rng = np.random.default_rng(seed)
    data = clustered_regression(seed=rng, n_clusters=n_clusters, clients_per_cluster=per_cluster)
    start = data.truth + rng.normal(0, 0.1, size=data.truth.shape)  # the oracle start
    n = n_clusters * per_cluster
    xs = [data.x[data.group == i] for i in range(n)]
    ys = [data.y[data.group == i] for i in range(n)]
    train = ShardedData.from_arrays(xs, ys, "cpu")
    clusters = np.repeat(np.arange(n_clusters), per_cluster)
    return data.truth, start, clusters, train


def _run(name, truth, start, clusters, train, lr, rounds, oracle_start=True, **params):
    n, dim = clusters.size, truth.shape[1]
    model = torch.nn.Linear(dim, 1, bias=False)
    # the data loss ||Ax - y||^2 / n is twice the paper's ||Ax - y||^2 / (2n): halve the lr
    ctx = Context(
        engine=BatchedEngine(model, Task(classification=False), torch.device("cpu")),
        train=train,
        test=train,
        local=LocalTraining(1, 9, SGDConfig(lr / 2)),
        clusters=clusters,
    )
    rows = start[clusters] if oracle_start else np.zeros((n, dim))
    models = {"weight": torch.tensor(rows, dtype=torch.float32)[:, None, :]}
    if name in ("local", "fedavg", "oracle"):
        models = broadcast({"weight": models["weight"][0]}, n)
        if name != "fedavg":
            models = {"weight": torch.tensor(rows, dtype=torch.float32)[:, None, :]}
    out = run_rounds(build_algorithm(name, ctx, **params), models, rounds, 0).models["weight"]
    return float(np.linalg.norm(out[:, 0].double().numpy() - truth[clusters], axis=1).mean())


def test_s1_s5_fc_tracks_the_oracle_at_4x4():
    problem = _regression(4, 4)
    # plain GD at 0.01 is the paper's EMA-momentum step 0.1 (effective 0.1 x 0.1)
    fc = _run("federated-clustering", *problem, 0.01, 120, quantile=0.25)
    oracle = _run("oracle", *problem, 0.01, 120)
    local = _run("local", *problem, 0.01, 120)
    fedavg = _run("fedavg", *problem, 0.01, 120)
    assert fc <= 2 * oracle
    assert fc < local and fc < fedavg
    assert fedavg > 10


@pytest.mark.slow
def test_s6_half_quantile_from_scratch():
    problem = _regression(4, 4)
    # heavy ball 0.9 at lr 0.01 is the authors' EMA momentum 0.9 at lr 0.1 (spec ch2 §5.1.3)
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
def test_s3_s5_sixteen_clusters_full_length():
    problem = _regression(16, 4)
    fc = _run("federated-clustering", *problem, 0.01, 800, quantile=0.0625)
    oracle = _run("oracle", *problem, 0.01, 800)
    local = _run("local", *problem, 0.01, 800)
    assert oracle < fc < local


# ------------------------------------------------------------------ variants and relatives


def test_as_run_variant_uses_momentum_and_groups():
    problem = _regression(4, 4)
    paper = _run("federated-clustering", *problem, 0.01, 20, quantile=0.25)
    as_run = _run(
        "federated-clustering", *problem, 0.001, 20, variant="as-run", quantile=0.25, groups=2
    )
    assert paper != as_run and np.isfinite(as_run)
    with pytest.raises(ValueError, match="variant"):
        build_algorithm("federated-clustering", _toy_context([0.0]), variant="other")


def test_myopic_and_momentum_clustering_learn_the_regression():
    problem = _regression(4, 4)
    start = _run("local", *problem, 0.01, 1)
    for name in ("myopic-clustering", "momentum-clustering"):
        assert _run(name, *problem, 0.01, 60) < start
