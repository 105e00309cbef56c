"""The rule on measured accuracies with real models: held-out audit and the CLI
(Werner 2024, ch. 3, §3.4, Algorithm 5 and Proposition 3)."""

import json

import numpy as np
import pytest

from collabecon.cli import main
from learning.data import load_dataset
from learning.drivers.defection_free import DuopolySetup, TorchFirms
from learning.drivers.defection_free_schemes import run_noisy

TINY = DuopolySetup(
    dataset="digits",
    size=60,
    target_per_class=5,
    lr=0.5,
    batch_size=30,
    init_epochs=(0, 20),
    max_inner=3,
    heldout=True,
)
ARGS = [
    "defection-free", "--json", "--dataset", "digits", "--size", "60",
    "--target-per-class", "5", "--lr", "0.5", "--batch-size", "30",
    "--init-epochs-high", "20", "--rounds", "2", "--q-max", "0.99", "--device", "cpu",
]  # fmt: skip


@pytest.fixture(scope="module")
def firms():
    return TorchFirms.prepare(TINY, seed=0, device="cpu")


def test_the_held_out_set_is_balanced_like_the_target(firms):
    x, y = firms.heldout
    counts = np.bincount(y, minlength=10)
    assert len(x) == len(y) and counts.min() == counts.max() > 0
    assert len(y) <= len(load_dataset("digits")) - 2 * 60 - 50
    target = {row.tobytes() for row in firms.target[0]}
    own = {row.tobytes() for name in ("low", "high") for row in firms.data[name][0].numpy()}
    assert not any(row.tobytes() in target | own for row in x)  # apart from target and firms
    held = firms.qualities_on(firms.heldout, metric="accuracy")
    assert held.n_eval.tolist() == [len(y), len(y)]


def test_run_noisy_audits_on_target_and_held_out(firms):
    run = run_noisy(firms, 2, alpha=0.1, q_max=0.99, seed=0)
    out = run.to_dict()
    assert out["noisy"]["stated_probability_no_revenue_falls"] == pytest.approx(0.9)
    assert out["noisy"]["per_model_miss"] == pytest.approx(0.1 / 6)
    assert out["audit"]["rounds"] == 2 and len(out["heldout_qualities"]) == 3
    assert run.report.audit.never_decreased
    assert np.all(np.diff([r["q_h"] for r in out["rounds"]]) >= 0)


def test_run_noisy_needs_a_held_out_set():
    plain = TorchFirms.prepare(DuopolySetup(**{**_fields(TINY), "heldout": False}), seed=0)
    with pytest.raises(ValueError, match="held-out"):
        run_noisy(plain, 1, alpha=0.1, q_max=0.99)


def _fields(setup):
    return {f: getattr(setup, f) for f in setup.__dataclass_fields__}


def test_undo_low_returns_the_low_model(firms):
    trial = firms.fork(1)
    with pytest.raises(ValueError, match="raise_low"):
        trial.undo_low()
    before = trial.params["low"]
    trial.raise_low(0.99, "gd")
    trial.undo_low()
    assert trial.params["low"] is before


@pytest.mark.parametrize("bound", ["clopper-pearson", "point"])
def test_cli_confidence_reports_both_audits(capsys, bound):
    assert main([*ARGS, "--confidence", "0.9", "--bound", bound]) == 0
    out = json.loads(capsys.readouterr().out)
    stated = out["noisy"]["stated_probability_no_revenue_falls"]
    assert stated == (pytest.approx(0.9) if bound != "point" else None)
    assert set(out["audit"]) == {
        "measured", "reference", "rounds", "falls_measured", "falls_reference", "falls_unseen"
    }  # fmt: skip
    assert out["audit"]["falls_measured"] == 0 and len(out["rounds"]) == 3


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--confidence", "1"], "--confidence must lie in"),
        (["--bound", "point"], "has no effect without --confidence"),
        (["--confidence", "0.9", "--scheme", "complete"], "--scheme complete has no effect"),
        (["--confidence", "0.9", "--quality", "1-loss"], "--quality 1-loss has no effect"),
        (["--confidence", "0.9", "--tolerance", "0.01"], "--tolerance 0.01 has no effect"),
    ],
)
def test_cli_confidence_refuses_flags_it_ignores(capsys, extra, message):
    assert main([*ARGS, *extra]) == 2
    assert message in capsys.readouterr().err


def test_cli_confidence_human_report(capsys):
    assert main([a for a in ARGS if a != "--json"] + ["--confidence", "0.9"]) == 0
    text = capsys.readouterr().out
    assert "P(no true revenue falls) >= 0.9" in text and "held-out examples" in text


@pytest.mark.slow
def test_cli_confidence_on_mnist5k_target_500_held_out_the_rest(capsys):
    argv = [
        "defection-free", "--json", "--dataset", "mnist5k", "--target-per-class", "50",
        "--rounds", "3", "--q-max", "0.99", "--confidence", "0.95", "--device", "cpu",
    ]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["noisy"]["n_eval"] == 500
    assert out["noisy"]["n_heldout"] % 10 == 0 and out["noisy"]["n_heldout"] <= 5000 - 2000 - 500
    assert out["audit"]["falls_measured"] == 0
    assert out["noisy"]["per_model_miss"] == pytest.approx(0.05 / 8)
