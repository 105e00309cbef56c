"""The robust aggregators of :mod:`learning.byzantine` against Flower's FedMedian,
FedTrimmedAvg and Krum strategies on the same updates (conventions: ``docs/flower.md``)."""

from __future__ import annotations

import pytest
import torch

import learning.algorithms  # noqa: F401  (registers the algorithms before learning.byzantine)
from learning.all_pairs import flatten
from learning.byzantine import coordinate_median, krum, trimmed_mean

pytestmark = pytest.mark.flower
strategy = pytest.importorskip("flwr.serverapp.strategy", reason="flwr is not installed")
from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

SHAPES = {"fc.weight": (3, 4), "fc.bias": (3,)}


@pytest.fixture(autouse=True)
def _run_identity(monkeypatch):
    """Messages are stamped with the run of the process; a test process has none."""
    monkeypatch.setattr(TaskIdentity, "_run_id", 1)
    monkeypatch.setattr(TaskIdentity, "_node_id", 0)
    monkeypatch.setattr(TaskIdentity, "_task_id", 1)


def _updates(n: int, seed: int) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [
        {k: torch.randn(*s, generator=g, dtype=torch.float64) for k, s in SHAPES.items()}
        for _ in range(n)
    ]


def _replies(updates: list[dict[str, torch.Tensor]]) -> list[Message]:
    return [
        Message(
            RecordDict({"arrays": ArrayRecord(u), "metrics": MetricRecord({"num-examples": 10})}),
            dst_node_id=i + 1,
            message_type="train",
        )
        for i, u in enumerate(updates)
    ]


def _flower(strat, updates) -> torch.Tensor:
    arrays, _ = strat.aggregate_train(1, _replies(updates))
    out = arrays.to_torch_state_dict()
    return flatten({k: out[k][None] for k in SHAPES})[0].to(torch.float64)


def _ours(fn, updates, n_bad) -> torch.Tensor:
    stacked = {k: torch.stack([u[k] for u in updates]) for k in SHAPES}
    return fn(flatten(stacked), n_bad)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_median_equals_fedmedian_for_an_odd_count(seed):
    updates = _updates(9, seed)
    ours = _ours(coordinate_median, updates, 0)
    assert torch.allclose(ours, _flower(strategy.FedMedian(), updates), rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_median_of_an_even_count_is_the_lower_middle_value_where_flower_averages(seed):
    updates = _updates(8, seed)
    ours = _ours(coordinate_median, updates, 0)
    stacked = _ours(lambda v, _: v.sort(dim=0).values, updates, 0)
    lower, upper = stacked[3], stacked[4]
    assert torch.equal(ours, lower)
    flower = _flower(strategy.FedMedian(), updates)
    assert torch.allclose(flower, (lower + upper) / 2, rtol=0, atol=1e-12)
    assert bool((flower > ours).all())  # distinct draws: the two conventions always differ


@pytest.mark.parametrize(("n", "beta"), [(10, 0.2), (9, 0.25), (12, 0.1)])
def test_trimmed_mean_equals_fedtrimmedavg_when_n_bad_is_beta_n(n, beta):
    updates = _updates(n, n)
    ours = _ours(trimmed_mean, updates, int(beta * n))
    flower = _flower(strategy.FedTrimmedAvg(beta=beta), updates)
    assert torch.allclose(ours, flower, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("n", "n_bad"), [(10, 2), (7, 1), (12, 3)])
def test_krum_picks_the_update_flower_krum_picks(n, n_bad):
    updates = _updates(n, 10 * n + n_bad)
    updates[0] = {k: v + 25.0 for k, v in updates[0].items()}  # one far outlier
    ours = _ours(krum, updates, n_bad)
    flower = _flower(strategy.Krum(num_malicious_nodes=n_bad), updates)
    assert torch.allclose(ours, flower, rtol=0, atol=1e-12)
    outlier = _ours(krum, updates[:1], 0)  # Krum of one update is that update
    assert not torch.allclose(ours, outlier)  # both reject the outlier
