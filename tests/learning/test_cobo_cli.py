"""``collabecon cobo``: output shape, files, errors; a reduced cross-silo reproduction in the
default suite, the full-size analogues of the paper's cross-silo and cross-device experiments
(Sections 4.1 and 4.2) as slow
tests, with the claims that do not hold at this scale recorded as strict xfails."""

import json

import numpy as np
import pytest

from learning.cli import main
from learning.cli.cobo import METHODS, SETTINGS, match_round, orderings, run_setting

REDUCED_ROUNDS = 120


def _run(capsys, *argv):
    code = main(["cobo", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_reduced_cross_silo_run_has_the_promised_shape(capsys, tmp_path):
    code, result = _run(
        capsys, "--rounds", "3", "--methods", "cobo,oracle,local,fedavg", "--out", str(tmp_path)
    )
    assert code == 0
    assert set(result["accuracy"]) == {"cobo", "oracle", "local", "fedavg"}
    assert set(result["paper"]) == set(result["accuracy"])
    assert set(result["orderings"]) == {"oracle >= cobo", "fedavg collapses"}
    assert 0.0 <= result["weight_error"] <= 1.0
    assert all(0.0 <= a <= 1.0 for a in result["accuracy"].values())
    assert isinstance(result["weights_match_oracle"], bool)
    assert result["weights_match_round"] is None or result["weights_match_round"] >= 1
    w = np.array(result["final_weights"])
    assert w.shape == (8, 8) and np.array_equal(w, w.T) and w.min() >= 0 and w.max() <= 1
    png, csv = (tmp_path / "cobo_weights_cross-silo.png", tmp_path / "cobo_weights_cross-silo.csv")
    assert png.stat().st_size > 0
    assert len(csv.read_text().splitlines()) == 1 + 3 * 28  # header + rounds x pairs


def test_code_momentum_reaches_every_method_but_fc(capsys):
    argv = ("--rounds", "3", "--methods", ",".join(METHODS))
    plain = _run(capsys, *argv)[1]
    code = _run(capsys, *argv, "--momentum", "code")[1]
    assert (plain["momentum"], code["momentum"]) == ("none", "code")
    assert code["accuracy"]["fc"] == plain["accuracy"]["fc"]  # raw gradients in the code too
    assert code["final_weights"] != plain["final_weights"]  # CoBo's models moved differently
    moved = [m for m in METHODS if m != "fc" and code["accuracy"][m] != plain["accuracy"][m]]
    assert len(moved) >= 4, moved


def test_same_seed_same_numbers(capsys):
    argv = ("--rounds", "2", "--methods", "cobo", "--setting", "cross-device")
    first, second = _run(capsys, *argv)[1], _run(capsys, *argv)[1]
    assert first["accuracy"] == second["accuracy"] and first["clients"] == 20
    assert first["final_weights"] == second["final_weights"]


def test_bad_input_is_a_one_line_error(capsys):
    assert main(["cobo", "--methods", "cobo,magic"]) == 2
    assert "methods must be among" in capsys.readouterr().err
    assert main(["cobo", "--rounds", "0"]) == 2
    with pytest.raises(ValueError, match="momentum"):
        run_setting("cross-silo", ["local"], rounds=1, seed=0, momentum="adam")


def test_match_round_is_the_start_of_the_last_matching_stretch():
    clusters = np.array([0, 0, 1])
    good = np.array([[1, 0.9, 0.1], [0.9, 1, 0.2], [0.1, 0.2, 1]])
    bad = np.ones((3, 3))
    assert match_round([bad, good, bad, good, good], clusters) == 4
    assert match_round([good, good], clusters) == 1
    assert match_round([good, bad], clusters) is None


# --------------------------------------------------------------------------- reproductions


def test_reduced_cross_silo_weights_find_the_clusters_and_fedavg_collapses():
    # the cross-silo analogue at a reduced size (REDUCED_ROUNDS rounds, three methods): CoBo's W
    # becomes the block-diagonal oracle, FedAvg's one model cannot serve the permuted labels
    result = run_setting("cross-silo", ["cobo", "local", "fedavg"], rounds=REDUCED_ROUNDS, seed=0)
    acc = result["accuracy"]
    assert result["weights_match_oracle"]
    assert acc["fedavg"] < acc["local"] - 0.3
    assert acc["cobo"] >= acc["local"] - 0.02


@pytest.fixture(scope="module")
def cross_silo(tmp_path_factory):
    out = tmp_path_factory.mktemp("cross-silo")
    return run_setting("cross-silo", list(METHODS), rounds=300, seed=0, out=out)


@pytest.fixture(scope="module")
def cross_device(tmp_path_factory):
    out = tmp_path_factory.mktemp("cross-device")
    methods = list(SETTINGS["cross-device"].methods)
    return run_setting("cross-device", methods, rounds=300, seed=0, out=out)


@pytest.fixture(scope="module")
def cross_silo_code():
    return run_setting("cross-silo", list(METHODS), rounds=300, seed=0, momentum="code")


# Measured at the defaults (300 rounds, seed 0); the paper's Table 2 is in learning.cli.cobo.PAPER
CROSS_SILO = {
    "cobo": 0.8695,
    "oracle": 0.8735,
    "ditto": 0.858,
    "local": 0.86925,
    "fedavg": 0.21175,
    "fedavg-ft": 0.7085,
    "ifca": 0.7855,
    "fc": 0.9085,
}
CROSS_DEVICE = {
    "cobo": 0.9743,
    "oracle": 0.9865,
    "ditto": 0.9675,
    "local": 0.9775,
    "fedavg": 0.9058,
    "fedavg-ft": 0.9602,
    "ifca": 0.908,
}
CROSS_SILO_CODE = {  # --momentum code
    "cobo": 0.9065,
    "oracle": 0.914,
    "ditto": 0.905,
    "local": 0.90525,
    "fedavg": 0.1825,
    "fedavg-ft": 0.885,
    "ifca": 0.89575,
    "fc": 0.9085,
}
DITTO_REASON = (
    "paper: Ditto 73.5% > Local 64.9% (cross-silo), 70.3% > 54.9% (cross-device); measured "
    "with the paper's lambda = 1 and learning rates (Ditto 0.1, Local 0.01), 300 rounds: "
    "cross-silo Ditto 0.858 < Local 0.869 (seeds 1, 2: 0.859 < 0.865, 0.868 < 0.879; "
    "0.875 < 0.898 at 1000 rounds), cross-device "
    "0.968 < 0.978. With 2,000 examples per client Local is not data-starved, and Ditto's "
    "pull towards a global model trained on conflicting labels costs more than it gives"
)
IFCA_REASON = (
    "paper: IFCA degenerates to one cluster (18.6%, FedAvg's 18.8%); measured with the true "
    "4 clusters, separately initialised models (the paper's) and every client each round: "
    "IFCA picks the right cluster for every client and ends at 0.786 (FedAvg 0.212, Local "
    "0.869). The MLP's random models already differ in loss under each label permutation, "
    "so the first choices split the clusters; with identical initial models IFCA collapses "
    "(0.210). Seeds 1 and 2 merge some clusters (0.407, 0.613): partial, not FedAvg's level"
)


@pytest.mark.slow
def test_cross_silo_weights_heatmaps_and_the_orderings_that_hold(cross_silo):
    # CoBo's W becomes the oracle's block diagonal (Section 4.1) and the heatmaps are written;
    # Oracle >= CoBo >= Ditto; FedAvg collapses (Table 2: 18.8% against Local 64.9%)
    acc = cross_silo["accuracy"]
    assert set(acc) == set(METHODS)
    assert cross_silo["weights_match_oracle"]
    assert cross_silo["weights_match_round"] <= 150
    assert any(f.endswith(".png") for f in cross_silo["files"])
    assert acc["oracle"] >= acc["cobo"] >= acc["ditto"]
    assert acc["fedavg"] < acc["local"] - 0.5
    assert acc == pytest.approx(CROSS_SILO, abs=0.005)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=DITTO_REASON)
def test_cross_silo_ditto_beats_local(cross_silo):
    acc = cross_silo["accuracy"]
    assert acc["ditto"] > acc["local"]


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=IFCA_REASON)
def test_cross_silo_ifca_collapses(cross_silo):
    # Section 4.1 and Table 2: the paper's IFCA degenerates to one cluster, at FedAvg's level (18.6
    # vs 18.8)
    acc = cross_silo["accuracy"]
    assert acc["ifca"] < acc["local"] - 0.5


@pytest.mark.slow
def test_cross_silo_with_the_codes_momentum(cross_silo_code):
    # the official code's EMA momentum for every method but FC and its Ditto variant:
    # CoBo, the Oracle, Ditto and Local gain 4-5 points, FT-FedAvg and IFCA 11-18;
    # Oracle >= CoBo >= Ditto and FedAvg's collapse still hold
    acc = cross_silo_code["accuracy"]
    assert acc["oracle"] >= acc["cobo"] >= acc["ditto"]
    assert acc["fedavg"] < acc["local"] - 0.5
    assert acc["fc"] == pytest.approx(CROSS_SILO["fc"], abs=1e-9)  # raw gradients either way
    assert acc == pytest.approx(CROSS_SILO_CODE, abs=0.005)


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="with the code's momentum (EMA 0.9, dampening 0.1) CoBo's W does not settle on the "
    "oracle in 300 rounds: 4 of the 28 pairs end on the wrong side of 1/2 (mean off-diagonal "
    "|W - W*| 0.15; 0 from round 105 without momentum). Ditto 0.9050 vs Local 0.9053 and "
    "IFCA 0.896 (no collapse) are as without momentum",
)
def test_cross_silo_with_the_codes_momentum_recovers_the_oracle(cross_silo_code):
    assert cross_silo_code["weights_match_oracle"]


@pytest.mark.slow
def test_cross_device_orderings_that_hold(cross_device):
    # Table 2's cross-device ordering at this scale: Oracle >= CoBo >= Ditto >= FT-FedAvg, FedAvg
    # and IFCA (10% of the clients per round) last; in-cluster weights stay near 1 and W moves
    # towards the oracle (mean off-diagonal |W - W*| 0.82 at W = 1, 0.26 after 300 rounds)
    acc = cross_device["accuracy"]
    assert acc["oracle"] >= acc["cobo"] >= acc["ditto"] >= acc["fedavg-ft"]
    assert max(acc["fedavg"], acc["ifca"]) < min(acc["local"], acc["fedavg-ft"])
    assert cross_device["weight_error"] < 0.3
    w = np.array(cross_device["final_weights"])
    sizes = SETTINGS["cross-device"].partition_params["sizes"]
    clusters = np.repeat(np.arange(len(sizes)), sizes)
    same = (clusters[:, None] == clusters[None, :]) & ~np.eye(clusters.size, dtype=bool)
    assert w[same].mean() > 0.95
    assert acc == pytest.approx(CROSS_DEVICE, abs=0.005)


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="paper (Section 4.2, the appendix's 80-client heatmaps): W looks like the oracle by "
    "1.5% of the run; measured after "
    "300 rounds: 94 of the 380 off-diagonal entries on the wrong side of 1/2, mean "
    "|W - W*| 0.26 (0.38 at round 150): the clusters of the digits 2-3, 4-5 and 6-7 stay "
    "partly connected to one another, 6-7 also to 0-1 and 8-9 (apparently their relabelled "
    "binary tasks do not oppose each other enough at the midpoints)",
)
def test_cross_device_weights_match_the_oracle(cross_device):
    assert cross_device["weights_match_oracle"]


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="paper: CoBo 79.6% far above Local 54.9% cross-device (the headline); measured: "
    "CoBo 0.974 < Local 0.978 < Oracle 0.987. Each binary task is nearly solved alone; the "
    "cross-cluster weights left above 0 (mean 0.31) likely pull unlike clusters together",
)
def test_cross_device_cobo_beats_local(cross_device):
    acc = cross_device["accuracy"]
    assert acc["cobo"] > acc["local"]


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=DITTO_REASON)
def test_cross_device_ditto_beats_local(cross_device):
    acc = cross_device["accuracy"]
    assert acc["ditto"] > acc["local"]


def test_orderings_are_checked_only_for_methods_that_ran():
    acc = {"oracle": 0.9, "cobo": 0.8, "ditto": 0.85, "local": 0.7, "fedavg": 0.4}
    assert orderings(acc) == {
        "oracle >= cobo": True,
        "cobo >= ditto": False,
        "ditto > local": True,
        "fedavg collapses": True,
    }
