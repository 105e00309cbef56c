"""Models trained elsewhere -> qualities with counts and intervals (``collabecon.qualities_of``).

scikit-learn classifiers on its 8x8 digits, a torch module against the engine's own
evaluation, arrays of predictions, and the inputs that are refused.
"""

import subprocess
import sys

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import collabecon
from econ.qualities import wilson_interval
from learning.engine import broadcast, parameters_of
from learning.qualities import model_qualities, qualities_of
from tests.learning._tiny_problem import N_CLASSES, tiny_data, tiny_engine


@pytest.fixture(scope="module")
def digits():
    """Two classifiers trained on 500 digits; the other 1297 are the common target set."""
    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    models = {
        "logistic": LogisticRegression(max_iter=300).fit(x[:500], y[:500]),
        "tree": DecisionTreeClassifier(max_depth=6, random_state=0).fit(x[:500], y[:500]),
    }
    return models, (x[500:], y[500:])


def test_is_the_facade_name():
    assert collabecon.qualities_of is qualities_of


def test_sklearn_accuracy_is_the_hand_count_with_its_wilson_interval(digits):
    models, (x, y) = digits
    q = qualities_of(models, (x, y))
    assert q.names == ("logistic", "tree") and q.metric == "accuracy"
    hits = [int(np.sum(m.predict(x) == y)) for m in models.values()]
    np.testing.assert_array_equal(q.quality, np.array(hits) / len(y))
    np.testing.assert_array_equal(q.n_eval, [len(y), len(y)])
    low, high = wilson_interval(hits, len(y), 0.95)
    np.testing.assert_array_equal(q.low, low)
    np.testing.assert_array_equal(q.high, high)
    assert q.confidence == 0.95 and (q.low < q.quality).all() and (q.quality < q.high).all()
    assert q.to_dict()["low"] == q.low.tolist()


def test_a_list_with_names_and_a_lone_model(digits):
    models, target = digits
    both = qualities_of(list(models.values()), target, names=["a", "b"])
    assert both.names == ("a", "b")
    lone = qualities_of(models["tree"], target)
    assert lone.names == ("model0",) and lone.quality[0] == both.quality[1]


def test_sklearn_one_minus_loss_is_the_hand_computed_cross_entropy(digits):
    models, (x, y) = digits
    q = qualities_of(models, (x, y), metric="1-loss")
    p = models["logistic"].predict_proba(x)[np.arange(len(y)), y]
    losses = -np.log(p)
    mean, half = losses.mean(), 1.959963984540054 * losses.std(ddof=1) / np.sqrt(len(y))
    l0 = np.log(10)
    np.testing.assert_allclose(q["logistic"], 1 - mean / l0, rtol=1e-12)
    np.testing.assert_allclose(
        [q.low[0], q.high[0]], [1 - (mean + half) / l0, 1 - (mean - half) / l0], rtol=1e-9
    )
    # a depth-6 tree gives some true digit probability 0: an infinite loss, quality 0
    assert q["tree"] == 0.0 and q.low[1] == q.high[1] == 0.0


def test_the_interval_covers_the_accuracy_on_fresh_draws():
    """Wilson's 95% interval from 200 draws covers the true accuracy in about 95% of runs."""
    rng = np.random.default_rng(0)
    truth, n, runs = 0.8, 200, 400
    y = np.zeros(n, dtype=np.int64)
    covered = 0
    for _ in range(runs):
        guess = np.where(rng.random(n) < truth, 0, 1)
        q = qualities_of(guess, y)
        covered += int(q.low[0] <= truth <= q.high[0])
    assert 0.92 <= covered / runs <= 0.98


def test_torch_module_equals_the_engines_evaluation():
    engine = tiny_engine("batched")
    _, test = tiny_data()
    x, y = test.x.numpy(), test.y.numpy()
    module = engine.model
    params = broadcast(parameters_of(module), 1)
    for metric in ("accuracy", "1-loss"):
        ours = qualities_of(module, (x, y), metric=metric, n_classes=N_CLASSES, batch_size=4)
        engine_q = model_qualities(engine, params, (x, y), n_classes=N_CLASSES, metric=metric)
        np.testing.assert_allclose(ours.quality, engine_q.quality, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(ours.n_eval, engine_q.n_eval)
    module.train()
    qualities_of(module, (torch.from_numpy(x), torch.from_numpy(y)), n_classes=N_CLASSES)
    assert module.training  # its mode is restored


def test_arrays_of_labels_and_probabilities():
    y = np.array([0, 1, 2, 2])
    proba = np.eye(3)[[0, 1, 1, 2]] * 0.8 + 0.2 / 3
    q = qualities_of({"labels": np.array([0, 1, 1, 2]), "proba": proba}, y)
    np.testing.assert_array_equal(q.quality, [0.75, 0.75])
    q = qualities_of({"proba": proba}, (None, y), metric="1-loss")
    expected = 1 - np.mean(-np.log(proba[np.arange(4), y])) / np.log(3)
    np.testing.assert_allclose(q.quality, [expected])


def test_scoring_estimators_does_not_import_torch():
    code = (  # an estimator with the scikit-learn interface, without importing scikit-learn
        "import sys, numpy as np, collabecon\n"
        "class Model:\n"
        "    def predict(self, x): return x.argmax(axis=1)\n"
        "q = collabecon.qualities_of(Model(), (np.eye(3), np.array([0, 1, 1])))\n"
        "print(q.quality.tolist(), 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[0.6666666666666666]", "False"]


@pytest.mark.parametrize(
    ("models", "target", "kwargs", "match"),
    [
        (np.array([0, 1]), np.array([0, 1, 1]), {}, "hold 2 rows for 3 labels"),
        (
            np.array([0, 1, 10]),
            np.array([0, 1, 11]),
            {"n_classes": 10},
            r"labels must lie in \[0, 10\)",
        ),
        (np.array([0, 1, 2]), np.array([0, 1, -1]), {}, r"labels must lie in \[0, C\)"),
        (np.array([0.5, 1]), np.array([0, 1]), {}, "integer class indices, got 0.5"),
        (
            np.array([0, 1]),
            np.array([0.0, np.nan]),
            {},
            "labels must be integer class indices, got nan",
        ),
        (np.array([[0.5, 0.4], [0.5, 0.5]]), np.array([0, 1]), {}, "row 0 sums to 0.9"),
        (np.array([[np.nan, 1.0]]), np.array([0]), {}, "must be finite, got nan at row 0"),
        (np.array([], dtype=np.int64), np.array([], dtype=np.int64), {}, "target set is empty"),
        (np.array([0, 1]), np.array([0, 1]), {"metric": "1-loss"}, "needs class probabilities"),
        (np.array([0, 1]), np.array([0, 1]), {"metric": "f1"}, "metric must be one of"),
        (
            np.array([0, 1]),
            np.array([0, 1]),
            {"confidence": 1.0},
            r"confidence must lie in \(0, 1\)",
        ),
        ([], np.array([0, 1]), {}, "at least one model"),
        ({"a": np.array([0])}, np.array([0]), {"names": ["b"]}, "a dict names its own"),
        ([np.array([0]), np.array([0])], np.array([0]), {"names": ["b"]}, "must name every party"),
    ],
)
def test_bad_inputs_are_refused_in_one_line(models, target, kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        qualities_of(models, target, **kwargs)
    assert "\n" not in str(info.value)


def test_a_model_needs_the_inputs_of_the_target(digits):
    models, (x, y) = digits
    with pytest.raises(ValueError, match=r"give target as \(X, y\)"):
        qualities_of(models["tree"], y)
    with pytest.raises(ValueError, match="1296 labels"):
        qualities_of(models["tree"], (x, y[1:]))
    with pytest.raises(ValueError, match="has no predict_proba"):
        qualities_of(
            {"svm": type("Svm", (), {"predict": lambda self, x: y})()}, (x, y), metric="1-loss"
        )
