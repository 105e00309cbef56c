"""The measured (epsilon, accuracy) curve: `collabecon privacy curve` on a tiny federation (digits,
4 clients, 2 noise levels, 2 seeds), its file, and the empirical model built from it."""

import json
import re

import numpy as np
import pytest
from scipy import stats

from collabecon.cli import main
from collabecon.cli.privacy_curve import render_curve
from econ.privacy import Empirical, exists, optimal_protocol
from econ.privacy.accountants import accountant_epsilon
from learning.drivers.privacy_curve import PrivacyCurve, measure, t_interval

TINY = [
    "--dataset",
    "digits",
    "--model",
    "linear",
    "--clients",
    "4",
    "--rounds",
    "3",
    "--local-steps",
    "5",
    "--lr",
    "0.3",
]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    out = tmp_path_factory.mktemp("curve") / "run"
    code = main(
        ["privacy", "curve", "--noise", "0.5", "8", "--seeds", "2", "--out", str(out), *TINY]
    )
    assert code == 0
    return out


def test_curve_files_and_baseline(measured):
    assert (measured / "curve.png").stat().st_size > 0
    curve = PrivacyCurve.load(measured / "curve.json")
    assert curve.noise == (0.5, 8.0) and curve.seeds == (0, 1) and curve.n_clients == 4
    # the non-private references train: far above chance (10 classes)
    assert curve.accuracy_alone.mean() > 0.6 and curve.accuracy_federated_nonprivate.mean() > 0.6
    # heavy noise costs accuracy; epsilon falls with the noise, client by client
    assert curve.accuracy_federated[:, 1].mean() < curve.accuracy_federated_nonprivate.mean()
    assert np.all(curve.epsilon[:, 0] > curve.epsilon[:, 1])


def test_epsilon_is_the_clients_subsampled_rdp_accounting(measured):
    curve = PrivacyCurve.load(measured / "curve.json")
    n = int(curve.train_sizes[0, 0])
    expected = accountant_epsilon(
        8.0,
        1e-5,
        1.0,
        compositions=15,
        accountant="rdp",
        sampling_rate=32 / n,
        sampling="fixed",
        dataset_size=n,
    )
    assert curve.epsilon[0, 1, 0] == pytest.approx(expected)
    named = {"accountant": "rdp", "sampling": "fixed", "adjacency": "replace-one"}
    assert curve.accounting == named
    assert json.loads((measured / "curve.json").read_text())["accounting"] == named
    result = {"summary": curve.summary(), "accounting": named, "seconds": 1.0}
    text = render_curve({**result, "json": "curve.json", "png": "curve.png"})
    assert "epsilon: RDP accountant, fixed-size sampling, replace-one adjacency" in text


def test_summary_t_intervals(measured):
    curve = PrivacyCurve.load(measured / "curve.json")
    rows = curve.summary()
    assert len(rows) == 2 * (len(curve.noise) + 1)
    fed = next(r for r in rows if r["training"] == "federated" and r["noise"] == 0.5)
    per_seed = curve.accuracy_federated[:, 0].mean(axis=1)
    half = stats.t.ppf(0.975, 1) * per_seed.std(ddof=1) / np.sqrt(2)
    assert fed["accuracy"] == pytest.approx(per_seed.mean())
    assert (fed["ci_low"], fed["ci_high"]) == pytest.approx(
        (per_seed.mean() - half, per_seed.mean() + half)
    )
    alone = next(r for r in rows if r["training"] == "local" and r["noise"] == 0)
    assert alone["epsilon"] == np.inf
    assert np.isnan(t_interval([0.5])).all()


def test_curve_file_round_trip_and_json(measured):
    text = (measured / "curve.json").read_text()
    data = json.loads(text)
    assert data["summary"][0]["epsilon"] is None  # no DP: infinite epsilon as null
    curve = PrivacyCurve.from_dict(data)
    assert json.loads(json.dumps(curve.to_dict(), allow_nan=False)) == data
    pd = pytest.importorskip("pandas")
    frame = curve.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 6


def test_exists_and_optimal_from_the_curve(measured, capsys):
    path = measured / "curve.json"
    model = Empirical.from_curve(path)
    curve = PrivacyCurve.load(path)
    assert model.n_clients == 4 and model.noise_range == (0.5, 8.0)
    assert np.allclose(model.error_federated_at(0.5), 1 - curve.accuracy_federated[:, 0].mean(0))
    for lam in ("1", "1e6"):
        assert main(["privacy", "exists", "--curve", str(path), "--lam", *[lam] * 4, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["exists"] == exists(model, [float(lam)] * 4).exists
    # a weight at which the whole accuracy at stake, lam err0^2, is below the least measured
    # leak epsilon^2: no protocol; and the scan agrees with Definition 3.2 on the measured points
    small = 0.9 * model.epsilon.min() ** 2 / (model.error_alone**2).max()
    assert exists(model, [small] * 4).exists is False
    lam = np.full(4, 1e6)
    at_points = [model.gain(np.full(4, z), lam).min() >= 0 for z in curve.noise]
    if any(at_points):
        assert exists(model, lam).exists
    p = optimal_protocol(model, [1e6] * 4, "accuracy")
    if p.exists:
        assert p.gain.min() >= -1e-9


def test_out_must_be_a_folder_before_training(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["privacy", "curve", "--noise", "1", "--out", str(blocker), *TINY]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file, not a" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--noise", "0,1"], "--noise must list noise multipliers > 0"),
        (["--noise", "1", "--seeds", "0"], "--seeds must be an integer >= 1"),
        (["--noise", "1", "--delta", "2"], "--delta must lie in (0, 1)"),
        (["--noise", "1", "--clip", "0"], "--clip must be a finite number > 0"),
        (["--noise", "1", "--model", "nope"], "model must be one of"),
    ],
)
def test_bad_flags_are_one_line_errors(tmp_path, capsys, argv, message):
    code = main(["privacy", "curve", *TINY, *argv, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err


def test_one_seed_gives_no_interval_and_says_why():
    s, k, n = 1, 2, 3
    curve = PrivacyCurve(
        settings={"delta": 1e-5},
        noise=(1.0, 2.0),
        seeds=(0,),
        epsilon=np.ones((s, k, n)),
        accuracy_local=np.full((s, k, n), 0.5),
        accuracy_federated=np.full((s, k, n), 0.6),
        accuracy_alone=np.full((s, n), 0.7),
        accuracy_federated_nonprivate=np.full((s, n), 0.8),
        train_sizes=np.full((s, n), 100.0),
    )
    for row in curve.summary():
        assert row["ci_low"] is None and row["ci_high"] is None and "one seed" in row["ci_why"]
        assert ("epsilon_why" in row) == (row["noise"] == 0)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"clients": 2, "batch_size": 899}, "batch_size=899 is more than the 898 examples"),
        ({"clients": 5000}, "clients=5000 is more than the 1797 examples"),
        ({"rounds": 10**9}, "SGD steps per client, more than 1e+09"),
    ],
)
def test_measure_refuses_what_the_data_cannot_fill(settings, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        measure([1.0], 1, dataset="digits", **settings)


def test_measure_checks_before_training():
    with pytest.raises(ValueError, match="noise must be distinct positive"):
        measure([1.0, 1.0], 1, dataset="digits")
    with pytest.raises(ValueError, match="unknown settings"):
        measure([1.0], 1, hidden=3)
