"""What each of the basic algorithms promises (the contract of every registered one:
``tests/contracts/test_algorithm.py``)."""

import typing

import numpy as np
import pytest
import torch

from learning.algorithms import ALGORITHMS, build_algorithm
from learning.loop import run_rounds
from learning.rng import round_rng
from tests.contracts.test_algorithm import check_algorithm
from tests.learning._tiny_problem import CLUSTERS, initial_models, tiny_context


def _rows(params, i):
    return torch.cat([p[i].reshape(-1) for p in params.values()])


#: Optional state entries that an algorithm holds after its rounds and ``finish``, by the
#: settings that fill them (none for the defaults of every other algorithm).
_OPTIONAL_ENTRIES = [
    ("per-fedavg", {}, {"personal"}),
    ("federated-clustering", {}, {"members"}),
    ("fedavg", {"keep_momentum": "client", "finetune_steps": 1}, {"momentum", "personal"}),
    ("oracle", {"keep_momentum": "group"}, {"momentum"}),
    ("ifca", {"momentum": 0.5}, {"momentum", "started"}),
    ("ditto", {"variant": "as-run"}, {"momentum", "started"}),
]


@pytest.mark.parametrize(
    ("name", "params", "optional_at_end"),
    [(name, {}, set()) for name in sorted(set(ALGORITHMS) - {"per-fedavg", "federated-clustering"})]
    + _OPTIONAL_ENTRIES,
)
def test_every_state_holds_the_entries_its_typed_dict_names(name, params, optional_at_end):
    ctx = tiny_context()
    algorithm = build_algorithm(name, ctx, **params)
    declared = typing.get_type_hints(type(algorithm).init)["return"]
    required, optional = declared.__required_keys__, declared.__optional_keys__
    types = typing.get_type_hints(declared)
    assert set(types) == required | optional and optional_at_end <= optional

    def check(state):
        assert type(state) is dict
        assert required <= set(state) <= required | optional
        for key, value in state.items():
            kind = typing.get_origin(types[key]) or types[key]
            assert isinstance(value, kind), (key, type(value))

    state = algorithm.init(initial_models(ctx), np.random.default_rng(0))
    check(state)
    for r, clients in enumerate([np.arange(5), np.array([0, 2, 3])]):
        state, _ = algorithm.round(state, clients, round_rng(0, r))
        check(state)
    state = algorithm.finish(state, np.random.default_rng(1))
    check(state)
    assert set(state) - required == optional_at_end


def _trained(name, **params):
    ctx = tiny_context()
    algorithm = build_algorithm(name, ctx, **params)
    return ctx, run_rounds(algorithm, initial_models(ctx), 2, 3).models


def test_fedavg_gives_everyone_one_model_and_finetuning_personalises():
    _, models = _trained("fedavg")
    assert all(torch.equal(_rows(models, 0), _rows(models, k)) for k in range(5))
    _, tuned = _trained("fedavg", finetune_steps=2)
    assert not torch.equal(_rows(tuned, 0), _rows(tuned, 1))


def test_oracle_shares_within_clusters_only():
    _, models = _trained("oracle")
    for a in range(5):
        for b in range(5):
            same = torch.equal(_rows(models, a), _rows(models, b))
            assert same == (CLUSTERS[a] == CLUSTERS[b])


def test_local_clients_keep_exactly_their_own_training():
    ctx = tiny_context()
    algorithm = build_algorithm("local", ctx)
    start = initial_models(ctx)
    state = algorithm.init(start, np.random.default_rng(0))
    state, _ = algorithm.round(state, np.arange(5), np.random.default_rng(4))
    alone = ctx.fit(start, np.arange(5), np.random.default_rng(4))
    models = algorithm.client_models(state)
    assert all(torch.allclose(models[k], alone.params[k]) for k in models)
    assert not torch.equal(_rows(models, 0), _rows(models, 1))


def test_unknown_algorithm_and_parameters_are_clear_errors():
    ctx = tiny_context()
    with pytest.raises(ValueError, match="algorithm must be one of"):
        build_algorithm("no-such", ctx)
    with pytest.raises(ValueError, match="unknown bogus"):
        build_algorithm("fedavg", ctx, bogus=1)
    with pytest.raises(ValueError, match="finetune_steps"):
        build_algorithm("fedavg", ctx, finetune_steps=-1)


# ------------------------------------------------------------------ momentum across rounds


def _line_context(targets, clusters):
    """Client i has one example x = 1 with target targets[i]: loss (w - t_i)^2, gradient
    2 (w - t_i); one local step of heavy ball at lr 0.25, beta 0.5."""
    from learning.algorithms import Context, LocalTraining
    from learning.engine import BatchedEngine, ShardedData, Task
    from learning.optim import SGDConfig

    xs = [np.ones((1, 1), np.float32) for _ in targets]
    ys = [np.array([t], np.float32) for t in targets]
    data = ShardedData.from_arrays(xs, ys, "cpu")
    model = torch.nn.Linear(1, 1, bias=False)
    return Context(
        engine=BatchedEngine(model, Task(classification=False), torch.device("cpu")),
        train=data,
        test=data,
        local=LocalTraining(1, 1, SGDConfig(0.25, momentum=0.5)),
        clusters=np.asarray(clusters),
    )


def _two_rounds(name, targets, clusters, second, **params):
    ctx = _line_context(targets, clusters)
    algorithm = build_algorithm(name, ctx, **params)
    state = algorithm.init({"weight": torch.zeros(len(targets), 1, 1)}, np.random.default_rng(0))
    for r, clients in enumerate([np.arange(len(targets)), np.asarray(second)]):
        state, _ = algorithm.round(state, clients, round_rng(0, r))
    weights = algorithm.client_models(state)["weight"].flatten().tolist()
    buffers = state["momentum"]["weight"].flatten().tolist() if "momentum" in state else None
    return weights, buffers


def test_local_keeps_each_clients_momentum_by_hand():
    # round 1: g = 2(0 - t) = (-2, -6) = u, w = (0.5, 1.5); round 2: g = (-1, -3),
    # kept u = 0.5 (-2, -6) + g = (-2, -6), w = (1, 3); reset u = g, w = (0.75, 2.25)
    assert _two_rounds("local", [1, 3], [0, 1], [0, 1], keep_momentum="client") == (
        [1.0, 3.0],
        [-2.0, -6.0],
    )
    assert _two_rounds("local", [1, 3], [0, 1], [0, 1]) == ([0.75, 2.25], None)


@pytest.mark.parametrize(
    ("keep", "second", "weights", "buffers"),
    [
        # round 1: u_k = (-2, -6), w = mean(0.5, 1.5) = 1 (group buffer: mean -4);
        # round 2 at w = 1: g = (0, -4); client u = (-1 + 0, -3 - 4) = (-1, -7),
        # w = 1 + 0.25 mean(1, 7) = 2; group u = -2 + g = (-2, -6), w = 2, buffer -4
        ("client", [0, 1], 2.0, [-1.0, -7.0]),
        ("group", [0, 1], 2.0, [-4.0]),
        # only client 0 in round 2: client u_0 = -1, w = 1.25; group u_0 = -2, w = 1.5
        ("client", [0], 1.25, [-1.0, -6.0]),
        ("group", [0], 1.5, [-2.0]),
    ],
)
def test_fedavg_keeps_client_or_group_momentum_by_hand(keep, second, weights, buffers):
    got = _two_rounds("fedavg", [1, 3], [0, 0], second, keep_momentum=keep)
    assert got == ([weights] * 2, buffers)


def test_oracle_keeps_one_momentum_per_cluster_by_hand():
    # cluster 0 = clients (t = 1, 3) as FedAvg above; cluster 1 (t = 5): round 1 g = -10,
    # w = 2.5; round 2 g = -5, u = -5 - 5 = -10, w = 5
    got = _two_rounds("oracle", [1, 3, 5], [0, 0, 1], [0, 1, 2], keep_momentum="group")
    assert got == ([2.0, 2.0, 5.0], [-4.0, -10.0])
    # without memory: cluster 0 w = 1 + 0.25 mean(0, 4) = 1.5; cluster 1 w = 2.5 + 1.25
    assert _two_rounds("oracle", [1, 3, 5], [0, 0, 1], [0, 1, 2]) == ([1.5, 1.5, 3.75], None)


def test_kept_momentum_continues_local_sgd_across_rounds():
    """Two rounds of Local with kept buffers are two chained calls of the engine's local SGD,
    the second started from the first's momentum (3 steps each, beta 0.5). Equal to float
    rounding: the two paths hold their buffers in differently laid-out tensors, and the
    fused update (``torch.add(a, b, alpha=c)``) rounds one ulp differently in the vectorised
    body of the kernel and in its tail."""
    ctx = tiny_context()
    algorithm = build_algorithm("local", ctx, keep_momentum="client")
    start, everyone = initial_models(ctx), np.arange(5)
    state = algorithm.init(start, np.random.default_rng(0))
    for r in range(2):
        state, _ = algorithm.round(state, everyone, round_rng(0, r))
    first = ctx.fit(start, everyone, round_rng(0, 0))
    second = ctx.fit(first.params, everyone, round_rng(0, 1), momentum=first.momentum)
    models = algorithm.client_models(state)
    for k in models:
        torch.testing.assert_close(models[k], second.params[k], rtol=1e-5, atol=1e-7)
        torch.testing.assert_close(state["momentum"][k], second.momentum[k], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("keep", ["client", "group"])
@pytest.mark.parametrize("name", ["local", "fedavg", "oracle"])
def test_kept_momentum_keeps_the_contract(name, keep):
    for check in check_algorithm(name):
        check(name, keep_momentum=keep)


def test_kept_momentum_needs_a_momentum_optimiser():
    ctx = tiny_context(momentum=0.0)
    with pytest.raises(ValueError, match="keep_momentum='client' needs local SGD with momentum"):
        build_algorithm("fedavg", ctx, keep_momentum="client")
    with pytest.raises(ValueError, match="keep_momentum must be one of"):
        build_algorithm("oracle", tiny_context(), keep_momentum="server")
