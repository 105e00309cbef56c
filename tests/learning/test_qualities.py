"""Trained models -> ModelQualities on a target set."""

import numpy as np
import pytest
import torch
from torch import nn

from econ.qualities import ModelQualities
from learning.engine import BatchedEngine, Evaluation, Task, broadcast, parameters_of
from learning.qualities import model_qualities, qualities_from_evaluation
from tests.learning._tiny_problem import CPU, N_CLASSES, tiny_data, tiny_engine


def _models(engine, k=3):
    params = broadcast(parameters_of(engine.model), k)
    noise = torch.Generator().manual_seed(0)
    return {n: p + 0.3 * torch.randn(p.shape, generator=noise) for n, p in params.items()}


def test_accuracy_and_one_minus_loss_on_the_target():
    engine = tiny_engine("batched")
    _, test = tiny_data()
    x, y = test.x.numpy(), test.y.numpy()
    models = _models(engine)
    q = model_qualities(engine, models, (x, y), n_classes=N_CLASSES, names=["a", "b", "c"])
    ev = engine.evaluate_on(models, x, y)
    assert isinstance(q, ModelQualities) and q.metric == "accuracy"
    np.testing.assert_allclose(q.quality, ev.accuracy)
    np.testing.assert_array_equal(q.n_eval, [len(y)] * 3)
    assert q.names == ("a", "b", "c")
    loss_q = model_qualities(engine, models, (x, y), n_classes=N_CLASSES, metric="1-loss")
    np.testing.assert_allclose(loss_q.quality, np.clip(1 - ev.loss / np.log(N_CLASSES), 0, 1))
    assert loss_q.names == ("client0", "client1", "client2")


def test_one_minus_loss_for_regression_uses_the_target_variance():
    engine = BatchedEngine(nn.Sequential(nn.Linear(2, 1)), Task.for_classes(0), CPU)
    with torch.no_grad():
        engine.model[0].weight.copy_(torch.tensor([[1.0, 0.0]]))
        engine.model[0].bias.zero_()
    x = np.array([[0.0, 5.0], [2.0, 1.0], [4.0, 3.0]], dtype=np.float32)
    y = np.array([0.0, 2.0, 5.0], dtype=np.float32)  # predictions 0, 2, 4: MSE 1/3
    q = model_qualities(
        engine, broadcast(parameters_of(engine.model), 1), (x, y), n_classes=0, metric="1-loss"
    )
    np.testing.assert_allclose(q.quality, [1 - (1 / 3) / np.var(y)], rtol=1e-6)
    with pytest.raises(ValueError, match="classification"):
        model_qualities(engine, broadcast(parameters_of(engine.model), 1), (x, y), n_classes=0)


def test_bad_input():
    engine = tiny_engine("batched")
    models = _models(engine, 2)
    empty = (np.zeros((0, 1, 8, 8), np.float32), np.zeros(0, np.int64))
    with pytest.raises(ValueError, match="empty"):
        model_qualities(engine, models, empty, n_classes=N_CLASSES)
    with pytest.raises(ValueError, match="metric"):
        model_qualities(engine, models, empty, n_classes=N_CLASSES, metric="f1")
    ev = Evaluation(loss=np.array([0.1]), accuracy=np.array([0.9]), n=np.array([10]))
    with pytest.raises(ValueError, match="baseline"):
        qualities_from_evaluation(ev, ["a"], metric="1-loss")
