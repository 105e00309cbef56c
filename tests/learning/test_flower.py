"""collabecon's algorithms on Flower: a node's share of the minibatch stream, the records,
the command line, and the same models from a Flower simulation as from the in-process
engine."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from collabecon.cli import main
from learning.engine import sample_batches
from learning.runtimes.flower.records import pack, rows, stack, unpack
from learning.runtimes.flower.streams import RowStream, stream_state
from learning.train import TrainConfig, train


def test_each_node_draws_its_row_of_the_batched_minibatch_draw():
    rng = np.random.default_rng(5)
    rng.random(3)  # the round stream has already drawn the participants
    sizes = np.array([7, 12, 3, 12, 9])
    state = stream_state(rng)
    first, second = sample_batches(sizes, 4, 5, rng), sample_batches(sizes, 2, 3, rng)
    for i, n in enumerate(sizes):
        stream = RowStream(state, i, sizes.size, int(sizes.max()))
        np.testing.assert_array_equal(sample_batches(np.array([n]), 4, 5, stream)[0], first[i])
        np.testing.assert_array_equal(sample_batches(np.array([n]), 2, 3, stream)[0], second[i])


def test_a_node_spawns_its_row_of_the_children_of_the_round_stream():
    rng = np.random.default_rng(np.random.SeedSequence(77, spawn_key=(1, 3)))
    rng.choice(10, 4, replace=False)
    sizes = np.array([5, 9, 4, 9])
    state = stream_state(rng)
    first, second = rng.spawn(2)
    x, y = sample_batches(sizes, 3, 4, first), sample_batches(sizes, 2, 4, second)
    for i, n in enumerate(sizes):
        mine_first, mine_second = RowStream(state, i, 4, 9).spawn(2)
        np.testing.assert_array_equal(sample_batches(np.array([n]), 3, 4, mine_first)[0], x[i])
        np.testing.assert_array_equal(sample_batches(np.array([n]), 2, 4, mine_second)[0], y[i])


def test_each_node_draws_its_row_of_a_block_of_lines_between_flat_blocks():
    # DP-SGD's keys: a line of keys per step, then the noise seeds
    rng = np.random.default_rng(8)
    sizes = np.array([6, 2, 9])
    state = stream_state(rng)
    flat, lines, after = rng.random((3, 9)), rng.random((3, 4, 9)), rng.random((3, 1, 9))
    for i, n in enumerate(sizes):
        stream = RowStream(state, i, 3, 9)
        np.testing.assert_array_equal(stream.random((1, n)), flat[i : i + 1, :n])
        np.testing.assert_array_equal(stream.random((1, 4, n)), lines[i : i + 1, :, :n])
        np.testing.assert_array_equal(stream.random((1, 1, n)), after[i : i + 1, :, :n])


def test_a_node_stream_refuses_draws_other_than_its_keys():
    stream = RowStream(stream_state(np.random.default_rng(0)), 0, 2, 4)
    with pytest.raises(ValueError, match="width=4"):
        stream.random((1, 5))
    for size in [(2, 3), (1, 2, 2, 3), (1, 0, 3), (1, 0), 3, None]:
        with pytest.raises(ValueError, match="one row of a"):
            stream.random(size)
    with pytest.raises(TypeError, match="integers"):
        stream.integers(3)
    with pytest.raises(ValueError, match="row"):
        RowStream(stream_state(np.random.default_rng(0)), 2, 2, 4)


def test_records_round_trip_nested_state_and_rows():
    state = {
        "groups": {"fc.weight": torch.arange(12.0).reshape(3, 2, 2), "fc.bias": torch.ones(3, 2)},
        "assignment": torch.tensor([0, 2, 1]),
    }
    flat = pack(state, "state")
    assert set(flat) == {"state/groups/fc.weight", "state/groups/fc.bias", "state/assignment"}
    back = unpack(flat, "state")
    assert torch.equal(back["groups"]["fc.weight"], state["groups"]["fc.weight"])
    assert torch.equal(back["assignment"], state["assignment"])
    joined = stack([rows(state, i) for i in (2, 0)])
    assert torch.equal(joined["assignment"], torch.tensor([1, 0]))
    assert torch.equal(joined["groups"]["fc.bias"], state["groups"]["fc.bias"][[2, 0]])


TINY = ["--dataset", "digits", "--model", "mlp", "--clients", "4", "--rounds", "1"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--algorithm", "nope"], "algorithm must be one of"),
        (["--algorithm", "fedavg", "--cpus", "0"], "--cpus must be an integer >= 1"),
    ],
)
@pytest.mark.flower
def test_cli_refuses_what_flower_does_not_run(capsys, argv, message):
    assert main(["flower", "simulate", *TINY, *argv]) == 2
    assert message in capsys.readouterr().err


def _max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k].cpu() - b[k].cpu()).abs().max()) for k in a)


@pytest.mark.flower
def test_flower_simulation_gives_the_in_process_models(tmp_path):
    """Every run of ``configs`` in one Flower simulation gives the models, history and test
    accuracy of :func:`learning.train.train` for the same seed, to float32 tolerance.
    Together they cover every algorithm with a client half, with partial participation,
    momentum, DP-SGD local training with fixed-size and Poisson batches (each node's batches
    and noise from its row of the round's draws), client-held models (Ditto, FedSoft), a
    survey (FedSoft's importance weights), a finish exchange (fine-tuning, Per-FedAvg's personalisation step), server draws
    after the nodes' work (k-means++), random subgroups (Federated-Clustering as run) and
    FedEM's resampling on the nodes."""
    from learning.runtimes.flower.simulation import simulate

    common = dict(dataset="digits", model="mlp", clients=6, rounds=3, local_steps=3, batch_size=8)
    configs = [
        TrainConfig(algorithm="fedavg", seed=3, **common),
        TrainConfig(
            algorithm="ifca",
            algorithm_params={"n_clusters": 2},
            clients_per_round=4,
            seed=4,
            **common,
        ),
        TrainConfig(algorithm="ditto", clients_per_round=4, seed=5, **common),
        TrainConfig(algorithm="ditto", algorithm_params={"variant": "as-run"}, seed=6, **common),
        TrainConfig(algorithm="federated-clustering", clients_per_round=4, seed=7, **common),
        TrainConfig(algorithm="fedprox", algorithm_params={"mu": 0.1}, seed=8, **common),
        TrainConfig(algorithm="fedavg", algorithm_params={"finetune_steps": 2}, seed=9, **common),
        TrainConfig(
            algorithm="fedsoft",
            algorithm_params={"tau": 2, "selection_size": 2},
            clients_per_round=4,
            seed=10,
            **common,
        ),
        TrainConfig(
            algorithm="federated-clustering",
            algorithm_params={"groups": 2, "variant": "as-run"},
            clients_per_round=5,
            seed=13,
            **common,
        ),
        TrainConfig(algorithm="myopic-clustering", clients_per_round=4, seed=11, **common),
        TrainConfig(algorithm="momentum-clustering", seed=12, **common),
        TrainConfig(
            algorithm="per-fedavg",
            algorithm_params={"beta": 0.01},
            clients_per_round=4,
            seed=14,
            **common,
        ),
        TrainConfig(algorithm="knn-per", seed=15, **common),
        TrainConfig(algorithm="fedavg", dp_noise_multiplier=1.1, seed=16, **common),
        TrainConfig(
            algorithm="fedavg",
            dp_noise_multiplier=1.1,
            dp_sampling="poisson",
            seed=18,
            **common,
        ),
        TrainConfig(algorithm="fedem", clients_per_round=4, seed=17, **common),
    ]
    started = time.perf_counter()
    results = simulate(configs, tmp_path, cpus=2)
    seconds = time.perf_counter() - started
    for config, result in zip(configs, results, strict=True):
        reference = train(config, device="cpu")
        assert _max_difference(reference.models, result.models) <= 1e-6, config.algorithm
        assert len(result.history) == len(reference.history) == 3
        for ours, theirs in zip(result.history, reference.history, strict=True):
            assert ours.train_loss == pytest.approx(theirs.train_loss, rel=1e-6)
            assert ours.test_loss == pytest.approx(theirs.test_loss, rel=1e-6)
        np.testing.assert_allclose(result.accuracy, reference.accuracy, rtol=0, atol=1e-12)
        if config.dp is None:
            assert result.epsilon is None
        else:
            np.testing.assert_allclose(result.epsilon, reference.epsilon, rtol=1e-12)
            assert result.accounting == reference.accounting
        if config.algorithm == "ifca":
            assert torch.equal(result.state["assignment"], reference.state["assignment"])
        if config.algorithm == "ditto":
            assert "personal" not in result.state  # the server never held them
            global_model = reference.state["global"]
            assert _max_difference(global_model, result.state["global"]) <= 1e-6
        if config.algorithm == "fedsoft":
            assert "local" not in result.state  # the server never held them
            clusters = reference.state["clusters"]
            assert _max_difference(clusters, result.state["clusters"]) <= 1e-6
            assert torch.equal(result.state["u"], reference.state["u"])
    print(f"Flower simulation of {len(configs)} runs of 6 clients: {seconds:.1f} s")


@pytest.mark.slow
@pytest.mark.flower
def test_localhost_deployment_on_separate_processes_gives_the_in_process_models(tmp_path):
    """A SuperLink and one SuperNode per client, each its own process reading only its own
    partition, run by ``flwr run`` with TLS and SuperNode authentication, in a folder whose
    name needs quoting everywhere: FedAvg's final models equal the in-process models."""
    from learning.runtimes.flower.deploy import deploy

    config = TrainConfig(
        algorithm="fedavg", dataset="digits", model="mlp", clients=3, rounds=2, local_steps=2
    )
    out = tmp_path / 'it\'s a "run" \\ \nhere \N{GRINNING FACE}'
    done = deploy(config, out, port=8650)
    reference = train(config, device="cpu")
    assert _max_difference(reference.models, done["models"]) <= 1e-6
    assert done["processes"] == 4 and done["security"] == "tls+node-auth"
    assert done["ports"] == {"superlink": 8650, "supernodes": [8750, 8751, 8752]}
    superlink = (out / "superlink.log").read_text()
    assert "https://127.0.0.1:8650" in superlink  # TLS on the SuperLink's one port
    assert "SuperNode authentication is disabled" not in superlink
    for k in range(3):
        assert '"success": true' in (out / f"register-{k}.log").read_text()
        assert (out / "credentials" / f"node-{k}.key").stat().st_mode & 0o777 == 0o600
    print(f"deployment: {done['deployment_seconds']:.1f} s")
