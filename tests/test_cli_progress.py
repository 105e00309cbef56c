"""Every long command shows its progress on stderr, and ``--json`` silences it.

Each command runs in-process through ``collabecon.cli.main`` at its smallest settings, with the
training it would do replaced by a stand-in that moves the qualities or returns fixed
accuracies (so each case takes well under a second; the training itself is tested where it
lives). Twice per command: without ``--json``, stderr shows the progress and stdout is
exactly the rendered result; with ``--json``, stderr is empty and stdout is the result as
JSON.
"""

from __future__ import annotations

import importlib
import json
import logging
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from collabecon.cli import COMMANDS, main
from collabecon.cli._log import configured
from collabecon.cli._output import dump_json, key_value_table
from collabecon.cli._progress import Progress, quiet


def _main(monkeypatch, capsys, argv):
    """``main(argv)``: its exit code, stdout, stderr and the result object ``run`` returned."""
    module = importlib.import_module(COMMANDS[argv[0]][0])
    real, results = module.run, []
    monkeypatch.setattr(module, "run", lambda args: results.append(real(args)) or results[-1])
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err, results[-1], module


def _check(monkeypatch, capsys, argv, *shown):
    """Run ``argv`` with and without ``--json``; return the progress text of the second."""
    code, out, err, result, module = _main(monkeypatch, capsys, [*argv, "--json"])
    assert code == 0 and err == ""
    assert json.loads(out) == json.loads(dump_json(result))
    code, out, err, result, module = _main(monkeypatch, capsys, argv)
    assert code == 0
    assert out == getattr(module, "render", key_value_table)(result) + "\n"
    assert "collabecon" not in out  # no progress on stdout
    for text in shown:
        assert text in err, err
    return err


# --------------------------------------------------------------------------- the reporter


@pytest.fixture
def command_log():
    """The command line's log on stderr at ``INFO``, as ``main`` sets it for a command."""
    with configured("any", logging.INFO):
        yield


def test_the_reporter_counts_phases_on_stderr_and_is_quiet_with_json(capsys, command_log):
    progress = Progress("demo", 2)
    progress.note("writing to out/")
    progress("training")
    progress("reporting")
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "collabecon demo: writing to out/",
        "collabecon demo: [1/2] training",
        "collabecon demo: [2/2] reporting",
    ]
    for args in (SimpleNamespace(json=True), SimpleNamespace(json=False, no_progress=True)):
        assert quiet(args)
        silent = Progress.of(args, "demo", 1)
        silent("training")
        silent.note("note")
        with silent.bar(3) as bar:
            bar.update(3)
        with silent.counting(3) as move:
            move(3)
    assert capsys.readouterr() == ("", "")
    assert not quiet(SimpleNamespace(json=False))


def test_phases_of_equal_length_tell_the_time_left(capsys, monkeypatch, command_log):
    import collabecon.cli._progress as module

    clock = iter([0.0, 40.0, 80.0, 80.5])
    monkeypatch.setattr(module.time, "monotonic", lambda: next(clock))
    progress = Progress("cobo", 4, eta=True)
    for text in ("a", "b", "c"):
        progress(text)
    Progress("cobo", 4)("d")  # without eta, no estimate
    assert capsys.readouterr().err.splitlines() == [
        "collabecon cobo: [1/4] a",
        "collabecon cobo: [2/4] b (about 2 min left)",
        "collabecon cobo: [3/4] c (about 80 s left)",
        "collabecon cobo: [1/4] d",
    ]


def test_a_counting_bar_appears_at_its_first_call(capsys, command_log):
    progress = Progress("ipfl")
    with progress.counting(2, unit="round") as move:
        assert capsys.readouterr().err == ""  # nothing yet: the work may still be refused
        move(0)
        move(2)
    err = capsys.readouterr().err
    assert "collabecon ipfl" in err and "2/2" in err


# --------------------------------------------------------------------------- the demo and
# defection-free: two firms whose qualities move by a rule instead of training


class _ToyFirms:
    """Two firms whose qualities move towards 0.95 by a fixed share per round."""

    def __init__(self, q=(0.3, 0.6)):
        self.q, self.previous = list(q), None

    def fork(self, seed=None):
        return _ToyFirms(self.q)

    def measure(self):
        from econ.qualities import ModelQualities

        return ModelQualities(
            names=("low", "high"),
            quality=np.array(self.q),
            metric="accuracy",
            n_eval=np.array([99, 99]),
        )

    def step_high(self, move):
        self.previous = self.q[1]
        self.q[1] += (0.1 if move.joint else 0.03) * (0.95 - self.q[1])

    def undo_high(self):
        self.q[1] = self.previous

    def step_low(self, joint):
        self.q[0] += (0.2 if joint else 0.03) * (0.95 - self.q[0])

    def raise_low(self, cap, inner):
        self.q[0] = max(self.q[0], min(cap, self.q[0] + 0.1 * (0.95 - self.q[0])))


@pytest.fixture
def toy_firms(monkeypatch):
    """``TorchFirms.prepare`` hands out toy firms."""
    import learning.drivers.defection_free as driver

    monkeypatch.setattr(driver.TorchFirms, "prepare", classmethod(lambda cls, *a, **k: _ToyFirms()))


@pytest.mark.usefixtures("toy_firms")
def test_defection_free_prints_a_line_per_scheme(monkeypatch, capsys):
    err = _check(monkeypatch, capsys, ["defection-free", "--rounds", "2"])
    assert err.splitlines() == [
        "collabecon defection-free: [1/3] preparing the firms: 1000 examples of mnist5k each, "
        "the high firm trains alone for 10 epochs",
        "collabecon defection-free: [2/3] complete (2 rounds, to estimate Q)",
        "collabecon defection-free: [3/3] defection-free (2 rounds)",
    ]


def test_the_demo_makes_its_folder_at_once_and_prints_a_line_per_phase(
    tmp_path, monkeypatch, capsys
):
    import econ.propositions
    import games.defection_free.figures
    import learning.drivers.defection_free as driver

    out = tmp_path / "demo"
    early = []

    def prepare(cls, setup, seed=0, device=None):  # the first long phase
        early.append((out.is_dir(), capsys.readouterr().err))
        return _ToyFirms()

    monkeypatch.setattr(driver.TorchFirms, "prepare", classmethod(prepare))
    # the figures and the propositions have their own tests; here they return at once
    monkeypatch.setattr(games.defection_free.figures, "write_figures", lambda reports, out: [])
    checked = {"id": "-", "status": "checked", "expected": "checked", "agrees": True}
    monkeypatch.setattr(
        econ.propositions, "run", lambda p: SimpleNamespace(to_dict=lambda: {**checked, "id": p.id})
    )
    argv = ["demo", "--out", str(out), "--rounds", "2", "--json"]
    code, stdout, err, result, module = _main(monkeypatch, capsys, argv)
    assert code == 0 and err == "" and early[-1] == (True, "")
    assert json.loads(stdout) == json.loads(dump_json(result))

    out = tmp_path / "again"
    argv = ["demo", "--out", str(out), "--rounds", "2"]
    code, stdout, err, result, module = _main(monkeypatch, capsys, argv)
    assert code == 0 and stdout == module.render(result) + "\n"
    folder_made, before = early[-1]
    assert folder_made  # --out exists before the firms are prepared
    assert before.splitlines() == [
        f"collabecon demo: writing to {out}/",
        "collabecon demo: [1/8] preparing the firms: 500 examples of mnist5k each, the high "
        "firm trains alone for 10 epochs",
    ]
    assert err.splitlines() == [
        "collabecon demo: [2/8] complete (2 rounds)",
        "collabecon demo: [3/8] defection-free (2 rounds)",
        "collabecon demo: [4/8] one-sided-low (2 rounds)",
        "collabecon demo: [5/8] one-sided-high (2 rounds)",
        "collabecon demo: [6/8] writing Figures 3.1-3.8",
        "collabecon demo: [7/8] checking the propositions",
        "collabecon demo: [8/8] writing report.md and summary.json",
    ]
    assert (out / "report.md").is_file()


# --------------------------------------------------------------------------- sweep


def test_sweep_prints_a_line_per_finished_run(tmp_path, monkeypatch, capsys):
    import learning.runtimes.sweep

    def run_point(fields, device, data_dir):
        return {"mean_accuracy": fields["lr"], "mean_loss": 1.0, "target_accuracy": None,
                "seconds": 0.5}  # fmt: skip

    monkeypatch.setattr(learning.runtimes.sweep, "run_point", run_point)
    config = tmp_path / "grid.toml"
    config.write_text(
        '[train]\ndataset = "digits"\nmodel = "mlp"\nclients = 2\nrounds = 1\n'
        "[grid]\nlr = [0.25, 0.5]\n"
    )
    code, out, err, result, module = _main(
        monkeypatch, capsys, ["sweep", str(config), "--out", str(tmp_path / "a"), "--json"]
    )
    assert code == 0 and err == "" and json.loads(out)["finished"] == 2
    code, out, err, result, module = _main(
        monkeypatch, capsys, ["sweep", str(config), "--out", str(tmp_path / "b")]
    )
    assert code == 0 and out == module.render(result) + "\n"
    assert err.splitlines() == [
        "collabecon sweep: 2 runs, 0 from earlier results, 2 to run (local, 1 worker)",
        "collabecon sweep: [1/2] lr=0.25: accuracy 0.2500 (0.5 s)",
        "collabecon sweep: [2/2] lr=0.5: accuracy 0.5000 (0.5 s)",
    ]


# --------------------------------------------------------------------------- ipfl


def test_ipfl_draws_a_bar_over_the_rounds(monkeypatch, capsys):
    import learning.drivers.ipfl

    def run_ipfl(config, *, progress, **options):
        for done in range(config.rounds + 1):
            progress(done)
        summary = {
            "tokens_start": [100.0, 100.0],
            "tokens_end": [90.0, 110.0],
            "cluster_accuracy": [[0.5, 0.25]],
            "pma_mean": 1.0,
            "pma_positive_share": 0.5,
            "opt_out_rate": 0.5,
            "personalised_accuracy_mean": 0.5,
        }
        return SimpleNamespace(summary=lambda: summary)

    monkeypatch.setattr(learning.drivers.ipfl, "run_ipfl", run_ipfl)
    argv = ["ipfl", "--dataset", "digits", "--clients", "2", "--clusters", "1", "--rounds", "3"]
    err = _check(monkeypatch, capsys, argv, "collabecon ipfl:", "3/3")
    assert "\n" not in err.rstrip("\n")  # one bar, redrawn in place


def test_ipfl_compare_prints_a_line_per_method_and_learning_rate(monkeypatch, capsys):
    import collabecon.reproductions.ipfl_comparison as experiment

    monkeypatch.setattr(experiment, "compared_baselines", lambda: ["fedavg"])

    def compare(config, *, lr_grid, progress, **options):
        for name in ("ip-fl", "fedavg"):
            for lr in lr_grid:
                progress(f"{name}, lr {lr:g}")
        row = {
            "method": "ip-fl",
            "near_chance": False,
            "personalised_accuracy_mean": 0.5,
            "personalised_accuracy_std": 0.1,
            "pma_mean": 1.0,
            "opt_out_percent": 10.0,
            "lr": lr_grid[0],
        }
        budget = {"rounds": 1, "local_steps": 1, "client_updates_per_round": 2}
        return {"partition": "10:90", "shift": "rotation", "budget": budget,
                "lr_grid": list(lr_grid), "rows": [row], "claims": []}  # fmt: skip

    monkeypatch.setattr(experiment, "compare", compare)
    argv = ["ipfl", "--dataset", "digits", "--clients", "2", "--clusters", "1", "--compare"]
    err = _check(monkeypatch, capsys, [*argv, "--lr-grid", "0.1", "0.3"])
    assert err.splitlines() == [
        "collabecon ipfl: [1/4] ip-fl, lr 0.1",
        "collabecon ipfl: [2/4] ip-fl, lr 0.3",
        "collabecon ipfl: [3/4] fedavg, lr 0.1",
        "collabecon ipfl: [4/4] fedavg, lr 0.3",
    ]


# --------------------------------------------------------------------------- table1


def test_table1_prints_a_line_per_task_seed_and_method(monkeypatch, capsys):
    from collabecon.reproductions import clustered_mnist

    monkeypatch.setattr(clustered_mnist, "clients", lambda task, scale, seed, data_dir: None)
    monkeypatch.setattr(
        clustered_mnist,
        "train_method",
        lambda method, data, scale, lr, seed: (50.0 + lr, 40.0 + len(method)),
    )
    err = _check(monkeypatch, capsys, ["table1", "--seeds", "1"])
    lines = err.splitlines()
    runs = len(clustered_mnist.TASKS) * len(clustered_mnist.METHODS)
    assert len(lines) == runs
    assert lines[0] == f"collabecon table1: [1/{runs}] rotation, seed 0: Local (3 learning rates)"
    assert lines[-1] == (
        f"collabecon table1: [{runs}/{runs}] private-label, seed 0: Oracle (3 learning rates)"
    )


# --------------------------------------------------------------------------- bench


def test_bench_prints_a_line_per_measured_configuration(monkeypatch, capsys):
    argv = ["bench", "pricing-repeated", "--runs", "2", "--rounds", "5", "--baseline-runs", "2"]
    argv += ["--baseline-rounds", "5", "--single-rounds", "7", "--scale-runs", "2"]
    err = _check(monkeypatch, capsys, [*argv, "--repeats", "1"])
    assert err.splitlines() == [
        "collabecon bench pricing-repeated: exp3: vectorised 2 x 5, loop 2 x 5",
        "collabecon bench pricing-repeated: cexp3: vectorised 2 x 5, loop 2 x 5",
        "collabecon bench pricing-repeated: alpha-pd: vectorised 2 x 5, loop 2 x 5",
        "collabecon bench pricing-repeated: exp3: one run of 7 rounds, loop one run of 5",
        "collabecon bench pricing-repeated: cexp3: one run of 7 rounds, loop one run of 5",
        "collabecon bench pricing-repeated: alpha-pd: one run of 7 rounds, loop one run of 5",
        "collabecon bench pricing-repeated: exp3: vectorised, scaling to 2 runs",
        "collabecon bench pricing-repeated: cexp3: vectorised, scaling to 2 runs",
        "collabecon bench pricing-repeated: alpha-pd: vectorised, scaling to 2 runs",
    ]


# --------------------------------------------------------------------------- reproduce

_REPRODUCTION = """
from pathlib import Path

from econ.claims import Claim, Reproduction


def reproduce(scale, out, seeds=None):
    Path(out).mkdir(parents=True, exist_ok=True)
    claims = (
        Claim(
            paper="Paper A, Fig. 1", id="a.up", statement="the curve rises", published=1.5,
            measured=1.7, holds=True,
        ),
    )
    return Reproduction("NAME", "Paper A: Figure 1", claims, "settings", (), {})
"""


def test_reproduce_numbers_its_reproductions(tmp_path, monkeypatch, capsys):
    import collabecon.reproductions as experiments

    code = tmp_path / "code"
    code.mkdir()
    for name in ("first", "second"):
        source = textwrap.dedent(_REPRODUCTION).replace("NAME", name)
        (code / f"progress_{name}_repro.py").write_text(source)
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.setattr(
        experiments,
        "REPRODUCTIONS",
        {"first": "progress_first_repro", "second": "progress_second_repro"},
    )
    report = tmp_path / "report"
    err = _check(monkeypatch, capsys, ["reproduce", "--out", str(report)])
    assert err.splitlines() == [  # the second run into the folder reuses the first's results
        f"collabecon reproduce: reusing {name}: finished earlier in {report} with the same settings"
        for name in ("first", "second")
    ]
    code, _, err, _, _ = _main(monkeypatch, capsys, ["reproduce", "--out", str(tmp_path / "new")])
    assert code == 0
    assert err.splitlines() == [
        "collabecon reproduce: [1/2] running first",
        "collabecon reproduce: [2/2] running second",
    ]


# --------------------------------------------------------------------------- cobo


def test_cobo_prints_a_line_per_method_learning_rate_and_seed(monkeypatch, capsys):
    import collabecon.reproductions.cobo as experiment
    from collabecon.reproductions import cobo_results

    def federation(setting, seed, device):
        clusters = np.arange(setting.clients) % 2
        return SimpleNamespace(base=SimpleNamespace(n_clients=setting.clients, clusters=clusters))

    def train(key, setting, data, *, lr, rounds, seed, schedule, momentum):
        n = setting.clients
        return cobo_results.TrainingRun(
            test=np.full(n, 0.5 + lr),
            loss=np.full(n, 1.0 - lr),
            validation=np.full(n, 0.5 + lr),
            curve=[],
            weights=[],
            assignment=None,
        )

    monkeypatch.setattr(experiment, "_federation", federation)
    monkeypatch.setattr(experiment, "_train", train)
    argv = ["cobo", "--methods", "local", "fedavg", "--rounds", "1", "--seeds", "2"]
    err = _check(monkeypatch, capsys, [*argv, "--lr-grid", "0.1", "0.2"])
    assert err.splitlines() == [
        "collabecon cobo: [1/6] local: lr 0.1, seed 0 (tuning)",
        "collabecon cobo: [2/6] local: lr 0.2, seed 0 (tuning)",
        "collabecon cobo: [3/6] local: lr 0.2, seed 1 (chosen rate)",
        "collabecon cobo: [4/6] fedavg: lr 0.1, seed 0 (tuning)",
        "collabecon cobo: [5/6] fedavg: lr 0.2, seed 0 (tuning)",
        "collabecon cobo: [6/6] fedavg: lr 0.2, seed 1 (chosen rate)",
    ]


# --------------------------------------------------------------------------- the commands
# that reported before: their progress is silent with --json too


class _Stop(Exception):
    """Raised by a stand-in once it has seen what the command passed it."""


def test_train_draws_its_bar_unless_json_no_progress_or_quiet(monkeypatch):
    import learning.train

    seen = []

    def train(config, **options):
        seen.append(options["progress"])
        raise _Stop

    monkeypatch.setattr(learning.train, "train", train)
    argv = ["train", "--dataset", "digits", "--model", "mlp", "--clients", "2", "--rounds", "1"]
    for extra in ([], ["--json"], ["--no-progress"], ["--json", "--no-progress"], ["--quiet"]):
        with pytest.raises(_Stop):
            main([*argv, *extra])
    assert seen == [True, False, False, False, False]


@pytest.mark.parametrize(
    ("argv", "target", "calls"),
    [
        (
            ["privacy", "curve", "--out", "OUT", "--noise", "1", "--dataset", "digits"],
            ("learning.drivers.privacy_curve", "measure"),
            lambda progress: progress("seed 0, local, no DP"),
        ),
        (
            ["privacy", "figure1", "--out", "OUT", "--repetitions", "2"],
            ("collabecon.reproductions.privacy", "run_figure1"),
            lambda progress: [progress() for _ in range(3)],
        ),
        (
            ["pricing", "figures", "--out", "OUT", "--rounds", "5"],
            ("collabecon.reproductions.price_discrimination", "figures"),
            lambda progress: progress(5),
        ),
    ],
    ids=["privacy-curve", "privacy-figure1", "pricing-figures"],
)
def test_privacy_and_pricing_report_on_stderr_and_are_quiet_with_json(
    argv, target, calls, tmp_path, monkeypatch, capsys
):
    module = importlib.import_module(target[0])

    def stand_in(*args, progress, **options):
        calls(progress)
        raise _Stop

    monkeypatch.setattr(module, target[1], stand_in)
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    with pytest.raises(_Stop):
        main([*argv, "--json"])
    assert capsys.readouterr() == ("", "")
    with pytest.raises(_Stop):
        main(argv)
    out, err = capsys.readouterr()
    assert out == ""
    if target[1] != "figures":  # the pricing bar waits half a second before it shows
        assert f"collabecon {' '.join(argv[:2])}" in err, err


def test_library_code_is_silent_by_default(capsys):
    from learning.drivers.defection_free_schemes import run_schemes

    runs = run_schemes(_ToyFirms(), 2, schemes=("defection-free",))  # no progress given
    assert set(runs) == {"defection-free"}
    assert capsys.readouterr() == ("", "")


def test_run_schemes_reports_each_scheme_before_it_runs():
    from learning.drivers.defection_free_schemes import run_schemes

    lines = []
    run_schemes(_ToyFirms(), 1, schemes=("one-sided-low", "complete"), progress=lines.append)
    assert lines == ["complete (1 round)", "one-sided-low (1 round)"]


def test_the_demo_folder_is_made_by_the_experiment_too(tmp_path, monkeypatch):
    import games.defection_free.figures
    import learning.drivers.defection_free as driver
    from collabecon.reproductions.defection_free import run

    out = tmp_path / "nested" / "demo"
    made = []

    def prepare(cls, setup, seed=0, device=None):
        made.append(out.is_dir())
        return _ToyFirms()

    monkeypatch.setattr(driver.TorchFirms, "prepare", classmethod(prepare))
    monkeypatch.setattr(games.defection_free.figures, "write_figures", lambda reports, out: [])
    lines = []
    run(out, size=10, target_per_class=1, rounds=1, progress=lines.append)
    assert made == [True] and len(lines) == 6
    assert Path(out).is_dir()
