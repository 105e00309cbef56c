"""Measured clients (econ.privacy.empirical): monotone interpolation, agreement with the built-in
models on curves sampled from their own formulas, a brute-force check of the existence scan, and
bad curves as one-line errors."""

import itertools
import json

import numpy as np
import pytest

from collabecon.cli import main
from econ.privacy import DPSGD, DPMean, Empirical, exists, optimal_protocol
from econ.privacy.monotone import isotonic


def sampled(model, lam, alphas):
    """The curve a built-in model predicts at common noise alpha: leak as epsilon, err as error."""
    rho, d = model.rho(lam.size), model._noise_dim()
    eps, err = [], []
    for a in alphas:
        beta = 1 / (1 / rho + d * a**2)
        eps.append(np.sqrt(model.leak2(beta, lam)))
        err.append(np.sqrt(model.err2(beta, lam)))
    alone = np.sqrt(-model.utility_alone(lam) / lam)
    return Empirical(alphas, np.array(eps), np.array(err), alone)


def threshold_lam(model, n_clients):
    """The equal lambda at which the model's own existence test switches (bisection)."""
    lo, hi = 1e-10, 1e10
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        lo, hi = (lo, mid) if exists(model, np.full(n_clients, mid)).exists else (mid, hi)
    return hi


@pytest.mark.parametrize("model", [DPMean(), DPSGD(n_clients=5)], ids=["dp-mean", "dp-sgd"])
@pytest.mark.parametrize("factor", [0.9, 1.1, 3.0])
def test_sampled_curve_agrees_with_the_model_at_its_threshold(model, factor):
    n = 5
    lam = np.full(n, factor * threshold_lam(model, n))
    rho = model.rho(n)[0]
    curve = sampled(model, lam, np.geomspace(1e-3, 1e3, 40) / np.sqrt(rho))
    assert exists(curve, lam).exists == exists(model, lam).exists == (factor > 1)
    for objective in ("accuracy", "welfare"):
        p = optimal_protocol(curve, lam, objective)
        assert p.exists == (factor > 1)
        assert p.gain.min() >= -1e-9


def test_dp_mean_sampled_curve_threshold_is_theorem_4_2():
    # equal clients: sum zeta > 1 iff (N - 1) lambda > kappa^2 rho^2 (Theorem 4.2)
    model, n = DPMean(), 4
    rho, kappa = model.rho(n)[0], model.kappa(n)[0]
    star = kappa**2 * rho**2 / (n - 1)
    alphas = np.geomspace(1e-2, 1e4, 60) / np.sqrt(rho)
    for factor, expected in ((0.95, False), (1.05, True)):
        lam = np.full(n, factor * star)
        assert exists(sampled(model, lam, alphas), lam).exists is expected


def random_curve(rng, n_clients, levels=5, gap=(0.0, 0.4)):
    noise = np.sort(rng.uniform(0.3, 6.0, levels))
    base = rng.uniform(0.05, 0.2, n_clients)
    fed = base + 0.6 * (1 - np.exp(-noise[:, None] / rng.uniform(1, 4, n_clients)))
    fed += rng.normal(0, 0.03, fed.shape)  # measurement noise: not monotone as measured
    eps = rng.uniform(3, 8, n_clients) / noise[:, None] ** rng.uniform(0.8, 1.2)
    alone = base + rng.uniform(*gap, n_clients)
    return Empirical(noise, eps, np.clip(fed, 0, 1), alone, weights=rng.uniform(1, 3, n_clients))


def test_isotonic_pools_violators():
    assert isotonic([1, 3, 2, 4]).tolist() == [1, 2.5, 2.5, 4]
    assert isotonic([4, 1, 2], increasing=False).tolist() == [4, 1.5, 1.5]
    rng = np.random.default_rng(1)
    for _ in range(50):
        y = rng.normal(size=12)
        fit = isotonic(y)
        assert np.all(np.diff(fit) >= -1e-12)
        assert fit.mean() == pytest.approx(y.mean())  # a projection keeps the block means


def test_interpolation_is_monotone_and_exact_on_monotone_data():
    rng = np.random.default_rng(2)
    for _ in range(20):
        m = random_curve(rng, 3)
        lo, hi = m.noise_range
        dense = np.geomspace(lo, hi, 2001)
        assert np.all(np.diff(m.error_federated_at(dense), axis=0) >= -1e-12)
        eps = m.epsilon_at(np.repeat(dense[:, None], 3, axis=1))
        assert np.all(np.diff(eps, axis=0) <= 1e-12)
    noise = np.array([0.5, 1.0, 2.0, 4.0])
    fed = np.array([[0.1, 0.2], [0.15, 0.25], [0.3, 0.3], [0.6, 0.5]])
    m = Empirical(noise, 4 / noise[:, None] * np.ones((1, 2)), fed, [0.4, 0.4])
    assert np.allclose(m.error_federated_at(noise), fed)
    assert np.allclose(m.epsilon_at(np.repeat(noise[:, None], 2, axis=1)), 4 / noise[:, None])


def test_existence_scan_agrees_with_a_brute_force_search():
    rng = np.random.default_rng(3)
    agree = decided = 0
    for _ in range(40):
        m = random_curve(rng, 2)
        lam = rng.uniform(50, 2000, 2)
        witnesses = np.array(list(itertools.product(np.geomspace(*m.noise_range, 80), repeat=2)))
        gains = m.gain(witnesses, lam)
        brute = bool((gains.min(axis=1) >= 0).any())
        scan = exists(m, lam)
        if brute:  # a grid witness is a witness: the scan must find one
            assert scan.exists
        decided += 1
        agree += brute == scan.exists
        p = optimal_protocol(m, lam, "accuracy")
        assert p.exists == scan.exists
        if p.exists:
            assert m.gain(p.noise, lam).min() >= -1e-9
            # the accuracy optimum has the lowest aggregate noise of any grid witness
            ok = witnesses[gains.min(axis=1) >= 0]
            if ok.size:
                assert m.aggregate(p.noise) <= m.aggregate(ok).min() * (1 + 1e-3)
    assert agree >= decided - 2  # the scan may find witnesses between the brute-force points


def test_welfare_optimum_beats_the_accuracy_optimum_in_welfare():
    rng = np.random.default_rng(4)
    found = 0
    for _ in range(30):
        m = random_curve(rng, 4, gap=(0.25, 0.5))
        lam = rng.uniform(500, 5000, 4)
        acc, wel = optimal_protocol(m, lam, "accuracy"), optimal_protocol(m, lam, "welfare")
        assert acc.exists == wel.exists
        if acc.exists:
            found += 1
            assert wel.gain.min() >= -1e-9
            assert wel.utility.sum() >= acc.utility.sum() - 1e-9
            assert wel.server_accuracy <= acc.server_accuracy + 1e-9
    assert found >= 5


def test_protocol_to_dict_is_plain_json():
    rng = np.random.default_rng(5)
    m = random_curve(rng, 3)
    for p in (
        optimal_protocol(m, [1e-3] * 3, "accuracy"),  # no protocol: infinite noise as None
        optimal_protocol(m, [1e4] * 3, "welfare"),
        optimal_protocol(DPMean(), [0.5, 1, 2, 4, 8]),
        optimal_protocol(DPMean(), [1e-6, 1e-6]),
    ):
        d = p.to_dict()
        text = json.dumps(d, allow_nan=False)
        assert json.loads(text) == d
        assert all(isinstance(x, (float, type(None))) for x in d["beta"] + d["alpha"])
    out = json.loads(json.dumps(exists(m, [1e-3] * 3).to_dict(), allow_nan=False))
    assert out["statistic"] is None  # -inf: no client accepts any measured noise
    assert "no measured noise level" in out["statistic_why"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: exists(m, [1.0, 1.0]), "lam must have one weight per measured client"),
        (lambda m: m.gain(np.full(3, 100.0), [1.0] * 3), "noise must lie in the measured range"),
        (lambda m: optimal_protocol(m, [1.0] * 3, method="cvxpy"), "no convex program"),
        (lambda m: Empirical([1.0, 0.5], np.ones((2, 1)), np.ones((2, 1)), [0.1]), "increasing"),
        (lambda m: Empirical([0.5, 1.0], -np.ones((2, 1)), np.ones((2, 1)), [0.1]), "epsilon"),
        (lambda m: Empirical([0.5, 1.0], np.ones((2, 2)), np.ones((2, 1)), [0.1]), "shape"),
    ],
)
def test_bad_input_names_the_parameter(call, message):
    m = random_curve(np.random.default_rng(6), 3)
    with pytest.raises(ValueError, match=message):
        call(m)


CURVE = {
    "noise": [0.5, 2.0],
    "epsilon": [[[8.0, 9.0], [2.0, 2.5]]],
    "accuracy_federated": [[[0.9, 0.88], [0.8, 0.79]]],
    "accuracy_alone": [[0.85, 0.86]],
    "train_sizes": [[100, 120]],
}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not JSON"),
        ("[1, 2]", "a JSON object is expected"),
        (json.dumps({k: v for k, v in CURVE.items() if k != "epsilon"}), "missing epsilon"),
        (json.dumps({**CURVE, "noise": [2.0, 0.5]}), "increasing"),
        (json.dumps({**CURVE, "epsilon": [[[1.0], [2.0]]]}), "shape"),
        (json.dumps({**CURVE, "epsilon": "x"}), "malformed"),
        (json.dumps({**CURVE, "accuracy_alone": []}), "accuracy_alone is empty"),
    ],
)
def test_bad_curve_files_are_one_line_errors(tmp_path, capsys, content, message):
    path = tmp_path / "curve.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        Empirical.from_curve(path)
    assert main(["privacy", "exists", "--curve", str(path), "--lam", "1,1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.split()[-1] in err and str(path) in err


def test_cli_answers_from_a_curve_file(tmp_path, capsys):
    path = tmp_path / "curve.json"
    path.write_text(json.dumps(CURVE))
    # client 1's accuracy gain is at most 1000 (0.14^2 - 0.12^2) = 5.2 < 2.5^2, its least leak
    assert main(["privacy", "exists", "--curve", str(path), "--lam", "1000", "1000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exists"] is False
    # at noise 0.5 for both: gains 1e5 (0.15^2 - 0.1^2) - 8^2 > 0 and 1e5 (0.14^2 - 0.12^2) - 9^2 > 0
    code = main(["privacy", "optimal", "--curve", str(path), "--lam", "1e5,1e5", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["exists"] is True and out["model"] == "empirical"
    assert min(out["gain"]) >= -1e-9 and out["noise"][0] == pytest.approx(0.5)
    assert out["server_accuracy"] == pytest.approx(0.89)
    assert main(["privacy", "optimal", "--curve", str(path), "--lam", "1e5,1e5"]) == 0
    assert "server accuracy" in capsys.readouterr().out
    assert main(["privacy", "exists", "--curve", str(path), "--lam", "1,1", "--n", "5"]) == 2
    assert "--n do(es) not apply to --curve" in capsys.readouterr().err
