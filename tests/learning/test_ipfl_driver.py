"""IP-FL's driver: token flows in a real run, seeding, checkpoints, outputs, the command
line, the comparison with the baselines, and seven behavioural claims of Khan et al. (B1, B4,
B5, B6 on one seed at reduced size here; all seven over 3 seeds, and the paper-like sizes,
are marked slow):

- B1: at 10:90 each cluster model is best on a different source distribution (Table 3):
  diagonal minus off-diagonal accuracy >= 15 pp, bidder purity >= 0.9 late in the run;
- B2: less specialisation at 30:70 than at 10:90 (Table 3);
- B3: incentives beat random bids (Table 6, I against NI);
- B4: PMA > 0 against FedAvg for at least 80 % of the clients (Corollary 8.1, Table 5);
- B5: clients with noisy labels contribute less and earn fewer tokens (App. C, the client as
  provider);
- B6: never-scheduled ("unseen") clients personalise within 3 pp of scheduled clients of the
  same mixture (§1, third contribution);
- B7: PMA stabilises, tail oscillation < 2 pp for at least 90 % of the clients (Theorem 4).

The thresholds are collabecon's reading of "most", "similarly" and "stabilises"; B2 and B3
hold only when the margin exceeds the seed-to-seed standard deviation over 3 seeds
(:func:`collabecon.reproductions.ipfl.b_claims`). Two settings: ``rotation`` (§6.1) and the
concept shift ``labels`` (:math:`D_B` relabels :math:`y \to (y + 5) \bmod 10`)."""

import dataclasses
import json
import pickle

import numpy as np
import pytest
import torch

from collabecon.cli import main
from collabecon.cli.ipfl import render
from collabecon.reproductions.ipfl import SCALE_RUNS, reproduce
from collabecon.reproductions.ipfl_claims import (
    CLAIMS,
    PAPER_GAP,
    TABLE3_IPFL,
    b_claims,
    specialisation_gap,
)
from collabecon.reproductions.ipfl_comparison import (
    PUBLISHED_ORDER,
    _baseline_params,
    _row,
    _variant_name,
    compare,
)
from econ.market import market_round
from econ.oligopoly import deviation_gains
from games.ipfl import IPFLConfig, personalised_model
from learning.drivers.ipfl import IPFLRun, build_setup, personalise, run_ipfl
from learning.drivers.ipfl.evaluation import accuracy_matrix, mixture_accuracy
from learning.drivers.ipfl.training import group_training
from learning.engine import ShardedData, parameters_of, sample_batches, select
from learning.federation import make_federation
from learning.optim import AdadeltaConfig

TINY = IPFLRun(dataset="digits", model="linear", clients=8, rounds=3, local_steps=2, eval_every=1)


@pytest.fixture(scope="module")
def tiny_setup():
    return build_setup(TINY)


@pytest.fixture(scope="module")
def tiny_result(tiny_setup):
    return run_ipfl(TINY, setup=tiny_setup)


def test_every_round_conserves_tokens_and_round_zero_is_free(tiny_result):
    n, total = TINY.clients, TINY.clients * TINY.mechanism.tok_init
    first = tiny_result.history[0]
    assert not first["paid"] and first["tokens"] == [TINY.mechanism.tok_init] * n
    for record in tiny_result.history:
        assert abs(sum(record["tokens"]) + sum(record["pools"]) - total) < 1e-9
        assert min(record["tokens"]) >= 0
        assert all(len(set(s)) == len(s) for s in record["selected"])
    q = tiny_result.token_qualities()
    assert abs(q.net_tokens.sum()) < 1e-9  # pools are emptied every paid round
    assert q.model_qualities().quality.shape == (n,)


def test_the_mechanism_state_is_kept(tiny_result):
    n, k = TINY.clients, TINY.clusters
    last = tiny_result.history[-1]
    assert tiny_result.ledger.tokens.tolist() == tiny_result.tokens_end.tolist()
    assert tiny_result.ledger.pools.tolist() == last["pools"]
    state = tiny_result.state
    assert state["bids"].shape == (n, k) and state["bids"].tolist() == last["bids"]
    assert [s.tolist() for s in state["selected"]] == last["selected"]
    assert state["psi"].tolist() == last["psi"] and state["omega"].shape == (k, n)
    assert state["omega"].sum() == sum(len(s) for h in tiny_result.history for s in h["selected"])
    assert len(state["tracker"].acc_max) == k
    assert next(iter(tiny_result.models.values())).shape[0] == k  # the cluster models


def test_a_run_becomes_a_market_in_one_call(tiny_result):
    n = TINY.clients
    q = tiny_result.qualities()
    x, y = tiny_result.federation.target
    assert q.names == tuple(f"client{i}" for i in range(n)) and q.n_eval.tolist() == [len(y)] * n
    # Eq. 8's personalised models, evaluated on the common target set
    ev = tiny_result.engine.evaluate_on(tiny_result.personalised_models, x, y)
    np.testing.assert_array_equal(q.quality, ev.accuracy)
    market = market_round(q)
    assert np.all(market.price >= 0) and np.all(market.share >= 0)
    assert np.all(deviation_gains(q.quality, market.price, grid=401) <= 1e-9)
    own = tiny_result.qualities((x[:7], y[:7]), metric="1-loss")
    assert own.metric == "1-loss" and own.n_eval.tolist() == [7] * n
    with pytest.raises(ValueError, match="metric"):
        tiny_result.qualities(metric="f1")
    with pytest.raises(ValueError, match="target"):
        tiny_result.qualities((x[:0], y[:0]))


def test_the_output_mixture_is_a_market_by_accuracy(tiny_setup):
    run = dataclasses.replace(TINY, rounds=1, personalize="output_mixture")
    result = run_ipfl(run, setup=tiny_setup)
    q = result.qualities()
    x, y = result.federation.target
    n = run.clients
    expected = mixture_accuracy(
        result.engine,
        result.models,
        result.weights,
        ShardedData.from_arrays([x] * n, [y] * n, torch.device("cpu")),
    )
    np.testing.assert_array_equal(q.quality, expected)
    with pytest.raises(ValueError, match="accuracy"):
        result.qualities(metric="1-loss")
    with pytest.raises(ValueError, match="param_avg"):
        _ = result.personalised_models


def test_same_seed_same_run(tiny_setup, tiny_result):
    again = run_ipfl(TINY, setup=build_setup(TINY))
    assert again.summary() == tiny_result.summary()
    assert [h["selected"] for h in again.history] == [h["selected"] for h in tiny_result.history]


def test_summary_has_the_promised_fields(tiny_result):
    s = tiny_result.summary()
    assert set(s) == {
        "tokens_start",
        "tokens_end",
        "cluster_accuracy",
        "pma_mean",
        "pma_positive_share",
        "opt_out_rate",
        "personalised_accuracy_mean",
    }
    assert np.array(s["cluster_accuracy"]).shape == (TINY.clusters, 2)
    assert s["opt_out_rate"] == pytest.approx(1.0 - np.mean(tiny_result.pma > 0))


def test_personalised_model_is_the_weighted_cluster_models(tiny_result):
    models = tiny_result.models
    one_hot = np.zeros((3, TINY.clusters))
    one_hot[:, 1] = 1.0
    p = personalise(models, one_hot)
    ref = select(models, np.ones(3, dtype=np.int64))
    assert all(torch.equal(p[k], ref[k]) for k in p)
    mixed = personalise(models, np.full((1, TINY.clusters), 1.0 / TINY.clusters))
    for k, v in mixed.items():
        assert torch.all(v[0] <= models[k].max(0).values + 1e-6)
        assert torch.all(v[0] >= models[k].min(0).values - 1e-6)


def test_eq8_torch_form_equals_the_mechanism_numpy_form(tiny_result):
    """Eq. 8 has two forms, the mechanism's numpy :func:`games.ipfl.personalised_model` on flat
    vectors and the driver's stacked tensors (:func:`learning.drivers.ipfl.personalise`): the same
    numbers for random importance weights."""
    models = tiny_result.models
    weights = np.random.default_rng(4).dirichlet(np.ones(TINY.clusters), size=5)
    stacked = personalise(models, weights)
    for name, value in models.items():
        flat = value.reshape(TINY.clusters, -1).double().numpy()
        for i in range(5):
            want = personalised_model(weights[i], flat)[0]
            got = stacked[name][i].reshape(-1).double().numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_resume_from_a_checkpoint_ends_like_the_uninterrupted_run(
    tmp_path, tiny_setup, tiny_result
):
    short = dataclasses.replace(TINY, rounds=2)
    run_ipfl(short, setup=tiny_setup, checkpoint_dir=tmp_path)
    resumed = run_ipfl(TINY, setup=tiny_setup, checkpoint_dir=tmp_path, resume=True)
    assert resumed.tokens_end.tolist() == tiny_result.tokens_end.tolist()
    assert all(torch.equal(resumed.models[k], tiny_result.models[k]) for k in resumed.models)
    other = dataclasses.replace(TINY, lr=0.5)
    with pytest.raises(ValueError, match="another run"):
        run_ipfl(other, setup=tiny_setup, checkpoint_dir=tmp_path, resume=True)


def test_reference_code_mode_keeps_integer_tokens(tiny_setup):
    rc = dataclasses.replace(TINY, mechanism=IPFLConfig(code_compat=True, code_shift_round=2))
    assert rc.local_optimizer == "adadelta"
    result = run_ipfl(rc, setup=tiny_setup)
    for record in result.history:
        assert all(float(t).is_integer() for t in record["tokens"])
        assert sum(record["tokens"]) + sum(record["pools"]) == TINY.clients * 100.0
        assert all(len(s) <= 5 + 2 for s in record["selected"])
    assert np.all(np.isfinite(result.personalised_accuracy))


def test_adadelta_matches_torch(tiny_setup):
    """The RC's local optimiser on the batched engine equals ``torch.optim.Adadelta`` on the
    same minibatches (fresh state per call)."""
    ctx = tiny_setup.ctx
    start = {k: v[None] for k, v in tiny_setup.initial.items()}
    steps, batch = ctx.local.steps, ctx.local.batch_size
    ours = ctx.engine.local_sgd(
        start, ctx.train, np.array([3]), steps=steps, batch_size=batch,
        sgd=AdadeltaConfig(lr=1.0), rng=np.random.default_rng(5),
    )  # fmt: skip
    rows = sample_batches(ctx.train.sizes_numpy()[[3]], steps, batch, np.random.default_rng(5))
    rows = rows[0] + int(ctx.train.offsets[3])
    model = ctx.engine.model
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(tiny_setup.initial[name])
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
    for batch_rows in rows:
        opt.zero_grad()
        ctx.engine.task.loss(model(ctx.train.x[batch_rows]), ctx.train.y[batch_rows]).backward()
        opt.step()
    reference = parameters_of(model)
    for name, value in reference.items():
        assert torch.allclose(ours.params[name][0], value, atol=1e-5)


def test_reference_runs_train_with_the_run_optimiser():
    """Under Adadelta the FedAvg/local reference (and the cold start's pre-training) use it
    too: one round of local training on the batched engine equals the loop engine's
    ``torch.optim.Adadelta`` for every client, and differs from SGD at the same rate."""
    run = dataclasses.replace(TINY, optimizer="adadelta", lr=1.0)
    models = {}
    for name, r in [
        ("batched", run),
        ("loop", dataclasses.replace(run, engine="loop")),
        ("sgd", dataclasses.replace(run, optimizer="sgd")),
    ]:
        setup = build_setup(r)
        models[name] = group_training(r, setup, setup.initial, 1, None, 0, "local")
    for name, value in models["loop"].items():
        assert torch.allclose(models["batched"][name], value, atol=1e-5)
        assert not torch.allclose(models["sgd"][name], value, atol=1e-3)


def test_fedsoft_importance_and_output_mixture(tiny_setup, tiny_result):
    """Options beyond the paper: FedSoft's argmin-loss shares as weights, and the output mixture
    (which equals the cluster model when the weights are one-hot)."""
    engine, models = tiny_setup.ctx.engine, tiny_result.models
    one_hot = np.zeros((TINY.clients, TINY.clusters))
    one_hot[:, 1] = 1.0
    mixture = mixture_accuracy(engine, models, one_hot, tiny_setup.ctx.test)
    direct = accuracy_matrix(engine, models, tiny_setup.ctx.test)[:, 1]
    assert mixture == pytest.approx(direct)
    run = dataclasses.replace(TINY, importance="fedsoft", personalize="output_mixture")
    result = run_ipfl(run, setup=tiny_setup)
    assert result.weights.sum(axis=1) == pytest.approx(np.ones(TINY.clients))
    assert np.all((result.personalised_accuracy >= 0) & (result.personalised_accuracy <= 1))
    with pytest.raises(ValueError, match="personalize"):
        IPFLRun(personalize="ensemble")


def test_f1_cold_start_trains_the_kmeans_groups_first():
    run = dataclasses.replace(TINY, cold_start="f1_kmeans", pretrain_rounds=1, f1_classes=4)
    result = run_ipfl(run)
    first = [set(s) for s in result.history[0]["selected"]]
    assert set().union(*first) == set(range(TINY.clients))  # every client in one group
    assert sum(len(s) for s in first) == TINY.clients
    assert not result.history[0]["paid"]
    with pytest.raises(ValueError, match="unseen_share"):
        dataclasses.replace(run, unseen_share=0.2)


def _fake_cifar(root, n_per_batch=40, seed=0):
    """CIFAR-10's python batches (``data`` uint8 (n, 3072), ``labels``) with random images."""
    rng = np.random.default_rng(seed)
    folder = root / "cifar-10-batches-py"
    folder.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {
            b"data": rng.integers(0, 256, size=(n_per_batch, 3072), dtype=np.uint8),
            b"labels": (np.arange(n_per_batch) % 10).tolist(),
        }
        with open(folder / name, "wb") as fh:
            pickle.dump(batch, fh)


def test_cifar_path_runs_end_to_end(tmp_path):
    """CIFAR-10 vs rotated CIFAR-10 (§6.1, following FedSoft) through the whole driver, on a tiny
    file in the CIFAR python format."""
    _fake_cifar(tmp_path)
    run = dataclasses.replace(TINY, dataset="cifar10", model="cnn", clients=6, rounds=2)
    setup = build_setup(run, data_dir=str(tmp_path))
    upright, rotated = setup.sources
    assert upright[0].shape[1:] == (3, 32, 32)
    assert np.array_equal(rotated[0], np.rot90(upright[0], k=1, axes=(-2, -1)))
    result = run_ipfl(run, setup=setup)
    assert result.cluster_accuracy.shape == (2, 2)
    assert abs(result.tokens_end.sum() - 6 * 100.0) < 1e-9


def test_command_line_writes_csv_and_json(tmp_path, capsys):
    argv = [
        "ipfl",
        "--dataset",
        "digits",
        "--model",
        "linear",
        "--clients",
        "8",
        "--rounds",
        "2",
        "--local-steps",
        "2",
        "--no-incentive",
        "--json",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"tokens_start", "tokens_end", "cluster_accuracy", "pma_mean"} <= set(out)
    rows = (tmp_path / "ipfl_rounds.csv").read_text().strip().splitlines()
    assert len(rows) == 3
    saved = json.loads((tmp_path / "ipfl_result.json").read_text())
    assert saved["run"]["mechanism"]["incentive"] is False


def test_command_line_options_reach_the_run(tmp_path, capsys):
    """``--code-compat`` brings Adadelta's learning rate 1.0 unless ``--lr`` is given; the
    personalisation options are passed through and named in ``--compare``-style output."""
    tiny = ["ipfl", "--dataset", "digits", "--model", "linear", "--clients", "8", "--rounds", "2"]
    tiny += ["--local-steps", "2", "--json"]
    assert main([*tiny, "--code-compat", "--out", str(tmp_path / "rc")]) == 0
    saved = json.loads((tmp_path / "rc" / "ipfl_result.json").read_text())
    assert saved["run"]["lr"] == 1.0 and saved["run"]["mechanism"]["code_compat"] is True
    assert saved["run"]["mechanism"]["code_bugs"] is False
    capsys.readouterr()
    assert main([*tiny, "--code-compat", "--code-bugs", "--out", str(tmp_path / "bugs")]) == 0
    bugs = json.loads((tmp_path / "bugs" / "ipfl_result.json").read_text())
    assert bugs["run"]["mechanism"]["code_bugs"] is True
    capsys.readouterr()
    assert main([*tiny, "--code-bugs"]) == 2  # the bugs only come with the reference code
    assert "--code-bugs needs --code-compat" in capsys.readouterr().err
    options = ["--importance", "fedsoft", "--personalize", "output_mixture", "--th-bid", "1.0"]
    assert main([*tiny, *options, "--out", str(tmp_path / "mix")]) == 0
    saved = json.loads((tmp_path / "mix" / "ipfl_result.json").read_text())
    assert saved["run"]["personalize"] == "output_mixture"
    assert saved["run"]["mechanism"]["th_bid"] == 1.0
    assert _variant_name(IPFLRun(personalize="output_mixture")) == "ip-fl (output_mixture)"
    assert _variant_name(IPFLRun()) == "ip-fl"


#: The methods of the comparison with cluster models.
CLUSTERED = {"ip-fl", "ifca", "fedsoft", "fedem"}


def test_compare_runs_every_baseline_on_one_budget_with_its_own_learning_rate(capsys):
    argv = ["ipfl", "--compare", "--dataset", "digits", "--model", "linear", "--clients", "8"]
    argv += ["--rounds", "2", "--local-steps", "2", "--lr-grid", "0.05,0.3"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["rows"]
    names = [r["method"] for r in rows]
    assert names[0] == "ip-fl" and {"fedavg", "fedsoft", "fedem", "per-fedavg"} <= set(names)
    assert out["lr_grid"] == [0.05, 0.3] and out["budget"]["rounds"] == 2
    assert out["budget"]["local_steps"] == 2 and out["budget"]["client_updates_per_round"] >= 1
    for r in rows:  # each method's choice is its best validation accuracy on the grid
        val = r["validation_accuracy_by_lr"]
        assert set(val) == {"0.05", "0.3"} and r["lr"] in (0.05, 0.3)
        assert val[f"{r['lr']:g}"] == max(v for v in val.values() if v is not None)
        assert r["near_chance"] == (r["personalised_accuracy_mean"] < out["chance"] + 0.05)
        # the curve ends at the final accuracy; per-client PMA against FedAvg
        assert [c[0] for c in r["curve"]][-1] == 2
        assert r["curve"][-1][1] == pytest.approx(r["personalised_accuracy_mean"])
        assert len(r["pma"]) == len(r["personalised_accuracy"])
        assert (r["cluster_accuracy"] is None) == (r["method"] not in CLUSTERED)
    fedavg = rows[names.index("fedavg")]
    assert fedavg["pma_mean"] == 0.0 and fedavg["opt_out_rate"] == 1.0  # PMA = 0 is an opt-out
    assert all(0.0 <= r["personalised_accuracy_mean"] <= 1.0 for r in rows)
    ids = [c["id"] for c in out["claims"]]
    assert ids == [f"compare.rotation.10:90.ip-fl>{n}" for n in names[1:]]
    ip = np.array(rows[0]["personalised_accuracy"])
    for c, r in zip(out["claims"], rows[1:], strict=True):
        diff = 100 * (ip - np.array(r["personalised_accuracy"]))
        assert c["holds"] == (diff.mean() > 2 * diff.std(ddof=1) / np.sqrt(diff.size))
    with pytest.raises(ValueError, match="SGD"):
        compare(dataclasses.replace(TINY, optimizer="adadelta"))
    text = render(out)  # the rendered table with the claims
    assert "claims (Khan et al.)" in text and "learning rate of each method" in text
    assert text.count("[ok]") + text.count("[--]") == len(out["claims"])
    assert main(["ipfl", "--lr-grid", "0.1"]) == 2
    assert "--lr-grid needs --compare" in capsys.readouterr().err
    for bad in ("0", "-0.1", "1e308"):
        assert main(["ipfl", "--compare", "--lr-grid", bad]) == 2
        assert "--lr-grid" in capsys.readouterr().err


def test_a_method_near_chance_is_flagged_with_a_note():
    rho = np.full(4, 0.5)
    low = _row("x", np.array([0.1, 0.2, 0.1, 0.15]), rho, 0.1, {0.1: 0.12, 0.3: None}, 0.1)
    assert low["near_chance"] and "within 5 pp of chance (10 %)" in low["note"]
    assert "lr 0.3: diverged" in low["note"]
    fine = _row("x", np.array([0.15, 0.2, 0.15, 0.2]), rho, 0.1, {0.1: 0.2}, 0.1)
    assert not fine["near_chance"] and fine["note"] == ""


def test_baselines_train_with_the_same_local_steps():
    """IFCA by model averaging (option II) and Per-FedAvg's outer step at the chosen rate."""
    assert _baseline_params("ifca", 2, 0.1) == {"n_clusters": 2, "option": "model"}
    assert _baseline_params("per-fedavg", 2, 0.3) == {"beta": 0.3}
    assert _baseline_params("fedsoft", 3, 0.1) == {"clusters": 3}


def test_label_shift_moves_the_labels_of_the_second_distribution():
    """``mixture-relabel`` draws the same examples as ``mixture``; where ``mixture`` rotates an
    image, it keeps the image and moves the label by 5."""
    kw = {"seed": 4, "scheme": "10:90", "label_shift": 5}
    rot = make_federation("digits", "mixture", 6, **kw)
    rel = make_federation("digits", "mixture-relabel", 6, **kw)
    assert rot.clusters.tolist() == rel.clusters.tolist() == [0, 0, 0, 1, 1, 1]
    for a, b in zip(rot.clients, rel.clients, strict=True):
        same = np.all(a.x_train == b.x_train, axis=(1, 2, 3)) & (a.y_train == b.y_train)
        moved = np.all(a.x_train == np.rot90(b.x_train, 1, axes=(-2, -1)), axis=(1, 2, 3))
        moved &= b.y_train == (a.y_train + 5) % 10
        assert np.all(same | moved)
        share = moved.mean()
        assert share > 0.5 if b.cluster == 1 else share < 0.5
    setup = build_setup(dataclasses.replace(TINY, shift="labels"))
    (x0, y0), (x1, y1) = setup.sources
    assert np.array_equal(x0, x1) and np.array_equal(y1, (y0 + 5) % 10)
    with pytest.raises(ValueError, match="shift"):
        IPFLRun(shift="blur")
    with pytest.raises(ValueError, match="shift"):
        IPFLRun(partition="pathological", shift="labels")


def test_command_line_passes_the_shift(tmp_path, capsys):
    argv = ["ipfl", "--dataset", "digits", "--model", "linear", "--clients", "8", "--rounds"]
    argv += ["1", "--local-steps", "1", "--shift", "labels", "--json", "--out", str(tmp_path)]
    assert main(argv) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "ipfl_result.json").read_text())["run"]["shift"] == "labels"


def _seed(
    gap10, gap30, purity=0.95, distinct=True, share=0.9, stable=0.95, i=(80, 70), ni=(60, 60)
):
    split = {"distinct": distinct, "purity": purity, "pma_positive_share": share}
    split |= {"pma_mean_pp": 1.0, "stable_share": stable}

    def cells(gap, lower=0.0):  # both cluster models specialise by ``gap`` pp, ``lower`` below
        high = 0.6 - lower
        low = high - gap / 100
        return [[high, low], [low, high]]

    return {
        "10:90": {**split, "gap_pp": gap10, "best_cell_i": i[0], "best_cell_ni": ni[0]}
        | {
            "cluster_accuracy": cells(gap10),
            "cluster_accuracy_ni": cells(gap10, (i[0] - ni[0]) / 100),
        },
        "30:70": {**split, "gap_pp": gap30, "best_cell_i": i[1], "best_cell_ni": ni[1]}
        | {
            "cluster_accuracy": cells(gap30),
            "cluster_accuracy_ni": cells(gap30, (i[1] - ni[1]) / 100),
        },
        "b5": {"p_psi": 0.01, "p_net": 0.02},
        "b6_gaps_pp": [1.0, -4.0],
    }


def _held(claims):
    return {c.id.split(".", 2)[2]: c.holds for c in claims}


def test_the_published_gaps_and_orderings_are_table_3s_cells():
    """Table 3's IP-FL cells (2 x 2 per split): the clusters specialise at 10:90 and not at
    30:70; B1 and B2 publish the gap of those cells under the measured definition, and the
    orderings against the clustering baselines use IP-FL's best 10:90 cell."""
    assert list(TABLE3_IPFL) == ["10:90", "30:70"]
    assert all(np.asarray(cells).shape == (2, 2) for cells in TABLE3_IPFL.values())
    flags = {s: specialisation_gap(np.asarray(c) / 100)[1] for s, c in TABLE3_IPFL.items()}
    assert flags == {"10:90": True, "30:70": False}
    published = {spec.id.split(".")[-1]: spec.published for spec in CLAIMS}
    assert f"gap {PAPER_GAP['10:90']:.1f} pp" in published["B1"]
    assert f"gap {PAPER_GAP['30:70']:.1f} pp at 30:70" in published["B2"]
    best = float(np.max(TABLE3_IPFL["10:90"]))
    table3 = {m: v for m, v in PUBLISHED_ORDER.items() if v[0].startswith("Table 3")}
    assert table3 and all(ours == best for _, ours, _ in table3.values())


def test_b_claims_sit_at_the_papers_thresholds():
    """B1 at gap 15 pp and purity 0.9; B2/B3 only when the mean margin exceeds its sd over
    the seeds; B4 at 80 %; B5 at p < 0.05 in every seed; B6 at 3 pp for every unseen client;
    B7 at 90 %."""
    at_bar = [_seed(15.0, 5.0, purity=0.9, share=0.8, stable=0.9) for _ in range(3)]
    held = _held(b_claims("labels", at_bar)[0])
    assert all(held.values()) and len(held) == 17, held  # 9 behaviours and 8 per-cluster cells
    for below in (
        [_seed(14.9, 5.0, purity=0.9) for _ in range(3)],
        [_seed(15.0, 5.0, purity=0.89) for _ in range(3)],
        [_seed(20, 5), _seed(20, 5), _seed(20, 5, distinct=False)],
    ):
        assert not _held(b_claims("labels", below)[0])["B1"]
    noisy = [_seed(20, 25), _seed(20, 10), _seed(20, 14)]  # difference -5, 10, 6: mean < sd
    assert not _held(b_claims("rotation", noisy)[0])["B2"]
    close = [_seed(20, 5, i=(80, 70), ni=(79, 71)) for _ in range(3)]  # +1, -1: within spread
    assert not _held(b_claims("rotation", close)[0])["B3"]
    one_far = [_seed(20, 5) for _ in range(2)] + [{**_seed(20, 5), "b6_gaps_pp": [3.1]}]
    assert not _held(b_claims("rotation", one_far)[0])["B6"]
    weak = [_seed(20, 5, share=0.79, stable=0.89) for _ in range(3)]
    held = _held(b_claims("rotation", weak)[0])
    assert not held["10:90.B4"] and not held["30:70.B7"]
    late = [_seed(20, 5) for _ in range(2)] + [
        {**_seed(20, 5), "b5": {"p_psi": 0.01, "p_net": 0.06}}
    ]
    assert not _held(b_claims("rotation", late)[0])["B5"]


def test_bad_configuration_is_a_clear_error():
    with pytest.raises(ValueError, match="partition"):
        IPFLRun(partition="50:50")
    with pytest.raises(ValueError, match="flip_test_view"):
        IPFLRun(partition="pathological", flip_test_view=True)


# ----------------------------------------------------------------------------- B1-B7


def _gap(result):
    """Mean diagonal minus off-diagonal accuracy (pp), clusters matched to their best source."""
    acc = result.cluster_accuracy
    best = acc.argmax(axis=1)
    diag = acc[np.arange(len(best)), best]
    off = acc[np.arange(len(best)), 1 - best]
    return 100 * float(np.mean(diag - off)), best


def _late_purity(result):
    tail = result.history[-max(1, len(result.history) // 5) :]
    return float(np.nanmean([h["bidder_purity"] for h in tail]))


REDUCED = SCALE_RUNS["small"]


@pytest.fixture(scope="module")
def reduced_runs():
    return {
        shift: run_ipfl(dataclasses.replace(REDUCED, partition="10:90", shift=shift))
        for shift in ("rotation", "labels")
    }


def _b1(result):
    gap, best = _gap(result)
    assert sorted(best.tolist()) == [0, 1]
    assert gap >= 15.0
    assert _late_purity(result) >= 0.9


@pytest.mark.xfail(
    strict=True,
    reason="B1 not reproduced under rotation at reduced size (20 digits clients, 10 rounds, "
    "seed 0): the clusters specialise (diag - off-diag 34.4 pp) but the late bidder purity is "
    "0.80, not 0.9 (seeds 0-2: 0.83 +- 0.03)",
)
def test_b1_reduced_clusters_specialise_at_10_90(reduced_runs):
    """B1 at reduced size, at the paper's bars (gap 15 pp, purity 0.9)."""
    _b1(reduced_runs["rotation"])


def test_b1_reduced_clusters_specialise_under_the_label_shift(reduced_runs):
    """B1 where one model cannot serve both distributions (measured, seed 0: gap 68.6 pp,
    purity 0.975)."""
    _b1(reduced_runs["labels"])


@pytest.mark.xfail(
    strict=True,
    reason="not reproduced at reduced size (20 digits clients, 10 rounds, seed 0): PMA > 0 for "
    "45 % of clients (mean PMA +1.8 pp; FedAvg 76.4 %, IP-FL 78.2 %); with FedSoft weights and "
    "the output mixture also 45 % (+1.1 pp). A client's test set has about 14 examples, and a "
    "tie (PMA = 0) counts as an opt-out",
)
def test_b4_reduced_most_clients_gain_over_fedavg(reduced_runs):
    assert np.mean(reduced_runs["rotation"].pma > 0) >= 0.8


def test_b4_reduced_most_clients_gain_under_the_label_shift(reduced_runs):
    """B4 where one model cannot serve both distributions (measured, seed 0: PMA > 0 for
    85 % of the clients)."""
    assert np.mean(reduced_runs["labels"].pma > 0) >= 0.8


def _b5_statistics(run):
    """One-sided Mann-Whitney p-values of "noisy < clean" for the mean ψ over the paid rounds
    and for the net tokens (B5)."""
    from scipy.stats import mannwhitneyu

    setup = build_setup(run)
    result = run_ipfl(run, setup=setup)
    noisy = np.zeros(run.clients, dtype=bool)
    noisy[setup.noisy] = True
    psi = np.array([np.array(h["psi"]).sum(axis=0) for h in result.history[1:]]).mean(axis=0)
    net = result.tokens_end - result.tokens_start
    p_psi = mannwhitneyu(psi[noisy], psi[~noisy], alternative="less").pvalue
    p_net = mannwhitneyu(net[noisy], net[~noisy], alternative="less").pvalue
    return p_psi, p_net


def _b6_gaps(run):
    """Personalised accuracy of the clients with the same majority distribution that were
    scheduled, minus that of each never-scheduled client (pp; B6)."""
    setup = build_setup(run)
    result = run_ipfl(run, setup=setup)
    assert set(setup.unseen.tolist()) <= set(result.never_selected.tolist())
    seen = np.setdiff1d(np.arange(run.clients), setup.unseen)
    acc = result.personalised_accuracy
    return [
        100 * (acc[seen[setup.majority[seen] == setup.majority[u]]].mean() - acc[u])
        for u in setup.unseen
    ]


def test_b5_reduced_noisy_providers_earn_less():
    """B5 at reduced size: 4 of 20 ``digits`` clients with half their training labels
    flipped have lower contributions and end with fewer tokens than the clean ones
    (measured, seed 0: ψ p = 0.006, net tokens p = 0.029)."""
    p_psi, p_net = _b5_statistics(dataclasses.replace(REDUCED, noisy_share=0.2, noise_rate=0.5))
    assert p_psi < 0.05 and p_net < 0.05


@pytest.mark.xfail(
    strict=True,
    reason="B6 not reproduced at reduced size (2 never-scheduled digits clients, seed 0): "
    "gaps +4.0 and -27.8 pp; one test example is about 7 pp here (seeds 0-2 under rotation: "
    "largest gap 6.2 pp, mean -2.1 +- 13.0 pp over 6 clients)",
)
def test_b6_reduced_unseen_clients_personalise_as_well():
    """B6 at reduced size, at the paper's 3 pp."""
    assert all(gap <= 3.0 for gap in _b6_gaps(dataclasses.replace(REDUCED, unseen_share=0.1)))


PAPER_LIKE = IPFLRun(
    dataset="mnist5k",
    model="mlp",
    clients=20,
    rounds=60,
    local_steps=10,
    eval_every=6,
    mechanism=IPFLConfig(perf_share=0.5),
)


@pytest.fixture(scope="module")
def paper_like_runs():
    return {"10:90": run_ipfl(dataclasses.replace(PAPER_LIKE, partition="10:90"))}


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="not reproduced (60 rounds, 20 mnist5k clients, MLP, seed 0): the clusters are best "
    "on different distributions (c0 87.5 % on rotated, c1 86.6 % on upright digits) but "
    "diag - off-diag is 1.85 pp, not 15 (paper about 21 pp); once both models pass 90 % on a "
    "client's validation data the bid threshold 0.9 makes it bid for both. With argmax bids "
    "only (th_bid=1.0, the RC's active code) the gap is 6.3 pp and the late purity 0.73",
)
def test_b1_clusters_specialise_at_10_90(paper_like_runs):
    gap, best = _gap(paper_like_runs["10:90"])
    assert sorted(best.tolist()) == [0, 1]
    assert gap >= 15.0
    assert _late_purity(paper_like_runs["10:90"]) >= 0.9


#: B1-B7 over seeds 0-2 at the small scale (:data:`collabecon.reproductions.ipfl.SCALE_RUNS`),
#: under rotation and under the label shift: the claims that do not hold, with the measured
#: numbers (mean +- sd over the seeds).
NOT_HELD_SMALL = {
    "ipfl.rotation.B1": "gap 34.6 +- 3.1 pp, but late bidder purity 0.83 +- 0.03 < 0.9",
    "ipfl.rotation.B3": "I minus NI 3.5 +- 5.4 pp, within the spread (10:90 +7.8, 30:70 -0.7 pp)",
    "ipfl.rotation.10:90.B4": "PMA > 0 for 35 +- 13 % of the clients (avg PMA +0.24 pp)",
    "ipfl.rotation.30:70.B4": "PMA > 0 for 33 +- 15 % of the clients (avg PMA +0.60 pp)",
    "ipfl.rotation.B6": "largest gap 6.2 pp over 6 unseen clients (mean -2.1 +- 13.0 pp)",
    "ipfl.rotation.10:90.B7": "stable PMA for 43 +- 13 % of the clients",
    "ipfl.rotation.30:70.B7": "stable PMA for 35 +- 0 % of the clients",
    "ipfl.labels.30:70.B4": "PMA > 0 for 42 +- 21 % of the clients (avg PMA +1.90 pp)",
    "ipfl.labels.B5": "p(psi) 0.040, 0.106, 0.061; p(tokens) 0.089, 0.040, 0.061",
    "ipfl.labels.B6": "largest gap 11.1 pp over 6 unseen clients (mean -2.6 +- 14.8 pp)",
    "ipfl.labels.10:90.B7": "stable PMA for 32 +- 12 % of the clients",
    "ipfl.labels.30:70.B7": "stable PMA for 23 +- 3 % of the clients",
}
CLAIM_IDS = [
    f"ipfl.{setting}.{claim}"
    for setting in ("rotation", "labels")
    for claim in ("B1", "B2", "B3", "10:90.B4", "30:70.B4", "B5", "B6", "10:90.B7", "30:70.B7")
]


@pytest.fixture(scope="module")
def small_reproduction(tmp_path_factory):
    return reproduce("small", tmp_path_factory.mktemp("ipfl"), seeds=3)


@pytest.mark.slow
@pytest.mark.parametrize(
    "claim_id",
    [
        pytest.param(
            c,
            marks=pytest.mark.xfail(strict=True, reason=f"{NOT_HELD_SMALL[c]} (3 seeds)"),
        )
        if c in NOT_HELD_SMALL
        else c
        for c in CLAIM_IDS
    ],
)
def test_b1_to_b7_over_three_seeds(small_reproduction, claim_id):
    """B1-B7 at the paper's thresholds over 3 seeds; B2 and B3 hold only when the margin
    exceeds its seed-to-seed standard deviation. Held at the small scale: rotation B2 (25.4 +-
    4.8 pp) and B5; under the label shift B1 (gap 75.8 +- 6.2 pp, purity 0.97), B2 (45.0 +-
    12.8 pp), B3 (18.3 +- 11.5 pp) and B4 at 10:90 (92 +- 8 %)."""
    claims = {c.id: c for c in small_reproduction.claims if c.id.startswith("ipfl.")}
    assert set(claims) == set(CLAIM_IDS)
    assert claims[claim_id].holds


#: The personalisation variants tried for B4 and B7 at 10:90: the paper's
#: IP-FL (accuracy weights, Eq. 8), FedSoft's argmin-loss weights with the output mixture, and
#: the same after the per-class-F1 cold start. The FedAvg reference of these runs reaches
#: 88.3 % on both source distributions; the cluster specialists 89.6-90.1 % on theirs and
#: 79-82 % on the other, so specialisation gains at most about 1.8 pp on a client's majority
#: distribution, while one of a client's 40 test examples is 2.5 pp. Seeds 1 and 2 of the
#: paper's IP-FL give the same picture: PMA > 0 for 20 % and 25 % of clients (mean -1.13 and
#: -1.38 pp), tail oscillation < 2 pp for 70 % and 75 %.
VARIANTS = {
    "ip-fl": ({}, 0.15, -1.0, 0.50),
    "fedsoft-mixture": (
        {"importance": "fedsoft", "personalize": "output_mixture"},
        0.25,
        -0.88,
        0.55,
    ),
    "f1-cold-start": (
        {"importance": "fedsoft", "personalize": "output_mixture", "cold_start": "f1_kmeans"},
        0.25,
        -0.5,
        0.60,
    ),
}


@pytest.fixture(scope="module")
def variant_runs(paper_like_runs):
    runs = {"ip-fl": paper_like_runs["10:90"]}
    for name, (options, *_) in VARIANTS.items():
        if name not in runs:
            runs[name] = run_ipfl(dataclasses.replace(PAPER_LIKE, **options))
    return runs


def _not_reproduced(claim):
    return [
        pytest.param(
            name,
            marks=pytest.mark.xfail(
                strict=True,
                reason=f"{claim} not reproduced ({name}; 60 rounds, 20 mnist5k clients, MLP, "
                f"seed 0): PMA > 0 for {100 * share:.0f} % of clients (mean PMA {mean:+.2f} pp), "
                f"PMA tail oscillation < 2 pp for {100 * stable:.0f} %",
            ),
        )
        for name, (_, share, mean, stable) in VARIANTS.items()
    ]


@pytest.mark.slow
@pytest.mark.parametrize("variant", _not_reproduced("B4"))
def test_b4_most_clients_gain_over_fedavg(variant_runs, variant):
    assert np.mean(variant_runs[variant].pma > 0) >= 0.8


@pytest.mark.slow
def test_b5_noisy_providers_earn_less():
    """Measured (40 rounds, seed 0): ψ p = 0.0002, net tokens p = 0.032 (noisy -2.26, clean
    +0.57 tokens on average)."""
    p_psi, p_net = _b5_statistics(
        dataclasses.replace(PAPER_LIKE, rounds=40, noisy_share=0.2, noise_rate=0.5)
    )
    assert p_psi < 0.05 and p_net < 0.05


@pytest.mark.slow
def test_b6_unseen_clients_personalise_as_well():
    """Measured (40 rounds, seed 0): the two unseen clients reach 85.0 % and 87.5 %, their
    scheduled peers 84.2 % and 81.7 % (gaps -0.8 and -5.8 pp)."""
    assert all(gap <= 3.0 for gap in _b6_gaps(dataclasses.replace(PAPER_LIKE, unseen_share=0.1)))


@pytest.mark.slow
def test_b4_against_local_training_holds():
    """App. G: "even if we take local training as the threshold the results will be the
    same". Against local training (not B4's FedAvg) PMA > 0 for every client: measured
    100 %, mean PMA +15.1 pp (local 69.9 %, IP-FL 85.0 %; 60 rounds, seed 0)."""
    result = run_ipfl(dataclasses.replace(PAPER_LIKE, rho="local"))
    assert np.mean(result.pma > 0) >= 0.8


@pytest.mark.slow
@pytest.mark.parametrize("variant", _not_reproduced("B7"))
def test_b7_pma_stabilises(variant_runs, variant):
    result = variant_runs[variant]
    evals = np.array(
        [h["personalised_accuracy"] for h in result.history if "personalised_accuracy" in h]
    )
    pma_t = 100 * (evals - result.reference_accuracy[None, :])
    tail = pma_t[-max(2, len(pma_t) // 5) :]
    oscillation = np.abs(tail - pma_t[-1][None, :]).max(axis=0)
    assert np.mean(oscillation < 2.0) >= 0.9
