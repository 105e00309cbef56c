"""A training run becomes a market in one call, and keeps its algorithm's final state."""

import numpy as np
import pytest

from econ.market import market_round
from learning.train import TrainConfig, train

TINY = dict(dataset="digits", model="mlp", clients=4, rounds=2, local_steps=2, batch_size=8)


def test_a_run_is_a_market_of_its_clients():
    result = train(TrainConfig(**TINY, algorithm="ifca", target_fraction=0.2))
    q = result.qualities()
    assert q.names == ("client0", "client1", "client2", "client3")
    assert np.array_equal(q.quality, result.target.accuracy)  # the target accuracies
    m = market_round(q)  # ties among measured accuracies are a market too
    assert np.all(m.revenue >= 0) and m.welfare == pytest.approx(
        m.consumer_surplus + m.revenue.sum()
    )
    # the algorithm's final state is kept: IFCA's assignment of each client to a cluster
    assert result.state["assignment"].shape == (4,) and "clusters" in result.state


def test_qualities_on_a_set_of_ones_own():
    result = train(TrainConfig(**TINY))
    client = result.federation.clients[0]
    q = result.qualities((client.x_test, client.y_test), metric="1-loss")
    assert q.metric == "1-loss" and np.all((q.quality >= 0) & (q.quality <= 1))
    with pytest.raises(ValueError, match="no common target set"):
        result.qualities()
