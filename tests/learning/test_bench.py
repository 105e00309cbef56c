"""``collabecon bench NAME``: every benchmark at a tiny size, and the one best-of-N timer."""

import json
import time
from pathlib import Path

import pytest

import collabecon.bench
from collabecon.bench.timing import best_of, best_of_each
from collabecon.cli import main
from collabecon.cli.bench import BENCHMARKS, render

TINY = {
    "engine": [
        *("--clients", "2", "--model", "mlp", "--dataset", "digits", "--steps", "1"),
        *("--matmul-size", "64"),
    ],
    "all-pairs": ["--clients", "2", "--model", "mlp", "--reference"],
    "dp": ["--clients", "2", "--model", "mlp", "--dataset", "digits", "--steps", "1"],
    "bargaining": ["--points", "40", "--baseline-points", "8", "--reference-points", "8"],
    "pricing-repeated": [
        *("--runs", "2", "--rounds", "30", "--baseline-runs", "2"),
        *("--baseline-rounds", "10", "--single-rounds", "30", "--scale-runs", "2"),
    ],
    "privacy": ["--clients", "30", "--existence-clients", "50", "--draws", "1"],
    "market": ["--firms", "50"],
    "verify": ["--only", "tsoy.thm4.2"],
    "flower": ["--clients", "2", "--rounds", "2", "--model", "mlp", "--dataset", "digits"],
}


def test_every_benchmark_has_a_tiny_case():
    assert sorted(TINY) == sorted(BENCHMARKS)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.flower) if n == "flower" else n for n in sorted(TINY)],
)
def test_bench_name_runs_at_a_tiny_size(name, capsys):
    extra = [*TINY[name], *(["--device", "cpu"] if name in ("engine", "all-pairs", "dp") else [])]
    if name != "privacy":  # its repeats are fixed per measurement
        extra += ["--repeats", "1"]
    assert main(["bench", name, "--json", *extra]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["benchmark"] == name
    if name == "bargaining":  # the closed form agrees with the 40-digit reference
        assert out["ours_errors"] == 0 and out["reference_points"] == 8
        assert out["scalar_calls"] == 40 and out["scalar_max_abs_difference"] <= 1e-15
    elif name == "market":  # the ladder's floats are the recursion's
        assert out["max_abs_difference"] == 0 and out["small_firms"] == 5
    elif name == "verify":
        assert out["entries"] >= 1 and out["all_agree"] and out["cpu_seconds"] > 0
    elif name == "privacy":  # the exact optimum is never below the authors' scan
        assert all(p["exact_at_least_scan"] for p in out["protocols"])
        assert out["existence"]["exists"] and not out["existence"]["none_exists"]
        assert [p["model"] for p in out["figure1"]] == ["dp-mean", "bayes"]
        assert all(p["at_least_loop"] and p["batched_vs_per_draw"] < 1e-12 for p in out["figure1"])
    elif name == "pricing-repeated":
        assert [s["seller"] for s in out["sellers"]] == ["exp3", "cexp3", "alpha-pd"]
        assert len(out["scaling"]) == 3
        assert [s["seller"] for s in out["single"]] == ["exp3", "cexp3", "alpha-pd"]
        assert out["single_speedup_cpu"] > 0
    elif name == "engine":  # 2 clients x 10 examples through Linear(64, 200), Linear(200, 10)
        assert out["step_flops"] == 2 * 10 * 2 * (2 * 64 * 200 + 3 * 200 * 10)
        assert out["matmul_size"] == 64 and 0 < out["matmul_share"] < float("inf")
    elif name == "all-pairs":
        assert [r["batch_size"] for r in out["reference"]] == [32, 640, 2**2 * 32]
    elif name == "flower":  # the same models, and the split adds up to the whole run
        assert out["max_weight_difference"] <= 1e-6 and out["cpus"] == out["threads"]
        assert out["ratio"] == pytest.approx(out["flower_seconds"] / out["train_seconds"])
        whole = out["flower_startup_seconds"] + 2 * out["flower_round_seconds"]
        assert whole == pytest.approx(out["flower_seconds"])
        assert out["flower_startup_seconds"] > 0 and out["flower_round_seconds"] > 0
    assert render(out).startswith("quantity")  # the human table of the same result


def test_bench_flower_without_the_extra_says_so_and_runs_nothing(monkeypatch, capsys):
    import collabecon.bench.flower

    reason = 'flwr is not installed: pip install -e ".[flower]" (flwr[simulation])'
    monkeypatch.setattr(collabecon.bench.flower, "flower_missing", lambda: reason)
    monkeypatch.setattr(collabecon.bench.flower, "train", None)  # never called
    assert main(["bench", "flower", "--json", *TINY["flower"]]) == 0
    assert json.loads(capsys.readouterr().out) == {"benchmark": "flower", "skipped": reason}
    assert main(["bench", "flower", "--clients", "0"]) == 2  # the sizes are checked first
    assert "--clients must be an integer >= 1, got 0" in capsys.readouterr().err


def test_training_flops_of_lenet5_are_counted_from_its_layer_shapes():
    from collabecon.bench.engine import training_flops
    from learning.models import lenet5

    conv = [6 * 28 * 28 * 1 * 25, 16 * 10 * 10 * 6 * 25]
    linear = [400 * 120, 120 * 84, 84 * 10]
    expected = 2 * (2 * conv[0] + 3 * (conv[1] + sum(linear)))
    assert training_flops(lenet5((1, 28, 28), 10), (1, 28, 28)) == expected == 2_263_920


def test_bench_help_lists_every_benchmark(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = capsys.readouterr().out
    assert all(name in text for name in BENCHMARKS)


def test_the_sides_alternate_and_the_best_timing_counts():
    calls = []
    slow_once = {"a": [0.05, 0.0], "b": [0.0, 0.05]}

    def work(name):
        def run():
            calls.append(name)
            time.sleep(slow_once[name].pop(0))
            return len(calls)

        return run

    synced = []
    timings = best_of_each(
        {"a": work("a"), "b": work("b")}, 2, sync=lambda: synced.append(len(calls))
    )
    assert calls == ["a", "b", "a", "b"]
    assert synced == [0, 1, 1, 2, 2, 3, 3, 4]  # before and after each call
    assert timings["a"].seconds < 0.05 and timings["b"].seconds < 0.05
    assert timings["a"].result == 3 and timings["b"].result == 4  # the last call's result
    assert best_of(lambda: 7, 1).result == 7
    with pytest.raises(ValueError, match="repeats must be an integer >= 1, got 0"):
        best_of(lambda: None, 0)


def test_the_benchmarks_time_with_the_one_timer():
    folder = Path(collabecon.bench.__file__).parent
    clocks = [
        p.name
        for p in folder.glob("*.py")
        if p.name != "timing.py"
        and ("perf_counter" in p.read_text() or "process_time" in p.read_text())
    ]
    assert clocks == []
