"""The torch driver: real training under the collaboration schemes (Werner 2024, ch. 3,
Algorithm 5 and the experiments of §3.5)."""

import csv
import json

import numpy as np
import pytest
import torch

from collabecon.cli import main
from econ.market import market_history, market_round
from games.defection_free import HighMove, scheme_claims
from learning.drivers.defection_free import DuopolySetup, TorchFirms
from learning.drivers.defection_free_schemes import run_schemes

TINY = DuopolySetup(
    dataset="digits",
    size=150,
    target_per_class=20,
    lr=0.1,
    batch_size=32,
    init_epochs=(0, 30),
    max_inner=5,
)


@pytest.fixture(scope="module")
def firms():
    return TorchFirms.prepare(TINY, seed=0, device="cpu")


@pytest.fixture(scope="module")
def df_run(firms):
    return run_schemes(firms, 3, schemes=("defection-free",), seed=1)["defection-free"]


def test_prepare_splits_and_pretrains(firms):
    q = firms.measure()
    assert q.names == ("low", "high") and q.metric == "accuracy"
    assert q["high"] > q["low"]
    assert q.n_eval.tolist() == [200, 200]
    y_low = firms.data["low"][1].numpy()
    assert np.mean(y_low <= 5) == pytest.approx(0.8)  # split="paper": exactly 80/20
    assert np.mean(firms.data["high"][1].numpy() <= 5) == pytest.approx(0.2)
    assert np.bincount(firms.target[1]).tolist() == [20] * 10  # balanced target


def test_defection_free_on_real_models(df_run):
    play = df_run.play
    assert df_run.report.audit.never_decreased
    assert np.all(np.diff(play.q_h) >= 0) and np.all(np.diff(play.q_l) >= 0)
    capped = ~np.isnan(play.cap)
    assert np.all(play.q_l[capped] <= play.cap[capped] + 1e-12)  # never past the cap
    measured = np.array([m["low"] for m in play.measured])
    assert np.array_equal(measured, play.q_l)  # gd mode: the qualities are the models'
    history = market_history(df_run.round_qualities)
    assert history.revenue.shape == (4, 2)


def test_a_run_becomes_a_market_in_one_call(df_run):
    last = df_run.qualities()
    assert last.names == ("low", "high")
    np.testing.assert_array_equal(last.quality, [df_run.play.q_l[-1], df_run.play.q_h[-1]])
    # the final models are kept: evaluated again on the run's target they give the same
    again = df_run.qualities(df_run.firms.target)
    np.testing.assert_array_equal(again.quality, last.quality)
    assert again.n_eval.tolist() == [200, 200]
    # any other target set: the consumers of one class only
    x, y = df_run.firms.target
    ones = df_run.qualities((x[y == 1], y[y == 1]))
    assert ones.n_eval.tolist() == [20, 20]
    assert np.all((ones.quality >= 0) & (ones.quality <= 1))
    assert set(ones.quality * 20) <= set(range(21))  # accuracies of 20 examples
    loss = df_run.qualities(metric="1-loss")
    assert loss.metric == "1-loss" and np.all((loss.quality >= 0) & (loss.quality <= 1))
    market = market_round(last)
    assert np.all(market.price >= 0) and np.all(market.revenue >= 0)
    with pytest.raises(ValueError, match="metric"):
        df_run.qualities(metric="f1")
    with pytest.raises(ValueError, match="target"):
        df_run.qualities((x[:0], y[:0]))


def test_same_seed_same_run(firms, df_run):
    again = run_schemes(firms, 3, schemes=("defection-free",), seed=1)["defection-free"]
    assert np.array_equal(again.play.q_l, df_run.play.q_l)
    assert np.array_equal(again.play.q_h, df_run.play.q_h)


def test_oracle_mode_leaves_the_low_model_untrained(firms):
    run = run_schemes(firms, 2, schemes=("defection-free",), inner="oracle", q_max=0.9, seed=2)[
        "defection-free"
    ]
    low0 = run.play.measured[0]["low"]
    assert all(m["low"] == low0 for m in run.play.measured)
    assert run.report.q_max == 0.9
    # the market sees the rule's quality; the kept model is the untrained one
    assert run.qualities()["low"] == run.play.q_l[-1]
    assert run.qualities(run.firms.target)["low"] == low0


def test_undo_high_restores_the_model(firms):
    f = firms.fork(5)
    before = {k: v.clone() for k, v in f.params["high"].items()}
    f.step_high(HighMove(joint=True))
    f.undo_high()
    assert all(np.array_equal(before[k].numpy(), f.params["high"][k].numpy()) for k in before)
    assert all(np.array_equal(before[k].numpy(), firms.params["high"][k].numpy()) for k in before)


def test_kept_evaluations_equal_fresh_ones(firms):
    f = firms.fork(6)
    fresh = f.qualities_on((f.target[0].copy(), f.target[1].copy()))  # never kept
    assert np.array_equal(f.measure().quality, fresh.quality)
    assert np.array_equal(f.measure().quality, fresh.quality)  # the kept evaluations
    f.step_high(HighMove(joint=True))
    assert f.measure()["high"] == f.qualities_on(f.target)["high"]
    # a change in place is evaluated afresh
    with torch.no_grad():
        for v in f.params["low"].values():
            v.zero_()
    assert f.measure()["low"] == pytest.approx(0.1)  # every output equal: class 0, 20 of 200
    assert f.measure()["low"] == f.qualities_on(f.target)["low"]


def test_cli_json_and_history_files(capsys, tmp_path):
    code = main(
        [
            "defection-free",
            "--json",
            "--dataset",
            "digits",
            "--size",
            "150",
            "--target-per-class",
            "20",
            "--lr",
            "0.1",
            "--batch-size",
            "32",
            "--init-epochs-high",
            "30",
            "--rounds",
            "2",
            "--q-max",
            "0.9",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {
        "scheme",
        "revenue_convention",
        "rounds",
        "revenue_never_decreased",
        "min_revenue_change",
        "rho_star",
        "nash_star",
        "nash_max",
        "final_individually_rational",
        "final_nash_gap",
        "claims",
    }
    assert out["scheme"] == "defection-free" and len(out["rounds"]) == 3
    keys = {"paper", "id", "statement", "published", "measured", "holds", "note"}
    assert out["claims"] and all(set(c) == keys for c in out["claims"])
    saved = json.loads((tmp_path / "defection-free.json").read_text())
    with (tmp_path / "defection-free.csv").open(newline="") as fh:
        written = list(csv.DictReader(fh))
    assert list(written[0])[:3] == ["t", "q_l", "q_h"]
    # JSON rounds, JSON history and CSV history: one convention, adding up in every row
    for rows in (out["rounds"], saved["history"], written):
        assert len(rows) == 3
        for row in rows:
            u_l, u_h = float(row["U_l"]), float(row["U_h"])
            cs, welfare = float(row["consumer_surplus"]), float(row["welfare"])
            assert u_l >= 0 and u_h >= 0
            assert welfare == pytest.approx(cs + u_l + u_h, rel=0, abs=1e-12)
    for row in saved["history"]:  # the market's prices and shares give the same revenues
        assert row["price_low"] * row["share_low"] == pytest.approx(row["U_l"], abs=1e-15)
        assert row["price_high"] * row["share_high"] == pytest.approx(row["U_h"], abs=1e-15)
    for history in ("defection-free.json", "defection-free.csv"):
        code = main(["market", "--json", "--from", str(tmp_path / history)])
        market = json.loads(capsys.readouterr().out)
        assert code == 0 and len(market["rounds"]) == 3
        assert market["names"] == ["low", "high"]


def test_cli_bad_input_exits_2(capsys):
    assert main(["defection-free", "--dataset", "nope", "--rounds", "1"]) == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_schemes_on_mnist5k_several_seeds(seed):
    setup = DuopolySetup(size=500, target_per_class=50, lr=0.05, batch_size=32)
    firms = TorchFirms.prepare(setup, seed=seed)
    runs = run_schemes(firms, 15, seed=seed)
    claims = {c.claim: c for c in scheme_claims({n: r.report for n, r in runs.items()})}
    failed = [f"{k}: {c.evidence}" for k, c in claims.items() if not c.holds]
    assert not failed, failed
