"""``collabecon market`` on measured qualities: ties, exits, many firms and the run files
the toolkit writes (Werner 2024, ch. 3, §3.2, extended to n firms by econ.oligopoly)."""

import csv
import json

import numpy as np
import pytest

from collabecon.cli import main
from econ.oligopoly import deviation_gains
from econ.qualities import ModelQualities, qualities_from_predictions

#: Target accuracies of eight IFCA clients of one small run: ties and models below them.
IFCA_EIGHT = [0.711, 0.778, 0.711, 0.711, 0.644, 0.689, 0.578, 0.689]


def _market(capsys, *argv):
    code = main(["market", "--json", *argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def _arrays(result, t=-1):
    row = result["rounds"][t]
    return {
        f: np.array([row[f"{f}_{n}"] for n in result["names"]])
        for f in ("quality", "price", "share", "revenue")
    }


def _check_equilibrium(result, t=-1, *, firms=None, grid=2001):
    m = _arrays(result, t)
    for f in ("price", "share", "revenue"):
        assert np.all(m[f] >= 0), f
    np.testing.assert_allclose(m["revenue"], m["price"] * m["share"], atol=1e-15)
    row = result["rounds"][t]
    assert row["welfare"] == pytest.approx(row["consumer_surplus"] + m["revenue"].sum(), abs=1e-12)
    gains = deviation_gains(m["quality"], m["price"], grid=grid, firms=firms)
    assert np.nanmax(gains) <= 1e-9
    return m


def test_the_eight_ifca_clients_tie_and_exit_and_no_firm_gains_by_deviating(capsys):
    result = _market(capsys, "--qualities", *map(str, IFCA_EIGHT))
    m = _check_equilibrium(result)
    # the best model sells alone above the three-way tie at 0.711 ...
    assert m["price"][1] == pytest.approx((0.778 - 0.711) / 2)
    assert m["share"][1] == pytest.approx(0.5)
    # ... the tied models price at 0 and split the rest; the models below them sell nothing
    tied = [0, 2, 3]
    assert np.all(m["price"][tied] == 0) and np.allclose(m["share"][tied], 0.5 / 3)
    assert np.all(m["share"][[4, 5, 6, 7]] == 0)


@pytest.mark.parametrize("decimals", [None, 3], ids=["distinct", "rounded-to-3-decimals"])
def test_a_thousand_uniform_qualities(capsys, decimals):
    q = np.random.default_rng(7).random(1000)
    if decimals is not None:
        q = np.round(q, decimals)  # hundreds of ties, as measured accuracies have
    result = _market(capsys, "--qualities", *map(repr, q.tolist()))
    assert len(result["names"]) == 1000
    order = np.argsort(q)
    # the best ten, the ten around the median and thirty drawn at random: a grid search each
    firms = np.unique(
        np.concatenate(
            [order[-10:], order[495:505], np.random.default_rng(8).choice(1000, 30, replace=False)]
        )
    )
    m = _check_equilibrium(result, firms=firms, grid=401)
    assert m["share"].sum() <= 1.0 + 1e-12 and m["share"][order[-1]] > 0
    if (
        decimals is not None
    ):  # only the firms above the highest tied quality and that tie's members sell
        values, counts = np.unique(q, return_counts=True)
        top_tie = values[counts > 1].max()
        np.testing.assert_array_equal(m["share"] > 0, q >= top_tie)


def test_from_a_csv_history_with_ties_zeros_and_overtaking(tmp_path, capsys):
    path = tmp_path / "run.csv"
    rows = [(0.5, 0.8), (0.8, 0.8), (0.9, 0.8), (0.0, 0.8), (0.0, 0.0)]
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t", "q_l", "q_h", "U_l"])
        w.writerows([(t, a, b, 0.0) for t, (a, b) in enumerate(rows)])
    result = _market(capsys, "--from", str(path))
    assert result["names"] == ["low", "high"] and len(result["rounds"]) == len(rows)
    for t in range(len(rows)):
        _check_equilibrium(result, t)
    tie = _arrays(result, 1)
    assert np.all(tie["price"] == 0) and np.allclose(tie["share"], 0.5)
    overtaken = _arrays(result, 2)
    assert overtaken["price"][0] > overtaken["price"][1] > 0  # the better model sells high


def test_reads_its_own_output_and_train_and_ipfl_results(tmp_path, capsys):
    first = _market(capsys, "--qualities", "0.3", "0.6", "0.6", "--names", "a", "b", "c")
    (tmp_path / "market.json").write_text(json.dumps(first))
    again = _market(capsys, "--from", str(tmp_path / "market.json"))
    assert again == first
    train = {"algorithm": "ifca", "accuracy": [0.9, 0.8], "target_accuracy": IFCA_EIGHT}
    (tmp_path / "train.json").write_text(json.dumps(train))
    result = _market(capsys, "--from", str(tmp_path / "train.json"))
    assert result["names"] == [f"client{i}" for i in range(8)]
    np.testing.assert_allclose(_arrays(result)["quality"], IFCA_EIGHT)
    ipfl = {"personalised_accuracy": [0.7, 0.7], "pma": [1.0, -1.0]}
    (tmp_path / "ipfl_result.json").write_text(json.dumps(ipfl))
    result = _market(capsys, "--from", str(tmp_path / "ipfl_result.json"))
    assert _arrays(result)["price"].tolist() == [0.0, 0.0]
    wide = tmp_path / "wide.csv"
    wide.write_text("round,quality_x,q_y\n0,0.4,0.9\n")
    assert _market(capsys, "--from", str(wide))["names"] == ["x", "y"]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("acc.csv", "accuracy\n0.7\n0.8\n", "lacks the quality columns"),
        ("curve.csv", "round,train_loss,test_loss,test_accuracy\n0,2.3,2.2,0.1\n", "round"),
        ("half.csv", "t,q_l\n0,0.5\n", "missing q_h"),
        ("twice.csv", "q_a,q_a\n0.5,0.6\n", "q_a more than once"),
        ("blank.csv", "q_a,q_b\n0.5,\n", "round 0 lacks q_b"),
        ("word.csv", "q_a\nhigh\n", "must be a number"),
        ("range.csv", "q_a\n1.5\n", "quality"),
        ("train.json", '{"algorithm": "fedavg", "accuracy": [0.5]}', "--target-fraction"),
        ("round.json", '{"rounds": [{"t": 0, "q_l": 0.5}]}', "missing q_h"),
        ("dup.json", '[{"names": ["a", "a"], "quality": [0.1, 0.2]}]', "names a firm twice: a"),
        # a loss is no quality: the file must say what it measures, as a quality
        ("loss.json", '{"names": ["a"], "quality": [0.3], "metric": "loss"}', "'metric'"),
        ("metric.json", '{"names": ["a"], "quality": 0.3, "metric": 1}', "'metric' must be"),
        ("typo.json", '{"names": ["a"], "quality": 0.3, "metirc": "loss"}', "metirc"),
        (
            "mixed.json",
            '[{"a": 0.3}, {"names": ["a"], "quality": 0.3, "metric": "1-loss"}]',
            "1-loss",
        ),
        ("true.json", '{"names": ["a", "b"], "quality": [true, 0.5]}', "got a boolean true"),
        ("false.json", '[{"a": false, "b": 0.5}]', "round 0, 'a' must be a number"),
        ("qtrue.json", '{"rounds": [{"q_l": true, "q_h": 0.8}]}', "'q_l' must be a number"),
        ("string.json", '{"names": ["a"], "quality": ["0.5"]}', "got a string '0.5'"),
        ("nested.json", '{"target_accuracy": [0.3, [0.5]]}', "'target_accuracy'[1]"),
        ("object.json", '{"names": ["a"], "quality": {"x": 1}}', "got an object"),
        ("names.json", '{"names": 5, "quality": [0.3]}', "'names' must be a non-empty list"),
        ("name.json", '{"names": [["a"]], "quality": [0.3]}', "'names'[0]"),
        ("count.json", '{"names": ["a", "b"], "quality": [0.3]}', "one number per name"),
        ("n_eval.json", '{"names": ["a"], "quality": [0.3], "n_eval": 1.5}', "'n_eval'"),
        ("firm-twice.json", '[{"a": 0.3, "a": 0.5, "b": 0.9}]', "names the key 'a' twice"),
        ("rounds-twice.json", '{"rounds": [], "rounds": [{"q_l": 0.1}]}', "key 'rounds' twice"),
        ("nan.json", '{"names": ["a"], "quality": [NaN]}', "NaN is no JSON number"),
        ("huge.json", '{"names": ["a"], "quality": [1e400]}', "beyond the largest float"),
        ("bigint.json", '{"names": ["a"], "quality": [1' + "0" * 400 + "]}", "in [0, 1]"),
        ("deep.json", "[" * 5000 + "]" * 5000, "deeper than 32 levels"),
        ("deep40.json", "[" * 40 + "]" * 40, "deeper than 32 levels"),
        ("firms.json", '[{"a": 0.3, "b": 0.5}, {"a": 0.3, "c": 0.5}]', "round 1 names the firms"),
        ("scalar.json", "0.5", "a JSON object or a non-empty list"),
        ("rounds.json", '{"rounds": [1, 2]}', "'rounds' must be a non-empty list of objects"),
        ("latin1.json", b'{"names": ["\xe9"], "quality": [0.5]}', "not UTF-8"),
        ("nan.csv", "q_a,q_b\n0.5,nan\n", "round 0, 'q_b' must be a quality in [0, 1]"),
        ("inf.csv", "q_a,q_b\n0.5,1e400\n", "'q_b' must be a quality in [0, 1]"),
        ("cells.csv", "q_a,q_b\n0.5,0.6,0.7\n", "3 cells for the 2 columns"),
        ("long.csv", "q_a\n" + "1" * 200_000 + "\n", "is not a CSV file"),
    ],
)
def test_refuses_a_file_without_the_expected_columns(tmp_path, capsys, name, text, message):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert main(["market", "--from", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--qualities", "0.2", "0.5", "--names", "a", "a"], "--names: items must be distinct"),
        (["--qualities", "0.2", "0.5", "--names", "a"], "--names must give one name"),
        (["--qualities", "0.2", "1.5"], "--qualities must lie in [0, 1]"),
        (["--qualities", "0.2", "--consumers", "-1"], "--consumers"),
        (["--from", "x.csv", "--names", "a"], "--names"),
        (["--qualities", "0.2", "--seed", "3"], "--seed 3 seeds the sampled consumers"),
    ],
)
def test_bad_flags_exit_2_with_one_line(capsys, argv, message):
    try:
        code = main(["market", *argv])
    except SystemExit as stop:  # flags argparse refuses end through parser.error
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_model_qualities_refuse_duplicate_names():
    with pytest.raises(ValueError, match="names must be distinct"):
        ModelQualities(names=("a", "a"), quality=np.array([0.2, 0.5]), metric="accuracy", n_eval=1)


def test_the_table_lists_one_firm_per_row_for_one_market(capsys):
    assert main(["market", "--qualities", "0.4", "0.4", "0.9", "--consumers", "2000"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["firm", "quality", "price", "share", "revenue"]
    assert "firm2" in out and "consumer surplus" in out and "sampled 2000 consumers" in out


def test_a_train_run_through_the_command_line_becomes_a_market(tmp_path, capsys):
    train = ["train", "--json", "--no-progress", "--algorithm", "ifca", "--dataset", "digits"]
    train += ["--model", "mlp", "--clients", "4", "--rounds", "1", "--local-steps", "2"]
    code = main([*train, "--target-fraction", "0.2"])
    out = capsys.readouterr().out
    assert code == 0
    (tmp_path / "run.json").write_text(out)
    result = _market(capsys, "--from", str(tmp_path / "run.json"))
    np.testing.assert_allclose(_arrays(result)["quality"], json.loads(out)["target_accuracy"])
    _check_equilibrium(result)
    # without a common target set the run's accuracies are on each client's own test set
    assert main([*train]) == 0
    (tmp_path / "own.json").write_text(capsys.readouterr().out)
    assert main(["market", "--from", str(tmp_path / "own.json")]) == 2
    assert "--target-fraction" in capsys.readouterr().err


# --------------------------------------------------------------------------- predictions files


def _predictions_csv(tmp_path, rows, header=("party", "label", "prediction"), name="pred.csv"):
    path = tmp_path / name
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def test_a_predictions_file_becomes_a_market_with_counts_and_intervals(tmp_path, capsys):
    labels = [3, 7, 2, 2, 5]
    guesses = {"logistic": [3, 1, 2, 2, 5], "tree": [3, 7, 0, 1, 5]}
    rows = [(p, y, g) for p, gs in guesses.items() for y, g in zip(labels, gs, strict=True)]
    result = _market(capsys, "--from", _predictions_csv(tmp_path, rows))
    assert result["names"] == ["logistic", "tree"]
    expected = qualities_from_predictions(guesses, labels)
    assert result["qualities"] == [expected.to_dict()]
    assert result["qualities"][0]["n_eval"] == [5, 5]
    assert result["rounds"][0]["quality_logistic"] == 0.8
    low, high = result["qualities"][0]["low"][0], result["qualities"][0]["high"][0]
    assert low < 0.8 < high
    _check_equilibrium(result)


def test_probability_columns_score_one_minus_loss_at_the_asked_confidence(tmp_path, capsys):
    proba = {"a": [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1]], "b": [[0.4, 0.3, 0.3], [0.3, 0.4, 0.3]]}
    labels = [0, 1]
    rows = [(p, y, *row) for p, rs in proba.items() for y, row in zip(labels, rs, strict=True)]
    path = _predictions_csv(tmp_path, rows, ("party", "label", "p0", "p1", "p2"))
    result = _market(capsys, "--from", path, "--metric", "1-loss", "--confidence", "0.9")
    expected = qualities_from_predictions(
        {k: np.array(v) for k, v in proba.items()}, labels, metric="1-loss", confidence=0.9
    )
    assert result["qualities"] == [expected.to_dict()]
    assert result["qualities"][0]["metric"] == "1-loss"
    assert main(["market", "--from", path, "--metric", "1-loss"]) == 0
    assert "95% interval" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("header", "rows", "argv", "message"),
    [
        (("party", "label", "prediction"), [("a", 0, 1), ("b", 1, 1)], (), "example 0 of party"),
        (("party", "label", "prediction"), [("a", 0, 1), ("a", 1, 1), ("b", 0, 1)], (), "1 rows"),
        (("party", "label", "prediction"), [("a", 0, "x")], (), "'prediction' must be a class"),
        (("party", "label", "prediction"), [("a", -1, 0)], (), "'label' must be a class index"),
        (("party", "label", "prediction"), [("a", 0, 1)], ("--metric", "1-loss"), "probabilities"),
        (("party", "label", "prediction"), [("a", 0, 1)], ("--confidence", "1"), "(0, 1)"),
        (("party", "label", "p0", "p1"), [("a", 0, 0.5, 0.4)], (), "row 0 sums to 0.9"),
        (("party", "label", "p0", "p1"), [("a", 0, "nan", 1)], (), "must be finite"),
        (("party", "label", "p0", "p1"), [("a", 2, 0.5, 0.5)], (), "2 columns for 3 classes"),
        (("party", "label", "p0", "p2"), [("a", 0, 0.5, 0.5)], (), "p0 .. p1"),
        (("party", "label", "prediction", "p0"), [("a", 0, 0, 1)], (), "give one of them"),
        (("party", "label"), [("a", 0)], (), "neither a prediction column"),
        (("party", "label", "prediction"), [("", 0, 0)], (), "empty party"),
        (("q_a", "q_b"), [(0.2, 0.5)], ("--metric", "accuracy"), "--metric scores a CSV"),
    ],
)
def test_a_bad_predictions_file_is_refused_in_one_line(
    tmp_path, capsys, header, rows, argv, message
):
    path = _predictions_csv(tmp_path, rows, header)
    assert main(["market", "--from", path, *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_a_qualities_file_with_intervals_round_trips(tmp_path, capsys):
    q = qualities_from_predictions({"a": [0, 1, 1], "b": [0, 1, 0]}, [0, 1, 1])
    path = tmp_path / "q.json"
    path.write_text(json.dumps(q.to_dict()))
    assert _market(capsys, "--from", str(path))["qualities"] == [q.to_dict()]
    broken = {**q.to_dict(), "low": [0.5, 0.7]}
    path.write_text(json.dumps(broken))
    assert main(["market", "--from", str(path)]) == 2
    assert "must contain its quality" in capsys.readouterr().err
    del broken["confidence"]
    path.write_text(json.dumps(broken))
    assert main(["market", "--from", str(path)]) == 2
    assert "without confidence" in capsys.readouterr().err


def test_a_repeated_column_among_many_is_named_without_a_quadratic_scan(tmp_path, capsys):
    path = tmp_path / "wide.csv"
    path.write_text("party,label,prediction," + ",".join(f"x{k}" for k in range(200_000)) + ",x7\n")
    assert main(["market", "--from", str(path)]) == 2
    assert "has the column(s) x7 more than once" in capsys.readouterr().err


def test_a_quality_out_of_range_is_named_as_a_number(capsys):
    assert main(["market", "--qualities", "0.3", "2"]) == 2
    assert capsys.readouterr().err.endswith("--qualities must lie in [0, 1], got 2.0\n")


def test_from_a_directory_says_it_is_no_file(tmp_path, capsys):
    (tmp_path / "d.csv").mkdir()
    assert main(["market", "--from", str(tmp_path / "d.csv")]) == 2
    assert "is not a regular file (a directory, pipe or device)" in capsys.readouterr().err


def test_a_confidence_that_is_1_in_floats_is_refused_by_name(tmp_path, capsys):
    # (1 + c) / 2 rounds to 1: the normal quantile of the interval would be infinite
    path = _predictions_csv(tmp_path, [("a", 0, 0), ("a", 1, 1), ("b", 0, 0), ("b", 1, 0)])
    assert main(["market", "--from", str(path), "--confidence", "0.9999999999999999"]) == 2
    err = capsys.readouterr().err
    assert "confidence 0.9999999999999999 is 1 to float precision" in err
    assert err.count("\n") == 1
