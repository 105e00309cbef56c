"""Training runs from names: checks before work, determinism, and the paper-scale checks."""

import numpy as np
import pytest
import torch

from learning.qualities import model_qualities
from learning.train import TrainConfig, train

TINY = dict(dataset="digits", model="mlp", clients=4, rounds=2, local_steps=2, batch_size=8)


def _equal(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(algorithm="ifca-typo"), "algorithm must be one of"),
        (dict(dataset="imagenet"), "dataset must be one of"),
        (dict(partition="random"), "partition must be one of"),
        (dict(model="vgg"), "model must be one of"),
        (dict(lr=0.0), "lr must lie in"),
        (dict(lr=-1.0), "lr must lie in"),
        (dict(clients=0), "clients must be an integer"),
        (dict(clients_per_round=5), "clients_per_round must be at most"),
        (dict(algorithm_params={"finetune": 1}), "unknown finetune"),
    ],
)
def test_bad_configuration_is_a_clear_error(change, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**{**TINY, **change})


def test_more_clients_than_examples_fails_before_training():
    with pytest.raises(ValueError, match="n_clients must be at most"):
        train(TrainConfig(**{**TINY, "clients": 5000}))


def test_same_seed_same_result_and_a_target_set():
    config = TrainConfig(**TINY, target_fraction=0.1, seed=3)
    a, b = train(config), train(config)
    assert _equal(a.models, b.models) and a.history == b.history
    np.testing.assert_array_equal(a.accuracy, b.accuracy)
    assert a.target.n[0] == 180 and a.target.accuracy.shape == (4,)
    q = model_qualities(a.engine, a.models, a.federation.target, n_classes=10)
    np.testing.assert_allclose(q.quality, a.target.accuracy)
    other = train(TrainConfig(**TINY, target_fraction=0.1, seed=4))
    assert not _equal(a.models, other.models)


def test_checkpointed_run_resumes_to_the_same_numbers(tmp_path):
    full = train(TrainConfig(**{**TINY, "rounds": 3}))
    train(TrainConfig(**{**TINY, "rounds": 1}), checkpoint_dir=tmp_path)
    resumed = train(TrainConfig(**{**TINY, "rounds": 3}), checkpoint_dir=tmp_path, resume=True)
    assert resumed.resumed_from == 1
    assert _equal(resumed.models, full.models)
    np.testing.assert_array_equal(resumed.loss, full.loss)
    with pytest.raises(ValueError, match="another configuration"):
        train(TrainConfig(**{**TINY, "rounds": 3, "lr": 0.1}), checkpoint_dir=tmp_path, resume=True)
    with pytest.raises(ValueError, match="resume needs"):
        train(TrainConfig(**TINY), resume=True)


def test_loop_engine_gives_the_batched_numbers():
    a = train(TrainConfig(**TINY))
    b = train(TrainConfig(**TINY, engine="loop"))
    assert all(torch.allclose(a.models[k], b.models[k], atol=1e-5) for k in a.models)


@pytest.mark.slow
def test_fedavg_on_iid_mnist5k_with_lenet5_reaches_90_percent():
    result = train(TrainConfig(algorithm="fedavg", rounds=15))
    assert result.mean_accuracy >= 0.90


@pytest.mark.slow
def test_duopoly_each_firm_alone_is_worse_on_the_target_than_the_pool():
    """Werner (2024), ch. 3 §3.5: firms with label CDFs F(5) = 0.8 and 0.2 (1000 examples
    each), a class-balanced common target; each firm's own model is worse than the pooled."""
    duopoly = dict(
        partition="label-cdf",
        clients=2,
        partition_params={"shares": [0.8, 0.2], "size": 1000},
        target_fraction=0.2,
        rounds=20,
    )
    alone = train(TrainConfig(algorithm="local", **duopoly)).target
    pooled = train(TrainConfig(algorithm="fedavg", **duopoly)).target
    assert np.all(alone.accuracy < pooled.accuracy.min())
