"""n firms that really train under the defection-free rule (Werner 2024, ch. 3, Algorithm 5 and
Proposition 3, for n firms) and complete collaboration: ``collabecon defection-free --firms``."""

import contextlib
import functools
import io
import json

import numpy as np
import pytest
import torch

from collabecon.cli import main
from econ.market import market_round
from econ.quality_bargaining import quality_bargaining
from games.defection_free.n_firms import n_firm_step
from learning.drivers.defection_free_n import (
    BARGAIN_TOLERANCE,
    NFirmSetup,
    TorchNFirms,
    _candidates,
    _choose,
    _joint,
    run_n_firms,
    sharing,
)

TINY = [
    "defection-free",
    "--firms",
    "3",
    "--model",
    "mlp",
    "--dataset",
    "digits",
    "--size",
    "100",
    "--target-per-class",
    "20",
    "--lr",
    "0.1",
    "--init-epochs",
    "5",
    "--rounds",
    "3",
    "--json",
]


def _run(capsys, *argv):
    code = main([*argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("n-firms")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main([*TINY, "--out", str(out)])
    assert code == 0
    return json.loads(buffer.getvalue()), out


def test_no_revenue_falls_and_the_json_reports_every_firm(tiny):
    result, _ = tiny
    assert result["scheme"] == "defection-free" and result["firms"] == 3
    rows = result["rounds"]
    assert [r["round"] for r in rows] == [0, 1, 2, 3]
    revenues = np.array([r["revenues"] for r in rows])
    qualities = np.array([r["qualities"] for r in rows])
    assert revenues.shape == qualities.shape == (4, 3)
    assert np.all(np.diff(revenues, axis=0) >= 0)
    assert np.all(np.diff(qualities, axis=0) >= 0)
    assert result["audit"]["drops"] == [0, 0, 0]
    assert result["audit"]["revenue_never_decreased"] is True
    for r in rows:  # the market of econ.market on the measured qualities
        market = market_round(r["qualities"])
        assert np.allclose(r["revenues"], market.revenue)
        assert r["welfare"] == pytest.approx(market.welfare)
    kept = np.array([r["kept"] for r in rows[1:]])
    assert np.all((kept >= 0) & (kept <= 1))
    assert result["audit"]["refusals"] == np.sum(kept == 0, axis=0).tolist()


def test_the_bargain_is_the_n_player_solution_from_the_measured_start(tiny):
    result, _ = tiny
    deal = result["bargain"]
    start = result["rounds"][0]["qualities"]
    assert deal["q_max"] >= max(start)
    expected = quality_bargaining(start, q_max=deal["q_max"]).quality
    assert np.allclose(deal["target"], expected)
    assert deal["final"] == result["rounds"][-1]["qualities"]
    distance = np.max(np.abs(np.array(deal["final"]) - deal["target"]))
    assert deal["distance"] == pytest.approx(distance)
    assert deal["tolerance"] == BARGAIN_TOLERANCE
    assert deal["within_tolerance"] == (distance <= BARGAIN_TOLERANCE)
    at_deal = market_round(deal["target"])
    assert deal["target_revenues"] == pytest.approx(at_deal.revenue.tolist())
    assert deal["target_welfare"] == pytest.approx(at_deal.welfare)
    assert deal["final_welfare"] == result["rounds"][-1]["welfare"]


def test_out_writes_the_json_and_the_revenue_figure(tiny):
    result, out = tiny
    names = sorted(p.name for p in out.iterdir())
    assert names == ["defection-free-3-firms-revenue.png", "defection-free-3-firms.json"]
    assert json.loads((out / "defection-free-3-firms.json").read_text())["audit"] == result["audit"]


def test_complete_collaboration_keeps_every_step(capsys):
    argv = [*TINY[:2], "2", *TINY[3:-3], "--rounds", "1", "--json"]
    result = _run(capsys, *argv, "--scheme", "complete", "--q-max", "1")
    assert result["scheme"] == "complete" and result["firms"] == 2
    assert result["audit"]["refusals"] == [0, 0]
    assert result["bargain"]["q_max"] == 1.0


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--alpha", "0.3"], "--alpha has no effect without --firms"),
        (["--firms", "1"], "--firms must be 2 to 12"),
        (["--firms", "13"], "--firms must be 2 to 12"),
        (["--firms", "3", "--figures", "--out", "x"], "--figures has no effect with --firms"),
        (["--firms", "3", "--confidence", "0.9"], "--confidence has no effect with --firms"),
        (["--firms", "3", "--pace", "1"], "--pace must be a finite number > 1"),
        (["--firms", "12", "--rounds", "100000000000"], "example gradients"),
        ([*TINY[1:-3], "--q-max", "0.01"], "--q-max must be at least the best starting quality"),
    ],
)
def test_contradictions_are_refused(capsys, argv, says):
    assert main(["defection-free", *argv]) == 2
    assert says in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_four_firms_on_mnist5k_lose_no_revenue_and_reach_the_bargain(capsys, seed):
    result = _run(
        capsys,
        "defection-free",
        "--firms",
        "4",
        "--model",
        "mlp",
        "--rounds",
        "10",
        "--seed",
        str(seed),
        "--json",
    )
    assert result["audit"]["drops"] == [0, 0, 0, 0]
    assert result["bargain"]["distance"] <= BARGAIN_TOLERANCE


@functools.cache
def _default_run(seed):
    """``collabecon defection-free --firms 4 --json`` at its defaults (LeNet-5, 30 rounds).

    On one thread: the measured numbers of the tests below are those of one thread's float
    reductions.
    """
    buffer = io.StringIO()
    argv = ["defection-free", "--firms", "4", "--seed", str(seed), "--threads", "1", "--json"]
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    return json.loads(buffer.getvalue())


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_default_four_firm_run_loses_no_revenue(seed):
    assert _default_run(seed)["audit"]["drops"] == [0, 0, 0, 0]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_default_four_firm_run_ends_within_the_tolerance_of_the_bargain(seed):
    assert _default_run(seed)["bargain"]["distance"] <= BARGAIN_TOLERANCE


def test_the_recorded_qualities_are_the_kept_models_measured_afresh():
    setup = NFirmSetup(
        firms=3,
        dataset="digits",
        size=100,
        target_per_class=20,
        model="mlp",
        lr=0.1,
        init_epochs=5,
    )
    firms = TorchNFirms.prepare(setup, seed=0, device="cpu")
    runs = run_n_firms(firms, 2, seed=3)
    for run in runs.values():
        assert run.firms.measure().tolist() == run.qualities[-1].tolist()
        assert run.qualities[0].tolist() == firms.measure().tolist()
    assert np.all(runs["complete"].kept == 1)
    assert runs["complete"].q_max == pytest.approx(
        max(runs["complete"].qualities.max(), firms.measure().max())
    )


def test_sharing_matrices_follow_the_quality_ladder():
    start = np.array([0.5, 0.2, 0.9, 0.2])  # ranks 2, 0, 3, 1 (ties by index)
    assert sharing("complete", start).all()
    assert sharing("defection-free", start).all()
    low = sharing("one-sided-low", start)
    high = sharing("one-sided-high", start)
    assert np.all(np.diag(low)) and np.all(np.diag(high))
    assert low[1].tolist() == [True, True, True, True]  # the bottom firm learns from all
    assert low[2].tolist() == [False, False, True, False]  # the top firm trains alone
    assert high[2].all() and high[1].tolist() == [False, True, False, False]
    assert np.array_equal(low | high, np.ones((4, 4), dtype=bool))
    assert np.array_equal(low & high, np.eye(4, dtype=bool))
    with pytest.raises(ValueError, match="scheme"):
        sharing("nosuch", start)
    with pytest.raises(ValueError, match="at least two"):
        sharing("complete", np.array([0.5]))


def test_a_shared_gradient_is_the_mean_of_the_gradients_on_each_firms_minibatch():
    setup = NFirmSetup(firms=3, dataset="digits", size=60, target_per_class=20, model="mlp")
    firms = TorchNFirms.prepare(setup, seed=1, device="cpu")
    rows = np.stack([firms.offsets + j for j in range(setup.batch_size)], axis=1)
    start = np.array([0.3, 0.1, 0.2])
    for scheme in ("complete", "one-sided-low", "one-sided-high"):
        share = sharing(scheme, start)
        grads, loss = firms.gradients(firms.params, share, rows)
        for i in range(3):
            own = {k: v[i : i + 1].expand(3, *v.shape[1:]) for k, v in firms.params.items()}
            each, losses = firms.engine.gradients(own, firms.x[rows], firms.y[rows])
            assert float(loss[i]) == pytest.approx(float(losses[share[i]].mean()), rel=1e-5)
            for name, g in grads.items():
                assert torch.allclose(g[i], each[name][share[i]].mean(dim=0), atol=1e-6)


@pytest.mark.parametrize("scheme", ["one-sided-low", "one-sided-high"])
def test_one_sided_schemes_keep_every_step_and_the_firm_that_receives_nothing_trains_alone(
    capsys, scheme
):
    result = _run(capsys, *TINY[:-3], "--rounds", "1", "--json", "--scheme", scheme, "--q-max", "1")
    assert result["scheme"] == scheme and result["firms"] == 3
    assert result["audit"]["refusals"] == [0, 0, 0]
    setup = NFirmSetup(
        firms=3, dataset="digits", size=100, target_per_class=20, model="mlp", lr=0.1
    )
    firms = TorchNFirms.prepare(setup, seed=0, device="cpu")
    alone = firms.fork(5).epoch(firms.params, np.eye(3, dtype=bool))
    share = sharing(scheme, firms.measure())
    shared = firms.fork(5).epoch(firms.params, share)
    loner = int(np.flatnonzero(share.sum(axis=1) == 1)[0])
    for name in alone:  # the same stream: the firm that learns from no one steps alone
        assert torch.allclose(alone[name][loner], shared[name][loner], atol=1e-6)


def test_the_candidates_are_points_of_one_epoch_most_training_first():
    setup = NFirmSetup(
        firms=2, dataset="digits", size=100, target_per_class=20, model="mlp", batch_size=20
    )
    firms = TorchNFirms.prepare(setup, seed=2, device="cpu")
    q = firms.measure()
    walked = firms.fork(7)
    steps = list(walked.walk(firms.params, sharing("complete", q)))
    assert len(steps) == walked.steps == 5
    stacked, fractions = _candidates(firms.fork(7), firms.params, q)
    assert fractions == [1.0, 0.4, 0.2] + [2.0**-h / 5 for h in range(1, setup.halvings + 1)]
    for c, k in enumerate((5, 2, 1)):  # the models after k steps of the same stream
        for name, value in steps[k - 1].items():
            assert torch.equal(stacked[name][2 * c : 2 * c + 2], value)
    first, old = steps[0], firms.params
    for name in old:  # then halfway, a quarter of the way, ... to the first step
        half = old[name] + 0.5 * (first[name] - old[name])
        assert torch.allclose(stacked[name][6:8], half)


def test_the_lower_firms_move_jointly_where_none_can_move_alone():
    """After the top firm's step, firm 0's rise alone lowers firm 2's revenue; with firm 2's
    rise beside it, no revenue falls (four firms, the uniform market)."""
    q = np.array([0.389, 0.887, 0.235, 0.152])
    cap = np.array([0.4638, 0.904, 0.265, 0.1525])
    measured = np.array(
        [[0.95, 0.904, 0.9, 0.9], [0.41, 0.90, 0.25, 0.155], [0.40, 0.89, 0.24, 0.153]]
    )
    usable = (measured >= q) & (measured <= cap)
    floor = market_round(q).revenue

    def point(choice):
        return np.where(choice >= 0, measured[np.maximum(choice, 0), np.arange(q.size)], q)

    def allowed(choice):
        return bool(np.all(market_round(point(choice)).revenue >= floor))

    top = np.array([-1, 0, -1, -1])
    assert allowed(top)
    assert not any(allowed(np.array([j, 0, -1, -1])) for j in (1, 2))
    choice = _joint(measured, usable, q, cap, top, allowed)
    assert choice.tolist() == [1, 0, 2, -1]
    assert allowed(choice)
    assert np.all(point(choice) <= cap)


def test_the_top_firm_alone_does_not_rise_past_its_revenue_at_the_bargain():
    """The top firm's whole epoch (0.9), the low firm where it is, would earn more than at the
    bargain, which no later round could undo (revenues never fall): it keeps its step to 0.7."""
    q = np.array([0.3, 0.5])
    target = quality_bargaining(q, q_max=0.9).quality
    bargain = market_round(target).revenue
    cap = n_firm_step(q, target, pace=2.0)
    measured = np.array([[0.32, 0.9], [0.31, 0.7], [0.3, 0.6]])  # most training first
    assert market_round([0.3, 0.9]).revenue[1] > bargain[1]
    pick = _choose(measured, q, cap, bargain)
    assert pick.tolist() == [0, 1]
    chosen = market_round([0.32, 0.7]).revenue
    assert np.all(chosen >= market_round(q).revenue) and chosen[1] <= bargain[1]
    assert _choose(measured, q, cap, np.full(2, np.inf)).tolist() == [0, 0]
