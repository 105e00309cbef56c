"""Outputs of econ.privacy a notebook takes as they are: JSON-ready to_dict, floats for scalars."""

import json

import numpy as np
import pytest

from econ.privacy import DPSGD, Bayes, DPMean, exists, optimal_protocol
from econ.privacy import conversions as C
from econ.privacy import mechanisms as M


@pytest.mark.parametrize(
    ("model", "lam"),
    [
        (DPMean(), [0.5, 1, 2, 4, 8]),
        (DPMean(), [1e-6, 1e-6]),  # no protocol: alpha infinite
        (DPSGD(n_clients=3), [1e6, 1e6, 1e6]),
        (Bayes(n=1, sigma=1), [5, 8, 12, 20, 50]),
    ],
)
def test_to_dict_is_strict_json_of_plain_values(model, lam):
    for result in (exists(model, lam), optimal_protocol(model, lam, "accuracy")):
        d = result.to_dict()
        assert json.loads(json.dumps(d, allow_nan=False)) == d
    d = optimal_protocol(model, lam, "accuracy").to_dict()
    for key in ("alpha", "beta", "leak", "utility", "utility_alone", "gain"):
        assert isinstance(d[key], list)
        assert all(x is None or type(x) is float for x in d[key])
    assert type(d["gamma"]) is float and type(d["exists"]) is bool
    if not d["exists"]:
        assert d["alpha"] == [None] * len(lam)


def test_scalar_inputs_return_floats():
    for value in (
        C.beta_of_alpha(1.0, 2.0),
        C.alpha_of_beta(0.5, 1.0),
        C.epsilon_of_alpha(2.0, 1.0),
        C.alpha_of_epsilon(2.0, 1.0),
        M.kappa_mean(100, 20),
        M.kappa_sgd(100, 4, 2),
        M.round_epsilon(100, 4, 2, 1.0),
        M.shuffle_epsilon(0.5, 4, 1e-4),
    ):
        assert type(value) is float
    assert C.epsilon_of_alpha(float("inf"), 1.0) == 0.0
    arrays = C.epsilon_of_alpha(np.array([1.0, np.inf]), 1.0)
    assert isinstance(arrays, np.ndarray) and arrays.tolist() == [1.0, 0.0]
    assert isinstance(M.kappa_mean(np.array([100.0, 200.0]), 20), np.ndarray)
