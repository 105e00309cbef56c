"""``collabecon cobo``: output shape, files, errors; the cross-silo ordering as a slow test."""

import json

import numpy as np
import pytest

from learning.cli import main
from learning.cli.cobo import METHODS, match_round


def _run(capsys, *argv):
    code = main(["cobo", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_reduced_cross_silo_run_has_the_promised_shape(capsys, tmp_path):
    code, result = _run(
        capsys, "--rounds", "3", "--methods", "cobo,oracle,local,fedavg", "--out", str(tmp_path)
    )
    assert code == 0
    assert set(result["accuracy"]) == {"cobo", "oracle", "local", "fedavg"}
    assert all(0.0 <= a <= 1.0 for a in result["accuracy"].values())
    assert isinstance(result["weights_match_oracle"], bool)
    assert result["weights_match_round"] is None or result["weights_match_round"] >= 1
    w = np.array(result["final_weights"])
    assert w.shape == (8, 8) and np.array_equal(w, w.T) and w.min() >= 0 and w.max() <= 1
    png, csv = (tmp_path / "cobo_weights_cross-silo.png", tmp_path / "cobo_weights_cross-silo.csv")
    assert png.stat().st_size > 0
    assert len(csv.read_text().splitlines()) == 1 + 3 * 28  # header + rounds x pairs


def test_same_seed_same_numbers(capsys):
    argv = ("--rounds", "2", "--methods", "cobo", "--setting", "cross-device")
    first, second = _run(capsys, *argv)[1], _run(capsys, *argv)[1]
    assert first["accuracy"] == second["accuracy"] and first["clients"] == 20
    assert first["final_weights"] == second["final_weights"]


def test_bad_input_is_a_one_line_error(capsys):
    assert main(["cobo", "--methods", "cobo,magic"]) == 2
    assert "methods must be among" in capsys.readouterr().err
    assert main(["cobo", "--rounds", "0"]) == 2


def test_match_round_is_the_start_of_the_last_matching_stretch():
    clusters = np.array([0, 0, 1])
    good = np.array([[1, 0.9, 0.1], [0.9, 1, 0.2], [0.1, 0.2, 1]])
    bad = np.ones((3, 3))
    assert match_round([bad, good, bad, good, good], clusters) == 4
    assert match_round([good, good], clusters) == 1
    assert match_round([good, bad], clusters) is None


@pytest.mark.slow
def test_cross_silo_ordering(capsys, tmp_path):
    # spec cobo §7.2 B: CoBo's W becomes block-diagonal, CoBo is within reach of the Oracle
    # and above Ditto and Local, FedAvg collapses (the label permutations conflict). Measured
    # at the default settings (seed 0): IFCA finds the clusters here and does not collapse,
    # and Ditto stays about one point below Local, so neither is asserted.
    code, result = _run(capsys, "--out", str(tmp_path))
    acc = result["accuracy"]
    assert code == 0 and set(acc) == set(METHODS)
    assert result["weights_match_oracle"]
    assert acc["oracle"] >= acc["cobo"] - 0.02
    assert acc["cobo"] >= acc["ditto"] and acc["cobo"] > acc["local"]
    assert acc["fedavg"] < acc["local"] - 0.2
