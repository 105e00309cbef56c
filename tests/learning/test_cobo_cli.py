"""``collabecon cobo`` and :mod:`collabecon.reproductions.cobo`: output shape, files, errors, the
learning-rate search on validation data and the claim machinery (Tables 1 and 2, Figures 3, 6
and 9) on tiny runs and stand-ins; and, as slow tests, the claims of Hashemi, He and Jaggi 2024
(Sections 4.1-4.2, Tables 1 and 2, Figures 6 and 8) about the cross-silo and cross-device
experiments and the pair-sampling strategies at the small scale (300 rounds, 3 seeds), each
asserted at the paper's threshold, those that do not hold at this scale as strict xfails whose
reasons give the measured numbers (mean ± std over the seeds 0, 1, 2; percent)."""

import json

import numpy as np
import pytest

import collabecon.reproductions.cobo as experiment
from collabecon.cli import main
from collabecon.reproductions.cobo import (
    ABLATIONS,
    METHODS,
    SAMPLING,
    SETTINGS,
    claims,
    run_ablation,
    run_method,
    run_sampling,
    run_setting,
)
from collabecon.reproductions.cobo_claims import (
    PAPER,
    PAPER_LOSS,
    PAPER_SAMPLING,
)
from collabecon.reproductions.cobo_methods import ABLATION_SETTINGS, ablation_setting
from collabecon.reproductions.cobo_results import (
    CHANCE,
    TrainingRun,
    match_round,
    mistake_rounds,
    summarise,
    summarise_sampling,
)
from collabecon.reproductions.cobo_sampling_claims import (
    ABLATION_CLAIMS,
    SAMPLING_CLAIMS,
    sampling_claims,
)
from econ.claims import evaluate


def _run(capsys, *argv):
    code = main(["cobo", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


# --------------------------------------------------------------------------- tiny runs


@pytest.mark.slow
def test_reduced_cross_silo_run_has_the_promised_shape(capsys, tmp_path):
    argv = ("--rounds", "3", "--seeds", "2", "--methods", "cobo,oracle,local,fedavg")
    code, result = _run(capsys, *argv, "--lr-grid", "0.05,0.1", "--out", str(tmp_path))
    assert code == 0
    assert set(result["accuracy"]) == {"cobo", "oracle", "local", "fedavg"}
    assert set(result["paper"]) == set(result["accuracy"])
    assert result["seeds"] == [0, 1]
    assert all(len(v) == 2 for v in result["accuracy_per_seed"].values())
    for key, per_seed in result["accuracy_per_seed"].items():
        assert result["accuracy"][key] == pytest.approx(np.mean(per_seed))
        assert result["accuracy_std"][key] == pytest.approx(np.std(per_seed, ddof=1))
    # the grid and each method's choice: the best validation accuracy of the grid
    assert result["tuning"]["grid"] == [0.05, 0.1]
    for key, tuned in result["tuning"]["methods"].items():
        scores = {float(lr): a for lr, a in tuned["grid"].items()}
        assert set(scores) == {0.05, 0.1}
        assert tuned["chosen"] == max(scores, key=lambda lr: (scores[lr], -lr)), key
    ids = {c["id"] for c in result["claims"]}
    assert {"cross-silo.oracle>cobo", "cross-silo.cobo>local", "cross-silo.local>fedavg"} <= ids
    assert {"cross-silo.cobo-best-non-oracle", "cross-silo.cobo-near-oracle"} <= ids
    assert "cross-silo.weights-recover-clusters" in ids and "cross-silo.improved.cobo" in ids
    assert not any("ditto" in i or "ifca" in i or "fc" in i.split(".")[1] for i in ids)
    w = np.array(result["final_weights"])
    assert w.shape == (8, 8) and np.array_equal(w, w.T) and w.min() >= 0 and w.max() <= 1
    assert len(result["weights_match_oracle"]) == 2
    png, csv = (tmp_path / "cobo_weights_cross-silo.png", tmp_path / "cobo_weights_cross-silo.csv")
    assert png.stat().st_size > 0
    assert len(csv.read_text().splitlines()) == 1 + 3 * 28  # header + rounds x pairs
    assert (tmp_path / "accuracy_curves_cross-silo.png").stat().st_size > 0
    # every method's loss and accuracy curve (evaluated every round in a 3-round run)
    assert set(result["loss"]) == set(result["accuracy"]) and min(result["loss"].values()) > 0
    assert {"cross-silo.loss:cobo<local", "cross-silo.loss:oracle<fedavg"} <= ids
    assert [r for r, _ in result["mean_curves"]["local"]] == [1, 2, 3]


def test_rendered_output_has_the_claims_table_and_the_grid(capsys):
    argv = ["cobo", "--rounds", "2", "--seeds", "1", "--methods", "cobo,local", "--lr-grid", "0.1"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "cross-silo.cobo>local" in text and "claims hold" in text
    assert "validation acc. per lr" in text and "0.1: " in text
    assert "one seed: no seed-to-seed spread" in text


@pytest.mark.slow
def test_code_momentum_reaches_every_method_but_fc(capsys):
    argv = ("--rounds", "3", "--seeds", "1", "--lr", "paper", "--methods", ",".join(METHODS))
    plain = _run(capsys, *argv)[1]
    code = _run(capsys, *argv, "--momentum", "code")[1]
    assert (plain["momentum"], code["momentum"]) == ("none", "code")
    assert code["accuracy"]["fc"] == plain["accuracy"]["fc"]  # raw gradients in the code too
    assert code["final_weights"] != plain["final_weights"]  # CoBo's models moved differently
    moved = [m for m in METHODS if m != "fc" and code["accuracy"][m] != plain["accuracy"][m]]
    assert len(moved) >= 4, moved
    assert plain["tuning"]["grid"] == [] and plain["tuning"]["methods"]["fc"]["chosen"] == 0.05


def test_same_seed_same_numbers(capsys):
    argv = ("--rounds", "2", "--seeds", "1", "--lr-grid", "0.1", "--methods", "cobo")
    first, second = (_run(capsys, *argv, "--setting", "cross-device")[1] for _ in range(2))
    assert first["accuracy"] == second["accuracy"] and first["clients"] == 20
    assert first["final_weights"] == second["final_weights"]


def test_bad_input_is_a_one_line_error(capsys):
    assert main(["cobo", "--methods", "cobo,magic"]) == 2
    assert "methods must be among" in capsys.readouterr().err
    assert main(["cobo", "--rounds", "0"]) == 2
    assert main(["cobo", "--seeds", "0"]) == 2
    assert "--seeds" in capsys.readouterr().err
    assert main(["cobo", "--lr-grid", "-0.1", "--methods", "local"]) == 2
    assert "--lr-grid" in capsys.readouterr().err
    with pytest.raises(ValueError, match="momentum"):
        run_setting("cross-silo", ["local"], rounds=1, momentum="adam")
    with pytest.raises(ValueError, match="workers"):
        run_setting("cross-silo", ["local"], rounds=1, workers=0)


def test_fc_records_its_clusters_every_round(capsys, tmp_path):
    argv = ("--rounds", "2", "--seeds", "1", "--lr-grid", "0.05", "--methods", "fc,local")
    result = _run(capsys, *argv, "--out", str(tmp_path))[1]
    assert result["fc_late_from"] == 2 and len(result["fc_mistake_rounds"]) == 1
    assert set(result["fc_mistake_rounds"][0]) <= {1, 2}
    rows = (tmp_path / "fc_clusters_cross-silo.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 28 and {r.split(",")[-1] for r in rows[1:]} <= {"0", "1"}
    assert "cross-silo.fc-mistakes-at-end" in {c["id"] for c in result["claims"]}


def test_mistake_rounds_are_the_rounds_off_the_oracle():
    clusters = np.array([0, 0, 1, 1])
    oracle = (clusters[:, None] == clusters[None]).astype(float)
    wrong = oracle.copy()
    wrong[0, 2] = 1.0  # client 0 takes client 2 in
    assert mistake_rounds([oracle, wrong, oracle, wrong], clusters) == [2, 4]
    assert mistake_rounds([oracle + np.eye(4)], clusters) == []  # the diagonal is not judged


def test_match_round_is_the_start_of_the_last_matching_stretch():
    clusters = np.array([0, 0, 1])
    good = np.array([[1, 0.9, 0.1], [0.9, 1, 0.2], [0.1, 0.2, 1]])
    bad = np.ones((3, 3))
    assert match_round([bad, good, bad, good, good], clusters) == 4
    assert match_round([good, good], clusters) == 1
    assert match_round([good, bad], clusters) is None


def _fake_train(validation_by_lr, test_by_lr):
    """A stand-in for one training run: per-client accuracies that depend on the rate."""

    def train(key, setting, data, *, lr, rounds, seed, schedule, momentum):
        n = setting.clients
        return TrainingRun(
            test=np.full(n, test_by_lr[lr] + 0.001 * seed),
            loss=np.full(n, 1.0 - test_by_lr[lr]),
            validation=np.full(n, validation_by_lr[lr]),
            curve=[],
            weights=[],
            assignment=None,
        )

    return train


def test_the_learning_rate_is_chosen_on_validation_data_never_on_test(monkeypatch):
    # validation favours 0.05, test favours 0.1: the choice follows validation
    monkeypatch.setattr(
        experiment,
        "_train",
        _fake_train({0.01: 0.5, 0.05: 0.7, 0.1: 0.6}, {0.01: 0.2, 0.05: 0.3, 0.1: 0.9}),
    )
    tuned = run_method("cross-silo", "local", rounds=5, seeds=3)
    assert tuned.chosen == 0.05 and tuned.tuning == {0.01: 0.5, 0.05: 0.7, 0.1: 0.6}
    assert [float(r.test.mean()) for r in tuned.runs] == pytest.approx([0.3, 0.301, 0.302])
    paper = run_method("cross-silo", "fc", rounds=5, learning_rates="paper")
    assert paper.chosen == 0.05 and paper.tuning == {}


def _result(accuracy, std=None, *, setting="cross-device", seeds=3, **extra):
    std = std or {}
    result = {
        "setting": setting,
        "rounds": 300,
        "seeds": list(range(seeds)),
        "accuracy": accuracy,
        "accuracy_std": {k: std.get(k, 0.001) for k in accuracy},
        "improved_over_local": {},
        "chance": CHANCE[setting],
        "near_chance": {},
        "curves": {},
        "ifca_models_used": [],
        "weights_match_round": None,
    }
    result.update(extra)
    return result


def test_claims_are_judged_on_the_means_at_the_papers_thresholds():
    paper = PAPER["cross-device"]
    by_id = {c.id: c for c in claims(_result(dict(paper)))}
    # the paper's own numbers satisfy every ordering and margin it states
    assert all(c.holds for c in by_id.values()), [i for i, c in by_id.items() if not c.holds]
    assert len([i for i in by_id if ">" in i]) == 21  # every pair of the 7 methods
    # 5.6 points over the best baseline is short of "at least 5.7"
    close = dict(paper, ditto=paper["cobo"] - 0.056)
    assert not {c.id: c for c in claims(_result(close))}["cross-device.cobo-margin-5.7"].holds
    # Local above CoBo: the ordering and "best non-oracle" fail, by the means
    swapped = dict(paper, local=paper["cobo"] + 0.004)
    got = {c.id: c for c in claims(_result(swapped, {"local": 0.01}))}
    assert not got["cross-device.cobo>local"].holds
    assert not got["cross-device.cobo-best-non-oracle"].holds
    assert "within the seed spread" in got["cross-device.cobo>local"].note  # 0.4 < 1.0 pts


def test_claims_of_time_clusters_and_chance():
    acc = dict(PAPER["cross-silo"])
    never = [(15, 0.3), (30, 0.5)]
    result = _result(
        acc,
        setting="cross-silo",
        curves={"cobo": [never], "ditto": [never]},
        ifca_models_used=[1, 1, 2],
        weights_match_round=[30, 20, None],
        weight_error=[0.0, 0.0, 0.3],
        near_chance={"fedavg": "one shared model"},
    )
    got = {c.id: c for c in claims(result)}
    assert not got["cross-silo.cobo-60-sooner"].holds  # neither reaches 60%: not sooner
    result["curves"] = {"cobo": [[(15, 0.7)]], "ditto": [[(15, 0.3), (30, 0.65)]]}
    assert {c.id: c for c in claims(result)}["cross-silo.cobo-60-sooner"].holds  # 15 <= 21
    assert not got["cross-silo.ifca-one-cluster"].holds
    assert not got["cross-silo.weights-recover-clusters"].holds  # one seed never settles
    result["weights_match_round"] = [30, 20, 40]  # 10% of 300 rounds <= 12.5%
    assert {c.id: c for c in claims(result)}["cross-silo.weights-recover-clusters"].holds
    assert "within 5 pts of chance" in got["cross-silo.local>fedavg"].note


def test_loss_fc_and_curve_claims():
    acc = {k: PAPER["cross-silo"][k] for k in ("cobo", "local", "fc")}
    loss = {k: PAPER_LOSS["cross-silo"][k] for k in acc}
    result = _result(
        acc,
        setting="cross-silo",
        loss=loss,
        loss_std={k: 0.01 for k in acc},
        fc_mistake_rounds=[[3, 280, 295], [290]],
        fc_late_from=271,
    )
    got = {c.id: c for c in claims(result)}
    assert got["cross-silo.loss:cobo<local"].holds and got["cross-silo.loss:local<fc"].holds
    assert got["cross-silo.fc-mistakes-at-end"].holds  # both seeds err late, match elsewhere
    result["loss"] = dict(loss, cobo=loss["local"] + 0.005)
    assert not {c.id: c for c in claims(result)}["cross-silo.loss:cobo<local"].holds
    assert (
        "within the seed spread"
        in {c.id: c for c in claims(result)}["cross-silo.loss:cobo<local"].note
    )
    result["fc_mistake_rounds"] = [[3, 280], [5]]  # the second seed is right at the end
    assert not {c.id: c for c in claims(result)}["cross-silo.fc-mistakes-at-end"].holds
    result["fc_mistake_rounds"] = [list(range(1, 301)), [290]]  # never at the oracle: not periodic
    assert not {c.id: c for c in claims(result)}["cross-silo.fc-mistakes-at-end"].holds
    curves = {"cobo": [(150, 0.5), (300, 0.9)], "ditto": [(150, 0.6), (300, 0.8)]}
    device = _result({"cobo": 0.9, "ditto": 0.8}, mean_curves=curves)
    curve = {c.id: c for c in claims(device)}["cross-device.curve:cobo>ditto"]
    assert curve.holds and curve.measured == "90.0 vs 80.0"  # the second half only


def _sampling_result(accuracy, loss, seeds=3):
    return {
        "setting": "sampling",
        "seeds": list(range(seeds)),
        "accuracy": accuracy,
        "accuracy_std": {k: 0.002 for k in accuracy},
        "loss": loss,
        "loss_std": {k: 0.01 for k in loss},
    }


def test_table1_claims_hold_on_the_papers_numbers_and_fail_off_them():
    acc = {k: a / 100 for k, (a, _) in PAPER_SAMPLING.items()}
    loss = {k: v for k, (_, v) in PAPER_SAMPLING.items()}
    got = {c.id: c for c in sampling_claims(_sampling_result(acc, loss))}
    assert set(got) == {s.id for s in SAMPLING_CLAIMS} and all(c.holds for c in got.values())
    assert len([i for i in got if ">" in i]) == 6 and len([i for i in got if "<" in i]) == 6
    assert "slight performance advantage" in got["sampling.mixed>constant"].statement
    # constant 2 points below no sampling: farther than Table 1's 1.88; the spread grows too
    off = dict(acc, constant=acc["all"] - 0.02)
    got = {c.id: c for c in sampling_claims(_sampling_result(off, loss))}
    assert not got["sampling.constant-near-all"].holds and not got["sampling.consistent"].holds
    assert got["sampling.mixed-near-all"].holds
    # mixed below time-dependent: no advantage
    got = {c.id: c for c in sampling_claims(_sampling_result(dict(acc, mixed=0.731), loss))}
    assert not got["sampling.mixed>time"].holds and got["sampling.mixed>constant"].holds


def test_sampling_runs_every_strategy_with_its_own_learning_rate(monkeypatch):
    monkeypatch.setattr(
        experiment, "_train", _fake_train({0.1: 0.6, 0.05: 0.7}, {0.1: 0.5, 0.05: 0.6})
    )
    result = run_sampling(rounds=5, seeds=1, grid=(0.05, 0.1))
    assert list(result["accuracy"]) == list(SAMPLING) == ["constant", "time", "mixed", "all"]
    assert all(t["chosen"] == 0.05 for t in result["tuning"].values())
    assert result["accuracy"]["mixed"] == pytest.approx(0.6)
    assert result["loss"]["all"] == pytest.approx(0.4)
    assert {c["id"] for c in result["claims"]} == {s.id for s in SAMPLING_CLAIMS}
    with pytest.raises(ValueError, match="schedule"):
        run_sampling(rounds=5, schedules=("sometimes",))
    runs = {"mixed": run_method("cross-silo", "cobo", rounds=5, grid=(0.1,), schedule="all")}
    with pytest.raises(ValueError, match="own schedule"):
        summarise_sampling(runs)


def test_ablation_sweeps_every_factor_and_judges_figure_3(monkeypatch):
    def train(key, setting, data, *, lr, rounds, seed, schedule, momentum):
        params = setting.partition_params
        n = setting.clients
        # more data per cluster: higher accuracy; clusters and cluster size: no effect
        acc = 0.5 + 0.3 * params["fraction"]
        return TrainingRun(np.full(n, acc), np.full(n, 1 - acc), np.full(n, acc), [], [], None)

    monkeypatch.setattr(experiment, "_train", train)
    result = run_ablation(rounds=5, seeds=1, grid=(0.1,))
    assert result["factors"]["fraction"]["values"] == list(ABLATIONS["fraction"])
    assert result["factors"]["clusters"]["values"] == list(ABLATIONS["clusters"])
    got = {c["id"]: c for c in result["claims"]}
    assert set(got) == {s.id for s in ABLATION_CLAIMS} and all(c["holds"] for c in got.values())
    assert got["ablation.fraction-increases"]["measured"]["0.125"] == pytest.approx(53.8, abs=0.1)
    flat = run_ablation(rounds=5, seeds=1, grid=(0.1,), factors=("fraction",))
    assert set(flat["factors"]) == {"fraction"}
    with pytest.raises(ValueError, match="factor"):
        run_ablation(rounds=5, factors=("depth",))


def test_ablation_claims_fail_off_the_papers_shape():
    def result(fraction, clusters, size):
        values = {"fraction": (0.25, 0.5, 1.0), "clusters": (2, 4, 8), "cluster-size": (2, 4, 6)}
        acc = {"fraction": fraction, "clusters": clusters, "cluster-size": size}
        factors = {f: {"values": list(v), "accuracy": acc[f]} for f, v in values.items()}
        return {"setting": "ablation", "factors": factors}

    good = evaluate(ABLATION_CLAIMS, result([0.6, 0.7, 0.8], [0.8, 0.81, 0.79], [0.8, 0.79, 0.785]))
    assert all(c.holds for c in good)
    bad = {
        c.id: c.holds
        for c in evaluate(
            ABLATION_CLAIMS, result([0.6, 0.7, 0.69], [0.8, 0.75, 0.79], [0.8, 0.8, 0.77])
        )
    }
    assert bad == {
        "ablation.fraction-increases": False,
        "ablation.clusters-flat": False,  # 5 points apart, more than 2
        "ablation.cluster-size-robust": False,  # 3 points below, more than 2
    }


def test_the_federations_of_figure_3():
    assert ablation_setting("fraction", 0.25).partition_params["fraction"] == 0.25
    assert ablation_setting("clusters", 6).clients == 12
    size = ablation_setting("cluster-size", 3)
    assert (size.clients, size.partition_params["n_clusters"]) == (12, 4)
    assert set(ABLATION_SETTINGS) >= {"cross-silo/fraction=0.125", "cross-silo/cluster-size=6"}
    with pytest.raises(ValueError, match="factor"):
        ablation_setting("depth", 2)


def test_summarise_refuses_runs_of_different_settings(monkeypatch):
    monkeypatch.setattr(experiment, "_train", _fake_train({0.1: 0.5}, {0.1: 0.5}))
    a = run_method("cross-silo", "local", rounds=5, grid=(0.1,))
    b = run_method("cross-silo", "cobo", rounds=6, grid=(0.1,))
    with pytest.raises(ValueError, match="share"):
        summarise({"local": a, "cobo": b})


# --------------------------------------------------------------------------- the paper's claims

# Measured at the small scale (300 rounds, seeds 0-2, learning rates from the grid on validation
# data) with mean ± std over the seeds in percent; Table 2 of the paper next to it.
SHORT_OF_THE_PAPER = {
    "cross-silo.cobo>fc": "90.8 ± 0.4 vs 91.8 ± 0.5 against the paper's 74.6 > 55.1 (FC, "
    "given the true clusters, is as good as the Oracle here)",
    "cross-silo.ditto>local": "85.6 ± 0.9 vs 90.4 ± 0.4 against the paper's 73.5 > 64.9",
    "cross-silo.ditto>fedavg-ft": "85.6 ± 0.9 vs 89.9 ± 0.6 against the paper's 73.5 > 70.2",
    "cross-silo.ditto>fc": "85.6 ± 0.9 vs 91.8 ± 0.5 against the paper's 73.5 > 55.1",
    "cross-silo.fedavg-ft>local": "89.9 ± 0.6 vs 90.4 ± 0.4 against the paper's 70.2 > 64.9",
    "cross-silo.local>fc": "90.4 ± 0.4 vs 91.8 ± 0.5 against the paper's 64.9 > 55.1",
    "cross-silo.fedavg>ifca": "19.8 ± 0.4 vs 65.3 ± 25.2 against the paper's 18.8 > 18.6 "
    "(IFCA splits the clusters on some seeds)",
    "cross-silo.fedavg-ft>fc": "89.9 ± 0.6 vs 91.8 ± 0.5 against the paper's 70.2 > 55.1",
    "cross-silo.cobo-best-non-oracle": "CoBo 90.8 ± 0.4, FC 91.8 ± 0.5 against the paper's "
    "CoBo 74.6, next Ditto 73.5",
    "cross-silo.cobo-near-oracle": "Oracle minus CoBo 1.03 points against the paper's 0.8",
    "cross-silo.improved.cobo": "CoBo beats Local on 75% of the clients against 100%",
    "cross-silo.improved.ditto": "Ditto beats Local on 0% of the clients against 100%",
    "cross-silo.improved.fc": "FC beats Local on 91.7% of the clients against 0%",
    "cross-silo.improved.fedavg-ft": "29.2% against the paper's 0%",
    "cross-silo.improved.ifca": "20.8% against the paper's 0%",
    "cross-silo.improved.oracle": "87.5% against the paper's 100%",
    "cross-silo.cobo-60-sooner": "CoBo and Ditto both pass 60% at the first evaluation "
    "(round 15 of 300) against the paper's 4500 iterations, 30% sooner",
    "cross-silo.ifca-one-cluster": "IFCA keeps 3, 2 and 4 cluster models in use against 1",
    "cross-silo.weights-recover-clusters": "W equals the oracle from rounds 274 and 290 on "
    "seeds 0 and 2 and not at the end on seed 1 (mean off-diagonal |W - W*| 0.017, 0.082, "
    "0.029) against 12.5% of the run",
    "cross-silo.fc-mistakes-at-end": "FC's clusters equal the oracle in all 300 rounds of every "
    "seed (no mistake in rounds 271-300) against mistakes recurring to the end of 40,000 "
    "iterations",
    # Table 2's losses (mean test loss over the seeds; the paper prints no spread)
    "cross-silo.loss:ditto<local": "0.652 ± 0.015 vs 0.343 ± 0.018 against the paper's 1.55 < 1.67",
    "cross-silo.loss:local<fc": "0.343 ± 0.018 vs 0.288 ± 0.012 against the paper's 1.67 < 1.79",
    "cross-silo.loss:fedavg<ifca": "1.742 ± 0.009 vs 0.723 ± 0.378 against the paper's 2.66 < 2.75 "
    "(IFCA splits the clusters on some seeds)",
    "cross-silo.loss:ditto<fedavg-ft": "0.652 ± 0.015 vs 0.384 ± 0.015 against the paper's "
    "1.55 < 1.77",
    "cross-silo.loss:fedavg-ft<fc": "0.384 ± 0.015 vs 0.288 ± 0.012 against the paper's 1.77 < 1.79",
    "cross-silo.loss:ditto<fc": "0.652 ± 0.015 vs 0.288 ± 0.012 against the paper's 1.55 < 1.79",
    "cross-silo.loss:cobo<fc": "0.311 ± 0.019 vs 0.288 ± 0.012 against the paper's 1.08 < 1.79",
    "cross-device.cobo>local": "Local beats CoBo cross-device: 97.4 ± 0.3 vs 97.9 ± 0.1 "
    "against the paper's 79.6 > 54.9; each binary task is nearly solved alone",
    "cross-device.cobo>fedavg-ft": "97.4 ± 0.3 vs 97.7 ± 0.2 against the paper's 79.6 > 58.9",
    "cross-device.ditto>local": "97.0 ± 0.2 vs 97.9 ± 0.1 against the paper's 70.3 > 54.9",
    "cross-device.ditto>fedavg-ft": "97.0 ± 0.2 vs 97.7 ± 0.2 against the paper's 70.3 > 58.9",
    "cross-device.fedavg-ft>local": "97.7 ± 0.2 vs 97.9 ± 0.1 against the paper's 58.9 > 54.9",
    "cross-device.fedavg>ifca": "96.1 ± 0.3 vs 96.7 ± 0.5 against the paper's 53.9 > 45.6",
    "cross-device.cobo-best-non-oracle": "CoBo 97.4 ± 0.3, Local 97.9 ± 0.1 against the "
    "paper's CoBo 79.6, next Ditto 70.3",
    "cross-device.cobo-margin-5.7": "CoBo minus the best baseline (Local) -0.5 points against "
    "at least 5.7",
    "cross-device.cobo-ditto-9.3": "CoBo minus Ditto 0.37 points against 9.3",
    "cross-device.improved.cobo": "CoBo beats Local on 15% of the clients against 100%",
    "cross-device.improved.ditto": "Ditto beats Local on 15% of the clients against 100%",
    "cross-device.improved.oracle": "the Oracle beats Local on 28.3% of the clients against 100%",
    "cross-device.weights-recover-clusters": "W is not the oracle at the end of any seed (mean "
    "off-diagonal |W - W*| 0.234, 0.216, 0.235) against the oracle's shape from 1.5% of the run",
}


def _claim_ids(setting, *, measured=False):
    """Every claim id of a full run of ``setting`` (the paper's numbers stand in).

    ``measured``: only those measured at the small scale (below); the cross-device loss
    orderings and accuracy curves are left out.
    """
    acc = {k: PAPER[setting][k] for k in SETTINGS[setting].methods}
    extra = (
        {}
        if measured and setting == "cross-device"
        else {
            "loss": PAPER_LOSS[setting],
            "loss_std": {k: 0.0 for k in acc},
            "mean_curves": {k: [(300, 0.5)] for k in acc},
            "fc_mistake_rounds": [[300]],
            "fc_late_from": 271,
        }
    )
    result = _result(
        acc,
        setting=setting,
        improved_over_local={k: 0.0 for k in acc if k != "local"},
        curves={"cobo": [[]], "ditto": [[]]} if setting == "cross-silo" else {},
        ifca_models_used=[1],
        weights_match_round=[1],
        weight_error=[0.0],
        **extra,
    )
    return [c.id for c in claims(result)]


def _params(setting):
    return [
        pytest.param(
            i,
            marks=pytest.mark.xfail(strict=True, reason=SHORT_OF_THE_PAPER[i])
            if i in SHORT_OF_THE_PAPER
            else (),
        )
        for i in _claim_ids(setting, measured=True)
    ]


def test_every_recorded_shortfall_is_a_claim():
    ids = set(_claim_ids("cross-silo")) | set(_claim_ids("cross-device"))
    assert set(SHORT_OF_THE_PAPER) <= ids, set(SHORT_OF_THE_PAPER) - ids


@pytest.fixture(scope="module")
def small_scale(tmp_path_factory):
    from learning.device import resolve_device

    out = tmp_path_factory.mktemp("cobo")
    return {
        setting: run_setting(
            setting, rounds=300, seeds=3, out=out, device=resolve_device(None), workers=8
        )
        for setting in SETTINGS
    }


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", _params("cross-silo") + _params("cross-device"))
def test_the_papers_claim_at_the_small_scale(small_scale, claim_id):
    setting = claim_id.split(".")[0]
    by_id = {c["id"]: c for c in small_scale[setting]["claims"]}
    claim = by_id[claim_id]
    assert claim["holds"], claim


@pytest.mark.slow
def test_reproduce_reports_both_settings_with_every_claim(monkeypatch, tmp_path):
    import importlib

    from collabecon.reproductions import REPRODUCTIONS

    module = importlib.import_module(REPRODUCTIONS["cobo"])
    assert module is experiment
    monkeypatch.setattr(
        experiment,
        "_train",
        _fake_train({0.1: 0.6, 0.05: 0.5, 0.01: 0.4}, {0.1: 0.7, 0.05: 0.2, 0.01: 0.1}),
    )
    monkeypatch.setattr(experiment.os, "cpu_count", lambda: 1)  # the stand-in stays in-process
    got = module.reproduce("small", tmp_path, seeds=3)
    assert got.name == "cobo"
    ids = [c.id for c in got.claims]
    unrecorded = {  # the stand-in records no curves, IFCA assignments, W or FC's clusters
        "cross-silo.cobo-60-sooner",
        "cross-silo.ifca-one-cluster",
        "cross-silo.weights-recover-clusters",
        "cross-silo.fc-mistakes-at-end",
        "cross-device.weights-recover-clusters",
    }
    expected = set(_claim_ids("cross-silo")) | set(_claim_ids("cross-device"))
    expected = {i for i in expected - unrecorded if ".curve:" not in i}
    assert set(ids) == expected | {s.id for s in SAMPLING_CLAIMS}
    text = got.markdown()
    assert "validation acc. per lr" in text and "chosen on seed 0" in text
    assert set(got.data) == {"cross-silo", "cross-device", "sampling"}
    assert "Table 1, pair sampling" in text and "| Mixed |" in text
    assert got.data["cross-silo"]["tuning"]["methods"]["cobo"]["chosen"] == 0.1
    with pytest.raises(ValueError, match="scale"):
        module.reproduce("huge", tmp_path)


# Table 1 at the small scale (300 rounds, seeds 0-2, each strategy's learning rate from the grid;
# measured on a CPU): the four strategies end within 0.1 points and 0.002 in loss of each other,
# so every ordering is inside the seed spread and may fall either way on another device.
_WITHIN_SPREAD = "within the seed spread (std 0.3-0.4 pts; loss std 0.017-0.019)"
SAMPLING_SHORT_OF_THE_PAPER = {
    "sampling.all>constant": "90.70 ± 0.29 vs 90.77 ± 0.33 against the paper's 74.93 > 73.05",
    "sampling.all>time": "90.70 ± 0.29 vs 90.78 ± 0.42 against the paper's 74.93 > 73.18",
    "sampling.all>mixed": "90.70 ± 0.29 vs 90.78 ± 0.39 against the paper's 74.93 > 74.77",
    "sampling.mixed>time": "90.775 vs 90.775 (equal) against the paper's 74.77 > 73.18",
    "sampling.loss:constant<time": "0.3109 vs 0.3107 against the paper's 1.104 < 1.226",
    "sampling.loss:mixed<constant": "0.3109 vs 0.3109 against the paper's 1.081 < 1.104",
    "sampling.loss:constant<all": "0.3109 vs 0.3090 against the paper's 1.104 < 1.278",
    "sampling.loss:mixed<time": "0.3109 vs 0.3107 against the paper's 1.081 < 1.226",
    "sampling.loss:time<all": "0.3107 vs 0.3090 against the paper's 1.226 < 1.278",
    "sampling.loss:mixed<all": "0.3109 vs 0.3090 against the paper's 1.081 < 1.278",
}
#: Orderings that hold by less than the seed spread (90.78 and 90.78 vs 90.77).
SAMPLING_NARROW = {"sampling.time>constant", "sampling.mixed>constant"}


def _sampling_params():
    params = []
    for spec in SAMPLING_CLAIMS:
        marks = ()
        if spec.id in SAMPLING_SHORT_OF_THE_PAPER:
            reason = f"{SAMPLING_SHORT_OF_THE_PAPER[spec.id]}; {_WITHIN_SPREAD}"
            marks = pytest.mark.xfail(strict=False, reason=reason)
        elif spec.id in SAMPLING_NARROW:
            marks = pytest.mark.xfail(strict=False, reason=f"holds by +0.01 pts, {_WITHIN_SPREAD}")
        params.append(pytest.param(spec.id, marks=marks))
    return params


def test_every_recorded_sampling_shortfall_is_a_claim():
    ids = {s.id for s in SAMPLING_CLAIMS}
    assert set(SAMPLING_SHORT_OF_THE_PAPER) | SAMPLING_NARROW <= ids


@pytest.fixture(scope="module")
def sampling_small_scale():
    from learning.device import resolve_device

    return run_sampling(rounds=300, seeds=3, device=resolve_device(None), workers=4)


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", _sampling_params())
def test_table1_claim_at_the_small_scale(sampling_small_scale, claim_id):
    claim = {c["id"]: c for c in sampling_small_scale["claims"]}[claim_id]
    assert claim["holds"], claim
