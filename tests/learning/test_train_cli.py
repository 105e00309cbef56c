"""``collabecon train``, ``sweep`` and ``bench`` from the command line."""

import csv
import importlib.util
import json
import subprocess
import sys

import pytest

from collabecon.cli import main

TINY = [
    "--dataset",
    "digits",
    "--model",
    "mlp",
    "--clients",
    "4",
    "--rounds",
    "2",
    "--local-steps",
    "2",
    "--batch-size",
    "8",
    "--no-progress",
]


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_train_json_curve_and_resume(capsys, tmp_path):
    out = _json(
        capsys,
        [
            "train",
            "--json",
            *TINY,
            "--algorithm",
            "fedavg",
            "--out",
            str(tmp_path),
            "--target-fraction",
            "0.1",
        ],
    )
    assert {
        "algorithm",
        "device",
        "clients",
        "accuracy",
        "loss",
        "mean_accuracy",
        "seconds",
    } <= set(out)
    assert out["device"] == "cpu" and len(out["accuracy"]) == 4 and len(out["target_accuracy"]) == 4
    assert (tmp_path / "learning_curve.png").stat().st_size > 0
    with (tmp_path / "learning_curve.csv").open() as fh:
        assert [int(r["round"]) for r in csv.DictReader(fh)] == [1, 2]
    ck = str(tmp_path / "ck")
    full = _json(capsys, ["train", "--json", *TINY, "--rounds", "3"])
    _json(capsys, ["train", "--json", *TINY, "--rounds", "1", "--checkpoint", ck])
    resumed = _json(
        capsys, ["train", "--json", *TINY, "--rounds", "3", "--checkpoint", ck, "--resume"]
    )
    assert resumed["resumed_from"] == 1 and resumed["loss"] == full["loss"]


@pytest.mark.slow
def test_train_with_dp_sgd_reports_each_clients_epsilon(capsys):
    """``--dp-noise-multiplier`` trains with DP-SGD; the output gives every client's ε at
    ``--dp-delta``, finite, and smaller under more noise; plain SGD reports none."""
    noisy = _json(capsys, ["train", "--json", *TINY, "--dp-noise-multiplier", "1.0"])
    noisier = _json(capsys, ["train", "--json", *TINY, "--dp-noise-multiplier", "4.0"])
    assert noisy["delta"] == 1e-5 and len(noisy["epsilon"]) == noisy["clients"]
    assert noisy["accounting"] == {
        "accountant": "rdp",
        "sampling": "fixed",
        "adjacency": "replace-one",
    }
    assert all(0 < e < float("inf") for e in noisy["epsilon"])
    assert all(a < b for a, b in zip(noisier["epsilon"], noisy["epsilon"], strict=True))
    assert "epsilon" not in _json(capsys, ["train", "--json", *TINY])


def test_train_human_output(capsys):
    assert (
        main(
            [
                "train",
                *TINY,
                "--algorithm",
                "local",
                "--partition-arg",
                "alpha=0.5",
                "--partition",
                "dirichlet",
            ]
        )
        == 0
    )
    assert "local on digits (dirichlet, 4 clients, mlp, cpu)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--algorithm", "nope"], "algorithm must be one of"),
        (["--dataset", "nope"], "dataset must be one of"),
        (["--lr", "0"], "lr must lie in"),
        (["--clients", "100000"], "--clients must be at most"),
        (["--resume"], "--resume needs --checkpoint"),
        (["--partition-arg", "bogus=1"], "unknown bogus"),
        (["--dp-noise-multiplier", "-1"], "noise_multiplier must lie in [0, inf]"),
        (["--dp-noise-multiplier", "1", "--dp-max-grad-norm", "0"], "--dp-max-grad-norm must lie"),
        (["--dp-delta", "0"], "--dp-delta 0.0 has no effect without --dp-noise-multiplier"),
        (
            ["--dp-sampling", "poisson"],
            "--dp-sampling poisson has no effect without --dp-noise-multiplier",
        ),
        (
            ["--dp-noise-multiplier", "1", "--dp-accountant", "pld"],
            "--dp-accountant pld accounts for Poisson sampling only, not --dp-sampling fixed",
        ),
        (["--batch-size", "5000"], "--batch-size=5000 exceeds every client's training set"),
    ],
)
def test_train_bad_input_exits_2(capsys, argv, message):
    assert main(["train", *TINY, *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_diverged_run_is_marked_failed_and_exits_1(capsys, tmp_path):
    # a learning rate of 1e6 sends the MLP's loss past 1e4 times its initial loss in round 1
    checkpoint = tmp_path / "ck"
    argv = ["train", "--json", *TINY, "--lr", "1e6", "--rounds", "5"]
    assert main([*argv, "--checkpoint", str(checkpoint)]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "failed" and out["diverged"]["round"] == 1
    assert out["failed"].startswith("training diverged at round 1: the mean training loss")
    assert "learning rate 1e+06 (--lr)" in out["failed"]
    assert out["diverged"]["loss"] > out["diverged"]["limit"] > 0
    assert not (checkpoint / "checkpoint.pt").exists()  # the diverged round is not kept
    assert main(["train", *TINY, "--lr", "1e6"]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith("FAILED: training diverged")


def test_a_checkpoint_in_use_by_a_live_process_is_refused(capsys, tmp_path):
    from collabecon.cli._lock import LOCK_NAME

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        checkpoint = tmp_path / "ck"
        checkpoint.mkdir()
        owner = {"pid": sleeper.pid, "started": None, "command": ["collabecon", "train"]}
        (checkpoint / LOCK_NAME).write_text(json.dumps(owner))
        assert main(["train", *TINY, "--checkpoint", str(checkpoint)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"pid {sleeper.pid}" in err and "--checkpoint" in err
        assert sorted(p.name for p in checkpoint.iterdir()) == [LOCK_NAME]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_sweep_runs_a_grid_into_one_csv(capsys, tmp_path):
    config = tmp_path / "grid.toml"
    config.write_text(
        '[train]\ndataset = "digits"\nmodel = "linear"\nclients = 3\nrounds = 1\n'
        'local_steps = 1\n[grid]\nseed = [0, 1]\nalgorithm = ["local", "fedavg"]\n'
    )
    out = _json(capsys, ["sweep", "--json", str(config), "--out", str(tmp_path)])
    assert out["runs"] == 4 and out["engine"] == "local"
    with open(out["csv"]) as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["seed"], r["algorithm"]) for r in rows] == [
        ("0", "local"),
        ("0", "fedavg"),
        ("1", "local"),
        ("1", "fedavg"),
    ]
    assert all(0 <= float(r["mean_accuracy"]) <= 1 for r in rows)


@pytest.mark.parametrize(
    ("text", "extra", "message"),
    [
        ("[grid]\nlr = [0.1, -1.0]\n", [], "lr must lie in"),
        ("[grid]\nlearning_rate = [0.1]\n", [], "does not have"),
        ("[grid]\nseed = 3\n", [], "non-empty list"),
        ("[other]\nx = 1\n", [], "unknown"),
    ],
)
def test_sweep_bad_input_exits_2_before_running(capsys, tmp_path, text, extra, message):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    assert main(["sweep", str(config), *extra]) == 2
    assert message in capsys.readouterr().err


def test_bench_engine_reports_both_engines_on_the_same_work(capsys):
    out = _json(
        capsys,
        [
            "bench",
            "engine",
            "--json",
            "--clients",
            "3",
            "--model",
            "mlp",
            "--steps",
            "2",
            "--repeats",
            "1",
            "--device",
            "cpu",
        ],
    )
    assert out["benchmark"] == "engine" and out["device"] == "cpu" and out["clients"] == 3
    assert out["ratio"] == pytest.approx(out["batched_steps_per_s"] / out["loop_steps_per_s"])
    assert out["max_weight_difference"] < 1e-5
    assert main(["bench", "engine", "--clients", "0"]) == 2


def test_sweep_on_ray_without_ray_is_a_clear_error(capsys, tmp_path, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "ray" else real_find_spec(name, *a),
    )
    config = tmp_path / "grid.toml"
    config.write_text("[grid]\nseed = [0]\n")
    assert main(["sweep", str(config), "--engine", "ray"]) == 2
    assert "needs Ray" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.ray
def test_sweep_on_ray_gives_the_serial_numbers(capsys, tmp_path):
    config = tmp_path / "ray.toml"
    config.write_text(
        '[train]\ndataset = "digits"\nmodel = "linear"\nclients = 3\nrounds = 1\n'
        "[grid]\nseed = [0, 1]\n"
    )
    serial = _json(capsys, ["sweep", "--json", str(config), "--out", str(tmp_path)])
    on_ray = _json(
        capsys,
        [
            "sweep",
            "--json",
            str(config),
            "--engine",
            "ray",
            "--workers",
            "2",
            "--out",
            str(tmp_path / "ray"),  # a folder of its own: nothing to resume
        ],
    )
    assert on_ray["engine"] == "ray" and on_ray["resumed"] == 0
    assert [r["mean_loss"] for r in on_ray["rows"]] == [r["mean_loss"] for r in serial["rows"]]


@pytest.mark.slow
def test_sweep_in_a_process_pool(capsys, tmp_path):
    config = tmp_path / "pool.toml"
    config.write_text(
        '[train]\ndataset = "digits"\nmodel = "linear"\nclients = 3\nrounds = 1\n'
        "[grid]\nseed = [0, 1]\n"
    )
    serial = _json(capsys, ["sweep", "--json", str(config), "--out", str(tmp_path)])
    pooled = _json(
        capsys,
        ["sweep", "--json", str(config), "--workers", "2", "--out", str(tmp_path / "pool")],
    )
    assert pooled["resumed"] == 0
    assert [r["mean_loss"] for r in pooled["rows"]] == pytest.approx(
        [r["mean_loss"] for r in serial["rows"]], rel=1e-5
    )
