"""``collabecon privacy``: JSON shapes of exists / optimal / figure1 and bad input as exit code 2."""

import json

import pytest

from collabecon.cli import main


def _json(capsys, argv):
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def test_exists_shapes(capsys):
    code, out = _json(
        capsys,
        ["privacy", "exists", "--model", "dp-mean", "--lam", "0.1,0.2,0.3,0.4,0.5", "--json"],
    )
    assert code == 0 and set(out) == {"exists", "statistic", "threshold"}
    assert (
        out["exists"] is True
        and out["threshold"] == 1
        and out["statistic"] == pytest.approx(1.35587, abs=1e-5)
    )
    _, sgd = _json(
        capsys,
        ["privacy", "exists", "--model", "dp-sgd", "--lam", ",".join(["1e5"] * 10), "--json"],
    )
    assert set(sgd) == {"exists", "statistic", "threshold"} and sgd["threshold"] == 0
    _, bayes = _json(
        capsys,
        [
            "privacy",
            "exists",
            "--model",
            "bayes",
            "--lam",
            "5,8,12,20,50",
            "--n",
            "1",
            "--sigma",
            "1",
            "--json",
        ],
    )
    assert bayes["exists"] is True and bayes["statistic"] == pytest.approx(1.834092, abs=1e-6)
    _, before = _json(capsys, ["privacy", "--json", "exists", "--model", "dp-mean", "--lam", "1,2"])
    assert set(before) == {"exists", "statistic", "threshold"}


def test_optimal_shape(capsys):
    argv = [
        "privacy",
        "optimal",
        "--model",
        "dp-mean",
        "--lam",
        "0.5,1,2,4,8",
        "--objective",
        "welfare",
        "--json",
    ]
    code, out = _json(capsys, argv)
    assert code == 0
    assert {"alpha", "beta", "epsilon", "utility", "utility_alone", "gamma"} <= set(out)
    assert all(len(out[k]) == 5 for k in ("alpha", "beta", "epsilon", "utility", "utility_alone"))
    assert sum(out["utility"]) == pytest.approx(-8.472668, abs=1e-5)
    assert all(u >= u0 - 1e-7 for u, u0 in zip(out["utility"], out["utility_alone"], strict=True))
    _, acc = _json(
        capsys,
        [
            "privacy",
            "optimal",
            "--model",
            "bayes",
            "--lam",
            "5,8,12,20,50",
            "--n",
            "1",
            "--sigma",
            "1",
            "--objective",
            "accuracy",
            "--json",
        ],
    )
    assert acc["gamma"] == pytest.approx(4.684211, abs=1e-6) and acc["epsilon"] is None
    main(["privacy", "optimal", "--model", "dp-sgd", "--lam", ",".join(["2e5"] * 10)])
    assert "gamma (server accuracy)" in capsys.readouterr().out


def test_figure1_writes_png_and_csv(capsys, tmp_path):
    code, out = _json(
        capsys, ["privacy", "figure1", "--out", str(tmp_path), "--repetitions", "3", "--json"]
    )
    assert code == 0
    assert (tmp_path / "figure1.png").stat().st_size > 0
    lines = (tmp_path / "figure1.csv").read_text().splitlines()
    assert len(lines) == 1 + 18 and lines[0].startswith("panel,log_lam_mean")
    assert len(out["rows"]) == 18


@pytest.mark.parametrize(
    "argv",
    [
        ["--lam=-1,2"],
        ["--lam", "1,2", "--n", "0.5"],
        ["--lam", "1,2", "--sigma", "0"],
        ["--lam", "1,2", "--tau", "2"],
    ],
)
def test_bad_input_exits_2(capsys, argv):
    assert main(["privacy", "exists", "--model", "dp-mean", *argv]) == 2
    assert "error" in capsys.readouterr().err


def test_empty_lambda_list_is_rejected():
    with pytest.raises(SystemExit) as exc:
        main(["privacy", "exists", "--model", "dp-mean", "--lam", ","])
    assert exc.value.code == 2
